import { and, eq, sql } from 'drizzle-orm';
import type { Logger } from 'pino';
import type { Db } from '../db/client.js';
import { appendAudit } from '../db/repositories/audit.js';
import { findIncident, findOwnership, markWorkflowStarted, toWorkflowInput } from '../db/repositories/incidents.js';
import { consumeQuota, remainingOf, usageOf } from '../db/repositories/usage.js';
import { incidents, type IncidentRow } from '../db/schema/incidents.js';
import { investigationContext, investigations } from '../db/schema/investigation.js';
import { approvals } from '../db/schema/remediation.js';
import type { TenantRow } from '../db/schema/tenants.js';
import { ownershipPayload } from '../domain/ownership.js';
import { monthlyQuota, quotaWarningKey, quotaWarningsCrossed, usagePeriod } from '../domain/plans.js';
import { AppError } from '../errors.js';
import { newId } from '../ids.js';
import { appendEvent } from '../outbox/append.js';
import type { WorkflowPort } from '../temporal/port.js';
import { failureLogFields } from '../dependency-failures.js';

/** What the commands are given: no module singletons. */
export interface IncidentServices {
  db: Db;
  workflows: WorkflowPort;
  clock: () => Date;
  logger: Logger;
}

/** Who asks: a user of a tenant, within one request (its id goes to the audit log and the workflow). */
export interface Requester {
  tenant: TenantRow;
  userId: string;
  requestId: string;
  /** The request's logger; the services' when absent. */
  logger?: Logger;
}

type IncidentStatus = Parameters<WorkflowPort['setIncidentStatus']>[2]['status'];
type ApprovalAnswer = {
  decision: Parameters<WorkflowPort['respondToApproval']>[1]['decision'];
  notes?: string | undefined;
};
type Actor = Parameters<WorkflowPort['triageIncident']>[2]['actor'];

const incidentNotFound = () => new AppError('incident_not_found', 'No incident has that identifier');

/** Why an approval is no longer open, from its stored reason. */
function expiredMessage(reason: string | null): string {
  switch (reason) {
    case 'deadline':
      return 'The approval deadline has passed';
    case 'superseded':
      return 'This approval was superseded by a proposal on newer evidence';
    case 'resolved':
    case 'closed':
      return `The approval ended when its incident was ${reason}`;
    case 'status_changed':
      return 'The approval ended when its incident was moved out of awaiting_approval';
    default:
      return 'The approval is no longer open: its deadline passed, newer evidence superseded it, or its incident moved on';
  }
}

type NewIncident = { title: string; description: string; service?: string | undefined };

const actorOf = (by: Requester): Actor => ({ type: 'user', id: by.userId, requestId: by.requestId });
const logOf = (services: IncidentServices, by: Requester) => by.logger ?? services.logger;

/**
 * The incident's workflow command, on its stored state: 404 for an unknown incident, 409 for a
 * closed one when `closedRefusal` says why. A workflow the call started is marked started, so
 * the reconciler leaves it.
 */
async function throughWorkflow<T>(
  services: IncidentServices,
  by: Requester,
  incidentId: string,
  closedRefusal: string | null,
  call: (row: IncidentRow, actor: Actor) => Promise<T>,
): Promise<T> {
  const row = await findIncident(services.db, by.tenant.id, incidentId);
  if (!row) throw incidentNotFound();
  if (closedRefusal && row.status === 'closed') throw new AppError('conflict', closedRefusal);
  const result = await call(row, actorOf(by));
  if (!row.workflowStartedAt) await markWorkflowStarted(services.db, row.id);
  return result;
}

