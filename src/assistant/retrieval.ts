/**
 * Retrieval for the assistant chat: reads the question in its conversation (intents.ts), looks
 * up what it needs (search.ts: full-text candidates and structured lookups, every query filtered
 * by tenant), ranks the candidates with boosts for what the question names, and picks the
 * incident a cause, fix or evidence question is about.
 */
import type { ChatFact, ChatIntent } from '../analysis/types.js';
import type { Db } from '../db/client.js';
import type { ChatSource } from '../db/schema/knowledge.js';
import { analyzeQuestion, withConversation, type QuestionAnalysis } from './intents.js';
import {
  countIncidents,
  evidenceOfIncident,
  focusIncidents,
  incidentsByIds,
  investigationsByIncident,
  knownServices,
  latestIncidentId,
  searchCandidates,
  type Candidate,
} from './search.js';

export { MAX_COUNTED_LISTED } from './search.js';

export interface RetrievalRequest {
  tenantId: string;
  question: string;
  /** The conversation so far, oldest first; the assistant's turns with the sources they cited. */
  history: Array<{ role: 'user' | 'assistant'; content: string; sources: ChatSource[] }>;
  anchorIncidentId: string | null;
  now: Date;
}

export interface Retrieval {
  intent: ChatIntent;
  /** Best first, at most MAX_FACTS. */
  facts: ChatFact[];
  /** How the question was read (for logs and tests). */
  analysis: QuestionAnalysis & { inheritsSubject: boolean; services: string[] };
}

/** Facts handed to the responder. */
export const MAX_FACTS = 8;
/** A candidate below this share of the best score is not worth citing. */
const RELATIVE_FLOOR = 0.4;

const TYPE_HINT_BOOST = 1.5;
const SERVICE_BOOST = 0.5;
const ANCHOR_BOOST = 2;
const FOCUS_BOOST = 1.5;
const INCIDENT_SHARE = 0.3;
const factKey = (f: { type: string; id: string }) => `${f.type}:${f.id}`;

/**
 * Services the keywords name: exact names first ("payments-db"); otherwise a keyword that is the
 * first part of service names ("checkout" → checkout-api, checkout-web).
 */
export function mentionedServices(terms: string[], services: string[]): string[] {
  const lower = new Map(services.map((s) => [s.toLowerCase(), s]));
  const exact = terms.filter((t) => lower.has(t)).map((t) => lower.get(t)!);
  if (exact.length > 0) return [...new Set(exact)];
  const partial = services.filter((s) => terms.some((t) => t.length >= 3 && s.toLowerCase().split(/[-_.]/)[0] === t));
  return [...new Set(partial)];
}

/**
 * Adds to each candidate's score what the question names (its record type, a service, the
 * anchored or previously discussed incident), sets each fact's relevance, and sorts best first.
 */
function boostCandidates(
  raw: Candidate[],
  analysis: QuestionAnalysis,
  named: { mentioned: string[]; anchorIncidentId: string | null; focus: string[]; focusSources: ChatSource[] },
): Candidate[] {
  const { mentioned, anchorIncidentId, focus, focusSources } = named;
  const focusKeys = new Set(focusSources.map(factKey));
  const bestMatched = Math.max(0, ...raw.map((c) => c.matched));
  // An investigation or evidence item is about its incident: it shares part of how well that matched.
  const incidentMatch = new Map(raw.filter((c) => c.fact.type === 'incident').map((c) => [c.fact.id, c.matched]));
  const boosted: Candidate[] = raw.map(({ fact, matched, score }) => {
    fact.relevance = bestMatched > 0 ? Math.round((matched / bestMatched) * 100) / 100 : 0;
    let total = score;
    if (fact.type !== 'incident' && fact.incidentId)
      total += INCIDENT_SHARE * (incidentMatch.get(fact.incidentId) ?? 0);
    if (analysis.typeHints.includes(fact.type)) total += TYPE_HINT_BOOST;
    if (fact.service && mentioned.includes(fact.service)) total += SERVICE_BOOST;
    if (anchorIncidentId && fact.incidentId === anchorIncidentId) total += ANCHOR_BOOST;
    if (focusKeys.has(factKey(fact)) || (fact.incidentId && focus.includes(fact.incidentId))) total += FOCUS_BOOST;
    return { fact, matched, score: total };
  });
  boosted.sort((a, b) => b.score - a.score || (b.fact.at ?? '').localeCompare(a.fact.at ?? ''));
  return boosted;
}

/**
 * Reads the question in its conversation, looks up what it needs and returns the facts, best
 * first, with the structured intent the responder answers.
 */
