/**
 * The writes of a merge and of a split, each one transaction: first the tenant's grouping lock
 * (the one webhook ingestion holds while it decides where alerts go), then the incidents' rows
 * `for update` in id order, then every write. A concurrent delivery, merge or split of the tenant
 * waits, then reads what this one wrote, so no alert is lost or counted twice.
 */
import { and, asc, desc, eq, inArray, ne, sql } from 'drizzle-orm';
import { groupingLockKey } from '../correlation/grouping.js';
import type { Db } from '../db/client.js';
import { appendAudit } from '../db/repositories/audit.js';
import { findOwnership } from '../db/repositories/incidents.js';
import { alerts, type AlertRow } from '../db/schema/correlation.js';
import { incidents, type IncidentRow, type IncidentStatus, type Severity } from '../db/schema/incidents.js';
import { ingestedEvents } from '../db/schema/ingestion.js';
import { ownershipPayload } from '../domain/ownership.js';
import { highestSeverity } from '../domain/severity.js';
import { AppError } from '../errors.js';
import { newId } from '../ids.js';
import { appendEvent, dispatchChannel } from '../outbox/append.js';
import type { Actor } from '../workflows/messages.js';

type Tx = Parameters<Parameters<Db['transaction']>[0]>[0];

const isSettled = (status: IncidentStatus) => status === 'resolved' || status === 'closed';

async function lockGrouping(tx: Tx, tenantId: string): Promise<void> {
  await tx.execute(sql`select pg_advisory_xact_lock(hashtextextended(${groupingLockKey(tenantId)}, 0))`);
}

/** The incidents' rows, locked in id order (two merges of the same pair never wait on each other in a cycle). */
function lockIncidents(tx: Tx, tenantId: string, ids: string[]): Promise<IncidentRow[]> {
  return tx
    .select()
    .from(incidents)
    .where(and(eq(incidents.tenantId, tenantId), inArray(incidents.id, ids)))
    .orderBy(asc(incidents.id))
    .for('update');
}

/** A merge as the merged incident's workflow writes it: its close (a status change) and the move. */
export interface MergeChange {
  incidentId: string;
  tenantId: string;
  survivorId: string;
  from: IncidentStatus;
  to: IncidentStatus;
  version: number;
  actor: Actor;
  workflowId: string;
  historyEventId?: number;
}

/**
 * Moves the merged incident's alerts and their deliveries to the survivor, updates the survivor
 * (occurrences, last seen, recovery, severity), and closes the merged one with `merged_into`,
 * its `incident.status_changed` event and the audit entries. Idempotent: the version guard makes
 * a retried activity a no-op. Refuses (AppError `conflict`) a survivor that is not open.
 */
export async function writeMerge(db: Db, change: MergeChange): Promise<void> {
  await db.transaction(async (tx) => {
    const { tenantId, incidentId: mergedId, survivorId } = change;
    await lockGrouping(tx, tenantId);
    const locked = await lockIncidents(tx, tenantId, [mergedId, survivorId]);
    const merged = locked.find((r) => r.id === mergedId);
    const survivor = locked.find((r) => r.id === survivorId);
    if (!merged || merged.version >= change.version) return; // written before (a retry), or superseded
    if (!survivor) throw new AppError('conflict', `No incident ${survivorId} to merge into`);
    if (isSettled(survivor.status)) {
      throw new AppError(
        'conflict',
        `Incident ${survivorId} (merged into) is ${survivor.status}: only open incidents are merged (reopen it first)`,
      );
    }
    const moved = await moveAlerts(tx, tenantId, mergedId, survivorId);
    await updateSurvivor(tx, change, survivor, merged, moved.alerts);
    await closeMerged(tx, change, moved);
    await tx.execute(sql`select pg_notify(${dispatchChannel}, '')`);
  });
}

type MovedAlerts = { alerts: Array<Pick<AlertRow, 'id' | 'severity' | 'status'>>; events: number };

