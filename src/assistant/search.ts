/**
 * The database side of the assistant's retrieval: PostgreSQL full-text search over one tenant's
 * incidents, investigations, evidence, patterns and runbooks (the `search` tsvector columns of
 * drizzle/0009, GIN-indexed), scored by the keywords each record matches, and the structured
 * lookups some questions need (a count of incidents by service and period; an incident, its
 * investigation and evidence). Rows come back as the facts the responder cites. Every query is
 * filtered by tenant.
 */
import { and, asc, count, desc, eq, gte, inArray, lt, sql, type SQL } from 'drizzle-orm';
import type { ChatFact } from '../analysis/types.js';
import type { Db } from '../db/client.js';
import { incidents, type Severity } from '../db/schema/incidents.js';
import { evidenceItems, investigations, runbooks } from '../db/schema/investigation.js';
import { patterns, type ChatSource } from '../db/schema/knowledge.js';
import { parseRunbookSteps } from '../domain/runbooks.js';
import type { Period } from './intents.js';
import { expandTerm, hasBroader } from './synonyms.js';

/** Incidents listed with a count. */
export const MAX_COUNTED_LISTED = 10;
/** Candidates read per record type. */
const PER_TYPE = 8;

export interface Candidate {
  fact: ChatFact;
  /** Keywords matched, weighted by where (see matchedTerms). */
  matched: number;
  /** With rank and boosts: the order of the facts. */
  score: number;
}

const iso = (d: Date | null) => (d ? d.toISOString() : null);
const clip = (text: string, max: number) => (text.length <= max ? text : `${text.slice(0, max - 1).trimEnd()}…`);

/**
 * One tsquery per keyword, the OR of its alternatives (./synonyms.ts: "db" also finds "database");
 * a question's query is the OR of its keywords (plainto_tsquery would AND them all).
 */
const termQuery = (term: string, options: { broader?: boolean } = {}) => {
  const { words, phrases } = expandTerm(term, options);
  const parts = [
    ...words.map((w) => sql`plainto_tsquery('english', ${w})`),
    ...phrases.map((p) => sql`phraseto_tsquery('english', ${p})`),
  ];
  return sql`(${sql.join(parts, sql` || `)})`;
};
const anyTermQuery = (terms: string[]) =>
  sql`(${sql.join(
    terms.map((t) => termQuery(t)),
    sql` || `,
  )})`;

/**
 * How many of the keywords a document matches, each counted by where it matched: 1 in the
 * A-weighted part (titles, services, root causes of investigations, evidence summaries), 0.7 in
 * B, 0.4 anywhere else. This rewards covering the question over repeating one word.
 */
function matchedTerms(search: SQL, terms: string[]): SQL<number> {
  const weighed = (query: SQL, factor: number) =>
    sql`when ts_filter(${search}, '{a}') @@ ${query} then ${sql.raw(String(1.0 * factor))}
      when ts_filter(${search}, '{a,b}') @@ ${query} then ${sql.raw(String(0.7 * factor))}
      when ${search} @@ ${query} then ${sql.raw(String(0.4 * factor))}`;
  // A match through a broader group only (pgbouncer found as "db") counts half.
  const parts = terms.map((term) =>
    hasBroader(term)
      ? sql`(case ${weighed(termQuery(term, { broader: false }), 1)} ${weighed(termQuery(term), 0.5)} else 0 end)`
      : sql`(case ${weighed(termQuery(term), 1)} else 0 end)`,
  );
  return sql<number>`(${sql.join(parts, sql` + `)})`.mapWith(Number);
}

const rankOf = (search: SQL, terms: string[]) =>
  sql<number>`ts_rank_cd(${search}, ${anyTermQuery(terms)}, 32)`.mapWith(Number);

const searchColumn = (table: string) => sql.raw(`"${table}"."search"`);

