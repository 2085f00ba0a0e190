import { and, eq, sql } from 'drizzle-orm';
import type { Db } from '../client.js';
import { usageCounters, type UsageMetric } from '../schema/limits.js';

type Executor = Pick<Db, 'insert' | 'select'>;

/**
 * Counts one unit of a monthly metric if the limit allows it, atomically (safe under concurrent
 * requests on several api processes). The limit is the plan's quota plus the credits bought for
 * the period (stored on the counter row), so credits are used once the quota is. Returns the
 * new count, or null when quota and credits are exhausted; the caller's transaction must then
 * roll back.
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
      ...(args.limit === null
        ? {}
        : { setWhere: sql`${usageCounters.count} < ${args.limit} + ${usageCounters.credits}` }),
    })
    .returning({ count: usageCounters.count, credits: usageCounters.credits });
  const row = rows[0];
  if (!row) return null;
  if (args.limit !== null && row.count > args.limit + row.credits) return null;
  return row.count;
}

export async function usageCount(
  db: Executor,
  args: { tenantId: string; period: string; metric: UsageMetric },
): Promise<number> {
  return (await usageOf(db, args)).used;
}

/** A metric's count and the credits bought for the period (0 and 0 before any use). */
export async function usageOf(
  db: Pick<Db, 'select'>,
  args: { tenantId: string; period: string; metric: UsageMetric },
): Promise<{ used: number; credits: number }> {
  const rows = await db
    .select({ used: usageCounters.count, credits: usageCounters.credits })
    .from(usageCounters)
    .where(
      and(
        eq(usageCounters.tenantId, args.tenantId),
        eq(usageCounters.period, args.period),
        eq(usageCounters.metric, args.metric),
      ),
    );
  return rows[0] ?? { used: 0, credits: 0 };
}

/**
 * What is left of a metric this period: the plan's quota, then the credits. `credits` is what
 * is left of the credits bought (they are used only once the quota is).
 */
export async function remainingOf(
  db: Pick<Db, 'select'>,
  args: { tenantId: string; period: string; metric: UsageMetric; limit: number },
): Promise<{ used: number; remaining: number; credits: number }> {
  const { used, credits } = await usageOf(db, args);
  const creditsLeft = Math.max(0, credits - Math.max(0, used - args.limit));
  return { used, remaining: Math.max(0, args.limit - used) + creditsLeft, credits: creditsLeft };
}

/** Adds bought credits to a metric of a period (the counter row is made when missing). */
export async function addCredits(
  tx: Pick<Db, 'insert'>,
  args: { tenantId: string; period: string; metric: UsageMetric; units: number },
): Promise<void> {
  await tx
    .insert(usageCounters)
    .values({ tenantId: args.tenantId, period: args.period, metric: args.metric, count: 0, credits: args.units })
    .onConflictDoUpdate({
      target: [usageCounters.tenantId, usageCounters.period, usageCounters.metric],
      set: { credits: sql`${usageCounters.credits} + ${args.units}` },
    });
}
