/**
 * Retrieval for the assistant chat: PostgreSQL full-text search over one tenant's incidents,
 * investigations, evidence, patterns and runbooks (the `search` tsvector columns of
 * drizzle/0009, GIN-indexed), ranked, plus the structured lookups some questions need (a count of
 * incidents by service and period; the most recent matching incident and its investigation).
 * Every query is filtered by tenant.
 */
import { and, asc, count, desc, eq, gte, inArray, lt, sql, type SQL } from 'drizzle-orm';
import type { ChatFact, ChatIntent } from '../analysis/types.js';
import type { Db } from '../db/client.js';
import { incidents, type Severity } from '../db/schema/incidents.js';
import { evidenceItems, investigations, runbooks } from '../db/schema/investigation.js';
import { patterns, type ChatSource } from '../db/schema/knowledge.js';
import { parseRunbookSteps } from '../domain/runbooks.js';
import { analyzeQuestion, withConversation, type Period, type QuestionAnalysis } from './intents.js';

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
/** Incidents listed with a count. */
export const MAX_COUNTED_LISTED = 10;
/** Candidates read per record type. */
const PER_TYPE = 8;
/** A candidate below this share of the best score is not worth citing. */
const RELATIVE_FLOOR = 0.4;

const TYPE_HINT_BOOST = 1.5;
const SERVICE_BOOST = 0.5;
const ANCHOR_BOOST = 2;
const FOCUS_BOOST = 1.5;
const INCIDENT_SHARE = 0.3;

interface Candidate {
  fact: ChatFact;
  /** Keywords matched, weighted by where (see matchedTerms). */
  matched: number;
  /** With rank and boosts: the order of the facts. */
  score: number;
}

const iso = (d: Date | null) => (d ? d.toISOString() : null);
const clip = (text: string, max: number) => (text.length <= max ? text : `${text.slice(0, max - 1).trimEnd()}…`);
const factKey = (f: { type: string; id: string }) => `${f.type}:${f.id}`;

/** One tsquery per keyword; a question's query is their OR (plainto_tsquery would AND them all). */
const termQuery = (term: string) => sql`plainto_tsquery('english', ${term})`;
const anyTermQuery = (terms: string[]) => sql`(${sql.join(terms.map(termQuery), sql` || `)})`;

/**
 * How many of the keywords a document matches, each counted by where it matched: 1 in the
 * A-weighted part (titles, services, root causes of investigations, evidence summaries), 0.7 in
 * B, 0.4 anywhere else. This rewards covering the question over repeating one word.
 */
function matchedTerms(search: SQL, terms: string[]): SQL<number> {
  const parts = terms.map(
    (term) => sql`(case when ts_filter(${search}, '{a}') @@ ${termQuery(term)} then 1.0
      when ts_filter(${search}, '{a,b}') @@ ${termQuery(term)} then 0.7
      when ${search} @@ ${termQuery(term)} then 0.4 else 0 end)`,
  );
  return sql<number>`(${sql.join(parts, sql` + `)})`.mapWith(Number);
}

const rankOf = (search: SQL, terms: string[]) => sql<number>`ts_rank_cd(${search}, ${anyTermQuery(terms)}, 32)`.mapWith(Number);

const searchColumn = (table: string) => sql.raw(`"${table}"."search"`);

function incidentFact(row: {
  id: string; title: string; service: string | null; status: string; severity: string; rootCause: string | null;
  recommendedActions: string[]; createdAt: Date;
}): ChatFact {
  return {
    type: 'incident',
    id: row.id,
    title: row.title,
    service: row.service,
    at: iso(row.createdAt),
    incidentId: row.id,
    summary: `${row.severity} incident${row.service ? ` on ${row.service}` : ''}, ${row.status}, opened ${row.createdAt.toISOString().slice(0, 10)}`,
    rootCause: row.rootCause,
    actions: row.recommendedActions,
    relevance: 1,
  };
}

function investigationFact(row: {
  incidentId: string; title: string; service: string | null; status: string; rootCause: string | null; confidence: number;
  recommendedActions: string[]; completedAt: Date | null; startedAt: Date;
}): ChatFact {
  return {
    type: 'investigation',
    id: row.incidentId,
    title: `Investigation of "${row.title}"`,
    service: row.service,
    at: iso(row.completedAt ?? row.startedAt),
    incidentId: row.incidentId,
    summary: `investigation ${row.status}, confidence ${row.confidence.toFixed(2)}`,
    rootCause: row.rootCause,
    actions: row.recommendedActions,
    relevance: 1,
  };
}

