/**
 * The built-in chat responder: a short, factual answer written only from the retrieved facts,
 * naming the ids it used. Deterministic and pure; the sources it returns are exactly the facts
 * its reply mentions.
 */
import type { ChatAnswer, ChatFact, ChatInput } from '../analysis/types.js';

const day = (at: string | null) => (at ? at.slice(0, 10) : 'unknown date');
const sentence = (text: string) => {
  const t = text.trim().replace(/\s+/g, ' ');
  return /[.!?]$/.test(t) ? t : `${t}.`;
};
const clip = (text: string, max: number) => (text.length <= max ? text : `${text.slice(0, max - 1).trimEnd()}…`);
const steps = (actions: string[], max = 4) =>
  actions
    .slice(0, max)
    .map((a, i) => `${i + 1}. ${clip(a.replace(/\s+/g, ' '), 200)}`)
    .join(' ') + (actions.length > max ? ` (${actions.length - max} more)` : '');

/** How a fact is named in a reply: its title, then its id in brackets. */
const cite = (f: ChatFact) => `"${clip(f.title, 100)}" [${f.id}]`;

class AnswerBuilder {
  private readonly parts: string[] = [];
  private readonly used: ChatFact[] = [];
  say(text: string, ...facts: ChatFact[]) {
    this.parts.push(text);
    for (const f of facts) if (!this.used.some((u) => u.type === f.type && u.id === f.id)) this.used.push(f);
  }
  get empty() {
    return this.parts.length === 0;
  }
  done(): ChatAnswer {
    return { reply: this.parts.join(' '), sources: this.used.map((f) => ({ type: f.type, id: f.id })) };
  }
}

/** Relevance (share of the best match) of a record close enough to stand beside the best one. */
const CLOSE_MATCH = 0.75;
/** Relevance of a record related enough to mention as well. */
const RELATED = 0.5;

const NOTHING =
  "I found nothing in this workspace's incident history, patterns or runbooks about that. Try naming the service, the alert or the symptom.";

function describe(f: ChatFact): string {
  switch (f.type) {
    case 'incident':
      return `Incident ${cite(f)}: ${f.summary}${f.rootCause ? `; root cause: ${sentence(clip(f.rootCause, 300))}` : '.'}`;
    case 'investigation':
      return `The investigation of ${f.id} (${f.summary}) concluded: ${f.rootCause ? sentence(clip(f.rootCause, 300)) : 'no root cause yet.'}`;
    case 'evidence':
      return `Evidence [${f.id}]: ${sentence(f.summary)}`;
    case 'pattern':
      return `Pattern ${cite(f)} (${f.summary}): ${sentence(clip(f.rootCause ?? '', 300))}${f.actions.length ? ` Fix: ${steps(f.actions, 3)}` : ''}`;
    case 'runbook':
      return `Runbook ${cite(f)}${f.service ? ` for ${f.service}` : ''}${f.actions.length ? `: ${steps(f.actions, 3)}` : '.'}`;
  }
}

function answerCount(
  input: ChatInput,
  intent: Extract<ChatInput['intent'], { kind: 'count' | 'list' }>,
  out: AnswerBuilder,
) {
  const when = intent.period
    ? ` ${intent.period.label} (${day(intent.period.from)} to ${day(intent.period.to)})`
    : ' in the recorded history';
  const incidents = input.facts.filter((f) => f.type === 'incident');
  const n = intent.total;
  const kind = intent.severity ? `${intent.severity} ` : '';
  const noun = n === 0 ? `no ${kind}incidents` : `${n} ${kind}incident${n === 1 ? '' : 's'}`;
  const head = intent.service
    ? `${intent.service} had ${noun}${when}`
    : intent.subject.length
      ? `There ${n === 1 ? 'was' : 'were'} ${noun} matching "${intent.subject.join(' ')}"${when}`
      : `There ${n === 1 ? 'was' : 'were'} ${noun}${when}`;
  if (n === 0) {
    out.say(`${head}.`);
    return;
  }
  // A list says what happened to each incident; a count only names them.
  const what = (f: ChatFact) =>
    intent.kind === 'list' && f.rootCause ? ` (${clip(f.rootCause.replace(/\s+/g, ' '), 140)})` : '';
  const list = incidents.map((f) => `${cite(f)} on ${day(f.at)}${what(f)}`).join('; ');
  out.say(`${head}${incidents.length < n ? `; the ${incidents.length} most recent` : ''}: ${list}.`, ...incidents);
}