function incidentFact(row: {
  id: string;
  title: string;
  service: string | null;
  status: string;
  severity: string;
  rootCause: string | null;
  recommendedActions: string[];
  createdAt: Date;
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
  incidentId: string;
  title: string;
  service: string | null;
  status: string;
  rootCause: string | null;
  confidence: number;
  recommendedActions: string[];
  completedAt: Date | null;
  startedAt: Date;
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
  id: string;
  incidentId: string;
  type: string;
  source: string;
  summary: string;
  severity: string;
  occurredAt: Date;
  service: string | null;
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
  id: string;
  title: string;
  service: string | null;
  category: string;
  rootCause: string;
  fix: string[];
  status: string;
  confidence: number;
  occurrences: number;
  lastSeenAt: Date;
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

function runbookFact(row: {
  id: string;
  title: string;
  service: string | null;
  tags: string[];
  content: string;
  updatedAt: Date;
}): ChatFact {
  return {
    type: 'runbook',
    id: row.id,
    title: row.title,
    service: row.service,
    at: iso(row.updatedAt),
    incidentId: null,
    summary: `runbook${row.service ? ` for ${row.service}` : ''}${row.tags.length ? ` (tags: ${row.tags.join(', ')})` : ''}`,
    rootCause: null,
    actions: parseRunbookSteps(row.content)
      .map((s) => s.text)
      .slice(0, 10),
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

export const inPeriod = (column: typeof incidents.createdAt, period: Period | null) =>
  period ? [gte(column, period.from), lt(column, period.to)] : [];

/** Full-text candidates of every type, scored by matched keywords, then rank. */
export async function searchCandidates(
  db: Db,
  tenantId: string,
  terms: string[],
  period: Period | null,
): Promise<Candidate[]> {
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
      .select({
        ...investigationColumns,
        matched: matchedTerms(s.investigations, terms),
        rank: rankOf(s.investigations, terms),
      })
      .from(investigations)
      .innerJoin(incidents, eq(incidents.id, investigations.incidentId))
      .where(
        and(eq(investigations.tenantId, tenantId), matches(s.investigations), ...inPeriod(incidents.createdAt, period)),
      )
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
        id: patterns.id,
        title: patterns.title,
        service: patterns.service,
        category: patterns.category,
        rootCause: patterns.rootCause,
        fix: patterns.fix,
        status: patterns.status,
        confidence: patterns.confidence,
        occurrences: patterns.occurrences,
        lastSeenAt: patterns.lastSeenAt,
        matched: matchedTerms(s.patterns, terms),
        rank: rankOf(s.patterns, terms),
      })
      .from(patterns)
      .where(and(eq(patterns.tenantId, tenantId), matches(s.patterns)))
      .orderBy(...order(s.patterns), desc(patterns.lastSeenAt))
      .limit(PER_TYPE),
    db
      .select({
        id: runbooks.id,
        title: runbooks.title,
        service: runbooks.service,
        tags: runbooks.tags,
        content: runbooks.content,
        updatedAt: runbooks.updatedAt,
        matched: matchedTerms(s.runbooks, terms),
        rank: rankOf(s.runbooks, terms),
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
export async function knownServices(db: Db, tenantId: string): Promise<string[]> {
  const rows = await db.execute<{ service: string }>(sql`
    (select distinct ${incidents.service} as service from ${incidents} where ${incidents.tenantId} = ${tenantId} and ${incidents.service} is not null limit 500)
    union (select distinct ${runbooks.service} from ${runbooks} where ${runbooks.tenantId} = ${tenantId} and ${runbooks.service} is not null limit 500)
    union (select distinct ${patterns.service} from ${patterns} where ${patterns.tenantId} = ${tenantId} and ${patterns.service} is not null limit 500)`);
  return [...rows].map((r) => r.service);
}

export async function incidentsByIds(db: Db, tenantId: string, ids: string[]): Promise<ChatFact[]> {
  if (ids.length === 0) return [];
  const rows = await db
    .select(incidentColumns)
    .from(incidents)
    .where(and(eq(incidents.tenantId, tenantId), inArray(incidents.id, ids)));
  return ids.flatMap((id) => rows.filter((r) => r.id === id).map(incidentFact));
}

export async function investigationsByIncident(db: Db, tenantId: string, ids: string[]): Promise<ChatFact[]> {
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
export async function evidenceOfIncident(
  db: Db,
  tenantId: string,
  incidentId: string,
  terms: string[],
  limit: number,
): Promise<ChatFact[]> {
  const search = searchColumn('evidence_items');
  const rows = await db
    .select(evidenceColumns)
    .from(evidenceItems)
    .innerJoin(incidents, eq(incidents.id, evidenceItems.incidentId))
    .where(and(eq(evidenceItems.tenantId, tenantId), eq(evidenceItems.incidentId, incidentId)))
    .orderBy(
      ...(terms.length ? [desc(matchedTerms(search, terms))] : []),
      asc(severityOrder),
      desc(evidenceItems.occurredAt),
    )
    .limit(limit);
  return rows.map(evidenceFact);
}

/** Incidents of a period (and a service, or matching keywords; and a severity): the total and the newest ones. */
export async function countIncidents(
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
      .orderBy(
        ...(args.byRelevance && args.terms.length ? [desc(matchedTerms(searchColumn('incidents'), args.terms))] : []),
        desc(incidents.createdAt),
        desc(incidents.id),
      )
      .limit(MAX_COUNTED_LISTED),
    db.select({ total: count() }).from(incidents).where(where),
  ]);
  return { total: totals[0]?.total ?? 0, facts: rows.map(incidentFact) };
}

/** How many of the keywords an incident matches anywhere (each keyword once, with its alternatives). */
const coveredTerms = (terms: string[]) => {
  const search = searchColumn('incidents');
  return sql<number>`(${sql.join(
    terms.map((t) => sql`(case when ${search} @@ ${termQuery(t)} then 1 else 0 end)`),
    sql` + `,
  )})`.mapWith(Number);
};

/**
 * The incidents a broad question is about, newest first: those matching as many of its keywords
 * as the best match does ("payments database" → every incident about both, not every incident
 * about payments), of a period and a severity when named. The total counts them all.
 */
export async function matchingIncidents(
  db: Db,
  tenantId: string,
  args: { terms: string[]; period: Period | null; severity: Severity | null },
): Promise<{ total: number; facts: ChatFact[] }> {
  if (args.terms.length === 0) return countIncidents(db, tenantId, { ...args, services: [], byRelevance: false });
  const filters: SQL[] = [
    eq(incidents.tenantId, tenantId),
    ...inPeriod(incidents.createdAt, args.period),
    sql`${searchColumn('incidents')} @@ ${anyTermQuery(args.terms)}`,
  ];
  if (args.severity) filters.push(eq(incidents.severity, args.severity));
  const covered = coveredTerms(args.terms);
  const [best] = await db
    .select({ covered: sql<number>`max(${covered})`.mapWith(Number) })
    .from(incidents)
    .where(and(...filters));
  if (!best?.covered) return { total: 0, facts: [] };
  const where = and(...filters, sql`${covered} >= ${best.covered}`);
  const [rows, totals] = await Promise.all([
    db
      .select(incidentColumns)
      .from(incidents)
      .where(where)
      .orderBy(desc(incidents.createdAt), desc(incidents.id))
      .limit(MAX_COUNTED_LISTED),
    db.select({ total: count() }).from(incidents).where(where),
  ]);
  return { total: totals[0]?.total ?? 0, facts: rows.map(incidentFact) };
}

/** The incidents a previous answer was about (its incident, investigation and evidence sources). */
export async function focusIncidents(db: Db, tenantId: string, sources: ChatSource[]): Promise<string[]> {
  const ids: string[] = [];
  const evidenceIds = sources.filter((s) => s.type === 'evidence').map((s) => s.id);
  const evidenceRows = evidenceIds.length
    ? await db
        .select({ id: evidenceItems.id, incidentId: evidenceItems.incidentId })
        .from(evidenceItems)
        .where(and(eq(evidenceItems.tenantId, tenantId), inArray(evidenceItems.id, evidenceIds)))
    : [];
  for (const source of sources) {
    const id =
      source.type === 'evidence'
        ? evidenceRows.find((r) => r.id === source.id)?.incidentId
        : source.type === 'incident' || source.type === 'investigation'
          ? source.id
          : undefined;
    if (id && !ids.includes(id)) ids.push(id);
  }
  return ids;
}

/** The tenant's most recent incident (of the period, when one is given). */
export async function latestIncidentId(db: Db, tenantId: string, period: Period | null): Promise<string | null> {
  const [newest] = await db
    .select({ id: incidents.id })
    .from(incidents)
    .where(and(eq(incidents.tenantId, tenantId), ...inPeriod(incidents.createdAt, period)))
    .orderBy(desc(incidents.createdAt), desc(incidents.id))
    .limit(1);
  return newest?.id ?? null;
}
