/**
 * Remediation activities (issue 6): propose a plan from an investigation's recommended actions
 * behind an admin approval with a deadline, record the decision or the expiry, run each step
 * exactly once, verify, and record the outcome. Every write is idempotent: events and audit rows
 * carry idempotency keys, state changes are guarded by the state they move from.
 *
 * Builtin actions (`rollback_deployment`, `restart_service`, `scale_service`, `follow_runbook`,
 * `notify_team`, `manual_step`) never touch real infrastructure: the service has no deploy or
 * orchestration credentials, so a builtin step records what it would do (its output, with
 * `simulated: true`) for a human or an external tool to carry out. Steps that must act for real
 * use a tenant skill (http) whose name or description matches the recommended action.
 */
import { createHash } from 'node:crypto';
import { ApplicationFailure } from '@temporalio/activity';
import { and, asc, eq, inArray, sql } from 'drizzle-orm';
import type { ApprovalDecided, ApprovalDecisionRecord, ProposedRemediation, RemediationActivities, StepOutcome } from '../analysis/remediation-types.js';
import { transactionOnce, type Db } from '../db/client.js';
import { appendAudit } from '../db/repositories/audit.js';
import { appendEvent } from '../outbox/append.js';
import { findTenant } from '../db/repositories/tenants.js';
import { events } from '../db/schema/events.js';
import { incidents } from '../db/schema/incidents.js';
import { ingestedEvents } from '../db/schema/ingestion.js';
import { evidenceItems, investigations } from '../db/schema/investigation.js';
import { approvals, notifications, remediations, remediationSteps, users, type RemediationStepPlan } from '../db/schema/remediation.js';
import { activeUsers } from '../db/repositories/users.js';
import { skills, type SkillRow } from '../db/schema/skills.js';
import { newId } from '../ids.js';
import { createSkillInvoker, type SkillRuntime } from '../skills/invoke.js';
import { whileBeating } from './heartbeat.js';

export const DEFAULT_APPROVAL_TIMEOUT_MINUTES = 60;

/** Builtin remediation actions; none of them touches infrastructure (see the module comment). */
/** An action that checks rather than changes ("Confirm the errors stop after the rollback"). */
const CHECK_ACTION = /^\s*(check|verify|look|confirm|inspect|observe|review|find|identify|open|see|watch|capture)\b/i;

export const builtinRemediationActions = ['rollback_deployment', 'restart_service', 'scale_service', 'follow_runbook', 'notify_team', 'manual_step'] as const;

const words = (s: string) => s.toLowerCase().replace(/[^a-z0-9]+/g, ' ').trim();

