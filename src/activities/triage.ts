import { ApplicationFailure } from '@temporalio/activity';
import { and, eq, gte, inArray, sql } from 'drizzle-orm';
import type { ModelProvider, ModelResult, TriageClassification, TriageInput } from '../analysis/types.js';
import type { Db } from '../db/client.js';
import { appendAudit } from '../db/repositories/audit.js';
import { appendEvent } from '../outbox/append.js';
import { findIncident } from '../db/repositories/incidents.js';
import { latestIncidentAlerts } from '../db/repositories/ingested-events.js';
import { events } from '../db/schema/events.js';
import { incidents, type IncidentRow, type Severity } from '../db/schema/incidents.js';
import { ingestedEvents } from '../db/schema/ingestion.js';
import { runbooks, triageResults } from '../db/schema/investigation.js';
import { serviceEdges, services } from '../db/schema/topology.js';
import type { Actor } from '../workflows/messages.js';
import { whileBeating } from './heartbeat.js';

export interface TriageRequest {
  incidentId: string;
  tenantId: string;
  /** Unique per triage request (workflow run id and a counter): a retry reuses it. */
  requestKey: string;
  actor: Actor;
  workflowId: string;
  /** The workflow task that decided this write (for the audit entry). */
  historyEventId?: number;
}

export interface TriageOutcome {
  incidentId: string;
  priority: Severity;
  summary: string;
  confidence: number;
  suggestedAgents: string[];
  /** The incident's severity before triage, when triage changed it. */
  severityChangedFrom: Severity | null;
}

/** Deployments and code changes this long before the incident count as recent. */
const RECENT_CHANGE_WINDOW_MS = 6 * 60 * 60 * 1000;
const MAX_ALERTS = 50;

interface TriageActivityDeps {
  db: Db;
  model: ModelProvider;
}

async function storedOutcome(db: Db, incidentId: string, severityChangedFrom: Severity | null): Promise<TriageOutcome> {
  const [row] = await db.select().from(triageResults).where(eq(triageResults.incidentId, incidentId));
  if (!row) throw ApplicationFailure.nonRetryable(`no triage stored for ${incidentId}`, 'TriageMissing');
  return {
    incidentId,
    priority: row.priority,
    summary: row.summary,
    confidence: row.confidence,
    suggestedAgents: row.suggestedAgents,
    severityChangedFrom,
  };
}

/** What the model is shown: the incident, its latest alerts and the context around its service. */
async function triageInput(db: Db, request: TriageRequest, incident: IncidentRow): Promise<TriageInput> {
  const since = new Date(incident.createdAt.getTime() - RECENT_CHANGE_WINDOW_MS);
  const [alerts, changes, runbookRows, node, firstChange] = await Promise.all([
    latestIncidentAlerts(db, { tenantId: request.tenantId, incidentId: request.incidentId, limit: MAX_ALERTS }),
    db
      .select({ n: sql<number>`count(*)::int` })
      .from(ingestedEvents)
      .where(
        and(
          eq(ingestedEvents.tenantId, request.tenantId),
          inArray(ingestedEvents.kind, ['deployment', 'code_change']),
          gte(ingestedEvents.occurredAt, since),
        ),
      ),
    db.select({ id: runbooks.id }).from(runbooks).where(eq(runbooks.tenantId, request.tenantId)).limit(1),
    incident.serviceId
      ? db
          .select({
            criticality: services.criticality,
            edges: sql<number>`(select count(*)::int from ${serviceEdges} e where e.tenant_id = ${request.tenantId}
              and (e.source_service_id = ${incident.serviceId} or e.target_service_id = ${incident.serviceId}))`,
          })
          .from(services)
          .where(and(eq(services.tenantId, request.tenantId), eq(services.id, incident.serviceId)))
      : Promise.resolve([]),
    // Re-triage starts from the severity as reported, not from an earlier triage's priority.
    db
      .select({ from: sql<Severity>`${events.payload}->>'from'` })
      .from(events)
      .where(
        and(
          eq(events.tenantId, request.tenantId),
          eq(events.incidentId, request.incidentId),
          eq(events.type, 'incident.severity_changed'),
          sql`${events.payload}->>'reason' = 'triage'`,
        ),
      )
      .orderBy(events.seq)
      .limit(1),
  ]);

  return {
    incident: {
      incidentId: incident.id,
      title: incident.title,
      description: incident.description,
      severity: firstChange[0]?.from ?? incident.severity,
      source: incident.source,
      service: incident.service,
      ownerTeam: incident.ownerTeam,
      criticality: node[0]?.criticality ?? null,
      occurrenceCount: incident.occurrenceCount,
      recovered: incident.recoveredAt !== null,
    },
    alerts: alerts.map((a) => ({
      alertName: a.alertName,
      severity: (a.severity as Severity | null) ?? null,
      status: a.status,
      service: a.service,
      title: a.title,
      occurredAt: a.occurredAt.toISOString(),
    })),
    recentChanges: changes[0]?.n ?? 0,
    hasRunbooks: runbookRows.length > 0,
    hasPatterns: false,
    hasTopology: (node[0]?.edges ?? 0) > 0,
  };
}