export async function retrieve(db: Db, req: RetrievalRequest): Promise<Retrieval> {
  // The conversation so far, folded turn by turn: a follow-up inherits what it does not restate.
  let previous: QuestionAnalysis | null = null;
  for (const turn of req.history) {
    if (turn.role === 'user') previous = withConversation(analyzeQuestion(turn.content, req.now), previous);
  }
  const analysis = withConversation(analyzeQuestion(req.question, req.now), previous);
  const lastAnswer = [...req.history].reverse().find((t) => t.role === 'assistant');
  const focusSources = analysis.inheritsSubject && lastAnswer ? lastAnswer.sources : [];

  const [services, focus] = await Promise.all([
    knownServices(db, req.tenantId),
    focusIncidents(db, req.tenantId, focusSources),
  ]);
  const mentioned = mentionedServices(analysis.terms, services);
  const result = (intent: ChatIntent, facts: ChatFact[]): Retrieval => ({
    intent,
    facts: facts.slice(0, MAX_FACTS),
    analysis: { ...analysis, services: mentioned },
  });

  if (analysis.kind === 'count' || analysis.kind === 'list') {
    // Service names filter; without one, the keywords describe the incidents ("database incidents").
    const subject = mentioned.length > 0 ? [] : analysis.terms;
    const { total, facts } = await countIncidents(db, req.tenantId, {
      services: mentioned,
      terms: subject,
      period: analysis.period,
      severity: analysis.severity,
      // "Which incidents were caused by …" lists the best matches first; a count lists the newest.
      byRelevance: analysis.kind === 'list',
    });
    const period = analysis.period
      ? { label: analysis.period.label, from: analysis.period.from.toISOString(), to: analysis.period.to.toISOString() }
      : null;
    const service = mentioned.length > 0 ? mentioned.join(', ') : null;
    return result({ kind: analysis.kind, service, severity: analysis.severity, subject, period, total }, facts);
  }

  // Ranked full-text candidates of every type, with boosts for what the question names.
  const raw = await searchCandidates(db, req.tenantId, analysis.terms, analysis.period);
  const boosted = boostCandidates(raw, analysis, {
    mentioned,
    anchorIncidentId: req.anchorIncidentId,
    focus,
    focusSources,
  });
  const best = boosted[0]?.score ?? 0;
  const ranked = boosted.filter((c) => c.score >= best * RELATIVE_FLOOR).map((c) => c.fact);

  // The incident a cause, fix or evidence question is about.
  const namesOwnSubject = analysis.terms.length > 0 && !analysis.inheritsSubject;
  let subjectIncidentId: string | null = null;
  if (analysis.kind === 'cause' || analysis.kind === 'fix' || analysis.kind === 'evidence') {
    const incidentScores = boosted.filter((c) => c.fact.type === 'incident' || c.fact.type === 'investigation');
    // Good matches are judged on the keywords they cover, before any boost.
    const top = Math.max(0, ...incidentScores.map((c) => c.matched));
    const near = incidentScores.filter((c) => c.matched >= top * 0.75);
    const fromSearch =
      analysis.latest && analysis.kind === 'cause'
        ? [...near].sort((a, b) => (b.fact.at ?? '').localeCompare(a.fact.at ?? ''))[0]
        : near[0];
    const searched = fromSearch?.fact.incidentId ?? null;
    subjectIncidentId = namesOwnSubject
      ? (searched ?? req.anchorIncidentId ?? focus[0] ?? null)
      : (req.anchorIncidentId ?? focus[0] ?? searched);
    if (analysis.latest && analysis.kind === 'cause' && fromSearch && namesOwnSubject) {
      // "the last X": the newest incident among the good matches, whether or not its own row ranked first.
      const newest = await incidentsByIds(db, req.tenantId, [...new Set(near.map((c) => c.fact.incidentId!))]);
      newest.sort((a, b) => (b.at ?? '').localeCompare(a.at ?? ''));
      subjectIncidentId = newest[0]?.id ?? subjectIncidentId;
    }
  } else if (req.anchorIncidentId && !namesOwnSubject) {
    subjectIncidentId = req.anchorIncidentId;
  }
  if (
    !subjectIncidentId &&
    analysis.terms.length === 0 &&
    (analysis.latest || analysis.kind === 'cause' || analysis.kind === 'fix')
  ) {
    // "What caused the last incident?": no subject named, so the most recent incident (of the period).
    subjectIncidentId = await latestIncidentId(db, req.tenantId, analysis.period);
  }

  const lead: ChatFact[] = [];
  if (subjectIncidentId) {
    const [incident, investigation] = await Promise.all([
      incidentsByIds(db, req.tenantId, [subjectIncidentId]),
      investigationsByIncident(db, req.tenantId, [subjectIncidentId]),
    ]);
    const evidence =
      analysis.kind === 'evidence' || (!namesOwnSubject && analysis.kind === 'search')
        ? await evidenceOfIncident(db, req.tenantId, subjectIncidentId, analysis.terms, 3)
        : [];
    if (analysis.kind === 'fix') lead.push(...investigation, ...incident);
    else if (analysis.kind === 'evidence') lead.push(...evidence, ...incident);
    else lead.push(...incident, ...investigation, ...evidence);
  }
  const seen = new Set(lead.map(factKey));
  const facts = [...lead, ...ranked.filter((f) => !seen.has(factKey(f)))];

  const intent: ChatIntent =
    analysis.kind === 'cause'
      ? { kind: 'cause', latest: analysis.latest, subjectIncidentId }
      : analysis.kind === 'fix'
        ? { kind: 'fix', subjectIncidentId }
        : analysis.kind === 'evidence'
          ? { kind: 'evidence', subjectIncidentId }
          : analysis.kind === 'runbook'
            ? { kind: 'runbook' }
            : analysis.kind === 'pattern'
              ? { kind: 'pattern' }
              : { kind: 'search' };
  return result(intent, facts);
}