function evidenceFact(row: {
  id: string; incidentId: string; type: string; source: string; summary: string; severity: string; occurredAt: Date; service: string | null;
}): ChatFact {
  return {
    type: 'evidence',
    id: row.id,
    title: clip(row.summary, 120),
    service: row.service,
    at: iso(row.occurredAt),
    incidentId: row.incidentId,
    summary: `${row.type} evidence from ${row.source} (${row.severity}) of incident ${row.incidentId}: ${clip(row.summary, 400)}`,
    rootCause: null,
    actions: [],
    relevance: 1,
  };
}

function patternFact(row: {
  id: string; title: string; service: string | null; category: string; rootCause: string; fix: string[]; status: string;
  confidence: number; occurrences: number; lastSeenAt: Date;
}): ChatFact {
  return {
    type: 'pattern',
    id: row.id,
    title: row.title,
    service: row.service,
    at: iso(row.lastSeenAt),
    incidentId: null,
    summary: `${row.status} pattern (${row.category}), confidence ${row.confidence.toFixed(2)}, seen in ${row.occurrences} incident${row.occurrences === 1 ? '' : 's'}, last ${row.lastSeenAt.toISOString().slice(0, 10)}`,
    rootCause: row.rootCause,
    actions: row.fix,
    relevance: 1,
  };
}

function runbookFact(row: { id: string; title: string; service: string | null; tags: string[]; content: string; updatedAt: Date }): ChatFact {
  return {
    type: 'runbook',
    id: row.id,
    title: row.title,
    service: row.service,
    at: iso(row.updatedAt),
    incidentId: null,
    summary: `runbook${row.service ? ` for ${row.service}` : ''}${row.tags.length ? ` (tags: ${row.tags.join(', ')})` : ''}`,
    rootCause: null,
    actions: parseRunbookSteps(row.content).map((s) => s.text).slice(0, 10),
    relevance: 1,
  };
}

const incidentColumns = {
  id: incidents.id,
  title: incidents.title,
  service: incidents.service,
  status: incidents.status,
  severity: incidents.severity,
  rootCause: incidents.rootCause,
  recommendedActions: incidents.recommendedActions,
  createdAt: incidents.createdAt,
};

const investigationColumns = {
  incidentId: investigations.incidentId,
  title: incidents.title,
  service: incidents.service,
  status: investigations.status,
  rootCause: investigations.rootCause,
  confidence: investigations.confidence,
  recommendedActions: investigations.recommendedActions,
  completedAt: investigations.completedAt,
  startedAt: investigations.startedAt,
};

const evidenceColumns = {
  id: evidenceItems.id,
  incidentId: evidenceItems.incidentId,
  type: evidenceItems.type,
  source: evidenceItems.source,
  summary: evidenceItems.summary,
  severity: evidenceItems.severity,
  occurredAt: evidenceItems.occurredAt,
  service: incidents.service,
};

const inPeriod = (column: typeof incidents.createdAt, period: Period | null) =>
  period ? [gte(column, period.from), lt(column, period.to)] : [];

