import { ApplicationFailure, Context } from '@temporalio/activity';
import { eq } from 'drizzle-orm';
import { describe, expect, it } from 'vitest';
import type { StepRequest } from '../../src/analysis/remediation-types.js';
import {
  approvals,
  remediations,
  remediationSteps,
  type RemediationStepPlan,
} from '../../src/db/schema/remediation.js';
import { getStateQuery } from '../../src/workflows/messages.js';
import { expiredApproval, investigateToPendingApproval, tenantWithApprovalTimeout } from '../helpers/remediation.js';
import { startTestWorker, useWorkerlessService } from '../helpers/workers.js';
import { eventually } from '../helpers/webhooks.js';

const env = useWorkerlessService();

describe('an approval deadline while no worker runs', () => {
  it('expires the approval once a worker is back', async () => {
    const { svc, connection } = env;
    const tenant = await tenantWithApprovalTimeout(svc, 3 / 60);
    const first = await startTestWorker(svc, connection);
    const { incidentId, approval } = await investigateToPendingApproval(svc, tenant);
    // Wait until the workflow sleeps on its deadline timer, then take every worker away.
    await eventually(async () => {
      const history = await svc.client.workflow.getHandle(incidentId).fetchHistory();
      return (history.events ?? []).some((e) => e.timerStartedEventAttributes);
    });
    await first.stop();
    await new Promise((r) => setTimeout(r, Math.max(0, approval.deadline.getTime() - Date.now()) + 1500));
    const [whileDown] = await svc.database.db.select().from(approvals).where(eq(approvals.id, approval.id));
    expect(whileDown!.status).toBe('pending'); // nothing ran at the deadline
    const second = await startTestWorker(svc, connection);
    try {
      const expired = await expiredApproval(svc, approval.id, 30_000);
      expect(expired.expiredReason).toBe('deadline');
      const [rem] = await svc.database.db
        .select()
        .from(remediations)
        .where(eq(remediations.id, approval.remediationId));
      expect(rem!.status).toBe('cancelled');
    } finally {
      await second.stop();
    }
  }, 90_000);
});

describe('a worker killed between two remediation steps', () => {
  it('runs each step exactly once across the restart', async () => {
    const { svc, connection } = env;
    const tenant = await tenantWithApprovalTimeout(svc, 10);

    // The crashing worker hangs in step 2 (index 1), after step 1 has run.
    let hung = false;
    const crashing = await startTestWorker(svc, connection, (real) => ({
      executeRemediationStep: async (req: StepRequest) => {
        if (req.index === 1) {
          hung = true;
          for (;;) await Context.current().sleep(100); // cut off when the worker shuts down
        }
        return real.executeRemediationStep(req);
      },
    }));

    const { incidentId, approval } = await investigateToPendingApproval(svc, tenant);
    // Simulated steps only (the workflow runs as many as were proposed; at least two here).
    const [proposed] = await svc.database.db
      .select()
      .from(remediations)
      .where(eq(remediations.id, approval.remediationId));
    const count = proposed!.plan.length;
    expect(count).toBeGreaterThanOrEqual(2);
    const plan: RemediationStepPlan[] = proposed!.plan.map((step) => ({
      ...step,
      kind: 'builtin',
      action: 'notify_team',
      input: { message: `step ${step.index + 1}` },
    }));
    await svc.database.db.update(remediations).set({ plan }).where(eq(remediations.id, approval.remediationId));
    await eventually(async () => {
      const res = await svc.api('POST', `/v1/notifications/approvals/${approval.id}/respond`, {
        token: tenant.admin,
        body: { decision: 'approve' },
      });
      return res.status === 200;
    });
    await eventually(async () => hung);
    const midway = await svc.database.db
      .select()
      .from(remediationSteps)
      .where(eq(remediationSteps.remediationId, approval.remediationId));
    expect(midway.find((s) => s.index === 0)).toMatchObject({ status: 'succeeded', attempts: 1 });

    await crashing.stop();
    const healthy = await startTestWorker(svc, connection);
    try {
      const done = await eventually(async () => {
        const [row] = await svc.database.db
          .select()
          .from(remediations)
          .where(eq(remediations.id, approval.remediationId));
        return row?.status === 'completed' || row?.status === 'failed' ? row : undefined;
      }, 60_000);
      const steps = (
        await svc.database.db
          .select()
          .from(remediationSteps)
          .where(eq(remediationSteps.remediationId, approval.remediationId))
      ).sort((a, b) => a.index - b.index);
      expect(steps).toHaveLength(count);
      expect(steps.every((s) => s.status === 'succeeded')).toBe(true);
      // Step 1 ran once, before the kill; step 2 was cut off before it did anything, then every
      // step ran once on the new worker: one attempt each.
      expect(steps.map((s) => s.attempts)).toEqual(steps.map(() => 1));
      // Verification: the steps only recorded what to do and no alert recovered here.
      expect(done.status).toBe('failed');
      expect(done.failure).toMatch(/^Nothing confirms a recovery/);
      // Steps, like synthesis and triage, heartbeat with a 15 s timeout: a worker that dies in one
      // has it retried elsewhere after that, not after the 2-minute start-to-close (decision 206).
      const history = await svc.client.workflow.getHandle(incidentId).fetchHistory();
      const heartbeatTimeouts = new Map<string, Set<string>>();
      for (const e of history.events ?? []) {
        const scheduled = e.activityTaskScheduledEventAttributes;
        if (!scheduled) continue;
        const name = scheduled.activityType!.name!;
        heartbeatTimeouts.set(
          name,
          (heartbeatTimeouts.get(name) ?? new Set()).add(String(scheduled.heartbeatTimeout?.seconds ?? 0)),
        );
      }
      expect(heartbeatTimeouts.get('executeRemediationStep')).toEqual(new Set(['15']));
      expect(heartbeatTimeouts.get('synthesizeInvestigation')).toEqual(new Set(['15']));
      expect(heartbeatTimeouts.get('triageIncident')).toEqual(new Set(['15']));
      expect(heartbeatTimeouts.get('completeRemediation')).toEqual(new Set(['0'])); // quick bookkeeping: no heartbeat timeout
    } finally {
      await healthy.stop();
    }
  }, 120_000);
});

