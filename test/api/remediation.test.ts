import { and, eq } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { auditLog } from '../../src/db/schema/audit.js';
import { events } from '../../src/db/schema/events.js';
import { incidents } from '../../src/db/schema/incidents.js';
import { approvals, notifications, remediations, remediationSteps } from '../../src/db/schema/remediation.js';
import { tenants, type TenantSettings } from '../../src/db/schema/tenants.js';
import { getStateQuery } from '../../src/workflows/messages.js';
import { createRemediationActivities } from '../../src/activities/remediation.js';
import {
  concludedIncident,
  expiredApproval,
  investigateToPendingApproval,
  restartRunbook,
} from '../helpers/remediation.js';
import { startTestService, type TestService } from '../helpers/service.js';
import { createKey, eventually, postWebhook } from '../helpers/webhooks.js';

let svc: TestService;

beforeAll(async () => {
  svc = await startTestService();
});
afterAll(() => svc?.stop());

type Tenant = Awaited<ReturnType<TestService['newTenant']>>;

/** A tenant whose approvals wait `seconds` (the setting is minutes; tests store a fraction directly). */
async function tenantWith(settings: Partial<TenantSettings> & { approvalSeconds?: number } = {}): Promise<Tenant> {
  const tenant = await svc.newTenant({ plan: 'plan_business' });
  const { approvalSeconds, ...rest } = settings;
  await svc.database.db
    .update(tenants)
    .set({
      settings: {
        ...rest,
        ...(approvalSeconds !== undefined ? { approvalTimeoutMinutes: approvalSeconds / 60 } : {}),
      } as TenantSettings,
    })
    .where(eq(tenants.id, tenant.tenantId));
  // The admin and the member have used the api: they are the tenant's known users.
  expect((await svc.api('GET', `/v1/tenants/${tenant.tenantId}`, { token: tenant.admin })).status).toBe(200);
  expect((await svc.api('GET', `/v1/tenants/${tenant.tenantId}`, { token: tenant.member })).status).toBe(200);
  return tenant;
}

/** An incident investigated to a conclusion, with its approval requested and the workflow waiting on it. */
async function awaitingApproval(tenant: Tenant) {
  const { incidentId, approval } = await investigateToPendingApproval(svc, tenant);
  await eventually(
    async () =>
      (await svc.client.workflow.getHandle(incidentId).query(getStateQuery)).pendingApprovalId === approval.id,
  );
  // The move to awaiting_approval is the next step of the workflow after the proposal.
  await eventually(
    async () =>
      (await svc.database.db.select().from(incidents).where(eq(incidents.id, incidentId)))[0]?.status ===
      'awaiting_approval',
  );
  return { incidentId, approval };
}

const respond = (tenant: Tenant, approvalId: string, body: Record<string, unknown>, token = tenant.admin) =>
  svc.api('POST', `/v1/notifications/approvals/${approvalId}/respond`, { token, body });

async function incident(id: string) {
  const [row] = await svc.database.db.select().from(incidents).where(eq(incidents.id, id));
  return row!;
}

async function eventTypes(id: string) {
  return (await svc.database.db.select().from(events).where(eq(events.incidentId, id)).orderBy(events.seq)).map(
    (e) => e.type,
  );
}