/** Full-text candidates of every type, scored by matched keywords, then rank. */
async function searchCandidates(db: Db, tenantId: string, terms: string[], period: Period | null): Promise<Candidate[]> {
  if (terms.length === 0) return [];
  const scored = <T>(rows: Array<T & { matched: number; rank: number }>, toFact: (row: T) => ChatFact) =>
    rows.map((row) => ({ fact: toFact(row), matched: row.matched, score: row.matched + 0.5 * row.rank }));

  const s = {
    incidents: searchColumn('incidents'),
    investigations: searchColumn('investigations'),
    evidence: searchColumn('evidence_items'),
    patterns: searchColumn('patterns'),
    runbooks: searchColumn('runbooks'),
  };
  const matches = (search: SQL) => sql`${search} @@ ${anyTermQuery(terms)}`;
  const order = (search: SQL) => [desc(matchedTerms(search, terms)), desc(rankOf(search, terms))];

  const [incidentRows, investigationRows, evidenceRows, patternRows, runbookRows] = await Promise.all([
    db
      .select({ ...incidentColumns, matched: matchedTerms(s.incidents, terms), rank: rankOf(s.incidents, terms) })
      .from(incidents)
      .where(and(eq(incidents.tenantId, tenantId), matches(s.incidents), ...inPeriod(incidents.createdAt, period)))
      .orderBy(...order(s.incidents), desc(incidents.createdAt))
      .limit(PER_TYPE),
    db
      .select({ ...investigationColumns, matched: matchedTerms(s.investigations, terms), rank: rankOf(s.investigations, terms) })
      .from(investigations)
      .innerJoin(incidents, eq(incidents.id, investigations.incidentId))
      .where(and(eq(investigations.tenantId, tenantId), matches(s.investigations), ...inPeriod(incidents.createdAt, period)))
      .orderBy(...order(s.investigations), desc(incidents.createdAt))
      .limit(PER_TYPE),
    db
      .select({ ...evidenceColumns, matched: matchedTerms(s.evidence, terms), rank: rankOf(s.evidence, terms) })
      .from(evidenceItems)
      .innerJoin(incidents, eq(incidents.id, evidenceItems.incidentId))
      .where(and(eq(evidenceItems.tenantId, tenantId), matches(s.evidence), ...inPeriod(incidents.createdAt, period)))
      .orderBy(...order(s.evidence), desc(evidenceItems.occurredAt))
      .limit(PER_TYPE),
    db
      .select({
        id: patterns.id, title: patterns.title, service: patterns.service, category: patterns.category, rootCause: patterns.rootCause,
        fix: patterns.fix, status: patterns.status, confidence: patterns.confidence, occurrences: patterns.occurrences, lastSeenAt: patterns.lastSeenAt,
        matched: matchedTerms(s.patterns, terms), rank: rankOf(s.patterns, terms),
      })
      .from(patterns)
      .where(and(eq(patterns.tenantId, tenantId), matches(s.patterns)))
      .orderBy(...order(s.patterns), desc(patterns.lastSeenAt))
      .limit(PER_TYPE),
    db
      .select({
        id: runbooks.id, title: runbooks.title, service: runbooks.service, tags: runbooks.tags, content: runbooks.content, updatedAt: runbooks.updatedAt,
        matched: matchedTerms(s.runbooks, terms), rank: rankOf(s.runbooks, terms),
      })
      .from(runbooks)
      .where(and(eq(runbooks.tenantId, tenantId), matches(s.runbooks)))
      .orderBy(...order(s.runbooks), desc(runbooks.updatedAt))
      .limit(PER_TYPE),
  ]);
  return [
    ...scored(incidentRows, incidentFact),
    ...scored(investigationRows, investigationFact),
    ...scored(evidenceRows, evidenceFact),
    ...scored(patternRows, patternFact),
    ...scored(runbookRows, runbookFact),
  ];
}

/** The tenant's service names (incidents, runbooks, patterns), to recognise them in a question. */
async function knownServices(db: Db, tenantId: string): Promise<string[]> {
  const rows = await db.execute<{ service: string }>(sql`
    (select distinct ${incidents.service} as service from ${incidents} where ${incidents.tenantId} = ${tenantId} and ${incidents.service} is not null limit 500)
    union (select distinct ${runbooks.service} from ${runbooks} where ${runbooks.tenantId} = ${tenantId} and ${runbooks.service} is not null limit 500)
    union (select distinct ${patterns.service} from ${patterns} where ${patterns.tenantId} = ${tenantId} and ${patterns.service} is not null limit 500)`);
  return [...rows].map((r) => r.service);
}

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

async function incidentsByIds(db: Db, tenantId: string, ids: string[]): Promise<ChatFact[]> {
  if (ids.length === 0) return [];
  const rows = await db.select(incidentColumns).from(incidents).where(and(eq(incidents.tenantId, tenantId), inArray(incidents.id, ids)));
  return ids.flatMap((id) => rows.filter((r) => r.id === id).map(incidentFact));
}

