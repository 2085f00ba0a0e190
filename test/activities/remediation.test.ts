import { and, eq } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createRemediationActivities } from '../../src/activities/remediation.js';
import { ACTIVE_USER_WINDOW_MS } from '../../src/db/repositories/users.js';
import type { RemediationActivities } from '../../src/analysis/remediation-types.js';
import { connectDatabase } from '../../src/db/client.js';
import { auditLog } from '../../src/db/schema/audit.js';
import { events } from '../../src/db/schema/events.js';
import { incidents } from '../../src/db/schema/incidents.js';
import { ingestedEvents } from '../../src/db/schema/ingestion.js';
import { evidenceItems, investigations } from '../../src/db/schema/investigation.js';
import { approvals, notifications, remediations, remediationSteps, users } from '../../src/db/schema/remediation.js';
import { skillInvocations, skills } from '../../src/db/schema/skills.js';
import type { TenantSettings } from '../../src/db/schema/tenants.js';
import { newId } from '../../src/ids.js';
import { createSkillCipher } from '../../src/skills/crypto.js';
import { createSkillRuntime } from '../../src/skills/invoke.js';
import { startTestService, TEST_SKILL_KEY, type TestService } from '../helpers/service.js';
import { startSkillServer, type SkillServer } from '../helpers/skill-server.js';

let service: TestService;
let server: SkillServer;
let acts: RemediationActivities;

const ROLLBACK = 'Roll back deployment 4242 of checkout-api (sha 1a2b3c4) back to the previous release (sha 9f8e7d6)';
const ACTIONS = [
  ROLLBACK,
  'Restart the checkout-api pods that are near their memory limit and capture a heap profile before they are killed',
  'Scale out checkout-api: raise its replica count and its autoscaler maximum above the current ceiling',
  "Follow runbook 'Postgres connection exhaustion' step 2: Restart the pgbouncer pool",
  'Notify the payments team in #incidents',
  'Confirm the errors stop on checkout-api after the rollback',
];

beforeAll(async () => {
  service = await startTestService({
    withoutWorker: true,
    withoutDispatcher: true,
    skills: { allowedNetworks: ['127.0.0.1/32'], limits: { timeoutMs: 2000, retryBaseDelayMs: 10 } },
  });
  server = await startSkillServer();
  acts = createRemediationActivities({ db: service.database.db, skills: createRuntime() });
});
afterAll(async () => {
  await server?.close();
  await service?.stop();
});

/** The same skill settings as the service's runtime (which startTestService does not expose), without retries. */
function createRuntime() {
  return createSkillRuntime({
    cipher: createSkillCipher(TEST_SKILL_KEY),
    allowedNetworks: ['127.0.0.1/32'],
    limits: { timeoutMs: 2000, retryBaseDelayMs: 10, maxAttempts: 1 },
  });
}

async function setup(opts: { settings?: TenantSettings; actions?: string[] } = {}) {
  const db = service.database.db;
  const { tenantId } = await service.newTenant({ settings: { allowHttpSkills: true, ...opts.settings } });
  const incidentId = newId('inc');
  await db.insert(incidents).values({
    id: incidentId,
    tenantId,
    title: 'checkout-api 5xx',
    description: 'errors',
    severity: 'high',
    status: 'investigating',
    source: 'automated',
    service: 'checkout-api',
    ownerTeam: 'payments',
  });
  await db.insert(investigations).values({
    incidentId,
    tenantId,
    status: 'completed',
    rootCause: 'A bad release',
    confidence: 0.8,
    recommendedActions: opts.actions ?? ACTIONS,
    run: 1,
  });
  await db.insert(evidenceItems).values({
    id: newId('evi'),
    tenantId,
    incidentId,
    agentRole: 'deploy',
    type: 'deployment',
    source: 'github',
    summary: 'deploy 4242',
    severity: 'info',
    occurredAt: new Date(),
    rawSnippet: '{}',
    dedupeKey: `d:${incidentId}`,
  });
  await db.insert(users).values([
    { tenantId, userId: 'alice', email: 'alice@example.test', roles: ['admin'] },
    { tenantId, userId: 'bob', email: 'bob@example.test', roles: ['member', 'admin'] },
    { tenantId, userId: 'carol', email: 'carol@example.test', roles: ['member'] },
    // An admin whose token the api last saw past the active window is not asked (decision 231).
    {
      tenantId,
      userId: 'dave-left',
      email: 'dave@example.test',
      roles: ['admin'],
      lastSeenAt: new Date(Date.now() - ACTIVE_USER_WINDOW_MS - 86_400_000),
    },
  ]);
  return { tenantId, incidentId };
}

