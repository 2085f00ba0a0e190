/**
 * A re-synthesis of a finished investigation runs outside the workflow's lock; a new
 * investigation can begin while it runs. Its late outcome must not be taken as the new run's.
 */
import { eq } from 'drizzle-orm';
import { describe, expect, it } from 'vitest';
import type { SynthesisRequest } from '../../src/analysis/investigation-types.js';
import type { StepRequest } from '../../src/analysis/remediation-types.js';
import { approvals, remediations, remediationSteps } from '../../src/db/schema/remediation.js';
import { getStateQuery } from '../../src/workflows/messages.js';
import { investigateToPendingApproval, tenantWithApprovalTimeout } from '../helpers/remediation.js';
import { startTestWorker, useWorkerlessService } from '../helpers/workers.js';
import { eventually } from '../helpers/webhooks.js';

const env = useWorkerlessService();

describe('a re-synthesis that ends after a new investigation began', () => {
  it('is dropped: the new run stays running, and a second start is refused as already running', async () => {
    const { svc, connection } = env;
    const tenant = await svc.newTenant({ plan: 'plan_business' });
    // The first synthesis runs as it is; the later ones wait until the test lets them go.
    const held: Array<{ run: number; release: () => void }> = [];
    let calls = 0;
    const worker = await startTestWorker(svc, connection, (real) => ({
      synthesizeInvestigation: async (req: SynthesisRequest) => {
        calls++;
        if (calls > 1) await new Promise<void>((release) => held.push({ run: req.run, release }));
        return real.synthesizeInvestigation(req);
      },
    }));
    try {
      const created = await svc.api('POST', '/v1/incidents/chat', {
        token: tenant.member,
        body: { title: 'Checkout 5xx', description: 'Payments fail since 09:00' },
      });
      expect(created.status).toBe(201);
      const incidentId = created.body.incidentId as string;
      const handle = svc.client.workflow.getHandle(incidentId);
      const start = () => svc.api('POST', '/v1/investigation/', { token: tenant.member, body: { incidentId } });
      expect((await start()).status).toBe(202);
      await eventually(async () => {
        const s = await handle.query(getStateQuery);
        return s.investigationRun === 1 && s.investigationStatus === 'completed';
      }, 30_000);

      // Human context: run 1 is re-synthesised, and that synthesis is held.
      const context = await svc.api('POST', `/v1/investigation/${incidentId}/context`, {
        token: tenant.member,
        body: { content: 'The payments provider had an outage at 09:00' },
      });
      expect(context.status).toBe(202);
      await eventually(async () => held.length === 1, 30_000);
      expect(held[0]!.run).toBe(1);

      // Meanwhile a new investigation begins (run 2).
      expect((await start()).status).toBe(202);
      expect(await handle.query(getStateQuery)).toMatchObject({ investigationRun: 2, investigationStatus: 'running' });

      // Run 1's re-synthesis ends; run 2's agents then run and its synthesis is held.
      held[0]!.release();
      await eventually(async () => held.length === 2, 30_000);
      expect(held[1]!.run).toBe(2);
      // Run 2 is still under way: the late outcome of run 1 did not mark it completed.
      expect(await handle.query(getStateQuery)).toMatchObject({ investigationRun: 2, investigationStatus: 'running' });
      const again = await start();
      expect(again.status).toBe(409);
      expect(again.body.error).toBe('conflict');

      held[1]!.release();
      await eventually(async () => {
        const s = await handle.query(getStateQuery);
        return s.investigationRun === 2 && s.investigationStatus === 'completed';
      }, 30_000);
      // One start counted per run: two, not three.
      const [used] = await svc.database.sql<{ count: number }[]>`
        select count from usage_counters where tenant_id = ${tenant.tenantId} and metric = 'investigations'`;
      expect(Number(used!.count)).toBe(2);
    } finally {
      for (const h of held) h.release();
      await worker.stop();
    }
  }, 120_000);
});

/** A worker whose remediation steps run for real, the first one only once `held.release()` is called. */
async function holdingFirstStep() {
  const { svc, connection } = env;
  const held: { ran: number[]; release?: () => void } = { ran: [] };
  const worker = await startTestWorker(svc, connection, (real) => ({
    executeRemediationStep: async (req: StepRequest) => {
      held.ran.push(req.index);
      if (req.index === 0) await new Promise<void>((release) => (held.release = release));
      return real.executeRemediationStep(req);
    },
  }));
  return { worker, held };
}