async function investigationsByIncident(db: Db, tenantId: string, ids: string[]): Promise<ChatFact[]> {
  if (ids.length === 0) return [];
  const rows = await db
    .select(investigationColumns)
    .from(investigations)
    .innerJoin(incidents, eq(incidents.id, investigations.incidentId))
    .where(and(eq(investigations.tenantId, tenantId), inArray(investigations.incidentId, ids)));
  return ids.flatMap((id) => rows.filter((r) => r.incidentId === id).map(investigationFact));
}

const severityOrder = sql`case ${evidenceItems.severity} when 'critical' then 0 when 'high' then 1 when 'medium' then 2 when 'low' then 3 else 4 end`;

/** An incident's evidence: the items matching the keywords first, then by relevance (severity), newest first. */
async function evidenceOfIncident(db: Db, tenantId: string, incidentId: string, terms: string[], limit: number): Promise<ChatFact[]> {
  const search = searchColumn('evidence_items');
  const rows = await db
    .select(evidenceColumns)
    .from(evidenceItems)
    .innerJoin(incidents, eq(incidents.id, evidenceItems.incidentId))
    .where(and(eq(evidenceItems.tenantId, tenantId), eq(evidenceItems.incidentId, incidentId)))
    .orderBy(...(terms.length ? [desc(matchedTerms(search, terms))] : []), asc(severityOrder), desc(evidenceItems.occurredAt))
    .limit(limit);
  return rows.map(evidenceFact);
}

/** Incidents of a period (and a service, or matching keywords; and a severity): the total and the newest ones. */
async function countIncidents(
  db: Db,
  tenantId: string,
  args: { services: string[]; terms: string[]; period: Period | null; severity: Severity | null; byRelevance: boolean },
): Promise<{ total: number; facts: ChatFact[] }> {
  const filters: SQL[] = [eq(incidents.tenantId, tenantId), ...inPeriod(incidents.createdAt, args.period)];
  if (args.severity) filters.push(eq(incidents.severity, args.severity));
  if (args.services.length > 0) filters.push(inArray(incidents.service, args.services));
  else if (args.terms.length > 0) filters.push(sql`${searchColumn('incidents')} @@ ${anyTermQuery(args.terms)}`);
  const where = and(...filters);
  const [rows, totals] = await Promise.all([
    db
      .select(incidentColumns)
      .from(incidents)
      .where(where)
      .orderBy(...(args.byRelevance && args.terms.length ? [desc(matchedTerms(searchColumn('incidents'), args.terms))] : []), desc(incidents.createdAt), desc(incidents.id))
      .limit(MAX_COUNTED_LISTED),
    db.select({ total: count() }).from(incidents).where(where),
  ]);
  return { total: totals[0]?.total ?? 0, facts: rows.map(incidentFact) };
}