/**
 * The alert records and every delivery of the merged incident go to the survivor. The survivor's
 * workflow hears of each moved alert that fires: its latest delivery is made undelivered again, so
 * the dispatcher signals it (a resolved one is not: it would read as the survivor's own recovery).
 */
async function moveAlerts(tx: Tx, tenantId: string, mergedId: string, survivorId: string): Promise<MovedAlerts> {
  const movedAlerts = await tx
    .update(alerts)
    .set({ incidentId: survivorId })
    .where(and(eq(alerts.tenantId, tenantId), eq(alerts.incidentId, mergedId)))
    .returning({ id: alerts.id, severity: alerts.severity, status: alerts.status });
  const movedEvents = await tx
    .update(ingestedEvents)
    .set({ incidentId: survivorId })
    .where(and(eq(ingestedEvents.tenantId, tenantId), eq(ingestedEvents.incidentId, mergedId)))
    .returning({ id: ingestedEvents.id });
  const firing = movedAlerts.filter((a) => a.status === 'firing').map((a) => a.id);
  if (firing.length > 0) {
    const latest = tx
      .selectDistinctOn([ingestedEvents.alertId], { id: ingestedEvents.id })
      .from(ingestedEvents)
      .where(and(eq(ingestedEvents.tenantId, tenantId), inArray(ingestedEvents.alertId, firing)))
      .orderBy(ingestedEvents.alertId, desc(ingestedEvents.receivedAt), desc(ingestedEvents.id));
    await tx
      .update(ingestedEvents)
      .set({ deliveredAt: null })
      .where(and(inArray(ingestedEvents.id, latest), eq(ingestedEvents.status, 'firing')));
  }
  return { alerts: movedAlerts, events: movedEvents.length };
}

const latestOf = (a: Date | null, b: Date | null) => (a && b ? (a > b ? a : b) : (a ?? b));

async function updateSurvivor(
  tx: Tx,
  change: MergeChange,
  survivor: IncidentRow,
  merged: IncidentRow,
  moved: MovedAlerts['alerts'],
): Promise<void> {
  const { tenantId, survivorId } = change;
  const [firing] = await tx
    .select({ n: sql<number>`count(*)::int` })
    .from(alerts)
    .where(and(eq(alerts.tenantId, tenantId), eq(alerts.incidentId, survivorId), eq(alerts.status, 'firing')));
  // Its severity rises to the highest of the alerts it receives; a person's or triage's stands otherwise.
  const severity = highestSeverity(survivor.severity, ...moved.map((a) => a.severity as Severity));
  await tx
    .update(incidents)
    .set({
      occurrenceCount: sql`${incidents.occurrenceCount} + ${merged.occurrenceCount}`,
      lastSeenAt: latestOf(survivor.lastSeenAt, merged.lastSeenAt),
      recoveredAt: firing!.n > 0 ? null : latestOf(survivor.recoveredAt, merged.recoveredAt),
      severity,
      updatedAt: sql`now()`,
    })
    .where(and(eq(incidents.tenantId, tenantId), eq(incidents.id, survivorId)));
  if (severity !== survivor.severity) {
    await appendEvent(tx, {
      tenantId,
      type: 'incident.severity_changed',
      incidentId: survivorId,
      payload: { incidentId: survivorId, from: survivor.severity, to: severity, reason: 'merge' },
      idempotencyKey: `${change.incidentId}:v${change.version}:merge:severity_changed`,
    });
  }
}