/** Records the classification, the severity change, the events and the audit entry in one transaction. */
async function recordTriage(
  db: Db,
  request: TriageRequest,
  incident: IncidentRow,
  result: ModelResult<TriageClassification>,
): Promise<TriageOutcome> {
  const key = `${request.incidentId}:triage:${request.requestKey}`;
  const c = result.output;
  return db.transaction(async (tx) => {
    const appended = await appendEvent(tx, {
      tenantId: request.tenantId,
      type: 'triage.completed',
      incidentId: request.incidentId,
      payload: {
        incidentId: request.incidentId,
        priority: c.priority,
        summary: c.summary,
        confidence: c.confidence,
        suggestedAgents: c.suggestedAgents,
        model: result.model,
        severityChangedFrom: c.priority !== incident.severity ? incident.severity : null,
      },
      idempotencyKey: `${key}:completed`,
    });
    if (!appended) return storedOutcome(db, request.incidentId, null); // a concurrent retry won
    const classification = {
      priority: c.priority,
      summary: c.summary,
      confidence: c.confidence,
      reasoning: c.reasoning,
      suggestedAgents: c.suggestedAgents,
      model: result.model,
      tokensUsed: result.tokensUsed,
      costUsd: result.costUsd,
    };
    await tx
      .insert(triageResults)
      .values({ incidentId: request.incidentId, tenantId: request.tenantId, ...classification })
      .onConflictDoUpdate({
        target: triageResults.incidentId,
        set: { ...classification, run: sql`${triageResults.run} + 1`, updatedAt: sql`now()` },
      });
    let severityChangedFrom: Severity | null = null;
    const changed = await tx
      .update(incidents)
      .set({ severity: c.priority, updatedAt: sql`now()` })
      .where(
        and(
          eq(incidents.id, request.incidentId),
          eq(incidents.tenantId, request.tenantId),
          sql`${incidents.severity} <> ${c.priority}`,
        ),
      )
      .returning({ id: incidents.id });
    if (changed.length > 0) {
      severityChangedFrom = incident.severity;
      await appendEvent(tx, {
        tenantId: request.tenantId,
        type: 'incident.severity_changed',
        incidentId: request.incidentId,
        payload: { incidentId: request.incidentId, from: incident.severity, to: c.priority, reason: 'triage' },
        idempotencyKey: `${key}:severity_changed`,
      });
    }
    await appendAudit(tx, {
      tenantId: request.tenantId,
      actorType: request.actor.type,
      actorId: request.actor.id,
      action: 'triage.completed',
      targetType: 'incident',
      targetId: request.incidentId,
      incidentId: request.incidentId,
      requestId: request.actor.requestId ?? null,
      workflowId: request.workflowId,
      historyEventId: request.historyEventId ?? null,
      details: { priority: c.priority, confidence: c.confidence, model: result.model, severityChangedFrom },
      idempotencyKey: `${key}:audit`,
    });
    return {
      incidentId: request.incidentId,
      priority: c.priority,
      summary: c.summary,
      confidence: c.confidence,
      suggestedAgents: c.suggestedAgents,
      severityChangedFrom,
    };
  });
}

/**
 * Classifies the incident with the configured model (the built-in analyzer by default) and
 * records the result, the severity change and the events in one transaction. Idempotent per
 * `requestKey`: a retry after the commit returns what was recorded without calling the model.
 */
async function triageIncident(deps: TriageActivityDeps, request: TriageRequest): Promise<TriageOutcome> {
  const { db, model } = deps;
  const key = `${request.incidentId}:triage:${request.requestKey}`;
  const done = await db
    .select({ payload: events.payload })
    .from(events)
    .where(eq(events.idempotencyKey, `${key}:completed`));
  if (done[0])
    return storedOutcome(db, request.incidentId, (done[0].payload.severityChangedFrom as Severity | null) ?? null);

  const incident = await findIncident(db, request.tenantId, request.incidentId);
  if (!incident)
    throw ApplicationFailure.nonRetryable(`incident ${request.incidentId} has no projection`, 'IncidentMissing');
  const result = await model.triage(await triageInput(db, request, incident));
  return recordTriage(db, request, incident, result);
}

/** Records that a triage request failed for good (`triage.failed`). Idempotent. */
async function recordTriageFailure(
  deps: TriageActivityDeps,
  request: TriageRequest & { reason: string },
): Promise<void> {
  const key = `${request.incidentId}:triage:${request.requestKey}`;
  await deps.db.transaction(async (tx) => {
    await appendEvent(tx, {
      tenantId: request.tenantId,
      type: 'triage.failed',
      incidentId: request.incidentId,
      payload: { incidentId: request.incidentId, reason: request.reason.slice(0, 500) },
      idempotencyKey: `${key}:failed`,
    });
    await appendAudit(tx, {
      tenantId: request.tenantId,
      actorType: request.actor.type,
      actorId: request.actor.id,
      action: 'triage.failed',
      targetType: 'incident',
      targetId: request.incidentId,
      incidentId: request.incidentId,
      requestId: request.actor.requestId ?? null,
      workflowId: request.workflowId,
      historyEventId: request.historyEventId ?? null,
      details: { reason: request.reason.slice(0, 500) },
      idempotencyKey: `${key}:failed:audit`,
    });
  });
}

export function createTriageActivities(deps: TriageActivityDeps) {
  return {
    // Heartbeats while it waits on the model (the workflow gives it a heartbeat timeout).
    triageIncident: (request: TriageRequest) => whileBeating(() => triageIncident(deps, request)),
    recordTriageFailure: (request: TriageRequest & { reason: string }) => recordTriageFailure(deps, request),
  };
}
