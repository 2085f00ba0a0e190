import { and, eq, sql } from 'drizzle-orm';
import type { Db } from '../client.js';
import { usageCounters, type UsageMetric } from '../schema/limits.js';

type Executor = Pick<Db, 'insert' | 'select'>;

/**
 * Counts one unit of a monthly metric if the limit allows it, atomically (safe under concurrent
 * requests on several api processes). Returns the new count, or null when the quota is
 * exhausted; the caller's transaction must then roll back.
 */
export async function consumeQuota(
  tx: Executor,
  args: { tenantId: string; period: string; metric: UsageMetric; limit: number | null },
): Promise<number | null> {
  const rows = await tx
    .insert(usageCounters)
    .values({ tenantId: args.tenantId, period: args.period, metric: args.metric, count: 1 })
    .onConflictDoUpdate({
      target: [usageCounters.tenantId, usageCounters.period, usageCounters.metric],
      set: { count: sql`${usageCounters.count} + 1` },
      ...(args.limit === null ? {} : { setWhere: sql`${usageCounters.count} < ${args.limit}` }),
    })
    .returning({ count: usageCounters.count });
  const count = rows[0]?.count ?? null;
  if (count !== null && args.limit !== null && count > args.limit) return null;
  return count;
}

export async function usageCount(
  db: Executor,
  args: { tenantId: string; period: string; metric: UsageMetric },
): Promise<number> {
  const rows = await db
    .select({ count: usageCounters.count })
    .from(usageCounters)
    .where(
      and(
        eq(usageCounters.tenantId, args.tenantId),
        eq(usageCounters.period, args.period),
        eq(usageCounters.metric, args.metric),
      ),
    );
  return rows[0]?.count ?? 0;
}
