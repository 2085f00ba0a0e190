import { and, eq } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createRemediationActivities } from '../../src/activities/remediation.js';
import type { RemediationActivities } from '../../src/analysis/remediation-types.js';
import { incidents } from '../../src/db/schema/incidents.js';
import { investigations } from '../../src/db/schema/investigation.js';
import { approvals, notifications, remediations, users } from '../../src/db/schema/remediation.js';
import { toWorkflowInput } from '../../src/db/repositories/incidents.js';
import { newId } from '../../src/ids.js';
import { createSkillCipher } from '../../src/skills/crypto.js';
import { createSkillRuntime } from '../../src/skills/invoke.js';
import { createUserRecorder } from '../../src/api/middleware/record-user.js';
import { startTestService, TEST_SKILL_KEY, type TestService } from '../helpers/service.js';

let svc: TestService;
let acts: RemediationActivities;

beforeAll(async () => {
  // No worker: an Update to a running workflow is answered 503 after the (short) answer bound.
  svc = await startTestService({ withoutWorker: true, withoutDispatcher: true, answerTimeoutMs: 5_000 });
  acts = createRemediationActivities({
    db: svc.database.db,
    skills: createSkillRuntime({ cipher: createSkillCipher(TEST_SKILL_KEY), allowedNetworks: [] }),
  });
});
afterAll(async () => {
  await svc?.stop();
});

async function proposal(tenantId: string, title = 'checkout-api 5xx') {
  const incidentId = newId('inc');
  await svc.database.db.insert(incidents).values({
    id: incidentId,
    tenantId,
    title,
    description: 'd',
    severity: 'high',
    status: 'awaiting_approval',
    source: 'manual',
    service: 'checkout-api',
  });
  await svc.database.db.insert(investigations).values({
    incidentId,
    tenantId,
    status: 'completed',
    rootCause: 'bad release',
    recommendedActions: ['Roll back deployment 7 of checkout-api (sha abcdef1)', 'Restart checkout-api'],
  });
  const p = await acts.proposeRemediation({
    tenantId,
    incidentId,
    investigationRun: 1,
    workflowId: `incident-${incidentId}`,
    requestKey: 'r1',
  });
  return { ...p, incidentId };
}

describe('GET /v1/approvals', () => {
  it('lists newest first with incident and remediation summaries, filters by status, pages with a cursor, isolates tenants', async () => {
    const t = await svc.newTenant();
    const other = await svc.newTenant();
    await proposal(other.tenantId);
    const a = await proposal(t.tenantId, 'first');
    const b = await proposal(t.tenantId, 'second');
    const c = await proposal(t.tenantId, 'third');
    await acts.recordApprovalDecision({
      tenantId: t.tenantId,
      incidentId: b.incidentId,
      approvalId: b.approvalId,
      remediationId: b.remediationId,
      decision: 'approve',
      actor: { type: 'user', id: 'user-admin' },
      workflowId: 'w',
    });
    await acts.expireApproval({
      tenantId: t.tenantId,
      incidentId: a.incidentId,
      approvalId: a.approvalId,
      remediationId: a.remediationId,
      reason: 'deadline',
      workflowId: 'w',
    });

    const all = await svc.api('GET', '/v1/approvals', { token: t.member });
    expect(all.status).toBe(200);
    expect(all.body.total).toBe(3);
    expect(all.body.items.map((i: any) => i.approvalId)).toEqual([c.approvalId, b.approvalId, a.approvalId]);
    expect(all.body.items[0]).toMatchObject({
      approvalId: c.approvalId,
      incidentId: c.incidentId,
      remediationId: c.remediationId,
      status: 'pending',
      deadline: c.deadline,
      decidedAt: null,
      decidedBy: null,
      expiredReason: null,
      incident: { title: 'third', severity: 'high', status: 'awaiting_approval' },
      remediation: {
        status: 'awaiting_approval',
        steps: 2,
        summary: 'Roll back deployment 7 of checkout-api (sha abcdef1)',
      },
    });
    expect(all.body.nextCursor).toBeNull();

    const pending = await svc.api('GET', '/v1/approvals?status=pending', { token: t.admin });
    expect(pending.body).toMatchObject({ total: 1, items: [{ approvalId: c.approvalId }] });
    const approved = await svc.api('GET', '/v1/approvals?status=approved', { token: t.admin });
    expect(approved.body.items).toEqual([
      expect.objectContaining({
        approvalId: b.approvalId,
        decidedBy: 'user-admin',
        remediation: expect.objectContaining({ status: 'approved' }),
      }),
    ]);
    const expired = await svc.api('GET', '/v1/approvals?status=expired', { token: t.admin });
    expect(expired.body.items).toEqual([
      expect.objectContaining({ approvalId: a.approvalId, expiredReason: 'deadline' }),
    ]);
    expect((await svc.api('GET', '/v1/approvals?status=rejected', { token: t.admin })).body).toEqual({
      items: [],
      total: 0,
      nextCursor: null,
    });

    const p1 = await svc.api('GET', '/v1/approvals?limit=2', { token: t.admin });
    expect(p1.body.items.map((i: any) => i.approvalId)).toEqual([c.approvalId, b.approvalId]);
    expect(p1.body.nextCursor).toEqual(expect.any(String));
    const p2 = await svc.api('GET', `/v1/approvals?limit=2&cursor=${p1.body.nextCursor}`, { token: t.admin });
    expect(p2.body).toMatchObject({ total: 3, nextCursor: null, items: [{ approvalId: a.approvalId }] });

    expect((await svc.api('GET', '/v1/approvals?status=bogus', { token: t.admin })).status).toBe(400);
    expect((await svc.api('GET', '/v1/approvals?limit=201', { token: t.admin })).status).toBe(400);
    expect((await svc.api('GET', '/v1/approvals?cursor=nope', { token: t.admin })).status).toBe(400);
    expect((await svc.api('GET', '/v1/approvals')).status).toBe(401);
    const viewer = svc.token(t.tenantId, 'viewer' as never);
    expect((await svc.api('GET', '/v1/approvals', { token: viewer })).status).toBe(403);
  });
});

