import { ApplicationFailure } from '@temporalio/activity';
import { and, eq } from 'drizzle-orm';
import type { ProposedRemediation, ProposeRemediationRequest } from '../../analysis/remediation-types.js';
import type { Db } from '../../db/client.js';
import { appendAudit } from '../../db/repositories/audit.js';
import { findTenant } from '../../db/repositories/tenants.js';
import { events } from '../../db/schema/events.js';
import { incidents } from '../../db/schema/incidents.js';
import { investigations } from '../../db/schema/investigation.js';
import {
  approvals,
  notifications,
  remediations,
  remediationSteps,
  type RemediationStepPlan,
} from '../../db/schema/remediation.js';
import { skills } from '../../db/schema/skills.js';
import { newId } from '../../ids.js';
import { appendEvent } from '../../outbox/append.js';
import type { RemediationContext, Tx } from './context.js';
import { approvalRecipients } from '../../db/repositories/notifications.js';
import { currentEvidenceHash } from './evidence-hash.js';
import { buildPlan, isExecutableStep } from './plan.js';

export const DEFAULT_APPROVAL_TIMEOUT_MINUTES = 60;

/** A proposal ready to be written: the plan, its approval and whom to notify. */
interface Proposal {
  remediationId: string;
  approvalId: string;
  plan: RemediationStepPlan[];
  evidenceHash: string;
  now: Date;
  deadline: Date;
  autoApprove: boolean;
  admins: { userId: string }[];
}

class ProposalRaced extends Error {}

/**
 * Proposes the plan behind an admin approval with a deadline, once per request key. A plan with
 * no step the service can execute asks nobody: its manual steps stay the incident's recommended
 * actions, and the answer has `steps: 0` (ADR 0258).
 */
export async function proposeRemediation(
  ctx: RemediationContext,
  req: ProposeRemediationRequest,
): Promise<ProposedRemediation> {
  const { db } = ctx;
  const key = `${req.incidentId}:remediation-proposed:${req.requestKey}`;
  const before = await storedProposal(db, key);
  if (before) return before;

  const planned = await readPlan(db, req);
  if (!planned.plan.some(isExecutableStep)) return leftToPeople(db, req, key, planned.plan);
  const proposal = await prepareProposal(ctx, req, planned);
  const created = await db
    .transaction(async (tx) => {
      await writeProposal(tx, req, key, proposal);
      return true;
    })
    .catch((err: unknown) => {
      if (err instanceof ProposalRaced) return false;
      throw err;
    });
  if (!created) {
    const winner = await storedProposal(db, key);
    if (!winner) throw new Error('remediation proposal raced but no stored proposal was found');
    return winner;
  }
  const { remediationId, approvalId, deadline, autoApprove, evidenceHash, plan } = proposal;
  return { remediationId, approvalId, deadline: deadline.toISOString(), autoApprove, evidenceHash, steps: plan.length };
}

/** The answer of an earlier proposal with this key, read from its `approval.requested` event. */
async function storedProposal(db: Db, key: string): Promise<ProposedRemediation | undefined> {
  const [done] = await db.select({ payload: events.payload }).from(events).where(eq(events.idempotencyKey, key));
  if (!done) return undefined;
  const p = done.payload;
  return {
    remediationId: p.remediationId as string,
    approvalId: p.approvalId as string,
    deadline: p.deadline as string,
    autoApprove: p.autoApprove as boolean,
    evidenceHash: p.evidenceHash as string,
    steps: (p.steps as unknown[]).length,
  };
}

/** The plan of the recommended actions, each a tenant skill or a builtin action. */
async function readPlan(db: Db, req: ProposeRemediationRequest) {
  const tenant = await findTenant(db, req.tenantId);
  if (!tenant) throw ApplicationFailure.nonRetryable(`tenant ${req.tenantId} not found`, 'TenantMissing');
  const [incident] = await db
    .select()
    .from(incidents)
    .where(and(eq(incidents.id, req.incidentId), eq(incidents.tenantId, req.tenantId)));
  if (!incident) throw ApplicationFailure.nonRetryable(`incident ${req.incidentId} not found`, 'IncidentMissing');
  const [inv] = await db
    .select()
    .from(investigations)
    .where(and(eq(investigations.incidentId, req.incidentId), eq(investigations.tenantId, req.tenantId)));
  const actions = inv?.recommendedActions.length ? inv.recommendedActions : incident.recommendedActions;
  const tenantSkills = await db
    .select()
    .from(skills)
    .where(and(eq(skills.tenantId, req.tenantId), eq(skills.enabled, true)));
  return { tenant, plan: buildPlan(actions, incident, tenantSkills) };
}

/**
 * Nothing the service can run: no remediation, no approval, no `approval.requested`. The manual
 * steps are the incident's recommended actions already (the synthesis wrote them); the audit
 * says why no approval was asked for. Written once per request key.
 */
