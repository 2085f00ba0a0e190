import { ApplicationFailure } from '@temporalio/activity';
import { and, eq, inArray, sql } from 'drizzle-orm';
import type { StepOutcome, StepRequest } from '../../analysis/remediation-types.js';
import { transactionOnce, type Db } from '../../db/client.js';
import { appendAudit } from '../../db/repositories/audit.js';
import { remediations, remediationSteps, type RemediationStepPlan } from '../../db/schema/remediation.js';
import type { RemediationContext } from './context.js';

/** Runs one step of an approved remediation exactly once; a failure is an outcome, not a throw. */
export async function executeRemediationStep(ctx: RemediationContext, req: StepRequest): Promise<StepOutcome> {
  const { db, clock, invoker } = ctx;
  const remediation = await findRemediation(db, req.tenantId, req.remediationId);
  const step = remediation.plan.find((s) => s.index === req.index);
  if (!step)
    throw ApplicationFailure.nonRetryable(`remediation ${req.remediationId} has no step ${req.index}`, 'StepMissing');
  const where = and(eq(remediationSteps.remediationId, req.remediationId), eq(remediationSteps.index, req.index));
  const storedOutcome = (row: typeof remediationSteps.$inferSelect): StepOutcome =>
    row.status === 'succeeded'
      ? { index: row.index, ok: true, output: row.output }
      : { index: row.index, ok: false, error: row.error ?? 'failed' };

  const [current] = await db.select().from(remediationSteps).where(where);
  if (!current)
    throw ApplicationFailure.nonRetryable(
      `remediation ${req.remediationId} has no step row ${req.index}`,
      'StepMissing',
    );
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
  // second connection while it holds one would deadlock a pool full of such steps (ADR 0166).
  // Run once even when PostgreSQL aborts it for a conflict: the skill may have acted (ADR 0242).
  return transactionOnce(db, async (tx) => {
    const [locked] = await tx.select().from(remediationSteps).where(where).for('update');
    if (locked!.status === 'succeeded' || locked!.status === 'failed') return storedOutcome(locked!);
    let outcome: StepOutcome;
    if (step.kind === 'builtin') {
      outcome = {
        index: step.index,
        ok: true,
        output: { simulated: true, action: step.action, input: step.input, wouldDo: describeBuiltin(step) },
      };
    } else if (step.kind === 'integration' && !step.skillId) {
      // Plans make integration steps from integration skills; a step without one has no action to run.
      outcome = {
        index: step.index,
        ok: false,
        error: `invalid_config: the integration step ${step.action} names no skill`,
      };
    } else {
      // A skill step, or an integration skill's step: the invoker runs it with the tenant's connection.
      const result = await invoker.invoke(
        { tenantId: req.tenantId, skillId: step.skillId!, input: step.input, idempotencyKey: locked!.idempotencyKey },
        tx,
      );
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
      details: {
        index: step.index,
        kind: step.kind,
        action: step.action,
        ...(outcome.ok ? {} : { error: outcome.error }),
      },
      idempotencyKey: `${locked!.idempotencyKey}:audit`,
    });
    return outcome;
  });
}

async function findRemediation(db: Db, tenantId: string, remediationId: string) {
  const [row] = await db
    .select()
    .from(remediations)
    .where(and(eq(remediations.tenantId, tenantId), eq(remediations.id, remediationId)));
  if (!row) throw ApplicationFailure.nonRetryable(`remediation ${remediationId} not found`, 'RemediationMissing');
  return row;
}

/** What a builtin step records instead of acting (builtins never touch infrastructure: see plan.ts). */
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