/** The merged incident's close, as a status change projects one, with `mergedInto` and its audit entries. */
async function closeMerged(tx: Tx, change: MergeChange, moved: MovedAlerts): Promise<void> {
  const { tenantId, incidentId: mergedId, survivorId, actor } = change;
  await tx
    .update(incidents)
    .set({ status: change.to, mergedInto: survivorId, version: change.version, updatedAt: sql`now()` })
    .where(and(eq(incidents.tenantId, tenantId), eq(incidents.id, mergedId)));
  const key = `${mergedId}:v${change.version}`;
  await appendEvent(tx, {
    tenantId,
    type: 'incident.status_changed',
    incidentId: mergedId,
    payload: {
      incidentId: mergedId,
      from: change.from,
      to: change.to,
      actorType: actor.type,
      actorId: actor.id,
      mergedInto: survivorId,
    },
    idempotencyKey: `${key}:incident.status_changed`,
  });
  const traced = {
    tenantId,
    actorType: actor.type,
    actorId: actor.id,
    requestId: actor.requestId ?? null,
    workflowId: change.workflowId,
    historyEventId: change.historyEventId ?? null,
  };
  await appendAudit(tx, {
    ...traced,
    action: 'incident.status_changed',
    targetType: 'incident',
    targetId: mergedId,
    incidentId: mergedId,
    details: { from: change.from, to: change.to, version: change.version, mergedInto: survivorId },
    idempotencyKey: `${key}:audit`,
  });
  await appendAudit(tx, {
    ...traced,
    action: 'incident.merged',
    targetType: 'incident',
    targetId: survivorId,
    incidentId: survivorId,
    details: { mergedIncidentId: mergedId, alertsMoved: moved.alerts.length, eventsMoved: moved.events },
    idempotencyKey: `${key}:merged:audit`,
  });
}

/** A person's split of one alert out of an incident. */
export interface SplitRequest {
  tenantId: string;
  incidentId: string;
  alertId: string;
  userId: string;
  requestId: string;
  now: Date;
}

/**
 * Moves one alert, and its deliveries, out of an open incident to a new automated incident (its
 * workflow started by the dispatcher, as for an incident a webhook opens), with `incident.created`
 * (`splitFrom`) and the audit entries. Refuses an unknown incident or an alert not in it (404), a
 * settled incident, and the incident's only alert (409). Answers the new incident's row.
 */
export async function writeSplit(db: Db, request: SplitRequest): Promise<IncidentRow> {
  return db.transaction(async (tx) => {
    const { tenantId, incidentId, alertId } = request;
    await lockGrouping(tx, tenantId);
    const [source] = await lockIncidents(tx, tenantId, [incidentId]);
    if (!source) throw new AppError('incident_not_found', 'No incident has that identifier');
    if (isSettled(source.status)) {
      throw new AppError(
        'conflict',
        `Incident ${incidentId} is ${source.status}: alerts are split only out of open incidents (reopen it first)`,
      );
    }
    const [alert] = await tx
      .select()
      .from(alerts)
      .where(and(eq(alerts.tenantId, tenantId), eq(alerts.id, alertId), eq(alerts.incidentId, incidentId)))
      .for('update');
    if (!alert) throw new AppError('not_found', `Incident ${incidentId} has no alert ${alertId}`);
    const remaining = await tx
      .select()
      .from(alerts)
      .where(and(eq(alerts.tenantId, tenantId), eq(alerts.incidentId, incidentId), ne(alerts.id, alertId)))
      .orderBy(asc(alerts.firstSeenAt), asc(alerts.id));
    if (remaining.length === 0) {
      throw new AppError(
        'conflict',
        `Alert ${alertId} is the only alert of incident ${incidentId}: nothing would remain of it; close it instead`,
      );
    }
    const opened = await openSplitIncident(tx, request, alert);
    await moveSplitAlert(tx, request, opened.id);
    await updateSplitSource(tx, source, alert, remaining);
    await tx.execute(sql`select pg_notify(${dispatchChannel}, '')`);
    return opened;
  });
}