async function addSkill(
  tenantId: string,
  args: { name: string; description?: string; enabled?: boolean; type?: 'http' | 'integration'; path?: string },
) {
  const id = newId('skl');
  await service.database.db.insert(skills).values({
    id,
    tenantId,
    name: args.name,
    description: args.description ?? 'a remediation skill',
    type: args.type ?? 'http',
    config:
      (args.type ?? 'http') === 'http'
        ? { url: `${server.url}${args.path ?? '/echo'}`, method: 'POST' }
        : { action: 'create_ticket', provider: 'jira' },
    enabled: args.enabled ?? true,
  });
  return id;
}

const wf = (incidentId: string) => `incident-${incidentId}`;

async function propose(tenantId: string, incidentId: string, requestKey = 'run-1:1') {
  return acts.proposeRemediation({ tenantId, incidentId, investigationRun: 1, workflowId: wf(incidentId), requestKey });
}

async function approve(tenantId: string, incidentId: string, p: { approvalId: string; remediationId: string }) {
  return acts.recordApprovalDecision({
    tenantId,
    incidentId,
    approvalId: p.approvalId,
    remediationId: p.remediationId,
    decision: 'approve',
    actor: { type: 'user', id: 'alice' },
    notes: 'go ahead',
    workflowId: wf(incidentId),
  });
}

async function stepStatuses(remediationId: string): Promise<string[]> {
  const rows = await service.database.db
    .select()
    .from(remediationSteps)
    .where(eq(remediationSteps.remediationId, remediationId))
    .orderBy(remediationSteps.index);
  return rows.map((r) => r.status);
}

const eventsOf = (incidentId: string, type: string) =>
  service.database.db
    .select()
    .from(events)
    .where(and(eq(events.incidentId, incidentId), eq(events.type, type)))
    .orderBy(events.seq);

