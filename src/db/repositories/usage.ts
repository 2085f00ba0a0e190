import { and, eq, sql } from 'drizzle-orm';
import type { Db } from '../client.js';
import { usageCounters, type UsageMetric } from '../schema/limits.js';

type Executor = Pick<Db, 'insert' | 'select'>;

/**
 * Counts `amount` units (default 1) of a monthly metric if the limit allows all of them,
 * atomically (safe under concurrent requests on several api processes). Returns the new count,
 * or null when the quota does not allow it; the caller's transaction must then roll back.
 */
export async function consumeQuota(
  tx: Executor,
  args: { tenantId: string; period: string; metric: UsageMetric; limit: number | null; amount?: number },
): Promise<number | null> {
  const amount = args.amount ?? 1;
  const rows = await tx
    .insert(usageCounters)
    .values({ tenantId: args.tenantId, period: args.period, metric: args.metric, count: amount })
    .onConflictDoUpdate({
      target: [usageCounters.tenantId, usageCounters.period, usageCounters.metric],
      set: { count: sql`${usageCounters.count} + ${amount}` },
      ...(args.limit === null ? {} : { setWhere: sql`${usageCounters.count} + ${amount} <= ${args.limit}` }),
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
