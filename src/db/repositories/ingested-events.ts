import { and, desc, eq, gt, gte, isNull, lte, ne, or, sql } from 'drizzle-orm';
import type { Db } from '../client.js';
import { ingestedEvents, type IngestedEventRow } from '../schema/ingestion.js';

/**
 * An incident's latest `limit` alerts, newest first (by occurrence, then id): a backward walk of
 * the incident index (incident_id, kind, occurred_at, id) that stops at the limit, however many
 * repeats an alert storm attached to the incident. A query, so its plan can be checked.
 */
export function latestIncidentAlerts(
  db: Pick<Db, 'select'>,
  args: { tenantId: string; incidentId: string; limit: number },
) {
  return db
    .select()
    .from(ingestedEvents)
    .where(
      and(
        eq(ingestedEvents.tenantId, args.tenantId),
        eq(ingestedEvents.incidentId, args.incidentId),
        eq(ingestedEvents.kind, 'alert'),
      ),
    )
    .orderBy(desc(ingestedEvents.occurredAt), desc(ingestedEvents.id))
    .limit(args.limit);
}

/**
 * The tenant's alerts within `beforeMs` before and `afterMs` after `at` that are not the given
 * incident's own: the `limit` nearest to `at` (ties by id), oldest first. Found by two ordered
 * index scans that stop at `limit` each, one back and one forward from `at`, so a storm of
 * alerts in the window is never read whole and sorted by distance.
 */
export async function nearestOtherAlerts(
  db: Pick<Db, 'select'>,
  args: { tenantId: string; incidentId: string; at: Date; beforeMs: number; afterMs: number; limit: number },
): Promise<IngestedEventRow[]> {
  const { at, limit } = args;
  const others = and(
    eq(ingestedEvents.tenantId, args.tenantId),
    eq(ingestedEvents.kind, 'alert'),
    or(isNull(ingestedEvents.incidentId), ne(ingestedEvents.incidentId, args.incidentId)),
  );
  // Ids compare byte-wise in both scans and in the merge below, whatever the database's collation.
  const idOrder = sql`${ingestedEvents.id} collate "C"`;
  const [before, after] = await Promise.all([
    db
      .select()
      .from(ingestedEvents)
      .where(
        and(
          others,
          gte(ingestedEvents.occurredAt, new Date(at.getTime() - args.beforeMs)),
          lte(ingestedEvents.occurredAt, at),
        ),
      )
      .orderBy(desc(ingestedEvents.occurredAt), idOrder)
      .limit(limit),
    db
      .select()
      .from(ingestedEvents)
      .where(
        and(
          others,
          gt(ingestedEvents.occurredAt, at),
          lte(ingestedEvents.occurredAt, new Date(at.getTime() + args.afterMs)),
        ),
      )
      .orderBy(ingestedEvents.occurredAt, idOrder)
      .limit(limit),
  ]);
  const distance = (r: IngestedEventRow) => Math.abs(r.occurredAt.getTime() - at.getTime());
  const byId = (a: IngestedEventRow, b: IngestedEventRow) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0);
  return [...before, ...after]
    .sort((a, b) => distance(a) - distance(b) || byId(a, b))
    .slice(0, limit)
    .sort((a, b) => a.occurredAt.getTime() - b.occurredAt.getTime() || byId(a, b));
}