describe('proposeRemediation', () => {
  it('maps each recommended action to a builtin action, an enabled matching skill wins, a disabled one does not', async () => {
    const { tenantId, incidentId } = await setup({
      settings: { approvalTimeoutMinutes: 15 },
      actions: [...ACTIONS, 'Flush the cdn cache for checkout', 'Drain queue workers now'],
    });
    const flush = await addSkill(tenantId, { name: 'flush_cdn_cache' });
    await addSkill(tenantId, { name: 'drain_queue', enabled: false });
    const before = Date.now();
    const p = await propose(tenantId, incidentId);
    expect(p.remediationId).toMatch(/^rem_/);
    expect(p.approvalId).toMatch(/^apr_/);
    expect(p.autoApprove).toBe(false);
    expect(p.steps).toBe(8);
    const deadline = new Date(p.deadline).getTime();
    expect(deadline - before).toBeGreaterThanOrEqual(15 * 60_000 - 1000);
    expect(deadline - before).toBeLessThanOrEqual(15 * 60_000 + 5000);

    const [rem] = await service.database.db.select().from(remediations).where(eq(remediations.id, p.remediationId));
    expect(rem!.status).toBe('awaiting_approval');
    expect(rem!.evidenceHash).toBe(p.evidenceHash);
    const plan = rem!.plan;
    expect(plan.map((s) => [s.kind, s.action])).toEqual([
      ['builtin', 'rollback_deployment'],
      ['builtin', 'restart_service'],
      ['builtin', 'scale_service'],
      ['builtin', 'follow_runbook'],
      ['builtin', 'notify_team'],
      ['builtin', 'manual_step'],
      ['skill', 'flush_cdn_cache'],
      ['builtin', 'manual_step'],
    ]);
    expect(plan[0]!.input).toEqual({
      deploymentId: '4242',
      service: 'checkout-api',
      sha: '1a2b3c4',
      targetSha: '9f8e7d6',
    });
    expect(plan[1]!.input).toEqual({ service: 'checkout-api' });
    expect(plan[2]!.input).toMatchObject({ service: 'checkout-api', direction: 'out' });
    expect(plan[3]!.input).toEqual({
      runbookTitle: 'Postgres connection exhaustion',
      step: 2,
      text: 'Restart the pgbouncer pool',
    });
    expect(plan[4]!.input).toMatchObject({ team: 'payments' });
    expect(plan[6]!.skillId).toBe(flush);
    expect(plan[0]!.description).toBe(ROLLBACK);

    const steps = await service.database.db
      .select()
      .from(remediationSteps)
      .where(eq(remediationSteps.remediationId, p.remediationId));
    expect(steps).toHaveLength(8);
    expect(
      steps.every((s) => s.status === 'pending' && s.idempotencyKey === `${p.remediationId}:step:${s.index}`),
    ).toBe(true);

    const [apr] = await service.database.db.select().from(approvals).where(eq(approvals.id, p.approvalId));
    expect(apr).toMatchObject({
      status: 'pending',
      remediationId: p.remediationId,
      incidentId,
      evidenceHash: p.evidenceHash,
    });
    expect(apr!.deadline.toISOString()).toBe(p.deadline);
  });

  it('notifies each admin seen in the last 90 days (not members) once, emits approval.requested once, and a retry returns the same ids', async () => {
    const { tenantId, incidentId } = await setup();
    const p = await propose(tenantId, incidentId);
    const again = await propose(tenantId, incidentId);
    expect(again).toEqual(p);
    const rows = await service.database.db.select().from(notifications).where(eq(notifications.tenantId, tenantId));
    expect(rows.map((n) => n.userId).sort()).toEqual(['alice', 'bob']);
    for (const n of rows) {
      expect(n.type).toBe('approval.requested');
      expect(n.incidentId).toBe(incidentId);
      expect(n.payload).toEqual({
        incidentId,
        remediationId: p.remediationId,
        approvalId: p.approvalId,
        deadline: p.deadline,
      });
    }
    const requested = await eventsOf(incidentId, 'approval.requested');
    expect(requested).toHaveLength(1);
    expect(requested[0]!.payload).toMatchObject({
      incidentId,
      remediationId: p.remediationId,
      approvalId: p.approvalId,
      deadline: p.deadline,
    });
    expect(
      await service.database.db.select().from(remediations).where(eq(remediations.incidentId, incidentId)),
    ).toHaveLength(1);
    expect(await service.database.db.select().from(approvals).where(eq(approvals.incidentId, incidentId))).toHaveLength(
      1,
    );
    const audits = await service.database.db
      .select()
      .from(auditLog)
      .where(and(eq(auditLog.incidentId, incidentId), eq(auditLog.action, 'remediation.proposed')))
      .orderBy(auditLog.seq);
    expect(audits).toHaveLength(1);
    // Concurrent attempts with one new key make one proposal of their own, beside the first.
    const [a, b] = await Promise.all([propose(tenantId, incidentId, 'k2'), propose(tenantId, incidentId, 'k2')]);
    expect(a).toEqual(b);
    expect(a.remediationId).not.toBe(p.remediationId);
    expect(
      await service.database.db.select().from(remediations).where(eq(remediations.incidentId, incidentId)),
    ).toHaveLength(2);
  });

  it('uses the default deadline of 60 minutes and reports autoRemediation', async () => {
    const { tenantId, incidentId } = await setup({ settings: { autoRemediation: true } });
    const before = Date.now();
    const p = await propose(tenantId, incidentId);
    expect(p.autoApprove).toBe(true);
    expect(new Date(p.deadline).getTime() - before).toBeGreaterThanOrEqual(60 * 60_000 - 1000);
    expect(new Date(p.deadline).getTime() - before).toBeLessThanOrEqual(60 * 60_000 + 5000);
  });

  it('evidenceHash changes with new evidence and matches the proposal otherwise', async () => {
    const { tenantId, incidentId } = await setup();
    const p = await propose(tenantId, incidentId);
    expect(await acts.evidenceHash({ tenantId, incidentId })).toBe(p.evidenceHash);
    await service.database.db.insert(evidenceItems).values({
      id: newId('evi'),
      tenantId,
      incidentId,
      agentRole: 'logs',
      type: 'log',
      source: 'loki',
      summary: 'new',
      severity: 'high',
      occurredAt: new Date(),
      rawSnippet: '',
      dedupeKey: 'new',
    });
    expect(await acts.evidenceHash({ tenantId, incidentId })).not.toBe(p.evidenceHash);
  });
});

