import { and, count, desc, eq, gt, or, sql, type SQL, type SQLWrapper } from 'drizzle-orm';
import { olderThan } from '../keyset.js';
import { parseRunbookSteps, type RunbookStep } from '../../domain/runbooks.js';
import type { Db } from '../client.js';
import { runbooks } from '../schema/investigation.js';

export type RunbookRow = typeof runbooks.$inferSelect;

export function toRunbookView(row: RunbookRow) {
  return {
    runbookId: row.id,
    title: row.title,
    service: row.service,
    tags: row.tags,
    content: row.content,
    steps: parseRunbookSteps(row.content),
    createdAt: row.createdAt.toISOString(),
    updatedAt: row.updatedAt.toISOString(),
  };
}

export type RunbookView = ReturnType<typeof toRunbookView>;

const summaryColumns = {
  id: runbooks.id,
  title: runbooks.title,
  service: runbooks.service,
  tags: runbooks.tags,
  createdAt: runbooks.createdAt,
  updatedAt: runbooks.updatedAt,
};
type RunbookSummaryRow = Omit<RunbookRow, 'tenantId' | 'content'>;

export function toRunbookSummary(row: RunbookSummaryRow) {
  return {
    runbookId: row.id,
    title: row.title,
    service: row.service,
    tags: row.tags,
    createdAt: row.createdAt.toISOString(),
    updatedAt: row.updatedAt.toISOString(),
  };
}

export async function findRunbook(
  db: Pick<Db, 'select'>,
  tenantId: string,
  runbookId: string,
): Promise<RunbookRow | undefined> {
  const [row] = await db
    .select()
    .from(runbooks)
    .where(and(eq(runbooks.tenantId, tenantId), eq(runbooks.id, runbookId)));
  return row;
}

/** Case-insensitive "contains", without LIKE's wildcards. */
const containsText = (column: SQLWrapper, text: string) => sql`strpos(lower(${column}), lower(${text})) > 0`;

/**
 * Newest first, keyset over (created_at, id), plus the total matching count across pages.
 * `service` is an exact match, `tag` one of the runbook's tags, `q` found in title or content.
 * The page leaves the content out (a runbook may be 50,000 characters).
 */
export async function listRunbooks(
  db: Db,
  tenantId: string,
  query: { service?: string; tag?: string; q?: string; limit: number; after?: { createdAt: Date; id: string } },
): Promise<{ rows: RunbookSummaryRow[]; total: number; hasMore: boolean }> {
  const filters: SQL[] = [eq(runbooks.tenantId, tenantId)];
  if (query.service) filters.push(eq(runbooks.service, query.service));
  if (query.tag) filters.push(sql`${runbooks.tags} @> ${JSON.stringify([query.tag])}::jsonb`);
  if (query.q) filters.push(or(containsText(runbooks.title, query.q), containsText(runbooks.content, query.q))!);
  const where = and(...filters);
  const { after } = query;
  const pageWhere = after ? and(where, olderThan(runbooks.createdAt, runbooks.id, after)) : where;
  const [rows, totals] = await Promise.all([
    db
      .select(summaryColumns)
      .from(runbooks)
      .where(pageWhere)
      .orderBy(desc(runbooks.createdAt), desc(runbooks.id))
      .limit(query.limit + 1),
    db.select({ total: count() }).from(runbooks).where(where),
  ]);
  return { rows: rows.slice(0, query.limit), total: totals[0]?.total ?? 0, hasMore: rows.length > query.limit };
}

/** Keywords shorter than this match too much prose to mean anything. */
export const MIN_KEYWORD_LENGTH = 2;
const MAX_KEYWORDS = 50;

export interface RunbookMatch {
  runbookId: string;
  title: string;
  service: string | null;
  tags: string[];
  steps: RunbookStep[];
  /** 3 for the service, plus per keyword 2 when in the title or a tag, else 1 when in the content. */
  score: number;
  serviceMatch: boolean;
  /** The keywords (lowercased) the runbook matched, in the order given. */
  matchedKeywords: string[];
  updatedAt: Date;
}

/** Regular expression metacharacters of PostgreSQL's advanced regular expressions. */
const escapeRegex = (text: string) => text.replace(/[\\^$.|?*+()[\]{}]/g, '\\$&');

/**
 * The tenant's runbooks for an incident, best first: those written for its service
 * (case-insensitive) and those whose title, tags or content match any keyword. A keyword matches
 * a tag equal to it, or a word of the title or content that starts with it, case-insensitively
 * ("pool" matches "Pooling", not "spool"; one starting with punctuation matches anywhere). Score: 3 for the service, and per keyword 2 when it is
 * in the title or the tags, else 1 when only in the content; ties go to the most recently updated.
 * Keywords are trimmed, lowercased and deduplicated; shorter than 2 characters, they are ignored,
 * and at most 50 are used. A runbook that matches nothing is never returned.
 */
export async function findRunbooksFor(
  db: Pick<Db, 'select'>,
  tenantId: string,
  incident: { service?: string | null; keywords: string[] },
  limit = 5,
): Promise<RunbookMatch[]> {
  const keywords = [...new Set(incident.keywords.map((k) => k.trim().toLowerCase()))]
    .filter((k) => k.length >= MIN_KEYWORD_LENGTH)
    .slice(0, MAX_KEYWORDS);
  const service = incident.service?.trim() || undefined;
  if ((!service && keywords.length === 0) || limit < 1) return [];

  const serviceMatch = service ? sql<boolean>`(lower(${runbooks.service}) = lower(${service}))` : sql<boolean>`false`;
  const keywordHits = keywords.map((keyword) => {
    // `\m` (start of a word) only before a word character: it could never precede "(" or ".".
    const wordStart = `${/^[\p{L}\p{N}_]/u.test(keyword) ? '\\m' : ''}${escapeRegex(keyword)}`;
    return sql`(case when ${runbooks.title} ~* ${wordStart} or ${runbooks.tags} @> ${JSON.stringify([keyword])}::jsonb then 2
                     when ${runbooks.content} ~* ${wordStart} then 1 else 0 end)`;
  });
  const hits =
    keywordHits.length > 0
      ? sql<number[]>`array[${sql.join(keywordHits, sql`, `)}]::int[]`
      : sql<number[]>`'{}'::int[]`;
  const score = sql<number>`((case when ${serviceMatch} then 3 else 0 end)${sql.join(
    keywordHits.map((hit) => sql` + ${hit}`),
  )})`.mapWith(Number);

  const rows = await db
    .select({ runbook: runbooks, score, serviceMatch: sql<boolean>`coalesce(${serviceMatch}, false)`, hits })
    .from(runbooks)
    .where(and(eq(runbooks.tenantId, tenantId), gt(score, 0)))
    .orderBy(desc(score), desc(runbooks.updatedAt), desc(runbooks.id))
    .limit(limit);
  return rows.map(({ runbook, score: total, serviceMatch: forService, hits: perKeyword }) => ({
    runbookId: runbook.id,
    title: runbook.title,
    service: runbook.service,
    tags: runbook.tags,
    steps: parseRunbookSteps(runbook.content),
    score: total,
    serviceMatch: forService,
    matchedKeywords: keywords.filter((_, i) => (perKeyword[i] ?? 0) > 0),
    updatedAt: runbook.updatedAt,
  }));
}