describe('a remediation activity that fails for good', () => {
  it('ends the remediation as failed and leaves the incident answering, not a workflow that fails every task', async () => {
    const { svc, connection } = env;
    const tenant = await tenantWithApprovalTimeout(svc, 10);
    // Its step row is gone, say: the activity's own non-retryable failure.
    let failed = 0;
    const worker = await startTestWorker(svc, connection, {
      executeRemediationStep: async (req: StepRequest) => {
        failed++;
        throw ApplicationFailure.nonRetryable(
          `remediation ${req.remediationId} has no step ${req.index}`,
          'StepMissing',
        );
      },
    });
    try {
      const { incidentId, approval } = await investigateToPendingApproval(svc, tenant);
      await eventually(async () => {
        const res = await svc.api('POST', `/v1/notifications/approvals/${approval.id}/respond`, {
          token: tenant.admin,
          body: { decision: 'approve' },
        });
        return res.status === 200;
      });
      const handle = svc.client.workflow.getHandle(incidentId);
      // Back to a human: the incident leaves `remediating` for `investigating`.
      const [incident] = await eventually(async () => {
        const rows = await svc.api('GET', `/v1/incidents/${incidentId}`, { token: tenant.admin });
        return rows.body.status === 'investigating' && failed > 0 ? [rows.body] : undefined;
      }, 60_000);
      expect(incident).toMatchObject({ incidentId, status: 'investigating' });
      expect(failed).toBe(1); // non-retryable: not retried
      // The workflow ended the remediation as failed and waits on no approval.
      expect(await handle.query(getStateQuery)).toMatchObject({ remediationStatus: 'failed', status: 'investigating' });
      expect((await handle.query(getStateQuery)).pendingApprovalId).toBeUndefined();
      // The workflow still answers: a person resolves the incident through its Update.
      const resolved = await svc.api('PATCH', `/v1/incidents/${incidentId}`, {
        token: tenant.admin,
        body: { status: 'resolved' },
      });
      expect(resolved.status).toBe(200);
      expect(resolved.body.status).toBe('resolved');
      const history = await handle.fetchHistory();
      expect((history.events ?? []).filter((e) => e.workflowTaskFailedEventAttributes)).toEqual([]);
    } finally {
      await worker.stop();
    }
  }, 120_000);
});