function answerCause(input: ChatInput, subjectId: string | null, latest: boolean, out: AnswerBuilder) {
  const incident = input.facts.find((f) => f.type === 'incident' && f.id === subjectId);
  const investigation = input.facts.find((f) => f.type === 'investigation' && f.id === subjectId);
  if (!incident) return false;
  out.say(
    `${latest ? 'The most recent matching incident is' : 'The incident is'} ${cite(incident)}, ${incident.summary}.`,
    incident,
  );
  if (investigation?.rootCause) {
    out.say(`Root cause (${investigation.summary}): ${sentence(clip(investigation.rootCause, 500))}`, investigation);
  } else if (incident.rootCause) {
    out.say(`Root cause: ${sentence(clip(incident.rootCause, 500))}`);
  } else {
    out.say('No root cause has been recorded for it yet.');
  }
  // Only a pattern that matches the question about as well as the best record does.
  const pattern = input.facts.find((f) => f.type === 'pattern' && f.relevance >= CLOSE_MATCH);
  if (pattern) out.say(`It matches the known pattern ${cite(pattern)} (${pattern.summary}).`, pattern);
  return true;
}

function answerFix(input: ChatInput, subjectId: string | null, out: AnswerBuilder) {
  const investigation = input.facts.find(
    (f) => f.type === 'investigation' && f.id === subjectId && f.actions.length > 0,
  );
  const incident = input.facts.find((f) => f.type === 'incident' && f.id === subjectId);
  if (investigation) {
    out.say(
      `For ${incident ? cite(incident) : subjectId} the investigation recommended: ${steps(investigation.actions)}`,
      ...(incident ? [incident] : []),
      investigation,
    );
  } else if (incident?.actions.length) {
    out.say(`For ${cite(incident)} the recommended actions were: ${steps(incident.actions)}`, incident);
  } else if (incident) {
    out.say(`No fix is recorded for ${cite(incident)} (${incident.summary}).`, incident);
  }
  const runbook = input.facts.find((f) => f.type === 'runbook' && f.relevance >= RELATED);
  if (runbook)
    out.say(
      out.empty
        ? describe(runbook)
        : `See also the runbook ${cite(runbook)}${runbook.actions.length ? `: ${steps(runbook.actions, 3)}` : '.'}`,
      runbook,
    );
  const pattern = input.facts.find((f) => f.type === 'pattern' && f.actions.length > 0 && f.relevance >= RELATED);
  if (pattern) out.say(`The known pattern ${cite(pattern)} was fixed by: ${steps(pattern.actions, 3)}`, pattern);
  return !out.empty;
}

function answerOfType(input: ChatInput, type: ChatFact['type'], max: number, out: AnswerBuilder) {
  const facts = input.facts.filter((f) => f.type === type).slice(0, max);
  if (facts.length === 0) return false;
  const [first, ...others] = facts;
  out.say(describe(first!), first!);
  for (const f of others) if (f.relevance >= first!.relevance * CLOSE_MATCH) out.say(`Also: ${describe(f)}`, f);
  return true;
}

function answerSearch(input: ChatInput, out: AnswerBuilder) {
  const [first, ...others] = input.facts;
  out.say(describe(first!), first!);
  for (const f of others.filter((o) => o.relevance >= RELATED).slice(0, 2)) out.say(describe(f), f);
}

/** The built-in answer to a chat question. */
export function builtinAnswer(input: ChatInput): ChatAnswer {
  const out = new AnswerBuilder();
  const intent = input.intent;
  if (intent.kind === 'count' || intent.kind === 'list') {
    answerCount(input, intent, out);
    return out.done();
  }
  if (input.facts.length === 0) return { reply: NOTHING, sources: [] };
  const handled =
    intent.kind === 'cause'
      ? answerCause(input, intent.subjectIncidentId, intent.latest, out)
      : intent.kind === 'fix'
        ? answerFix(input, intent.subjectIncidentId, out)
        : intent.kind === 'runbook'
          ? answerOfType(input, 'runbook', 2, out)
          : intent.kind === 'pattern'
            ? answerOfType(input, 'pattern', 2, out)
            : intent.kind === 'evidence'
              ? answerOfType(input, 'evidence', 3, out)
              : false;
  if (!handled) answerSearch(input, out);
  return out.done();
}
