import { and, asc, count, desc, eq, gt, or, type SQL } from 'drizzle-orm';
import type { Db } from '../client.js';
import { olderThan } from '../keyset.js';
import { alerts, type AlertRow, type AlertState } from '../schema/correlation.js';

export function toAlertView(row: AlertRow) {
  return {
    alertId: row.id,
    incidentId: row.incidentId,
    provider: row.provider,
    service: row.service,
    name: row.name,
    title: row.title,
    status: row.status,
    severity: row.severity,
    fingerprint: row.fingerprint,
    labels: row.labels,
    firstSeenAt: row.firstSeenAt.toISOString(),
    lastSeenAt: row.lastSeenAt.toISOString(),
    occurrenceCount: row.occurrenceCount,
    correlation: row.correlation ?? null,
    flapping: row.flapping,
    state: row.state,
    ruleId: row.ruleId,
  };
}

/** A page position: the last alert's first sighting and id (the lists' keyset). */
export type AlertAfter = { createdAt: Date; id: string };

interface Page {
  rows: AlertRow[];
  total: number;
  hasMore: boolean;
}

async function page(db: Pick<Db, 'select'>, where: SQL, pageWhere: SQL, order: SQL[], limit: number): Promise<Page> {
  const [rows, totals] = await Promise.all([
    db
      .select()
      .from(alerts)
      .where(pageWhere)
      .orderBy(...order)
      .limit(limit + 1),
    db.select({ total: count() }).from(alerts).where(where),
  ]);
  return { rows: rows.slice(0, limit), total: totals[0]?.total ?? 0, hasMore: rows.length > limit };
}

/** The alerts grouped into one incident, oldest first by first sighting then id (index `alerts_incident_idx`). */
export async function listIncidentAlerts(
  db: Pick<Db, 'select'>,
  query: { tenantId: string; incidentId: string; limit: number; after?: AlertAfter | undefined },
): Promise<Page> {
  const where = and(eq(alerts.tenantId, query.tenantId), eq(alerts.incidentId, query.incidentId))!;
  const { after } = query;
  const pageWhere = after
    ? and(
        where,
        or(
          gt(alerts.firstSeenAt, after.createdAt),
          and(eq(alerts.firstSeenAt, after.createdAt), gt(alerts.id, after.id)),
        ),
      )!
    : where;
  return page(db, where, pageWhere, [asc(alerts.firstSeenAt), asc(alerts.id)], query.limit);
}

export interface AlertListQuery {
  tenantId: string;
  state?: AlertState | undefined;
  incidentId?: string | undefined;
  service?: string | undefined;
  limit: number;
  after?: AlertAfter | undefined;
}

/** A tenant's alerts, newest first by first sighting then id, filtered by state, incident and service. */
export async function listAlerts(db: Pick<Db, 'select'>, query: AlertListQuery): Promise<Page> {
  const filters: SQL[] = [eq(alerts.tenantId, query.tenantId)];
  if (query.state) filters.push(eq(alerts.state, query.state));
  if (query.incidentId) filters.push(eq(alerts.incidentId, query.incidentId));
  if (query.service) filters.push(eq(alerts.service, query.service));
  const where = and(...filters)!;
  const pageWhere = query.after ? and(where, olderThan(alerts.firstSeenAt, alerts.id, query.after))! : where;
  return page(db, where, pageWhere, [desc(alerts.firstSeenAt), desc(alerts.id)], query.limit);
}

/** The cursor position of an alert row. */
export const alertPosition = (row: AlertRow): AlertAfter => ({ createdAt: row.firstSeenAt, id: row.id });