describe('decisions and expiry', () => {
  it('approve: approval approved, remediation approved, one event and one audit row with the notes; a retry returns the stored decision', async () => {
    const { tenantId, incidentId } = await setup();
    const p = await propose(tenantId, incidentId);
    const d1 = await approve(tenantId, incidentId, p);
    const d2 = await approve(tenantId, incidentId, p);
    expect(d1).toEqual(d2);
    expect(d1).toMatchObject({
      approvalId: p.approvalId,
      decision: 'approve',
      remediationId: p.remediationId,
      remediationStatus: 'executing',
    });
    const [apr] = await service.database.db.select().from(approvals).where(eq(approvals.id, p.approvalId));
    expect(apr).toMatchObject({ status: 'approved', decidedBy: 'alice', decidedByType: 'user', notes: 'go ahead' });
    expect(apr!.decidedAt!.toISOString()).toBe(d1.decidedAt);
    const [rem] = await service.database.db.select().from(remediations).where(eq(remediations.id, p.remediationId));
    expect(rem!.status).toBe('approved');
    expect(await eventsOf(incidentId, 'remediation.approved')).toHaveLength(1);
    const audits = await service.database.db
      .select()
      .from(auditLog)
      .where(and(eq(auditLog.incidentId, incidentId), eq(auditLog.action, 'approval.responded')))
      .orderBy(auditLog.seq);
    expect(audits).toHaveLength(1);
    expect(audits[0]).toMatchObject({ actorType: 'user', actorId: 'alice' });
    expect(audits[0]!.details).toMatchObject({ decision: 'approve', notes: 'go ahead' });
    // A later reject answers with the stored approve.
    const d3 = await acts.recordApprovalDecision({
      tenantId,
      incidentId,
      approvalId: p.approvalId,
      remediationId: p.remediationId,
      decision: 'reject',
      actor: { type: 'user', id: 'bob' },
      workflowId: wf(incidentId),
    });
    expect(d3.decision).toBe('approve');
  });

  it('reject by the system actor: remediation rejected and remediation.rejected', async () => {
    const { tenantId, incidentId } = await setup();
    const p = await propose(tenantId, incidentId);
    const d = await acts.recordApprovalDecision({
      tenantId,
      incidentId,
      approvalId: p.approvalId,
      remediationId: p.remediationId,
      decision: 'reject',
      actor: { type: 'system', id: 'auto' },
      workflowId: wf(incidentId),
    });
    expect(d).toMatchObject({ decision: 'reject', remediationStatus: 'rejected' });
    const [rem] = await service.database.db.select().from(remediations).where(eq(remediations.id, p.remediationId));
    expect(rem!.status).toBe('rejected');
    expect(await stepStatuses(p.remediationId)).toEqual(rem!.plan.map(() => 'skipped')); // none will run
    expect(await eventsOf(incidentId, 'remediation.rejected')).toHaveLength(1);
    const [audit] = await service.database.db
      .select()
      .from(auditLog)
      .where(and(eq(auditLog.incidentId, incidentId), eq(auditLog.action, 'approval.responded')))
      .orderBy(auditLog.seq);
    expect(audit!.actorType).toBe('system');
  });

  it('expiry at the deadline and by supersede, each once; a decision after expiry fails', async () => {
    const { tenantId, incidentId } = await setup();
    const p = await propose(tenantId, incidentId, 'a');
    const q = await propose(tenantId, incidentId, 'b');
    const expire = (x: typeof p, reason: 'deadline' | 'superseded') =>
      acts.expireApproval({
        tenantId,
        incidentId,
        approvalId: x.approvalId,
        remediationId: x.remediationId,
        reason,
        workflowId: wf(incidentId),
      });
    await expire(p, 'deadline');
    await expire(p, 'deadline');
    await expire(q, 'superseded');
    await expire(q, 'superseded');
    const rows = await service.database.db.select().from(approvals).where(eq(approvals.incidentId, incidentId));
    expect(Object.fromEntries(rows.map((r) => [r.id, [r.status, r.expiredReason]]))).toEqual({
      [p.approvalId]: ['expired', 'deadline'],
      [q.approvalId]: ['expired', 'superseded'],
    });
    const rems = await service.database.db.select().from(remediations).where(eq(remediations.incidentId, incidentId));
    expect(Object.fromEntries(rems.map((r) => [r.id, r.status]))).toEqual({
      [p.remediationId]: 'cancelled',
      [q.remediationId]: 'cancelled',
    });
    for (const r of rems) expect(await stepStatuses(r.id)).toEqual(r.plan.map(() => 'skipped'));
    const expired = await eventsOf(incidentId, 'approval.expired');
    expect(expired.map((e) => e.payload.reason).sort()).toEqual(['deadline', 'superseded']);
    const audits = await service.database.db
      .select()
      .from(auditLog)
      .where(and(eq(auditLog.incidentId, incidentId), eq(auditLog.action, 'approval.expired')))
      .orderBy(auditLog.seq);
    expect(audits).toHaveLength(2);
    expect(audits.every((a) => a.actorType === 'system')).toBe(true);
    await expect(approve(tenantId, incidentId, p)).rejects.toThrow(/expired/);
  });
});