describe('remediation behind approval', () => {
  it('requests an approval after the investigation, notifies each admin with both ids, and waits on a durable timer', async () => {
    const tenant = await tenantWith({ approvalSeconds: 600 });
    const { incidentId, approval } = await awaitingApproval(tenant);
    expect((await incident(incidentId)).status).toBe('awaiting_approval');
    const [rem] = await svc.database.db.select().from(remediations).where(eq(remediations.id, approval.remediationId));
    expect(rem!.status).toBe('awaiting_approval');
    expect(rem!.plan.length).toBeGreaterThan(0);
    const deadline = approval.deadline.getTime() - approval.createdAt.getTime();
    expect(deadline).toBeGreaterThan(590_000);
    expect(deadline).toBeLessThan(610_000);
    const sent = await svc.database.db
      .select()
      .from(notifications)
      .where(and(eq(notifications.tenantId, tenant.tenantId), eq(notifications.type, 'approval.requested')));
    expect(sent.map((n) => n.userId)).toEqual(['user-admin']); // admins only
    // Over the api too: the admin's list has it, the member's does not.
    const adminList = await svc.api('GET', '/v1/notifications?type=approval.requested', { token: tenant.admin });
    expect(adminList.body.items).toEqual([
      expect.objectContaining({
        type: 'approval.requested',
        incidentId,
        remediationId: approval.remediationId,
        approvalId: approval.id,
        read: false,
      }),
    ]);
    const memberList = await svc.api('GET', '/v1/notifications?type=approval.requested', { token: tenant.member });
    expect(memberList.body.items).toEqual([]);
    // Other events reach members and admins through the outbox consumer.
    await eventually(async () => {
      const list = await svc.api('GET', '/v1/notifications?type=investigation.completed', { token: tenant.member });
      return list.body.items.length === 1 && list.body.items[0].incidentId === incidentId;
    });
    expect(sent[0]).toMatchObject({
      type: 'approval.requested',
      incidentId,
      payload: expect.objectContaining({ incidentId, remediationId: approval.remediationId, approvalId: approval.id }),
    });
    expect(await eventTypes(incidentId)).toContain('approval.requested');
    // The wait is a timer in the workflow history.
    const timers = await eventually(async () => {
      const history = await svc.client.workflow.getHandle(incidentId).fetchHistory();
      const started = (history.events ?? []).filter((e) => e.timerStartedEventAttributes);
      return started.length > 0 ? started : undefined;
    });
    const timeout = timers.at(-1)!.timerStartedEventAttributes!.startToFireTimeout!;
    expect(Number(timeout.seconds)).toBeGreaterThan(500);
  });

  it('approve: executes every step once and verifies; builtin steps alone with nothing recovered leave the incident investigating; a second answer is 409 already_decided', async () => {
    const tenant = await tenantWith({ approvalSeconds: 600 });
    const { incidentId, approval } = await awaitingApproval(tenant);
    const res = await respond(tenant, approval.id, { decision: 'approve', notes: 'Go ahead, rollback is safe' });
    expect(res.status).toBe(200);
    expect(res.body).toEqual({
      approvalId: approval.id,
      decision: 'approve',
      remediationId: approval.remediationId,
      remediationStatus: 'executing',
      decidedAt: expect.any(String),
    });
    const again = await respond(tenant, approval.id, { decision: 'reject' });
    expect(again.status).toBe(409);
    expect(again.body.error).toBe('already_decided');
    const done = await eventually(async () => {
      const [row] = await svc.database.db
        .select()
        .from(remediations)
        .where(eq(remediations.id, approval.remediationId));
      return row?.status === 'completed' || row?.status === 'failed' ? row : undefined;
    }, 30_000);
    const steps = await svc.database.db
      .select()
      .from(remediationSteps)
      .where(eq(remediationSteps.remediationId, approval.remediationId));
    expect(steps.length).toBeGreaterThan(0);
    expect(steps.every((s) => s.attempts === 1 && s.status === 'succeeded')).toBe(true);
    // The plan's steps are builtin actions (the tenant has no skills), which only record what to
    // do, and the incident (opened by hand) has no alert to recover: nothing confirms it is fixed.
    expect(steps.every((s) => (s.output as { simulated?: boolean }).simulated === true)).toBe(true);
    expect(done.status).toBe('failed');
    expect(done.failure).toMatch(/^Nothing confirms a recovery: step\(s\) 1(, \d+)* only recorded what to do/);
    const types = await eventTypes(incidentId);
    expect(types).toContain('remediation.approved');
    expect(types).toContain('remediation.failed');
    expect(types).not.toContain('remediation.completed');
    await eventually(async () => (await incident(incidentId)).status === 'investigating');
    const [audit] = await svc.database.db
      .select()
      .from(auditLog)
      .where(and(eq(auditLog.incidentId, incidentId), eq(auditLog.action, 'approval.responded')))
      .orderBy(auditLog.seq);
    expect(audit).toMatchObject({ actorType: 'user', actorId: 'user-admin' });
    expect(JSON.stringify(audit!.details)).toContain('Go ahead, rollback is safe');
  });

  it('reject: cancels the remediation and leaves the incident investigating', async () => {
    const tenant = await tenantWith({ approvalSeconds: 600 });
    const { incidentId, approval } = await awaitingApproval(tenant);
    const res = await respond(tenant, approval.id, { decision: 'reject' });
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ decision: 'reject', remediationStatus: 'rejected' });
    await eventually(async () => (await incident(incidentId)).status === 'investigating');
    const [rem] = await svc.database.db.select().from(remediations).where(eq(remediations.id, approval.remediationId));
    expect(rem!.status).toBe('rejected');
    expect(await eventTypes(incidentId)).toContain('remediation.rejected');
  });

  it('expires at the deadline; a late answer is 409 approval_expired', async () => {
    const tenant = await tenantWith({ approvalSeconds: 3 });
    const { incidentId, approval } = await awaitingApproval(tenant);
    const expired = await expiredApproval(svc, approval.id, 20_000);
    expect(expired.expiredReason).toBe('deadline');
    expect(await eventTypes(incidentId)).toContain('approval.expired');
    const late = await respond(tenant, approval.id, { decision: 'approve' });
    expect(late.status).toBe(409);
    expect(late.body.error).toBe('approval_expired');
    await eventually(async () => (await incident(incidentId)).status === 'investigating');
    // Once the incident is closed (its workflow ended) the stored approval still answers.
    expect(
      (await svc.api('PATCH', `/v1/incidents/${incidentId}`, { token: tenant.member, body: { status: 'closed' } }))
        .status,
    ).toBe(200);
    await svc.client.workflow.getHandle(incidentId).result();
    const afterClose = await respond(tenant, approval.id, { decision: 'approve' });
    expect(afterClose.status).toBe(409);
    expect(afterClose.body.error).toBe('approval_expired');
  });

  /**
   * A person PATCHes the incident awaiting approval to `status`: the approval expires with
   * `reason`, the remediation is cancelled, a late approve is 409 and no step ran.
   */
  async function movedWhileAwaiting(status: string, reason: string) {
    const tenant = await tenantWith({ approvalSeconds: 600 });
    const { incidentId, approval } = await awaitingApproval(tenant);
    expect(
      (await svc.api('PATCH', `/v1/incidents/${incidentId}`, { token: tenant.member, body: { status } })).status,
    ).toBe(200);
    const expired = await expiredApproval(svc, approval.id, 20_000);
    expect(expired.expiredReason).toBe(reason);
    const [rem] = await svc.database.db.select().from(remediations).where(eq(remediations.id, approval.remediationId));
    expect(rem!.status).toBe('cancelled');
    const late = await respond(tenant, approval.id, { decision: 'approve' });
    expect([late.status, late.body.error]).toEqual([409, 'approval_expired']);
    const steps = await svc.database.db
      .select()
      .from(remediationSteps)
      .where(eq(remediationSteps.remediationId, approval.remediationId));
    expect(steps.length).toBeGreaterThan(0);
    expect(steps.every((s) => s.status === 'skipped')).toBe(true); // none will run
    expect((await incident(incidentId)).status).toBe(status);
    expect(await eventTypes(incidentId)).toContain('approval.expired');
    expect(await eventTypes(incidentId)).not.toContain('remediation.approved');
    return incidentId;
  }

  it('ends the pending approval when the incident is resolved meanwhile: nothing runs, a late approve is 409 approval_expired', async () => {
    await movedWhileAwaiting('resolved', 'resolved');
  });

  it('ends the pending approval when a person moves the incident out of awaiting_approval: nothing runs, their status stands', async () => {
    const incidentId = await movedWhileAwaiting('open', 'status_changed');
    const state = await svc.client.workflow.getHandle(incidentId).query(getStateQuery);
    expect(state).toMatchObject({ remediationStatus: 'cancelled', status: 'open' });
    expect(state.pendingApprovalId).toBeUndefined();
  });

  it('of two concurrent answers exactly one succeeds; members get 403; bad input 400; unknown and foreign 404', async () => {
    const tenant = await tenantWith({ approvalSeconds: 600 });
    const { approval } = await awaitingApproval(tenant);
    expect((await respond(tenant, approval.id, { decision: 'approve' }, tenant.member)).status).toBe(403);
    for (const body of [
      {},
      { decision: 'maybe' },
      { decision: 'approve', extra: 1 },
      { decision: 'approve', notes: 'x'.repeat(2001) },
    ]) {
      const bad = await respond(tenant, approval.id, body);
      expect(bad.status).toBe(400);
      expect(bad.body.error).toBe('validation_error');
    }
    const unknown = await respond(tenant, 'apr_missing', { decision: 'approve' });
    expect(unknown.status).toBe(404);
    expect(unknown.body.error).toBe('approval_not_found');
    const other = await svc.newTenant();
    const foreign = await respond(other, approval.id, { decision: 'approve' });
    expect(foreign.status).toBe(404);
    expect(foreign.body.error).toBe('approval_not_found');
    const [a, b] = await Promise.all([
      respond(tenant, approval.id, { decision: 'approve' }),
      respond(tenant, approval.id, { decision: 'reject' }),
    ]);
    expect([a.status, b.status].sort()).toEqual([200, 409]);
    expect([a, b].find((r) => r.status === 409)!.body.error).toBe('already_decided');
  });

  it('a failing step fails the remediation, puts the incident back to investigating, and becomes evidence', async () => {
    const tenant = await tenantWith({ approvalSeconds: 600 });
    const { incidentId, approval } = await awaitingApproval(tenant);
    // Arrange a step that cannot succeed: an integration action (none is connected).
    const [rem] = await svc.database.db.select().from(remediations).where(eq(remediations.id, approval.remediationId));
    const plan = rem!.plan.map((step, i) =>
      i === 0 ? { ...step, kind: 'integration' as const, action: 'page_vendor', input: {} } : step,
    );
    await svc.database.db.update(remediations).set({ plan }).where(eq(remediations.id, approval.remediationId));
    expect((await respond(tenant, approval.id, { decision: 'approve' })).status).toBe(200);
    const failed = await eventually(async () => {
      const [row] = await svc.database.db
        .select()
        .from(remediations)
        .where(eq(remediations.id, approval.remediationId));
      return row?.status === 'failed' ? row : undefined;
    }, 30_000);
    expect(failed.failure).toContain('Step 1 failed');
    const steps = await svc.database.db
      .select()
      .from(remediationSteps)
      .where(eq(remediationSteps.remediationId, approval.remediationId));
    expect(steps.length).toBeGreaterThan(1);
    expect(steps.find((s) => s.index === 0)).toMatchObject({ status: 'failed', attempts: 1 });
    expect(steps.filter((s) => s.index > 0).map((s) => s.status)).toEqual(
      steps.filter((s) => s.index > 0).map(() => 'skipped'),
    ); // later steps never ran
    await eventually(async () => (await incident(incidentId)).status === 'investigating');
    expect(await eventTypes(incidentId)).toContain('remediation.failed');
    const { evidenceItems } = await import('../../src/db/schema/investigation.js');
    const evidence = await svc.database.db.select().from(evidenceItems).where(eq(evidenceItems.incidentId, incidentId));
    expect(evidence.find((e) => e.source === 'remediation')?.summary).toBeTruthy();
  });

  it('autoRemediation: the system grants the approval (audited) and the remediation runs without waiting', async () => {
    const tenant = await tenantWith({ approvalSeconds: 600, autoRemediation: true });
    await restartRunbook(svc, tenant.member, 'orders-db'); // a step to run: manual steps ask nothing
    const created = await svc.api('POST', '/v1/incidents/chat', {
      token: tenant.member,
      body: { title: 'Disk full', description: 'orders-db disk at 100%', service: 'orders-db' },
    });
    const incidentId = created.body.incidentId as string;
    await svc.api('POST', '/v1/investigation/', { token: tenant.member, body: { incidentId } });
    const approval = await eventually(async () => {
      const [row] = await svc.database.db.select().from(approvals).where(eq(approvals.incidentId, incidentId));
      return row?.status === 'approved' ? row : undefined;
    }, 30_000);
    expect(approval).toMatchObject({ decidedByType: 'system' });
    await eventually(async () => {
      const [row] = await svc.database.db
        .select()
        .from(remediations)
        .where(eq(remediations.id, approval.remediationId));
      return row?.status === 'completed' || row?.status === 'failed';
    }, 30_000);
    const [audit] = await svc.database.db
      .select()
      .from(auditLog)
      .where(and(eq(auditLog.incidentId, incidentId), eq(auditLog.action, 'approval.responded')))
      .orderBy(auditLog.seq);
    expect(audit).toMatchObject({ actorType: 'system' });
  });

  it('re-synthesises when an alert changes state while the approval waits, and keeps the proposal when its evidence is the same', async () => {
    const tenant = await tenantWith({ approvalSeconds: 600 });
    await restartRunbook(svc, tenant.member, 'checkout-api'); // a step to run: manual steps ask nothing
    const key = await createKey(svc, tenant.admin);
    const alert = { name: 'CheckoutErrors', severity: 'high', service: 'checkout-api', summary: '5xx above 5%' };
    const posted = await postWebhook(svc, tenant.tenantId, 'generic', alert, { key: key.key });
    expect(posted.status).toBe(202);
    const incidentId = posted.body.incidentIds[0] as string;
    const approval = await eventually(async () => {
      const [row] = await svc.database.db.select().from(approvals).where(eq(approvals.incidentId, incidentId));
      return row?.status === 'pending' ? row : undefined;
    }, 30_000);
    const handle = svc.client.workflow.getHandle(incidentId);
    await eventually(async () => (await handle.query(getStateQuery)).pendingApprovalId === approval.id);
    const { investigations } = await import('../../src/db/schema/investigation.js');
    const [before] = await svc.database.db
      .select()
      .from(investigations)
      .where(eq(investigations.incidentId, incidentId));
    const evidenceChecks = async () => {
      const history = await handle.fetchHistory();
      const scheduled = new Set(
        (history.events ?? [])
          .filter((e) => e.activityTaskScheduledEventAttributes?.activityType?.name === 'evidenceHash')
          .map((e) => Number(e.eventId)),
      );
      return (history.events ?? []).filter((e) =>
        scheduled.has(Number(e.activityTaskCompletedEventAttributes?.scheduledEventId)),
      ).length;
    };
    const checksBefore = await evidenceChecks();
    const recovered = await postWebhook(
      svc,
      tenant.tenantId,
      'generic',
      { ...alert, status: 'resolved' },
      { key: key.key },
    );
    expect(recovered.status).toBe(202);
    expect(recovered.body.incidentIds).toEqual([incidentId]);
    await eventually(async () => (await handle.query(getStateQuery)).syntheses === 2, 30_000);
    const completed = (await eventTypes(incidentId)).filter((t) => t === 'investigation.completed');
    expect(completed).toHaveLength(2);
    const [after] = await svc.database.db
      .select()
      .from(investigations)
      .where(eq(investigations.incidentId, incidentId));
    expect(after!.rootCause).toBe(before!.rootCause);
    // The waiting approval compares the evidence after the re-synthesis (an activity in the
    // history); a recovery adds none, so the proposal stands.
    await eventually(async () => (await evidenceChecks()) > checksBefore, 30_000);
    const [now] = await svc.database.db.select().from(approvals).where(eq(approvals.id, approval.id));
    expect(now).toMatchObject({ status: 'pending', expiredReason: null });
    expect(await handle.query(getStateQuery)).toMatchObject({
      pendingApprovalId: approval.id,
      status: 'awaiting_approval',
    });
  });

  it('supersedes a pending approval when new evidence changes the conclusion', async () => {
    const tenant = await tenantWith({ approvalSeconds: 600 });
    const { incidentId, approval } = await awaitingApproval(tenant);
    // New evidence: an alert that fires on the incident's service, then human context re-synthesises.
    const { evidenceItems } = await import('../../src/db/schema/investigation.js');
    await svc.database.db.insert(evidenceItems).values({
      id: `evi_new_${Date.now()}`,
      tenantId: tenant.tenantId,
      incidentId,
      agentRole: 'logs',
      type: 'log',
      source: 'sentry',
      summary: 'x509: certificate has expired',
      severity: 'critical',
      occurredAt: new Date(),
      rawSnippet: 'x509: certificate has expired or is not yet valid',
      dedupeKey: `logs:new-${Date.now()}`,
    });
    expect(
      (
        await svc.api('POST', `/v1/investigation/${incidentId}/context`, {
          token: tenant.member,
          body: { content: 'The TLS certificate of checkout-api expired at 03:00' },
        })
      ).status,
    ).toBe(202);
    const old = await expiredApproval(svc, approval.id, 30_000);
    expect(old.expiredReason).toBe('superseded');
    const replacement = await eventually(async () => {
      const rows = await svc.database.db
        .select()
        .from(approvals)
        .where(and(eq(approvals.incidentId, incidentId), eq(approvals.status, 'pending')));
      return rows[0];
    }, 30_000);
    expect(replacement.id).not.toBe(approval.id);
    const late = await respond(tenant, approval.id, { decision: 'approve' });
    expect(late.status).toBe(409);
    expect(late.body.error).toBe('approval_expired');
    expect(late.body.message).toContain('superseded');
  });
});

