import { and, asc, count, eq, gt, isNull, lt, or, sql, type SQL } from 'drizzle-orm';
import type { Db } from '../client.js';
import { correlationRules, type CorrelationRuleRow } from '../schema/correlation.js';

/** Rules a tenant may hold: each is evaluated per alert on the webhook path, so the list stays short. */
export const MAX_RULES_PER_TENANT = 200;
/** An enabled rule older than this that has not matched for as long is shown `stale`. */
export const STALE_AFTER_MS = 7 * 86_400_000;

/** Stale: enabled, older than 7 days, and no match in the last 7 days (no rule fails silently). */
export function isStale(row: Pick<CorrelationRuleRow, 'enabled' | 'createdAt' | 'lastMatchedAt'>, now: Date): boolean {
  const since = now.getTime() - STALE_AFTER_MS;
  return (
    row.enabled &&
    row.createdAt.getTime() < since &&
    (row.lastMatchedAt === null || row.lastMatchedAt.getTime() < since)
  );
}

export function toRuleView(row: CorrelationRuleRow, now: Date) {
  return {
    ruleId: row.id,
    name: row.name,
    enabled: row.enabled,
    order: row.order,
    match: row.match,
    groupBy: row.groupBy,
    minAlerts: row.minAlerts,
    forMinutes: row.forMinutes,
    action: row.action,
    activeFrom: row.activeFrom?.toISOString() ?? null,
    activeUntil: row.activeUntil?.toISOString() ?? null,
    createdAt: row.createdAt.toISOString(),
    updatedAt: row.updatedAt.toISOString(),
    lastMatchedAt: row.lastMatchedAt?.toISOString() ?? null,
    matchCount: row.matchCount,
    stale: isStale(row, now),
  };
}

/**
 * Serialises the writes of one tenant's rules (creation against the cap, a rename against the
 * names), for the rest of the transaction.
 */
export async function lockTenantRules(tx: Pick<Db, 'execute'>, tenantId: string): Promise<void> {
  await tx.execute(sql`select pg_advisory_xact_lock(hashtext(${`correlation-rules:${tenantId}`}))`);
}

export async function countRules(db: Pick<Db, 'select'>, tenantId: string): Promise<number> {
  const [row] = await db.select({ n: count() }).from(correlationRules).where(eq(correlationRules.tenantId, tenantId));
  return row?.n ?? 0;
}

export async function findRule(
  db: Pick<Db, 'select'>,
  tenantId: string,
  ruleId: string,
): Promise<CorrelationRuleRow | undefined> {
  const [row] = await db
    .select()
    .from(correlationRules)
    .where(and(eq(correlationRules.tenantId, tenantId), eq(correlationRules.id, ruleId)))
    .limit(1);
  return row;
}

export async function findRuleByName(
  db: Pick<Db, 'select'>,
  tenantId: string,
  name: string,
): Promise<CorrelationRuleRow | undefined> {
  const [row] = await db
    .select()
    .from(correlationRules)
    .where(and(eq(correlationRules.tenantId, tenantId), eq(correlationRules.name, name)))
    .limit(1);
  return row;
}

/** A position in evaluation order: the last rule of a page. */
export interface RuleCursor {
  order: number;
  createdAt: Date;
  id: string;
}

export interface RuleListQuery {
  enabled?: boolean;
  stale?: boolean;
  limit: number;
  after?: RuleCursor;
  now: Date;
}

/** The stale rule of `isStale`, as SQL. */
function staleSql(now: Date): SQL {
  const since = new Date(now.getTime() - STALE_AFTER_MS);
  return and(
    eq(correlationRules.enabled, true),
    lt(correlationRules.createdAt, since),
    or(isNull(correlationRules.lastMatchedAt), lt(correlationRules.lastMatchedAt, since)),
  )!;
}

/** A tenant's rules in evaluation order (`order`, creation, id), a keyset page after `after`. */
export async function listRules(db: Pick<Db, 'select'>, tenantId: string, query: RuleListQuery) {
  const filters: SQL[] = [eq(correlationRules.tenantId, tenantId)];
  if (query.enabled !== undefined) filters.push(eq(correlationRules.enabled, query.enabled));
  if (query.stale !== undefined) filters.push(query.stale ? staleSql(query.now) : sql`not (${staleSql(query.now)})`);
  const where = and(...filters);
  const { after } = query;
  const pageWhere = after
    ? and(
        where,
        or(
          gt(correlationRules.order, after.order),
          and(eq(correlationRules.order, after.order), gt(correlationRules.createdAt, after.createdAt)),
          and(
            eq(correlationRules.order, after.order),
            eq(correlationRules.createdAt, after.createdAt),
            gt(correlationRules.id, after.id),
          ),
        ),
      )
    : where;
  const [rows, totals] = await Promise.all([
    db
      .select()
      .from(correlationRules)
      .where(pageWhere)
      .orderBy(asc(correlationRules.order), asc(correlationRules.createdAt), asc(correlationRules.id))
      .limit(query.limit + 1),
    db.select({ total: count() }).from(correlationRules).where(where),
  ]);
  return { rows: rows.slice(0, query.limit), total: totals[0]?.total ?? 0, hasMore: rows.length > query.limit };
}

export type RuleFields = Pick<
  CorrelationRuleRow,
  | 'name'
  | 'enabled'
  | 'order'
  | 'match'
  | 'groupBy'
  | 'minAlerts'
  | 'forMinutes'
  | 'action'
  | 'activeFrom'
  | 'activeUntil'
>;

/** Inserts a rule; undefined when the tenant already has one of that name (the unique index decides). */
export async function insertRule(
  tx: Pick<Db, 'insert'>,
  values: RuleFields & { id: string; tenantId: string },
): Promise<CorrelationRuleRow | undefined> {
  const [row] = await tx
    .insert(correlationRules)
    .values(values)
    .onConflictDoNothing({ target: [correlationRules.tenantId, correlationRules.name] })
    .returning();
  return row;
}

export async function updateRule(
  tx: Pick<Db, 'update'>,
  tenantId: string,
  ruleId: string,
  changes: Partial<RuleFields>,
): Promise<CorrelationRuleRow | undefined> {
  const [row] = await tx
    .update(correlationRules)
    .set({ ...changes, updatedAt: sql`now()` })
    .where(and(eq(correlationRules.tenantId, tenantId), eq(correlationRules.id, ruleId)))
    .returning();
  return row;
}

export async function deleteRule(
  tx: Pick<Db, 'delete'>,
  tenantId: string,
  ruleId: string,
): Promise<{ name: string } | undefined> {
  const [row] = await tx
    .delete(correlationRules)
    .where(and(eq(correlationRules.tenantId, tenantId), eq(correlationRules.id, ruleId)))
    .returning({ name: correlationRules.name });
  return row;
}