describe('POST /v1/notifications/approvals/{approvalId}/respond, from the stored approval', () => {
  const respond = (token: string, approvalId: string, decision: 'approve' | 'reject') =>
    svc.api('POST', `/v1/notifications/approvals/${approvalId}/respond`, { token, body: { decision } });

  it('answers 409 approval_expired past the deadline without waiting on a workflow that no worker runs', async () => {
    const t = await svc.newTenant();
    const late = await proposal(t.tenantId);
    const [incident] = await svc.database.db.select().from(incidents).where(eq(incidents.id, late.incidentId));
    await svc.workflows.startIncident(toWorkflowInput(incident!), incident!.title); // running, unanswered
    await svc.database.db
      .update(approvals)
      .set({ deadline: new Date(Date.now() - 1000) })
      .where(eq(approvals.id, late.approvalId));
    const started = Date.now();
    const res = await respond(t.admin, late.approvalId, 'approve');
    expect(res.status).toBe(409);
    expect(res.body).toEqual({ error: 'approval_expired', message: 'The approval deadline has passed' });
    expect(Date.now() - started).toBeLessThan(5_000); // not the answer bound's 503
    // Nothing decided: the workflow's timer expires it when a worker runs.
    const [row] = await svc.database.db.select().from(approvals).where(eq(approvals.id, late.approvalId));
    expect(row).toMatchObject({ status: 'pending', decidedAt: null, decidedBy: null });
    const [remediation] = await svc.database.db
      .select()
      .from(remediations)
      .where(eq(remediations.id, late.remediationId));
    expect(remediation!.status).toBe('awaiting_approval');
  });

  it('says why an ended approval is closed: superseded, expired at the deadline, or already decided', async () => {
    const t = await svc.newTenant();
    const base = (p: Awaited<ReturnType<typeof proposal>>) => ({
      tenantId: t.tenantId,
      incidentId: p.incidentId,
      approvalId: p.approvalId,
      remediationId: p.remediationId,
      workflowId: 'w',
    });
    const superseded = await proposal(t.tenantId);
    await acts.expireApproval({ ...base(superseded), reason: 'superseded' });
    expect((await respond(t.admin, superseded.approvalId, 'approve')).body).toEqual({
      error: 'approval_expired',
      message: 'This approval was superseded by a proposal on newer evidence',
    });
    const expired = await proposal(t.tenantId);
    await acts.expireApproval({ ...base(expired), reason: 'deadline' });
    const late = await respond(t.admin, expired.approvalId, 'reject');
    expect(late.status).toBe(409);
    expect(late.body).toEqual({ error: 'approval_expired', message: 'The approval deadline has passed' });
    const decided = await proposal(t.tenantId);
    await acts.recordApprovalDecision({
      ...base(decided),
      decision: 'approve',
      actor: { type: 'user', id: 'user-admin' },
    });
    const again = await respond(t.admin, decided.approvalId, 'reject');
    expect(again.status).toBe(409);
    expect(again.body.error).toBe('already_decided');
    const [row] = await svc.database.db.select().from(approvals).where(eq(approvals.id, decided.approvalId));
    expect(row).toMatchObject({ status: 'approved', decidedBy: 'user-admin' });
  });
});

