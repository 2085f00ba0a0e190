// Housekeeping runs as a Temporal Schedule: listed with its interval, kept paused across worker
// restarts, and a triggered run purges expired rows through its activities (ADR 0279).
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ensureHousekeepingSchedule, HOUSEKEEPING_INTERVAL_MS } from '../../src/temporal/housekeeping-schedule.js';
import { housekeepingFamilies, housekeepingWorkflowType } from '../../src/workflows/messages-housekeeping.js';
import { startTestService, type TestService } from '../helpers/service.js';
import { eventually } from '../helpers/webhooks.js';

let svc: TestService;
let scheduleId: string | undefined;

beforeAll(async () => {
  svc = await startTestService({ withoutDispatcher: true });
});
afterAll(async () => {
  if (scheduleId) await svc.client.schedule.getHandle(scheduleId).delete();
  await svc?.stop();
});

describe('housekeeping on a Temporal Schedule', () => {
  it('is created once, listed with its interval and kept paused when a worker ensures it again', async () => {
    scheduleId = await ensureHousekeepingSchedule(svc.client, { taskQueue: svc.taskQueue });
    const handle = svc.client.schedule.getHandle(scheduleId);
    const described = await handle.describe();
    expect(described.spec.intervals).toEqual([{ every: HOUSEKEEPING_INTERVAL_MS, offset: undefined }]);
    expect(described.action).toMatchObject({
      type: 'startWorkflow',
      workflowType: housekeepingWorkflowType,
      taskQueue: svc.taskQueue,
    });
    expect(described.policies.overlap).toBe('SKIP');
    expect(described.state.paused).toBe(false);

    // An SRE pauses it in the UI; a worker that starts afterwards neither fails nor unpauses it.
    await handle.pause('investigating a slow purge');
    expect(await ensureHousekeepingSchedule(svc.client, { taskQueue: svc.taskQueue, intervalMs: 120_000 })).toBe(
      scheduleId,
    );
    const again = await handle.describe();
    expect(again.state.paused).toBe(true);
    expect(again.state.note).toBe('investigating a slow purge');
    expect(again.spec.intervals).toEqual([{ every: 120_000, offset: undefined }]);

    const listed: string[] = [];
    for await (const schedule of svc.client.schedule.list()) listed.push(schedule.scheduleId);
    expect(listed).toContain(scheduleId);
  });

  it('purges expired rows in a triggered run, one activity per family, and keeps fresh ones', async () => {
    scheduleId ??= await ensureHousekeepingSchedule(svc.client, { taskQueue: svc.taskQueue });
    const { sql } = svc.database;
    const bucket = `housekeeping-test:${randomUUID()}`;
    await sql`insert into rate_limit_windows (bucket, window_start, count)
      values (${bucket}, date_trunc('minute', now()) - interval '1 hour', 7),
             (${bucket}, date_trunc('minute', now()), 3)`;

    // A downgrade whose period has ended, and one whose period has not.
    const [due, notYet] = await Promise.all([
      svc.newTenant({ plan: 'plan_pro' }),
      svc.newTenant({ plan: 'plan_business' }),
    ]);
    await sql`insert into billing_accounts (tenant_id, pending_plan_id, pending_effective_at)
      values (${due.tenantId}, 'plan_starter', now() - interval '1 second'),
             (${notYet.tenantId}, 'plan_pro', now() + interval '1 day')`;

    const handle = svc.client.schedule.getHandle(scheduleId);
    await handle.unpause('resumed');
    const before = (await handle.describe()).info.recentActions.length;
    await handle.trigger();
    const action = await eventually(async () => (await handle.describe()).info.recentActions[before], 30_000);
    const run = svc.client.workflow.getHandle(
      action.action.workflow.workflowId,
      action.action.workflow.firstExecutionRunId,
    );
    const purged = (await run.result()) as Record<string, number>;
    expect(purged.rateLimitWindows).toBeGreaterThanOrEqual(1);
    expect(purged).toHaveProperty('deliveries');
    expect(purged).toHaveProperty('oauthStates');

    const left = await sql<{ count: number }[]>`
      select count from rate_limit_windows where bucket = ${bucket} order by window_start`;
    expect(left.map((row) => row.count)).toEqual([3]);

    // The last family applies the ended period's downgrade, once, as the system; the other waits.
    expect(purged.planChanges).toBeGreaterThanOrEqual(1);
    const plans = await sql<{ id: string; plan: string; pending_plan_id: string | null }[]>`
      select t.id, t.plan, b.pending_plan_id from tenants t join billing_accounts b on b.tenant_id = t.id
      where t.id in (${due.tenantId}, ${notYet.tenantId}) order by t.id = ${due.tenantId} desc`;
    expect(plans.map((p) => [p.plan, p.pending_plan_id])).toEqual([
      ['plan_starter', null],
      ['plan_business', 'plan_pro'],
    ]);
    const changed = await sql<{ actor_type: string; details: unknown }[]>`
      select actor_type, details from audit_log where tenant_id = ${due.tenantId} and action = 'billing.plan_changed'`;
    expect(changed).toEqual([
      { actor_type: 'system', details: { from: 'plan_pro', to: 'plan_starter', paymentId: null } },
    ]);

    // The run's timeline names each purge.
    const history = await run.fetchHistory();
    const scheduled = (history.events ?? []).filter((e) => e.activityTaskScheduledEventAttributes);
    expect(scheduled).toHaveLength(housekeepingFamilies.length);
    expect(scheduled.every((e) => e.userMetadata?.summary)).toBe(true);
  });
});
