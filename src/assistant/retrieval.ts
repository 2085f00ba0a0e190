/**
 * Retrieval for the assistant chat: reads the question in its conversation (intents.ts), looks
 * up what it needs (search.ts: full-text candidates and structured lookups, every query filtered
 * by tenant), ranks the candidates with boosts for what the question names, and picks the
 * incident a cause, fix or evidence question is about.
 */
import type { ChatFact, ChatIntent } from '../analysis/types.js';
import type { Db } from '../db/client.js';
import type { ChatSource } from '../db/schema/knowledge.js';
import { analyzeQuestion, noiseWords, withConversation, type QuestionAnalysis } from './intents.js';
import {
  countIncidents,
  matchingIncidents,
  evidenceOfIncident,
  focusIncidents,
  incidentsByIds,
  investigationsByIncident,
  knownServices,
  latestIncidentId,
  searchCandidates,
  type Candidate,
} from './search.js';
import { correctTypo, dedupeByGroup, tableVocabulary } from './synonyms.js';

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
/** At most this much is added for being new, halving every RECENCY_HALF_LIFE_DAYS: recent incidents lead ties. */
const RECENCY_BOOST = 0.3;
const RECENCY_HALF_LIFE_DAYS = 30;
const DAY_MS = 86_400_000;
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
 * The keywords with typos corrected against the synonym table, the tenant's service names and
 * the noise words (a misspelt noise word is dropped), one keyword per synonym group.
 */
export function correctTerms(terms: string[], services: string[]): string[] {
  const noise = new Set(noiseWords());
  const vocabulary = new Set([
    ...tableVocabulary(),
    ...noise,
    ...services.flatMap((s) => [s.toLowerCase(), ...s.toLowerCase().split(/[-_.]/)]).filter((w) => w.length >= 4),
  ]);
  const corrected = terms.map((t) => correctTypo(t, vocabulary)).filter((t) => !noise.has(t));
  return dedupeByGroup([...new Set(corrected)]);
}

/** What recency adds to a fact's score: RECENCY_BOOST when new, half of it RECENCY_HALF_LIFE_DAYS later. */
export function recencyBoost(at: string | null, now: Date): number {
  if (!at) return 0;
  const ageDays = Math.max(0, (now.getTime() - Date.parse(at)) / DAY_MS);
  return RECENCY_BOOST * 0.5 ** (ageDays / RECENCY_HALF_LIFE_DAYS);
}

/**
 * Adds to each candidate's score what the question names (its record type, a service, the
 * anchored or previously discussed incident), sets each fact's relevance, and sorts best first.
 */
function boostCandidates(
  raw: Candidate[],
  analysis: QuestionAnalysis,
  named: {
    mentioned: string[];
    anchorIncidentId: string | null;
    focus: string[];
    focusSources: ChatSource[];
    now: Date;
  },
): Candidate[] {
  const { mentioned, anchorIncidentId, focus, focusSources, now } = named;
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
    // Incidents and what belongs to them age; patterns and runbooks stay as relevant as they are.
    if (fact.incidentId) total += recencyBoost(fact.at, now);
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
  const read = withConversation(analyzeQuestion(req.question, req.now), previous);
  const lastAnswer = [...req.history].reverse().find((t) => t.role === 'assistant');
  const focusSources = read.inheritsSubject && lastAnswer ? lastAnswer.sources : [];

  const [services, focus] = await Promise.all([
    knownServices(db, req.tenantId),
    focusIncidents(db, req.tenantId, focusSources),
  ]);
  const analysis = { ...read, terms: correctTerms(read.terms, services) };
  const mentioned = mentionedServices(analysis.terms, services);
  const result = (intent: ChatIntent, facts: ChatFact[]): Retrieval => ({
    intent,
    facts: facts.slice(0, MAX_FACTS),
    analysis: { ...analysis, services: mentioned },
  });

  if (analysis.kind === 'count' || analysis.kind === 'list') {
    // A service named exactly filters; otherwise the keywords describe the incidents ("database
    // incidents"), every incident matching them as well as the best one does, newest first.
    const exact = mentioned.length > 0 && mentioned.every((m) => analysis.terms.includes(m.toLowerCase()));
    const subject = exact ? [] : analysis.terms;
    const { total, facts } = exact
      ? await countIncidents(db, req.tenantId, {
          services: mentioned,
          terms: [],
          period: analysis.period,
          severity: analysis.severity,
          byRelevance: false,
        })
      : await matchingIncidents(db, req.tenantId, {
          terms: subject,
          period: analysis.period,
          severity: analysis.severity,
        });
    const period = analysis.period
      ? { label: analysis.period.label, from: analysis.period.from.toISOString(), to: analysis.period.to.toISOString() }
      : null;
    const service = exact ? mentioned.join(', ') : null;
    return result({ kind: analysis.kind, service, severity: analysis.severity, subject, period, total }, facts);
  }

  // Ranked full-text candidates of every type, with boosts for what the question names.
  const raw = await searchCandidates(db, req.tenantId, analysis.terms, analysis.period);
  const boosted = boostCandidates(raw, analysis, {
    mentioned,
    anchorIncidentId: req.anchorIncidentId,
    focus,
    focusSources,
    now: req.now,
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
  } else if (analysis.kind === 'search' && namesOwnSubject && boosted[0]?.fact.incidentId) {
    // A question about an incident's records answers with the incident first; "the latest X" with
    // the newest incident among the good matches.
    subjectIncidentId = boosted[0].fact.incidentId;
    if (analysis.latest) {
      const top = Math.max(0, ...boosted.map((c) => c.matched));
      const near = boosted.filter((c) => c.fact.incidentId && c.matched >= top * 0.75);
      const newest = await incidentsByIds(db, req.tenantId, [...new Set(near.map((c) => c.fact.incidentId!))]);
      newest.sort((a, b) => (b.at ?? '').localeCompare(a.at ?? ''));
      subjectIncidentId = newest[0]?.id ?? subjectIncidentId;
    }
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
    // A search leads with the incident; its investigation keeps its rank among the other records.
    else if (analysis.kind === 'search' && namesOwnSubject) lead.push(...incident);
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