describe('an approval the workflow has not taken in yet', () => {
  it('is answered 503 to retry, not 404, while the stored approval is pending and within its deadline', async () => {
    const tenant = await tenantWith({ approvalSeconds: 600 });
    // Concluded before the workflow has its result (a worker behind).
    const incidentId = await concludedIncident(svc, tenant, { title: 'Checkout 5xx', description: 'Payments fail' }, [
      'Restart checkout-api',
    ]);
    const acts = createRemediationActivities({ db: svc.database.db, skills: svc.skills });
    const proposal = await acts.proposeRemediation({
      tenantId: tenant.tenantId,
      incidentId,
      investigationRun: 1,
      workflowId: incidentId,
      requestKey: 'not-taken-in',
    });
    const listed = await svc.api('GET', '/v1/approvals?status=pending', { token: tenant.member });
    expect(listed.body.items.map((i: { approvalId: string }) => i.approvalId)).toContain(proposal.approvalId);
    const res = await respond(tenant, proposal.approvalId, { decision: 'approve' });
    expect(res.status).toBe(503);
    expect(res.headers.get('retry-after')).toBe('5');
    expect(res.body).toEqual({
      error: 'service_unavailable',
      message: 'The approval is not ready to be answered yet; retry shortly',
    });
    const [row] = await svc.database.db.select().from(approvals).where(eq(approvals.id, proposal.approvalId));
    expect(row).toMatchObject({ status: 'pending', decidedAt: null });
  });
});