describe('execution, verification, completion', () => {
  it('runs each step once: builtin records the intended action, a skill step calls the skill server once', async () => {
    const { tenantId, incidentId } = await setup({ actions: [ROLLBACK, 'Run the warm_caches skill for checkout-api'] });
    await addSkill(tenantId, { name: 'warm_caches', path: '/echo' });
    const p = await propose(tenantId, incidentId);
    await approve(tenantId, incidentId, p);
    const req = (index: number) => ({
      tenantId,
      incidentId,
      remediationId: p.remediationId,
      index,
      workflowId: wf(incidentId),
    });
    const first = await acts.executeRemediationStep(req(0));
    expect(first.ok).toBe(true);
    expect(first.output).toMatchObject({
      simulated: true,
      action: 'rollback_deployment',
      wouldDo: expect.stringContaining('deployment 4242 of checkout-api'),
    });
    expect(await acts.executeRemediationStep(req(0))).toEqual(first);

    const hitsBefore = server.hits('/echo').length;
    const [s1, s2] = await Promise.all([acts.executeRemediationStep(req(1)), acts.executeRemediationStep(req(1))]);
    const s3 = await acts.executeRemediationStep(req(1));
    expect(s1.ok).toBe(true);
    expect(s2).toEqual(s1);
    expect(s3).toEqual(s1);
    expect(server.hits('/echo').length - hitsBefore).toBe(1);
    const rows = await service.database.db
      .select()
      .from(remediationSteps)
      .where(eq(remediationSteps.remediationId, p.remediationId));
    expect(rows).toHaveLength(2); // the two steps run above
    expect(rows.every((r) => r.status === 'succeeded' && r.finishedAt)).toBe(true);
    const [rem] = await service.database.db.select().from(remediations).where(eq(remediations.id, p.remediationId));
    expect(rem!.status).toBe('executing');

    // The rollback only recorded what to do, and nothing (no alert, no check) shows a recovery:
    // the incident is not called resolved.
    const v = await acts.verifyRemediation({ tenantId, incidentId, remediationId: p.remediationId });
    expect(v).toEqual({
      ok: false,
      detail: expect.stringContaining('Nothing confirms a recovery: step(s) 1 only recorded what to do'),
    });
  });

  it('runs a skill step on a worker pool of one connection: the skill reads and records through the step transaction', async () => {
    // A step holds its row lock in a transaction while the skill runs; had the skill waited for a
    // second connection, a pool of N connections would deadlock with N such steps at once.
    const small = connectDatabase(service.databaseUrl, { max: 1 });
    try {
      const single = createRemediationActivities({ db: small.db, skills: createRuntime() });
      const { tenantId, incidentId } = await setup({ actions: ['Run the warm_caches skill for checkout-api'] });
      await addSkill(tenantId, { name: 'warm_caches', path: '/echo' });
      const p = await propose(tenantId, incidentId);
      await approve(tenantId, incidentId, p);
      const hitsBefore = server.hits('/echo').length;
      const req = { tenantId, incidentId, remediationId: p.remediationId, index: 0, workflowId: wf(incidentId) };
      const outcome = await Promise.race([
        single.executeRemediationStep(req),
        new Promise<never>((_, reject) =>
          setTimeout(() => reject(new Error('the step waited for a second connection')), 10_000),
        ),
      ]);
      expect(outcome).toMatchObject({ index: 0, ok: true, output: { invocationId: expect.stringMatching(/^ski_/) } });
      expect(server.hits('/echo').length - hitsBefore).toBe(1);
      const [invocation] = await service.database.db
        .select()
        .from(skillInvocations)
        .where(eq(skillInvocations.tenantId, tenantId));
      expect(invocation).toMatchObject({ status: 'succeeded', idempotencyKey: expect.stringContaining(':step:0') });
      // Recorded together: a retry answers from the step without calling again.
      expect(await single.executeRemediationStep(req)).toEqual(outcome);
      expect(server.hits('/echo').length - hitsBefore).toBe(1);
    } finally {
      await small.close();
    }
  });

  it('verifies a plan whose every step acted, with no alert firing, and completes it once', async () => {
    const { tenantId, incidentId } = await setup({ actions: ['Run the warm_caches skill for checkout-api'] });
    await addSkill(tenantId, { name: 'warm_caches', path: '/echo' });
    const p = await propose(tenantId, incidentId);
    await approve(tenantId, incidentId, p);
    const step = await acts.executeRemediationStep({
      tenantId,
      incidentId,
      remediationId: p.remediationId,
      index: 0,
      workflowId: wf(incidentId),
    });
    expect(step.output).toMatchObject({ invocationId: expect.stringMatching(/^ski_/) });
    const v = await acts.verifyRemediation({ tenantId, incidentId, remediationId: p.remediationId });
    expect(v).toEqual({ ok: true, detail: 'All 1 step(s) acted and no alert of the incident is firing' });
    await acts.completeRemediation({
      tenantId,
      incidentId,
      remediationId: p.remediationId,
      ok: true,
      detail: v.detail,
      workflowId: wf(incidentId),
    });
    await acts.completeRemediation({
      tenantId,
      incidentId,
      remediationId: p.remediationId,
      ok: true,
      detail: v.detail,
      workflowId: wf(incidentId),
    });
    const [done] = await service.database.db.select().from(remediations).where(eq(remediations.id, p.remediationId));
    expect(done!.status).toBe('completed');
    expect(done!.completedAt).not.toBeNull();
    expect(done!.verification).toEqual({ ok: true, detail: v.detail });
    expect(await eventsOf(incidentId, 'remediation.completed')).toHaveLength(1);
  });

  it('verifies by a step-defined check: a check skill that answers healthy passes, one that answers healthy: false fails', async () => {
    for (const [path, ok] of [
      ['/echo', true],
      ['/unhealthy', false],
    ] as const) {
      const { tenantId, incidentId } = await setup({
        actions: [ROLLBACK, 'Verify checkout health with the probe_checkout_health skill'],
      });
      await addSkill(tenantId, { name: 'probe_checkout_health', path });
      // An alert still fires: without a check the remediation could not be verified.
      await service.database.db.insert(ingestedEvents).values({
        id: newId('evt'),
        tenantId,
        provider: 'generic',
        kind: 'alert',
        status: 'firing',
        fingerprint: `fp-${incidentId}`,
        alertName: 'CheckoutErrors',
        title: 'checkout 5xx',
        description: 'errors above threshold',
        raw: {},
        occurredAt: new Date(),
        incidentId,
      });
      const p = await propose(tenantId, incidentId);
      const [rem] = await service.database.db.select().from(remediations).where(eq(remediations.id, p.remediationId));
      expect(rem!.plan[1]).toMatchObject({ kind: 'skill', action: 'probe_checkout_health', check: true });
      expect(rem!.plan[0]!.check).toBeUndefined();
      await approve(tenantId, incidentId, p);
      for (const index of [0, 1])
        await acts.executeRemediationStep({
          tenantId,
          incidentId,
          remediationId: p.remediationId,
          index,
          workflowId: wf(incidentId),
        });
      const v = await acts.verifyRemediation({ tenantId, incidentId, remediationId: p.remediationId });
      expect(v.ok).toBe(ok);
      expect(v.detail).toContain(ok ? 'check(s) passed' : 'The check of step 2 did not pass');
    }
  });

  it('a failing step is an outcome, stored once; verification fails; completion records the failure as evidence once', async () => {
    const { tenantId, incidentId } = await setup({
      actions: ['Open a ticket with create_jira_ticket', 'Restart checkout-api'],
    });
    await addSkill(tenantId, { name: 'create_jira_ticket', type: 'integration' });
    const p = await propose(tenantId, incidentId);
    await approve(tenantId, incidentId, p);
    const req = { tenantId, incidentId, remediationId: p.remediationId, index: 0, workflowId: wf(incidentId) };
    const out = await acts.executeRemediationStep(req);
    expect(out).toMatchObject({ index: 0, ok: false, error: expect.stringContaining('integration_unavailable') });
    expect(await acts.executeRemediationStep(req)).toEqual(out);
    const [row] = await service.database.db
      .select()
      .from(remediationSteps)
      .where(and(eq(remediationSteps.remediationId, p.remediationId), eq(remediationSteps.index, 0)));
    expect(row).toMatchObject({ status: 'failed', attempts: 1 });
    expect(await stepStatuses(p.remediationId)).toEqual(['failed', 'pending']);

    const v = await acts.verifyRemediation({ tenantId, incidentId, remediationId: p.remediationId });
    expect(v.ok).toBe(false);
    expect(v.detail).toContain('integration_unavailable');
    const done = {
      tenantId,
      incidentId,
      remediationId: p.remediationId,
      ok: false,
      detail: v.detail,
      workflowId: wf(incidentId),
    };
    await acts.completeRemediation(done);
    await acts.completeRemediation(done);
    const [rem] = await service.database.db.select().from(remediations).where(eq(remediations.id, p.remediationId));
    expect(rem).toMatchObject({ status: 'failed', failure: v.detail });
    expect(await stepStatuses(p.remediationId)).toEqual(['failed', 'skipped']); // the step after the failure never runs
    expect(await eventsOf(incidentId, 'remediation.failed')).toHaveLength(1);
    const evidence = await service.database.db
      .select()
      .from(evidenceItems)
      .where(and(eq(evidenceItems.incidentId, incidentId), eq(evidenceItems.source, 'remediation')));
    expect(evidence).toHaveLength(1);
    expect(evidence[0]).toMatchObject({
      type: 'log',
      agentRole: 'remediation',
      dedupeKey: `remediation:${p.remediationId}`,
    });
    expect(evidence[0]!.summary).toContain('integration_unavailable');
    const audits = await service.database.db
      .select()
      .from(auditLog)
      .where(and(eq(auditLog.incidentId, incidentId), eq(auditLog.action, 'remediation.failed')))
      .orderBy(auditLog.seq);
    expect(audits).toHaveLength(1);
  });

  it('verification by alerts: firing → not ok, all resolved → ok, recovered_at → ok', async () => {
    const { tenantId, incidentId } = await setup({ actions: [ROLLBACK] });
    const p = await propose(tenantId, incidentId);
    const alert = (status: 'firing' | 'resolved', at: number) => ({
      id: newId('evt'),
      tenantId,
      provider: 'prometheus',
      kind: 'alert' as const,
      status,
      fingerprint: 'fp1',
      alertName: 'HighErrorRate',
      title: 'HighErrorRate',
      description: '',
      raw: {},
      occurredAt: new Date(at),
      incidentId,
    });
    const t = Date.now() - 60_000;
    await service.database.db.insert(ingestedEvents).values(alert('firing', t));
    await acts.executeRemediationStep({
      tenantId,
      incidentId,
      remediationId: p.remediationId,
      index: 0,
      workflowId: wf(incidentId),
    });
    const firing = await acts.verifyRemediation({ tenantId, incidentId, remediationId: p.remediationId });
    expect(firing).toEqual({ ok: false, detail: expect.stringContaining('HighErrorRate') });
    await service.database.db.insert(ingestedEvents).values(alert('resolved', t + 1000));
    expect(await acts.verifyRemediation({ tenantId, incidentId, remediationId: p.remediationId })).toEqual({
      ok: true,
      detail: expect.stringContaining('resolved'),
    });
    await service.database.db.insert(ingestedEvents).values(alert('firing', t + 2000));
    expect((await acts.verifyRemediation({ tenantId, incidentId, remediationId: p.remediationId })).ok).toBe(false);
    await service.database.db.update(incidents).set({ recoveredAt: new Date() }).where(eq(incidents.id, incidentId));
    expect(await acts.verifyRemediation({ tenantId, incidentId, remediationId: p.remediationId })).toEqual({
      ok: true,
      detail: expect.stringContaining('recovered'),
    });
  });
});
