import { and, asc, count, desc, eq, gt, isNull, lt, or, sql, type SQL } from 'drizzle-orm';
import type { IncidentView, IncidentWorkflowInput } from '../../workflows/messages.js';
import type { Db } from '../client.js';
import { ownershipOf, type Ownership } from '../../domain/ownership.js';
import { incidents, type IncidentRow, type IncidentStatus, type Severity } from '../schema/incidents.js';
import { services } from '../schema/topology.js';

export function toIncidentView(row: IncidentRow): IncidentView {
  return {
    incidentId: row.id,
    title: row.title,
    description: row.description,
    severity: row.severity,
    status: row.status,
    source: row.source,
    assignedAgents: row.assignedAgents,
    rootCause: row.rootCause,
    recommendedActions: row.recommendedActions,
    service: row.service,
    serviceId: row.serviceId,
    ownerTeam: row.ownerTeam,
    immediateAttention: row.immediateAttention,
    occurrenceCount: row.occurrenceCount,
    lastSeenAt: row.lastSeenAt?.toISOString() ?? null,
    recoveredAt: row.recoveredAt?.toISOString() ?? null,
    mergedInto: row.mergedInto,
    createdAt: row.createdAt.toISOString(),
    updatedAt: row.updatedAt.toISOString(),
  };
}

/** The workflow input that starts (or restarts) an incident's workflow from its stored state. */
export function toWorkflowInput(row: IncidentRow): IncidentWorkflowInput {
  return {
    incidentId: row.id,
    tenantId: row.tenantId,
    title: row.title,
    severity: row.severity,
    source: row.source,
    status: row.status,
    version: row.version,
  };
}

export async function findIncident(db: Db, tenantId: string, incidentId: string): Promise<IncidentRow | undefined> {
  const rows = await db
    .select()
    .from(incidents)
    .where(and(eq(incidents.tenantId, tenantId), eq(incidents.id, incidentId)))
    .limit(1);
  return rows[0];
}

export interface IncidentListQuery {
  tenantId: string;
  severity?: Severity;
  status?: IncidentStatus;
  order: 'asc' | 'desc';
  limit: number;
  after?: { createdAt: Date; id: string };
}

/** Keyset page over (created_at, id) plus the total matching count across pages. */
export async function listIncidents(
  db: Db,
  query: IncidentListQuery,
): Promise<{ rows: IncidentRow[]; total: number; hasMore: boolean }> {
  const filters: SQL[] = [eq(incidents.tenantId, query.tenantId)];
  if (query.severity) filters.push(eq(incidents.severity, query.severity));
  if (query.status) filters.push(eq(incidents.status, query.status));
  const where = and(...filters);

  let pageWhere = where;
  if (query.after) {
    const { createdAt, id } = query.after;
    const beyond = query.order === 'desc' ? lt : gt;
    pageWhere = and(
      where,
      or(beyond(incidents.createdAt, createdAt), and(eq(incidents.createdAt, createdAt), beyond(incidents.id, id))),
    );
  }
  const direction = query.order === 'desc' ? desc : asc;
  const [rows, totals] = await Promise.all([
    db
      .select()
      .from(incidents)
      .where(pageWhere)
      .orderBy(direction(incidents.createdAt), direction(incidents.id))
      .limit(query.limit + 1),
    db.select({ total: count() }).from(incidents).where(where),
  ]);
  return { rows: rows.slice(0, query.limit), total: totals[0]?.total ?? 0, hasMore: rows.length > query.limit };
}

/** The ownership an incident gets from the tenant's service of this name, if there is one. */
export async function findOwnership(
  db: Pick<Db, 'select'>,
  tenantId: string,
  serviceName: string,
): Promise<Ownership | undefined> {
  const rows = await db
    .select({ id: services.id, team: services.team, criticality: services.criticality })
    .from(services)
    .where(and(eq(services.tenantId, tenantId), eq(services.name, serviceName)))
    .limit(1);
  return rows[0] ? ownershipOf(rows[0]) : undefined;
}

export async function markWorkflowStarted(db: Db, incidentId: string): Promise<void> {
  await db
    .update(incidents)
    .set({ workflowStartedAt: sql`now()` })
    .where(and(eq(incidents.id, incidentId), isNull(incidents.workflowStartedAt)));
}

type Tx = Parameters<Parameters<Db['transaction']>[0]>[0];
type IncidentChanges = Omit<Partial<typeof incidents.$inferInsert>, 'id' | 'tenantId' | 'rootCause' | 'updatedAt'>;

/**
 * Writes a machine's root cause (`rootCause`: the one an investigation clears when it starts, the
 * one its synthesis concludes) with `changes`, unless a person corrected it (feedback
 * `correct_rca`): a correction outranks the machine's conclusions.
 *
 * The row is locked first, in a statement of its own. Feedback corrects under that lock, and an
 * UPDATE that waited for it re-reads the row but not its subquery, whose snapshot is from before
 * the wait: the correction committed meanwhile was overwritten (ADR 0234). The UPDATE after
 * the lock has a snapshot that includes it.
 */
export async function setRootCauseUnlessCorrected(
  tx: Tx,
  tenantId: string,
  incidentId: string,
  rootCause: string | null,
  changes: IncidentChanges = {},
): Promise<void> {
  const where = and(eq(incidents.id, incidentId), eq(incidents.tenantId, tenantId));
  await tx.select({ id: incidents.id }).from(incidents).where(where).for('update');
  await tx
    .update(incidents)
    .set({
      ...changes,
      rootCause: sql`case when exists (select 1 from root_cause_revisions r where r.incident_id = ${incidentId} and r.source = 'feedback') then ${incidents.rootCause} else ${rootCause} end`,
      updatedAt: sql`now()`,
    })
    .where(where);
}