/** Opens a manual incident: counted against the monthly event quota, then its workflow starts. */
async function createIncident(services: IncidentServices, by: Requester, input: NewIncident) {
  const { db, workflows, clock } = services;
  const tenantId = by.tenant.id;
  const now = clock();
  const period = usagePeriod(now);
  const eventsLimit = monthlyQuota(by.tenant, 'events');
  const investigationsLimit = monthlyQuota(by.tenant, 'investigations');

  // Row, event, audit and quota count commit together; then the workflow starts. A crash
  // in between is repaired by the worker's reconciler, so an accepted incident is never lost.
  const row = await db.transaction(async (tx) => {
    const ownership = input.service ? await findOwnership(tx, tenantId, input.service) : undefined;
    const inserted = await tx
      .insert(incidents)
      .values({
        id: newId('inc', now.getTime()),
        tenantId,
        title: input.title,
        description: input.description,
        severity: 'medium',
        status: 'open',
        source: 'manual',
        version: 1,
        service: input.service ?? null,
        serviceId: ownership?.serviceId ?? null,
        ownerTeam: ownership?.ownerTeam ?? null,
        immediateAttention: ownership?.immediateAttention ?? false,
      })
      .returning();
    const incident = inserted[0]!;
    await appendEvent(tx, {
      tenantId,
      type: 'incident.created',
      incidentId: incident.id,
      payload: {
        incidentId: incident.id,
        title: incident.title,
        severity: incident.severity,
        source: incident.source,
        ...ownershipPayload(incident.service, ownership),
      },
      idempotencyKey: `${incident.id}:incident.created`,
    });
    await appendAudit(tx, {
      tenantId,
      actorType: 'user',
      actorId: by.userId,
      action: 'incident.created',
      targetType: 'incident',
      targetId: incident.id,
      incidentId: incident.id,
      requestId: by.requestId,
      details: { title: incident.title, source: incident.source },
    });
    // Last, so the tenant's hot counter row stays locked only until commit.
    const used = await consumeQuota(tx, { tenantId, period, metric: 'events', limit: eventsLimit });
    if (used === null) {
      // Worded as ingestion words it, so a tenant with credits sees they are used up too.
      const { credits } = await usageOf(tx, { tenantId, period, metric: 'events' });
      throw new AppError(
        'event_quota_exceeded',
        credits > 0
          ? `The monthly event quota of ${eventsLimit} and the ${credits} credit(s) bought are used up for ${period}`
          : `The monthly event quota of ${eventsLimit} is reached for ${period}`,
      );
    }
    // Crossing 80 % or 100 % here warns as ingestion does, once a month whichever path crosses.
    for (const percent of quotaWarningsCrossed(used - 1, used, eventsLimit)) {
      await appendEvent(tx, {
        tenantId,
        type: 'system.quota_warning',
        incidentId: null,
        payload: { metric: 'events', period, used, limit: eventsLimit, percent },
        idempotencyKey: quotaWarningKey(tenantId, period, 'events', percent),
      });
    }
    return incident;
  });

  try {
    await workflows.startIncident(toWorkflowInput(row), row.title);
    await markWorkflowStarted(db, row.id);
  } catch (err) {
    const fields = failureLogFields(err);
    logOf(services, by)['err' in fields ? 'error' : 'warn'](
      { ...fields, incidentId: row.id },
      'workflow start failed; the reconciler will retry',
    );
  }

  // What is left counts the credits bought once the quota is used (ADR 0289).
  const left = (metric: 'investigations' | 'events', limit: number) =>
    remainingOf(db, { tenantId, period, metric, limit }).then((r) => r.remaining);
  return {
    incident: row,
    investigationsRemaining: await left('investigations', investigationsLimit),
    eventsRemaining: await left('events', eventsLimit),
  };
}

/** Moves an incident to a status through its workflow (a closed incident's is started again). */
function setIncidentStatus(services: IncidentServices, by: Requester, incidentId: string, status: IncidentStatus) {
  return throughWorkflow(services, by, incidentId, null, (row, actor) =>
    services.workflows.setIncidentStatus(toWorkflowInput(row), row.title, { status, actor }),
  );
}

/** Triages (or re-triages) an incident and answers its classification. */
function triageIncident(services: IncidentServices, by: Requester, incidentId: string) {
  return throughWorkflow(
    services,
    by,
    incidentId,
    'A closed incident is not triaged; reopen it first (PATCH its status)',
    (row, actor) => services.workflows.triageIncident(toWorkflowInput(row), row.title, { actor }),
  );
}

/** Starts an incident's investigation (the workflow refuses one while another runs, or past quota). */
function investigateIncident(services: IncidentServices, by: Requester, incidentId: string) {
  return throughWorkflow(
    services,
    by,
    incidentId,
    'A closed incident is not investigated; reopen it first (PATCH its status)',
    (row, actor) => services.workflows.startInvestigation(toWorkflowInput(row), row.title, { actor }),
  );
}

/**
 * Stores human context for an incident's investigation, then tells its workflow: a running
 * investigation takes it in when it synthesises, a finished one is re-synthesised with it.
 */