async function leftToPeople(
  db: Db,
  req: ProposeRemediationRequest,
  key: string,
  plan: RemediationStepPlan[],
): Promise<ProposedRemediation> {
  await appendAudit(db, {
    tenantId: req.tenantId,
    actorType: 'system',
    actorId: 'workflow',
    action: 'remediation.manual_only',
    targetType: 'incident',
    targetId: req.incidentId,
    incidentId: req.incidentId,
    workflowId: req.workflowId,
    historyEventId: req.historyEventId ?? null,
    details: { investigationRun: req.investigationRun, recommendedActions: plan.map((s) => s.description) },
    idempotencyKey: `${key}:manual-only:audit`,
  });
  return {
    remediationId: '',
    approvalId: '',
    deadline: '',
    autoApprove: false,
    evidenceHash: '',
    steps: 0,
    manualSteps: plan.length,
  };
}

/** Reads the rest of a proposal: the evidence hash, the tenant's settings, the admins to ask. */
async function prepareProposal(
  ctx: RemediationContext,
  req: ProposeRemediationRequest,
  { tenant, plan }: Awaited<ReturnType<typeof readPlan>>,
): Promise<Proposal> {
  const { db } = ctx;
  const evidenceHash = await currentEvidenceHash(db, req.incidentId, req.tenantId);
  const now = ctx.clock();
  const minutes = tenant.settings.approvalTimeoutMinutes ?? DEFAULT_APPROVAL_TIMEOUT_MINUTES;
  const deadline = new Date(now.getTime() + minutes * 60_000);
  const autoApprove = tenant.settings.autoRemediation === true;
  const remediationId = newId('rem');
  const approvalId = newId('apr');
  const admins = await approvalRecipients(db, req.tenantId);
  return { remediationId, approvalId, plan, evidenceHash, now, deadline, autoApprove, admins };
}

/** Writes the proposal: its event, the remediation and its steps, the approval, the admins' notifications, the audit. */
async function writeProposal(tx: Tx, req: ProposeRemediationRequest, key: string, proposal: Proposal): Promise<void> {
  const { remediationId, approvalId, plan, evidenceHash, now, deadline, autoApprove, admins } = proposal;
  const steps = plan.map((s) => ({ index: s.index, kind: s.kind, action: s.action, description: s.description }));
  const appended = await appendEvent(tx, {
    tenantId: req.tenantId,
    type: 'approval.requested',
    incidentId: req.incidentId,
    payload: {
      incidentId: req.incidentId,
      remediationId,
      approvalId,
      deadline: deadline.toISOString(),
      steps,
      autoApprove,
      evidenceHash,
      investigationRun: req.investigationRun,
    },
    idempotencyKey: key,
  });
  // A concurrent attempt with the same key won: roll this one back and answer with its ids.
  if (!appended) throw new ProposalRaced();
  await tx.insert(remediations).values({
    id: remediationId,
    tenantId: req.tenantId,
    incidentId: req.incidentId,
    investigationRun: req.investigationRun,
    status: 'awaiting_approval',
    plan,
    evidenceHash,
    createdAt: now,
    updatedAt: now,
  });
  if (plan.length > 0) {
    await tx.insert(remediationSteps).values(
      plan.map((s) => ({
        remediationId,
        index: s.index,
        tenantId: req.tenantId,
        status: 'pending' as const,
        idempotencyKey: `${remediationId}:step:${s.index}`,
      })),
    );
  }
  await tx.insert(approvals).values({
    id: approvalId,
    tenantId: req.tenantId,
    incidentId: req.incidentId,
    remediationId,
    status: 'pending',
    deadline,
    evidenceHash,
    createdAt: now,
  });
  if (admins.length > 0) {
    await tx
      .insert(notifications)
      .values(
        admins.map((a) => ({
          id: newId('ntf'),
          tenantId: req.tenantId,
          userId: a.userId,
          type: 'approval.requested',
          incidentId: req.incidentId,
          payload: { incidentId: req.incidentId, remediationId, approvalId, deadline: deadline.toISOString() },
          idempotencyKey: `${approvalId}:${a.userId}`,
        })),
      )
      .onConflictDoNothing({ target: notifications.idempotencyKey });
  }
  await appendAudit(tx, {
    tenantId: req.tenantId,
    actorType: 'system',
    actorId: 'workflow',
    action: 'remediation.proposed',
    targetType: 'remediation',
    targetId: remediationId,
    incidentId: req.incidentId,
    workflowId: req.workflowId,
    historyEventId: req.historyEventId ?? null,
    details: {
      approvalId,
      deadline: deadline.toISOString(),
      steps,
      evidenceHash,
      autoApprove,
      notified: admins.map((a) => a.userId),
    },
    idempotencyKey: `${key}:audit`,
  });
}