/** The new incident, as a webhook would have opened it from this alert alone, its event and audit entries. */
async function openSplitIncident(tx: Tx, request: SplitRequest, alert: AlertRow): Promise<IncidentRow> {
  const { tenantId, incidentId: splitFrom } = request;
  const ownership = alert.service ? await findOwnership(tx, tenantId, alert.service) : undefined;
  // The description of the alert's first delivery, as its incident would have had it.
  const [first] = await tx
    .select({ description: ingestedEvents.description })
    .from(ingestedEvents)
    .where(and(eq(ingestedEvents.tenantId, tenantId), eq(ingestedEvents.alertId, alert.id)))
    .orderBy(asc(ingestedEvents.occurredAt), asc(ingestedEvents.id))
    .limit(1);
  const [row] = await tx
    .insert(incidents)
    .values({
      id: newId('inc', request.now.getTime()),
      tenantId,
      title: alert.title,
      description: first?.description ?? alert.title,
      severity: alert.severity as Severity,
      status: 'open',
      source: 'automated',
      version: 1,
      fingerprint: alert.fingerprint,
      service: alert.service,
      serviceId: ownership?.serviceId ?? null,
      ownerTeam: ownership?.ownerTeam ?? null,
      immediateAttention: ownership?.immediateAttention ?? false,
      occurrenceCount: alert.occurrenceCount,
      lastSeenAt: alert.lastSeenAt,
      recoveredAt: alert.status === 'resolved' ? alert.lastSeenAt : null,
    })
    .returning();
  const opened = row!;
  await appendEvent(tx, {
    tenantId,
    type: 'incident.created',
    incidentId: opened.id,
    payload: {
      incidentId: opened.id,
      title: opened.title,
      severity: opened.severity,
      source: 'automated',
      provider: alert.provider,
      ...ownershipPayload(alert.service, ownership),
      splitFrom,
    },
    idempotencyKey: `${opened.id}:incident.created`,
  });
  const by = { tenantId, actorType: 'user' as const, actorId: request.userId, requestId: request.requestId };
  await appendAudit(tx, {
    ...by,
    action: 'incident.created',
    targetType: 'incident',
    targetId: opened.id,
    incidentId: opened.id,
    details: { source: 'automated', splitFrom, alertId: alert.id, fingerprint: alert.fingerprint },
  });
  await appendAudit(tx, {
    ...by,
    action: 'incident.alert_split',
    targetType: 'alert',
    targetId: alert.id,
    incidentId: splitFrom,
    details: { newIncidentId: opened.id },
  });
  return opened;
}

/**
 * The alert stands alone now (`fingerprint`, no rule), and its deliveries follow it. They count
 * as delivered: the new incident's workflow starts from the row, which already says what they said.
 */
async function moveSplitAlert(tx: Tx, request: SplitRequest, newIncidentId: string): Promise<void> {
  const { tenantId, alertId } = request;
  await tx
    .update(alerts)
    .set({ incidentId: newIncidentId, correlation: { reason: 'fingerprint' }, ruleId: null })
    .where(and(eq(alerts.tenantId, tenantId), eq(alerts.id, alertId)));
  await tx
    .update(ingestedEvents)
    .set({ incidentId: newIncidentId, deliveredAt: sql`coalesce(${ingestedEvents.deliveredAt}, now())` })
    .where(and(eq(ingestedEvents.tenantId, tenantId), eq(ingestedEvents.alertId, alertId)));
}

/**
 * What the source incident keeps: its occurrences less the alert's, last seen and recovery from
 * the alerts that remain, and, when the alert gave it its fingerprint, its earliest remaining
 * alert's. Its title and severity stand (a person re-triages when the split changes them).
 */
async function updateSplitSource(tx: Tx, source: IncidentRow, alert: AlertRow, remaining: AlertRow[]): Promise<void> {
  const lastSeenAt = remaining.reduce<Date | null>((latest, a) => latestOf(latest, a.lastSeenAt), null);
  const firing = remaining.some((a) => a.status === 'firing');
  await tx
    .update(incidents)
    .set({
      occurrenceCount: Math.max(1, source.occurrenceCount - alert.occurrenceCount),
      lastSeenAt,
      recoveredAt: firing ? null : (source.recoveredAt ?? lastSeenAt),
      fingerprint: source.fingerprint === alert.fingerprint ? remaining[0]!.fingerprint : source.fingerprint,
      updatedAt: sql`now()`,
    })
    .where(and(eq(incidents.tenantId, source.tenantId), eq(incidents.id, source.id)));
}