/** An incident investigated to a proposal that an admin approves: its first step is then held running. */
async function approvedWithFirstStepHeld(
  tenant: Awaited<ReturnType<typeof tenantWithApprovalTimeout>>,
  held: { release?: () => void },
) {
  const { svc } = env;
  const { incidentId, approval } = await investigateToPendingApproval(svc, tenant);
  const handle = svc.client.workflow.getHandle(incidentId);
  await eventually(async () => (await handle.query(getStateQuery)).pendingApprovalId === approval.id, 30_000);
  const approved = await svc.api('POST', `/v1/notifications/approvals/${approval.id}/respond`, {
    token: tenant.admin,
    body: { decision: 'approve' },
  });
  expect(approved.status).toBe(200);
  await eventually(
    async () => held.release !== undefined && (await handle.query(getStateQuery)).status === 'remediating',
    30_000,
  );
  return { incidentId, approval, handle };
}

describe('a conclusion reached while a remediation runs', () => {
  it('is proposed once that remediation has ended and the incident is back under investigation', async () => {
    const { svc } = env;
    const tenant = await tenantWithApprovalTimeout(svc, 10);
    const { worker, held } = await holdingFirstStep();
    try {
      const { incidentId, approval, handle } = await approvedWithFirstStepHeld(tenant, held);

      // While the first step runs, human context re-synthesises the investigation.
      const before = (await handle.query(getStateQuery)).syntheses ?? 0;
      const context = await svc.api('POST', `/v1/investigation/${incidentId}/context`, {
        token: tenant.member,
        body: { content: 'A config push to checkout-api at 03:05' },
      });
      expect(context.status).toBe(202);
      await eventually(async () => ((await handle.query(getStateQuery)).syntheses ?? 0) > before, 30_000);

      // The remediation goes on and ends (its builtin steps only record what to do: failed), the
      // incident is back under investigation, and the newer conclusion gets its own proposal.
      held.release!();
      const next = await eventually(async () => {
        const rows = await svc.database.db.select().from(approvals).where(eq(approvals.incidentId, incidentId));
        return rows.find((r) => r.id !== approval.id && r.status === 'pending');
      }, 60_000);
      expect(next.remediationId).not.toBe(approval.remediationId);
      const [first] = await svc.database.db.select().from(approvals).where(eq(approvals.id, approval.id));
      expect(first!.status).toBe('approved');
      // The workflow waits on it (the row is written by the proposal before the workflow has it).
      const waiting = await eventually(async () => {
        const s = await handle.query(getStateQuery);
        return s.pendingApprovalId === next.id && s.status === 'awaiting_approval' ? s : undefined;
      }, 30_000);
      expect(waiting).toMatchObject({
        pendingApprovalId: next.id,
        status: 'awaiting_approval',
        remediationStatus: 'awaiting_approval',
      });
    } finally {
      held.release?.();
      await worker.stop();
    }
  }, 120_000);
});

describe('an incident a person resolves while its remediation runs', () => {
  it("runs none of the remaining steps, ends the remediation as stopped, and keeps the person's status", async () => {
    const { svc } = env;
    const tenant = await tenantWithApprovalTimeout(svc, 10);
    const { worker, held } = await holdingFirstStep();
    try {
      const { incidentId, approval, handle } = await approvedWithFirstStepHeld(tenant, held);
      const [planned] = await svc.database.db
        .select()
        .from(remediations)
        .where(eq(remediations.id, approval.remediationId));
      expect(planned!.plan.length).toBeGreaterThanOrEqual(2);

      // Step 1 is running; a person resolves the incident.
      const resolved = await svc.api('PATCH', `/v1/incidents/${incidentId}`, {
        token: tenant.admin,
        body: { status: 'resolved' },
      });
      expect(resolved.status).toBe(200);
      held.release!();
      const stopped = await eventually(async () => {
        const [row] = await svc.database.db
          .select()
          .from(remediations)
          .where(eq(remediations.id, approval.remediationId));
        return row?.status === 'failed' ? row : undefined;
      }, 30_000);
      expect(stopped.failure).toMatch(/^Stopped before step 2 of \d+: the incident was moved to resolved meanwhile/);
      expect(held.ran).toEqual([0]);
      const steps = (
        await svc.database.db
          .select()
          .from(remediationSteps)
          .where(eq(remediationSteps.remediationId, approval.remediationId))
      ).sort((a, b) => a.index - b.index);
      expect(steps.map((s) => s.status)).toEqual(['succeeded', ...steps.slice(1).map(() => 'skipped')]);
      const state = await eventually(async () => {
        const s = await handle.query(getStateQuery);
        return s.remediationStatus === 'failed' ? s : undefined;
      }, 30_000);
      expect(state.status).toBe('resolved');
      const read = await svc.api('GET', `/v1/incidents/${incidentId}`, { token: tenant.member });
      expect(read.body.status).toBe('resolved');
    } finally {
      held.release?.();
      await worker.stop();
    }
  }, 120_000);
});