/** The incidents a previous answer was about (its incident, investigation and evidence sources). */
async function focusIncidents(db: Db, tenantId: string, sources: ChatSource[]): Promise<string[]> {
  const ids: string[] = [];
  const evidenceIds = sources.filter((s) => s.type === 'evidence').map((s) => s.id);
  const evidenceRows = evidenceIds.length
    ? await db
        .select({ id: evidenceItems.id, incidentId: evidenceItems.incidentId })
        .from(evidenceItems)
        .where(and(eq(evidenceItems.tenantId, tenantId), inArray(evidenceItems.id, evidenceIds)))
    : [];
  for (const source of sources) {
    const id = source.type === 'evidence' ? evidenceRows.find((r) => r.id === source.id)?.incidentId : source.type === 'incident' || source.type === 'investigation' ? source.id : undefined;
    if (id && !ids.includes(id)) ids.push(id);
  }
  return ids;
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

  const [services, focus] = await Promise.all([knownServices(db, req.tenantId), focusIncidents(db, req.tenantId, focusSources)]);
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
    const period = analysis.period ? { label: analysis.period.label, from: analysis.period.from.toISOString(), to: analysis.period.to.toISOString() } : null;
    const service = mentioned.length > 0 ? mentioned.join(', ') : null;
    return result({ kind: analysis.kind, service, severity: analysis.severity, subject, period, total }, facts);
  }

  // Ranked full-text candidates of every type, with boosts for what the question names.
  const raw = await searchCandidates(db, req.tenantId, analysis.terms, analysis.period);
  const focusKeys = new Set(focusSources.map(factKey));
  const bestMatched = Math.max(0, ...raw.map((c) => c.matched));
  // An investigation or evidence item is about its incident: it shares part of how well that matched.
  const incidentMatch = new Map(raw.filter((c) => c.fact.type === 'incident').map((c) => [c.fact.id, c.matched]));
  const boosted: Candidate[] = raw.map(({ fact, matched, score }) => {
    fact.relevance = bestMatched > 0 ? Math.round((matched / bestMatched) * 100) / 100 : 0;
    let total = score;
    if (fact.type !== 'incident' && fact.incidentId) total += INCIDENT_SHARE * (incidentMatch.get(fact.incidentId) ?? 0);
    if (analysis.typeHints.includes(fact.type)) total += TYPE_HINT_BOOST;
    if (fact.service && mentioned.includes(fact.service)) total += SERVICE_BOOST;
    if (req.anchorIncidentId && fact.incidentId === req.anchorIncidentId) total += ANCHOR_BOOST;
    if (focusKeys.has(factKey(fact)) || (fact.incidentId && focus.includes(fact.incidentId))) total += FOCUS_BOOST;
    return { fact, matched, score: total };
  });
  boosted.sort((a, b) => b.score - a.score || (b.fact.at ?? '').localeCompare(a.fact.at ?? ''));
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
    const fromSearch = analysis.latest && analysis.kind === 'cause'
      ? [...near].sort((a, b) => (b.fact.at ?? '').localeCompare(a.fact.at ?? ''))[0]
      : near[0];
    const searched = fromSearch?.fact.incidentId ?? null;
    subjectIncidentId = namesOwnSubject ? searched ?? req.anchorIncidentId ?? focus[0] ?? null : req.anchorIncidentId ?? focus[0] ?? searched;
    if (analysis.latest && analysis.kind === 'cause' && fromSearch && namesOwnSubject) {
      // "the last X": the newest incident among the good matches, whether or not its own row ranked first.
      const newest = await incidentsByIds(db, req.tenantId, [...new Set(near.map((c) => c.fact.incidentId!))]);
      newest.sort((a, b) => (b.at ?? '').localeCompare(a.at ?? ''));
      subjectIncidentId = newest[0]?.id ?? subjectIncidentId;
    }
  } else if (req.anchorIncidentId && !namesOwnSubject) {
    subjectIncidentId = req.anchorIncidentId;
  }
  if (!subjectIncidentId && analysis.terms.length === 0 && (analysis.latest || analysis.kind === 'cause' || analysis.kind === 'fix')) {
    // "What caused the last incident?": no subject named, so the most recent incident (of the period).
    const [newest] = await db
      .select({ id: incidents.id })
      .from(incidents)
      .where(and(eq(incidents.tenantId, req.tenantId), ...inPeriod(incidents.createdAt, analysis.period)))
      .orderBy(desc(incidents.createdAt), desc(incidents.id))
      .limit(1);
    subjectIncidentId = newest?.id ?? null;
  }

  const lead: ChatFact[] = [];
  if (subjectIncidentId) {
    const [incident, investigation] = await Promise.all([
      incidentsByIds(db, req.tenantId, [subjectIncidentId]),
      investigationsByIncident(db, req.tenantId, [subjectIncidentId]),
    ]);
    const evidence = analysis.kind === 'evidence' || (!namesOwnSubject && analysis.kind === 'search')
      ? await evidenceOfIncident(db, req.tenantId, subjectIncidentId, analysis.terms, 3)
      : [];
    if (analysis.kind === 'fix') lead.push(...investigation, ...incident);
    else if (analysis.kind === 'evidence') lead.push(...evidence, ...incident);
    else lead.push(...incident, ...investigation, ...evidence);
  }
  const seen = new Set(lead.map(factKey));
  const facts = [...lead, ...ranked.filter((f) => !seen.has(factKey(f)))];

  const intent: ChatIntent =
    analysis.kind === 'cause' ? { kind: 'cause', latest: analysis.latest, subjectIncidentId }
    : analysis.kind === 'fix' ? { kind: 'fix', subjectIncidentId }
    : analysis.kind === 'evidence' ? { kind: 'evidence', subjectIncidentId }
    : analysis.kind === 'runbook' ? { kind: 'runbook' }
    : analysis.kind === 'pattern' ? { kind: 'pattern' }
    : { kind: 'search' };
  return result(intent, facts);
}