/** Maps a recommended action to a builtin action with its input (parsed from the sentence). */
export function builtinStepFor(action: string, incident: { service: string | null; ownerTeam: string | null }): { action: string; input: Record<string, unknown> } {
  const text = action.trim();
  const lower = text.toLowerCase();
  const fallbackService = incident.service ?? null;
  // A check ("Confirm the errors stop after the rollback") is for a human, whatever it names.
  if (CHECK_ACTION.test(text)) {
    return { action: 'manual_step', input: { instruction: text } };
  }
  if (/\broll(?:\s|-)?back\b/.test(lower)) {
    const deploy = /deployment\s+(\S+?)\s+of\s+([A-Za-z0-9][\w.-]*)/i.exec(text);
    const sha = /\bsha\s+([0-9a-f]{7,40})\b/i.exec(text);
    const target = /previous release \(sha ([0-9a-f]{7,40})\)/i.exec(text);
    return {
      action: 'rollback_deployment',
      input: {
        deploymentId: deploy?.[1] ?? null,
        service: deploy?.[2] ?? fallbackService,
        sha: sha?.[1] ?? null,
        ...(target ? { targetSha: target[1] } : {}),
      },
    };
  }
  const runbook = /follow runbook\s+['"‘“](.+?)['"’”]\s+step\s+(\d+)(?::\s*(.*))?/i.exec(text);
  if (runbook) {
    return { action: 'follow_runbook', input: { runbookTitle: runbook[1], step: Number(runbook[2]), ...(runbook[3] ? { text: runbook[3] } : {}) } };
  }
  if (/^\s*restart\b/i.test(text) || /\brestart (?:the )?/i.test(lower)) {
    const m = /restart\s+(?:the\s+)?(?:[\w-]+-killed\s+)?([A-Za-z0-9][\w.-]*)/i.exec(text);
    return { action: 'restart_service', input: { service: m?.[1] ?? fallbackService } };
  }
  if (/\bscale\b/.test(lower)) {
    const m = /scale\s+(out|up|in|down)?\s*([A-Za-z0-9][\w.-]*)?/i.exec(text);
    const direction = m?.[1]?.toLowerCase();
    const replicas = /\b(\d+)\s+replicas?\b/i.exec(text);
    return {
      action: 'scale_service',
      input: {
        service: m?.[2] && !/^(the|to|down|up|out|in)$/i.test(m[2]) ? m[2].replace(/[:,]$/, '') : fallbackService,
        direction: direction === 'down' || direction === 'in' ? 'in' : 'out',
        ...(replicas ? { replicas: Number(replicas[1]) } : {}),
      },
    };
  }
  if (/\b(notify|page|escalate|announce|inform)\b/.test(lower)) {
    return { action: 'notify_team', input: { team: incident.ownerTeam, message: text } };
  }
  return { action: 'manual_step', input: { instruction: text } };
}

/** An enabled tenant skill whose name (or description) the recommended action names. */
export function matchingSkill(action: string, candidates: SkillRow[]): SkillRow | undefined {
  const text = ` ${words(action)} `;
  const actionWords = new Set(words(action).split(' '));
  const enabled = candidates.filter((s) => s.enabled);
  // Every word of the name (`flush_cdn_cache`: flush, cdn, cache) appears in the action.
  const byName = enabled.find((s) => words(s.name).length >= 3 && words(s.name).split(' ').every((w) => actionWords.has(w)));
  if (byName) return byName;
  return enabled.find((s) => words(s.description).length >= 8 && text.includes(words(s.description)));
}

export function buildPlan(
  actions: string[],
  incident: { service: string | null; ownerTeam: string | null },
  tenantSkills: SkillRow[],
): RemediationStepPlan[] {
  return actions.map((description, index) => {
    const skill = matchingSkill(description, tenantSkills);
    if (skill) {
      return {
        index,
        kind: skill.type === 'integration' ? 'integration' : 'skill',
        action: skill.name,
        skillId: skill.id,
        input: { ...builtinStepFor(description, incident).input, recommendedAction: description },
        description,
        ...(skill.type === 'http' && CHECK_ACTION.test(description) ? { check: true } : {}),
      };
    }
    const builtin = builtinStepFor(description, incident);
    return { index, kind: 'builtin', action: builtin.action, input: builtin.input, description };
  });
}

/** What a builtin step records instead of acting. */
function describeBuiltin(step: RemediationStepPlan): string {
  const i = step.input;
  switch (step.action) {
    case 'rollback_deployment':
      return `Would roll back deployment ${String(i.deploymentId ?? i.sha ?? 'unknown')} of ${String(i.service ?? 'the service')}${i.targetSha ? ` to sha ${String(i.targetSha)}` : ''}`;
    case 'restart_service':
      return `Would restart ${String(i.service ?? 'the service')}`;
    case 'scale_service':
      return `Would scale ${String(i.service ?? 'the service')} ${String(i.direction)}${i.replicas ? ` to ${String(i.replicas)} replicas` : ''}`;
    case 'follow_runbook':
      return `Would follow step ${String(i.step)} of runbook '${String(i.runbookTitle)}'`;
    case 'notify_team':
      return `Would notify ${String(i.team ?? 'the owning team')}`;
    default:
      return `Left for a human: ${step.description}`;
  }
}

/**
 * The steps that will never run once a remediation ends unexecuted (rejected, expired) or stops
 * at a failed step: `skipped`, not `pending`, so the plan does not read as still to come.
 */
async function skipPendingSteps(tx: Pick<Db, 'update'>, tenantId: string, remediationId: string): Promise<void> {
  await tx
    .update(remediationSteps)
    .set({ status: 'skipped' })
    .where(and(eq(remediationSteps.remediationId, remediationId), eq(remediationSteps.tenantId, tenantId), eq(remediationSteps.status, 'pending')));
}

export function createRemediationActivities(deps: { db: Db; skills: SkillRuntime; clock?: () => Date }): RemediationActivities {
  const { db } = deps;
  const clock = deps.clock ?? (() => new Date());
  const invoker = createSkillInvoker({ db, runtime: deps.skills });

  async function currentHash(incidentId: string, tenantId: string): Promise<string> {
    const [inv] = await db
      .select({ run: investigations.run, rootCause: investigations.rootCause })
      .from(investigations)
      .where(and(eq(investigations.incidentId, incidentId), eq(investigations.tenantId, tenantId)));
    const ids = await db
      .select({ id: evidenceItems.id })
      .from(evidenceItems)
      .where(and(eq(evidenceItems.incidentId, incidentId), eq(evidenceItems.tenantId, tenantId)));
    const hash = createHash('sha256');
    hash.update(ids.map((r) => r.id).sort().join('\n'));
    hash.update(`\0run:${inv?.run ?? 0}\0root:${inv?.rootCause ?? ''}`);
    return hash.digest('hex');
  }

  async function findRemediation(tenantId: string, remediationId: string) {
    const [row] = await db
      .select()
      .from(remediations)
      .where(and(eq(remediations.tenantId, tenantId), eq(remediations.id, remediationId)));
    if (!row) throw ApplicationFailure.nonRetryable(`remediation ${remediationId} not found`, 'RemediationMissing');
    return row;
  }

  const proposeRemediation: RemediationActivities['proposeRemediation'] = async (req) => {
    const key = `${req.incidentId}:remediation-proposed:${req.requestKey}`;
    const stored = async (): Promise<ProposedRemediation | undefined> => {
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
    };
    const before = await stored();
    if (before) return before;

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
    const tenantSkills = await db.select().from(skills).where(and(eq(skills.tenantId, req.tenantId), eq(skills.enabled, true)));
    const plan = buildPlan(actions, incident, tenantSkills);
    const evidenceHash = await currentHash(req.incidentId, req.tenantId);
    const now = clock();
    const minutes = tenant.settings.approvalTimeoutMinutes ?? DEFAULT_APPROVAL_TIMEOUT_MINUTES;
    const deadline = new Date(now.getTime() + minutes * 60_000);
    const autoApprove = tenant.settings.autoRemediation === true;
    const remediationId = newId('rem');
    const approvalId = newId('apr');
    const admins = await db
      .select({ userId: users.userId })
      .from(users)
      .where(activeUsers(and(eq(users.tenantId, req.tenantId), sql`${users.roles} @> '["admin"]'::jsonb`)!));

    const steps = plan.map((s) => ({ index: s.index, kind: s.kind, action: s.action, description: s.description }));
    const created = await db
      .transaction(async (tx) => {
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
          details: { approvalId, deadline: deadline.toISOString(), steps, evidenceHash, autoApprove, notified: admins.map((a) => a.userId) },
          idempotencyKey: `${key}:audit`,
        });
        return true;
      })
      .catch((err: unknown) => {
        if (err instanceof ProposalRaced) return false;
        throw err;
      });
    if (!created) {
      const winner = await stored();
      if (!winner) throw new Error('remediation proposal raced but no stored proposal was found');
      return winner;
    }
    return { remediationId, approvalId, deadline: deadline.toISOString(), autoApprove, evidenceHash, steps: plan.length };
  };

  const recordApprovalDecision: RemediationActivities['recordApprovalDecision'] = async (req: ApprovalDecisionRecord) => {
    const read = async () => {
      const [row] = await db
        .select()
        .from(approvals)
        .where(and(eq(approvals.tenantId, req.tenantId), eq(approvals.id, req.approvalId)));
      if (!row) throw ApplicationFailure.nonRetryable(`approval ${req.approvalId} not found`, 'ApprovalMissing');
      return row;
    };
    const answer = (row: typeof approvals.$inferSelect): ApprovalDecided => {
      const decision = row.status === 'approved' ? 'approve' : 'reject';
      return {
        approvalId: row.id,
        decision,
        remediationId: row.remediationId,
        // The interface's value: approving starts execution at once.
        remediationStatus: decision === 'approve' ? 'executing' : 'rejected',
        decidedAt: row.decidedAt!.toISOString(),
      };
    };
    const existing = await read();
    if (existing.status === 'approved' || existing.status === 'rejected') return answer(existing);
    if (existing.status === 'expired') {
      throw ApplicationFailure.nonRetryable(`approval ${req.approvalId} expired (${existing.expiredReason ?? 'deadline'})`, 'ApprovalExpired');
    }
    const approve = req.decision === 'approve';
    const now = clock();
    await db.transaction(async (tx) => {
      const [updated] = await tx
        .update(approvals)
        .set({
          status: approve ? 'approved' : 'rejected',
          decidedAt: now,
          decidedBy: req.actor.id,
          decidedByType: req.actor.type,
          notes: req.notes ?? null,
        })
        .where(and(eq(approvals.id, req.approvalId), eq(approvals.tenantId, req.tenantId), eq(approvals.status, 'pending')))
        .returning({ id: approvals.id });
      if (!updated) return; // decided concurrently: the stored decision stands
      await tx
        .update(remediations)
        .set({ status: approve ? 'approved' : 'rejected', updatedAt: now })
        .where(and(eq(remediations.id, req.remediationId), eq(remediations.tenantId, req.tenantId), eq(remediations.status, 'awaiting_approval')));
      if (!approve) await skipPendingSteps(tx, req.tenantId, req.remediationId);
      await appendEvent(tx, {
        tenantId: req.tenantId,
        type: approve ? 'remediation.approved' : 'remediation.rejected',
        incidentId: req.incidentId,
        payload: {
          incidentId: req.incidentId,
          remediationId: req.remediationId,
          approvalId: req.approvalId,
          decidedAt: now.toISOString(),
          actorType: req.actor.type,
          actorId: req.actor.id,
        },
        idempotencyKey: `${req.approvalId}:decision`,
      });
      await appendAudit(tx, {
        tenantId: req.tenantId,
        actorType: req.actor.type,
        actorId: req.actor.id,
        action: 'approval.responded',
        targetType: 'approval',
        targetId: req.approvalId,
        incidentId: req.incidentId,
        requestId: req.actor.requestId ?? null,
        workflowId: req.workflowId,
        historyEventId: req.historyEventId ?? null,
        details: { decision: req.decision, remediationId: req.remediationId, notes: req.notes ?? null },
        idempotencyKey: `${req.approvalId}:decision:audit`,
      });
    });
    const after = await read();
    if (after.status === 'expired') {
      throw ApplicationFailure.nonRetryable(`approval ${req.approvalId} expired (${after.expiredReason ?? 'deadline'})`, 'ApprovalExpired');
    }
    return answer(after);
  };

  const expireApproval: RemediationActivities['expireApproval'] = async (req) => {
    const now = clock();
    await db.transaction(async (tx) => {
      const [updated] = await tx
        .update(approvals)
        .set({ status: 'expired', expiredReason: req.reason })
        .where(and(eq(approvals.id, req.approvalId), eq(approvals.tenantId, req.tenantId), eq(approvals.status, 'pending')))
        .returning({ id: approvals.id });
      if (!updated) return; // already expired, or decided first
      // Issue 6: at expiry the remediation is cancelled; the approval's reason says why.
      const remediationStatus = 'cancelled';
      await tx
        .update(remediations)
        .set({ status: remediationStatus, updatedAt: now })
        .where(and(eq(remediations.id, req.remediationId), eq(remediations.tenantId, req.tenantId), eq(remediations.status, 'awaiting_approval')));
      await skipPendingSteps(tx, req.tenantId, req.remediationId);
      await appendEvent(tx, {
        tenantId: req.tenantId,
        type: 'approval.expired',
        incidentId: req.incidentId,
        payload: { incidentId: req.incidentId, remediationId: req.remediationId, approvalId: req.approvalId, reason: req.reason },
        idempotencyKey: `${req.approvalId}:expired`,
      });
      await appendAudit(tx, {
        tenantId: req.tenantId,
        actorType: 'system',
        actorId: 'workflow',
        action: 'approval.expired',
        targetType: 'approval',
        targetId: req.approvalId,
        incidentId: req.incidentId,
        workflowId: req.workflowId,
        historyEventId: req.historyEventId ?? null,
        details: { reason: req.reason, remediationId: req.remediationId, remediationStatus },
        idempotencyKey: `${req.approvalId}:expired:audit`,
      });
    });
  };

  const executeRemediationStep: RemediationActivities['executeRemediationStep'] = async (req) => {
    const remediation = await findRemediation(req.tenantId, req.remediationId);
    const step = remediation.plan.find((s) => s.index === req.index);
    if (!step) throw ApplicationFailure.nonRetryable(`remediation ${req.remediationId} has no step ${req.index}`, 'StepMissing');
    const where = and(eq(remediationSteps.remediationId, req.remediationId), eq(remediationSteps.index, req.index));
    const storedOutcome = (row: typeof remediationSteps.$inferSelect): StepOutcome =>
      row.status === 'succeeded'
        ? { index: row.index, ok: true, output: row.output }
        : { index: row.index, ok: false, error: row.error ?? 'failed' };

    const [current] = await db.select().from(remediationSteps).where(where);
    if (!current) throw ApplicationFailure.nonRetryable(`remediation ${req.remediationId} has no step row ${req.index}`, 'StepMissing');
    if (current.status === 'succeeded' || current.status === 'failed') return storedOutcome(current);

    const now = clock();
    const [claimed] = await db
      .update(remediationSteps)
      .set({ status: 'running', attempts: sql`${remediationSteps.attempts} + 1`, startedAt: now })
      .where(and(where, inArray(remediationSteps.status, ['pending', 'running'])))
      .returning();
    if (!claimed) {
      const [row] = await db.select().from(remediationSteps).where(where);
      return storedOutcome(row!);
    }
    await db
      .update(remediations)
      .set({ status: 'executing', updatedAt: now })
      .where(and(eq(remediations.id, req.remediationId), inArray(remediations.status, ['approved', 'executing'])));

    // The row lock serialises two attempts running at once (a timed-out attempt still going):
    // the second waits, then finds the outcome and returns it without acting again. The skill's
    // own reads and record go through the same transaction: a step waiting on the pool for a
    // second connection while it holds one would deadlock a pool full of such steps (decision 166).
    // Run once even when PostgreSQL aborts it for a conflict: the skill may have acted (decision 242).
    return transactionOnce(db, async (tx) => {
      const [locked] = await tx.select().from(remediationSteps).where(where).for('update');
      if (locked!.status === 'succeeded' || locked!.status === 'failed') return storedOutcome(locked!);
      let outcome: StepOutcome;
      if (step.kind === 'builtin') {
        outcome = { index: step.index, ok: true, output: { simulated: true, action: step.action, input: step.input, wouldDo: describeBuiltin(step) } };
      } else if (step.kind === 'integration') {
        outcome = { index: step.index, ok: false, error: `integration_unavailable: ${step.action} calls a connected third-party tool; connecting integrations is not available yet` };
      } else {
        const result = await invoker.invoke({ tenantId: req.tenantId, skillId: step.skillId!, input: step.input, idempotencyKey: locked!.idempotencyKey }, tx);
        outcome = result.ok
          ? { index: step.index, ok: true, output: { invocationId: result.invocationId, output: result.output } }
          : { index: step.index, ok: false, error: `${result.error.code}: ${result.error.message}` };
      }
      const finished = clock();
      await tx
        .update(remediationSteps)
        .set({
          status: outcome.ok ? 'succeeded' : 'failed',
          output: outcome.ok ? (outcome.output ?? null) : null,
          error: outcome.ok ? null : (outcome.error ?? 'failed'),
          finishedAt: finished,
        })
        .where(where);
      await appendAudit(tx, {
        tenantId: req.tenantId,
        actorType: 'system',
        actorId: 'workflow',
        action: outcome.ok ? 'remediation.step_succeeded' : 'remediation.step_failed',
        targetType: 'remediation',
        targetId: req.remediationId,
        incidentId: req.incidentId,
        workflowId: req.workflowId,
        historyEventId: req.historyEventId ?? null,
        details: { index: step.index, kind: step.kind, action: step.action, ...(outcome.ok ? {} : { error: outcome.error }) },
        idempotencyKey: `${locked!.idempotencyKey}:audit`,
      });
      return outcome;
    });
  };

  const verifyRemediation: RemediationActivities['verifyRemediation'] = async (req) => {
    const [incident] = await db
      .select({ recoveredAt: incidents.recoveredAt })
      .from(incidents)
      .where(and(eq(incidents.id, req.incidentId), eq(incidents.tenantId, req.tenantId)));
    if (!incident) throw ApplicationFailure.nonRetryable(`incident ${req.incidentId} not found`, 'IncidentMissing');
    if (incident.recoveredAt) return { ok: true, detail: `The incident's alerts recovered at ${incident.recoveredAt.toISOString()}` };
    // The latest status of each alert (by fingerprint, else name) attached to the incident.
    const latest = await db.execute<{ alert: string; status: string | null }>(sql`
      select distinct on (coalesce(${ingestedEvents.fingerprint}, ${ingestedEvents.alertName}, ${ingestedEvents.title}))
        coalesce(${ingestedEvents.alertName}, ${ingestedEvents.title}) as alert, ${ingestedEvents.status} as status
      from ${ingestedEvents}
      where ${ingestedEvents.incidentId} = ${req.incidentId} and ${ingestedEvents.tenantId} = ${req.tenantId} and ${ingestedEvents.kind} = 'alert'
      order by coalesce(${ingestedEvents.fingerprint}, ${ingestedEvents.alertName}, ${ingestedEvents.title}), ${ingestedEvents.occurredAt} desc, ${ingestedEvents.receivedAt} desc`);
    const alerts = [...latest];
    const firing = alerts.filter((a) => a.status !== 'resolved').map((a) => a.alert);
    if (alerts.length > 0 && firing.length === 0) return { ok: true, detail: `All ${alerts.length} alert(s) of the incident have resolved` };
    const steps = await db
      .select({ index: remediationSteps.index, status: remediationSteps.status, error: remediationSteps.error, output: remediationSteps.output })
      .from(remediationSteps)
      .where(eq(remediationSteps.remediationId, req.remediationId))
      .orderBy(asc(remediationSteps.index));
    // Step-defined checks decide when the plan has them.
    const [rem] = await db.select({ plan: remediations.plan }).from(remediations).where(eq(remediations.id, req.remediationId));
    const checks = (rem?.plan ?? []).filter((p) => p.check).map((p) => steps.find((s) => s.index === p.index));
    if (checks.length > 0) {
      // A skill step stores `{ invocationId, output }`; the skill's answer may wrap its JSON in `body`.
      const verdict = (value: unknown, depth = 0): boolean => {
        if (typeof value !== 'object' || value === null || depth > 3) return true;
        const o = value as Record<string, unknown>;
        if (o.ok === false || o.healthy === false) return false;
        return verdict(o.output, depth + 1) && verdict(o.body, depth + 1);
      };
      const failedCheck = checks.find((s) => !s || s.status !== 'succeeded' || !verdict(s.output));
      return failedCheck
        ? { ok: false, detail: `The check of step ${(failedCheck?.index ?? 0) + 1} did not pass` }
        : { ok: true, detail: `${checks.length} step-defined check(s) passed` };
    }
    const notDone = steps.filter((s) => s.status !== 'succeeded');
    if (firing.length > 0) return { ok: false, detail: `Still firing: ${[...new Set(firing)].join(', ')}` };
    // A builtin step only records what it would do: with nothing observed (no alert recovered, no
    // check), the incident is resolved only when every step really acted.
    const simulated = steps.filter((s) => (s.output as { simulated?: unknown } | null)?.simulated === true);
    if (notDone.length === 0 && simulated.length > 0) {
      return {
        ok: false,
        detail: `Nothing confirms a recovery: step(s) ${simulated.map((s) => s.index + 1).join(', ')} only recorded what to do (builtin actions do not touch infrastructure), and no alert or check of the incident shows it recovered. Carry them out, then resolve the incident`,
      };
    }
    if (notDone.length === 0) return { ok: true, detail: `All ${steps.length} step(s) acted and no alert of the incident is firing` };
    return {
      ok: false,
      detail: `Step(s) not succeeded: ${notDone.map((s) => `${s.index} (${s.status}${s.error ? `: ${s.error}` : ''})`).join(', ')}`,
    };
  };

  const completeRemediation: RemediationActivities['completeRemediation'] = async (req) => {
    const now = clock();
    await db.transaction(async (tx) => {
      const [updated] = await tx
        .update(remediations)
        .set(
          req.ok
            ? { status: 'completed', completedAt: now, verification: { ok: true, detail: req.detail }, updatedAt: now }
            : { status: 'failed', completedAt: now, failure: req.detail, verification: { ok: false, detail: req.detail }, updatedAt: now },
        )
        .where(
          and(
            eq(remediations.id, req.remediationId),
            eq(remediations.tenantId, req.tenantId),
            inArray(remediations.status, ['approved', 'executing']),
          ),
        )
        .returning({ id: remediations.id });
      if (!updated) return; // already completed or failed (or never approved)
      const type = req.ok ? 'remediation.completed' : 'remediation.failed';
      await appendEvent(tx, {
        tenantId: req.tenantId,
        type,
        incidentId: req.incidentId,
        payload: { incidentId: req.incidentId, remediationId: req.remediationId, ...(req.ok ? { verification: req.detail } : { failure: req.detail }) },
        idempotencyKey: `${req.remediationId}:outcome`,
      });
      if (!req.ok) {
        await skipPendingSteps(tx, req.tenantId, req.remediationId); // those after a failed step
        await tx
          .insert(evidenceItems)
          .values({
            id: newId('evi'),
            tenantId: req.tenantId,
            incidentId: req.incidentId,
            agentRole: 'remediation',
            type: 'log',
            source: 'remediation',
            summary: `Remediation ${req.remediationId} failed: ${req.detail}`.slice(0, 1000),
            severity: 'high',
            occurredAt: now,
            rawSnippet: JSON.stringify({ remediationId: req.remediationId, failure: req.detail }),
            dedupeKey: `remediation:${req.remediationId}`,
          })
          .onConflictDoNothing();
      }
      await appendAudit(tx, {
        tenantId: req.tenantId,
        actorType: 'system',
        actorId: 'workflow',
        action: type,
        targetType: 'remediation',
        targetId: req.remediationId,
        incidentId: req.incidentId,
        workflowId: req.workflowId,
        historyEventId: req.historyEventId ?? null,
        details: { ok: req.ok, detail: req.detail },
        idempotencyKey: `${req.remediationId}:outcome:audit`,
      });
    });
  };

  return {
    proposeRemediation,
    recordApprovalDecision,
    expireApproval,
    // Heartbeats while a step's skill runs (the workflow gives steps a heartbeat timeout).
    executeRemediationStep: (req) => whileBeating(() => executeRemediationStep(req)),
    verifyRemediation,
    completeRemediation,
    evidenceHash: (req) => currentHash(req.incidentId, req.tenantId),
  };
}

class ProposalRaced extends Error {}