async function addInvestigationContext(services: IncidentServices, by: Requester, incidentId: string, content: string) {
  const { db, workflows } = services;
  const tenantId = by.tenant.id;
  const stored = await db.transaction(async (tx) => {
    // The incident row lock orders concurrent context entries of one incident.
    const [incident] = await tx
      .select({ id: incidents.id })
      .from(incidents)
      .where(and(eq(incidents.tenantId, tenantId), eq(incidents.id, incidentId)))
      .for('update');
    if (!incident) throw incidentNotFound();
    const [next] = await tx
      .select({ seq: sql<number>`coalesce(max(${investigationContext.seq}), 0)::int + 1` })
      .from(investigationContext)
      .where(eq(investigationContext.incidentId, incidentId));
    const [row] = await tx
      .insert(investigationContext)
      .values({ tenantId, incidentId, seq: next!.seq, content, actorId: by.userId })
      .returning();
    const [investigation] = await tx
      .select({ status: investigations.status })
      .from(investigations)
      .where(and(eq(investigations.tenantId, tenantId), eq(investigations.incidentId, incidentId)));
    await appendAudit(tx, {
      tenantId,
      actorType: 'user',
      actorId: by.userId,
      action: 'investigation.context_added',
      targetType: 'incident',
      targetId: incidentId,
      incidentId,
      requestId: by.requestId,
      details: { sequence: row!.seq, length: content.length },
    });
    return { row: row!, investigationStatus: investigation?.status ?? null };
  });
  // Stored first: a running investigation reads every stored entry when it synthesises.
  const signalled = await workflows.signalInvestigationContext(incidentId).catch((err: unknown) => {
    logOf(services, by).warn({ err, incidentId }, 'could not signal investigation context');
    return 'failed' as const;
  });
  return {
    sequence: stored.row.seq,
    createdAt: stored.row.createdAt,
    resynthesis:
      signalled === 'delivered' && stored.investigationStatus !== null && stored.investigationStatus !== 'running',
  };
}

/** An admin's answer to an approval, through its incident's workflow (409 once it has ended). */
async function respondToApproval(
  services: IncidentServices,
  by: Requester,
  approvalId: string,
  answer: ApprovalAnswer,
) {
  const { db, workflows, clock } = services;
  const [row] = await db
    .select()
    .from(approvals)
    .where(and(eq(approvals.tenantId, by.tenant.id), eq(approvals.id, approvalId)));
  if (!row) throw new AppError('approval_not_found', 'No approval has that identifier');
  const endedAnswer = () =>
    row.status === 'approved' || row.status === 'rejected'
      ? new AppError('already_decided', 'This approval has already been answered')
      : new AppError('approval_expired', expiredMessage(row.status === 'expired' ? row.expiredReason : null));
  // What the row already says needs no workflow (which may be unreachable): an answered or
  // expired approval, or one past its deadline (the workflow's validator refuses it too;
  // its timer expires it).
  if (row.status !== 'pending') throw endedAnswer();
  if (clock().getTime() >= row.deadline.getTime()) {
    throw new AppError('approval_expired', 'The approval deadline has passed');
  }
  const answered = await workflows
    .respondToApproval(row.incidentId, {
      approvalId,
      decision: answer.decision,
      ...(answer.notes !== undefined ? { notes: answer.notes } : {}),
      actor: actorOf(by),
    })
    .catch((err: unknown) => {
      // The stored approval is pending and within its deadline (judged above), but the
      // workflow does not wait on it yet: it has not taken in its own proposal (a worker
      // behind). Not a 404 for an approval the list shows: retry shortly (ADR 0202).
      if (err instanceof AppError && err.code === 'approval_not_found') {
        throw new AppError('service_unavailable', 'The approval is not ready to be answered yet; retry shortly');
      }
      throw err;
    });
  if (answered === 'gone') throw endedAnswer(); // the incident's workflow has ended
  return answered;
}

/**
 * Every command on an incident, in one place: what the api's routes perform (and what any other
 * entry point should call), each a transaction of rows, events and audit, then the incident
 * workflow through the port.
 */
export function incidentCommands(services: IncidentServices) {
  return {
    create: (by: Requester, input: NewIncident) => createIncident(services, by, input),
    setStatus: (by: Requester, incidentId: string, status: IncidentStatus) =>
      setIncidentStatus(services, by, incidentId, status),
    triage: (by: Requester, incidentId: string) => triageIncident(services, by, incidentId),
    investigate: (by: Requester, incidentId: string) => investigateIncident(services, by, incidentId),
    addContext: (by: Requester, incidentId: string, content: string) =>
      addInvestigationContext(services, by, incidentId, content),
    respondToApproval: (by: Requester, approvalId: string, answer: ApprovalAnswer) =>
      respondToApproval(services, by, approvalId, answer),
  };
}

export type IncidentCommands = ReturnType<typeof incidentCommands>;