describe('GET /v1/remediations/{remediationId}', () => {
  it('returns the plan with step statuses and outputs, the approval and timestamps; 404 for unknown and for another tenant', async () => {
    const t = await svc.newTenant();
    const other = await svc.newTenant();
    const p = await proposal(t.tenantId);
    await acts.recordApprovalDecision({
      tenantId: t.tenantId,
      incidentId: p.incidentId,
      approvalId: p.approvalId,
      remediationId: p.remediationId,
      decision: 'approve',
      actor: { type: 'user', id: 'user-admin' },
      notes: 'ok',
      workflowId: 'w',
    });
    await acts.executeRemediationStep({
      tenantId: t.tenantId,
      incidentId: p.incidentId,
      remediationId: p.remediationId,
      index: 0,
      workflowId: 'w',
    });

    const res = await svc.api('GET', `/v1/remediations/${p.remediationId}`, { token: t.member });
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({
      remediationId: p.remediationId,
      incidentId: p.incidentId,
      status: 'executing',
      evidenceHash: p.evidenceHash,
      failure: null,
      completedAt: null,
      approval: {
        approvalId: p.approvalId,
        status: 'approved',
        deadline: p.deadline,
        decidedBy: 'user-admin',
        decidedByType: 'user',
        notes: 'ok',
      },
    });
    expect(res.body.steps).toHaveLength(2);
    expect(res.body.steps[0]).toMatchObject({
      index: 0,
      kind: 'builtin',
      action: 'rollback_deployment',
      status: 'succeeded',
      attempts: 1,
      output: { simulated: true },
    });
    expect(res.body.steps[0].finishedAt).toEqual(expect.any(String));
    expect(res.body.steps[1]).toMatchObject({
      index: 1,
      action: 'restart_service',
      status: 'pending',
      output: null,
      startedAt: null,
    });

    expect((await svc.api('GET', `/v1/remediations/${p.remediationId}`, { token: other.admin })).body).toMatchObject({
      error: 'not_found',
    });
    expect((await svc.api('GET', `/v1/remediations/${p.remediationId}`, { token: other.admin })).status).toBe(404);
    expect((await svc.api('GET', '/v1/remediations/rem_nope', { token: t.admin })).status).toBe(404);
  });
});

describe('users seen by the api', () => {
  it('records the token subject with email and roles on first sight, at most once a minute after', async () => {
    const t = await svc.newTenant();
    const token = svc.token(t.tenantId, 'admin', { sub: 'dana' });
    expect((await svc.api('GET', '/v1/approvals', { token })).status).toBe(200);
    const row = async () =>
      (
        await svc.database.db
          .select()
          .from(users)
          .where(and(eq(users.tenantId, t.tenantId), eq(users.userId, 'dana')))
      )[0];
    const first = await row();
    expect(first).toMatchObject({ userId: 'dana', email: 'admin@example.test', roles: ['admin'] });
    await svc.api('GET', '/v1/approvals', { token });
    await new Promise((r) => setTimeout(r, 100));
    const second = await row();
    expect(second!.lastSeenAt.getTime()).toBe(first!.lastSeenAt.getTime());
    // An admin seen by the api is notified of the next proposal.
    const p = await proposal(t.tenantId);
    const rows = await svc.database.db.select().from(notifications).where(eq(notifications.tenantId, t.tenantId));
    expect(rows.map((n) => [n.userId, n.payload.remediationId])).toEqual([['dana', p.remediationId]]);
  });

  it('remembers a bounded number of users per process: one evicted is written again when it comes back', async () => {
    const t = await svc.newTenant();
    let now = new Date('2031-01-01T00:00:00Z');
    const record = createUserRecorder({ db: svc.database.db, clock: () => now }, 2);
    const log = { error: () => undefined, warn: () => undefined };
    const who = (userId: string) => ({
      tenantId: t.tenantId,
      userId,
      email: `${userId}@example.test`,
      roles: ['member' as const],
    });
    const seen = async (userId: string) =>
      (
        await svc.database.db
          .select()
          .from(users)
          .where(and(eq(users.tenantId, t.tenantId), eq(users.userId, userId)))
      )[0]!.lastSeenAt.toISOString();
    await record(who('ann'), log);
    await record(who('ben'), log);
    now = new Date('2031-01-01T00:00:10Z');
    await record(who('ann'), log); // within the minute and remembered: not written
    expect(await seen('ann')).toBe('2031-01-01T00:00:00.000Z');
    await record(who('cy'), log); // past two: the one written longest ago (ann) is forgotten
    now = new Date('2031-01-01T00:00:20Z');
    await record(who('ann'), log); // forgotten: written again, awaited
    expect(await seen('ann')).toBe('2031-01-01T00:00:20.000Z');
    await record(who('cy'), log); // still remembered: not written
    expect(await seen('cy')).toBe('2031-01-01T00:00:10.000Z');
  });
});
