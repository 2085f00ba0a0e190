import { ApplicationFailure, Context } from '@temporalio/activity';
import { and, eq } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { agentRoles } from '../../src/analysis/types.js';
import { events } from '../../src/db/schema/events.js';
import { incidents } from '../../src/db/schema/incidents.js';
import {
  evidenceItems,
  investigationContext,
  investigations,
  triageResults,
} from '../../src/db/schema/investigation.js';
import { usageCounters } from '../../src/db/schema/limits.js';
import { usagePeriod } from '../../src/domain/plans.js';
import { getStateQuery } from '../../src/workflows/messages.js';
import { startTestService, type TestService } from '../helpers/service.js';
import { createKey, eventually, postWebhook } from '../helpers/webhooks.js';
import { startTestWorker, useWorkerlessService } from '../helpers/workers.js';

let svc: TestService;
let tenant: { tenantId: string; admin: string; member: string };

beforeAll(async () => {
  svc = await startTestService();
  tenant = await svc.newTenant({ plan: 'plan_business' });
});
afterAll(() => svc?.stop());

async function manualIncident(token = tenant.member) {
  const res = await svc.api('POST', '/v1/incidents/chat', {
    token,
    body: {
      title: 'Checkout errors',
      description: 'Checkout answers 502 errors since the 03:10 deploy',
      service: 'checkout-api',
    },
  });
  expect(res.status).toBe(201);
  return res.body.incidentId as string;
}

async function completed(id: string, syntheses = 1) {
  return eventually(async () => {
    const res = await svc.api('GET', `/v1/investigation/${id}`, { token: tenant.member });
    const state = await svc.client.workflow.getHandle(id).query(getStateQuery);
    return res.body.status === 'completed' && (state.syntheses ?? 0) >= syntheses ? res : undefined;
  }, 30_000);
}

const eventTypes = async (id: string) =>
  (await svc.database.db.select().from(events).where(eq(events.incidentId, id)).orderBy(events.seq)).map((e) => e.type);

describe('POST /v1/investigation/', () => {
  it('triages first, runs every agent, and answers the result through GET', async () => {
    const id = await manualIncident();
    const res = await svc.api('POST', '/v1/investigation/', { token: tenant.member, body: { incidentId: id } });
    expect(res.status).toBe(202);
    expect(res.body).toEqual({ incidentId: id, status: 'investigating' });

    const done = await completed(id);
    expect(done.status).toBe(200);
    expect(done.body).toMatchObject({ status: 'completed', completedAt: expect.any(String) });
    expect(done.body.rootCause).toEqual(expect.any(String));
    expect(done.body.rootCause.length).toBeGreaterThan(10);
    expect(done.body.confidence).toBeGreaterThanOrEqual(0);
    expect(done.body.confidence).toBeLessThanOrEqual(1);
    // One finding per agent, and the synthesis with its ranked and discarded hypotheses.
    expect(done.body.evidence.map((e: { agentRole: string }) => e.agentRole).sort()).toEqual(
      [...agentRoles, 'synthesis'].sort(),
    );
    expect(done.body.recommendedActions.length).toBeGreaterThan(0);
    // The competing hypotheses, best first: the kept one carries the confidence.
    const ranked = done.body.hypotheses as Array<{ status: string; probability: number; kind: string }>;
    expect(ranked.length).toBeGreaterThan(0);
    expect(ranked[0]).toMatchObject({ status: 'kept', probability: done.body.confidence });
    expect(ranked.slice(1).every((h) => h.status === 'discarded')).toBe(true);
    expect(ranked.reduce((sum, h) => sum + h.probability, 0)).toBeLessThanOrEqual(1.0001);

    const [incident] = await svc.database.db.select().from(incidents).where(eq(incidents.id, id));
    // Then a remediation is proposed for approval (issue 6).
    expect(incident).toMatchObject({
      rootCause: done.body.rootCause,
      recommendedActions: done.body.recommendedActions,
    });
    expect(incident!.status).toMatch(/^(investigating|awaiting_approval)$/);
    expect(incident!.assignedAgents.sort()).toEqual([...agentRoles].sort());
    expect(await svc.database.db.select().from(triageResults).where(eq(triageResults.incidentId, id))).toHaveLength(1);
    const types = await eventTypes(id);
    expect(types.indexOf('triage.completed')).toBeGreaterThan(-1);
    expect(types.indexOf('investigation.started')).toBeLessThan(types.indexOf('investigation.completed'));
    const [usage] = await svc.database.db
      .select()
      .from(usageCounters)
      .where(and(eq(usageCounters.tenantId, tenant.tenantId), eq(usageCounters.metric, 'investigations')));
    expect(usage!.count).toBeGreaterThanOrEqual(1);
  });

  it('refuses a second start while one runs (exactly one of two concurrent starts wins)', async () => {
    const id = await manualIncident();
    const [a, b] = await Promise.all([
      svc.api('POST', '/v1/investigation/', { token: tenant.member, body: { incidentId: id } }),
      svc.api('POST', '/v1/investigation/', { token: tenant.admin, body: { incidentId: id } }),
    ]);
    expect([a.status, b.status].sort()).toEqual([202, 409]);
    expect([a, b].find((r) => r.status === 409)!.body.error).toBe('conflict');
    await completed(id);
    const [row] = await svc.database.db.select().from(investigations).where(eq(investigations.incidentId, id));
    expect(row!.run).toBe(1);
  });

  it('answers 429 quota_exceeded past the plan, 404, 409 for a closed incident, 400 and 401', async () => {
    const starter = await svc.newTenant({ plan: 'plan_starter' });
    const id = await manualIncident(starter.member);
    await svc.database.db
      .insert(usageCounters)
      .values({ tenantId: starter.tenantId, period: usagePeriod(new Date()), metric: 'investigations', count: 15 })
      .onConflictDoUpdate({
        target: [usageCounters.tenantId, usageCounters.period, usageCounters.metric],
        set: { count: 15 },
      });
    const over = await svc.api('POST', '/v1/investigation/', { token: starter.member, body: { incidentId: id } });
    expect(over.status).toBe(429);
    expect(over.body.error).toBe('quota_exceeded');
    expect(await svc.database.db.select().from(investigations).where(eq(investigations.incidentId, id))).toHaveLength(
      0,
    );
    // The refused run left nothing: no start event, no audit row, the counter where it was.
    expect(await eventTypes(id)).not.toContain('investigation.started');
    const audits = await svc.api('GET', `/v1/audit?incidentId=${id}&action=investigation.started`, {
      token: starter.admin,
    });
    expect(audits.status).toBe(200);
    expect(audits.body.items).toEqual([]);
    const [counter] = await svc.database.db
      .select()
      .from(usageCounters)
      .where(and(eq(usageCounters.tenantId, starter.tenantId), eq(usageCounters.metric, 'investigations')));
    expect(counter!.count).toBe(15);

    const unknown = await svc.api('POST', '/v1/investigation/', {
      token: tenant.member,
      body: { incidentId: 'inc_missing' },
    });
    expect(unknown.status).toBe(404);
    expect(unknown.body.error).toBe('incident_not_found');
    const foreign = await svc.api('POST', '/v1/investigation/', { token: tenant.member, body: { incidentId: id } });
    expect(foreign.status).toBe(404);
    for (const body of [{}, { incidentId: '' }, { incidentId: 'inc_x', extra: true }]) {
      const bad = await svc.api('POST', '/v1/investigation/', { token: tenant.member, body });
      expect(bad.status).toBe(400);
      expect(bad.body.error).toBe('validation_error');
    }
    expect((await svc.api('POST', '/v1/investigation/', { body: { incidentId: id } })).status).toBe(401);
    const closedId = await manualIncident();
    await svc.api('PATCH', `/v1/incidents/${closedId}`, { token: tenant.member, body: { status: 'closed' } });
    const closed = await svc.api('POST', '/v1/investigation/', {
      token: tenant.member,
      body: { incidentId: closedId },
    });
    expect(closed.status).toBe(409);
  });

  it('records an automated incident past the quota as a failed investigation, with nothing of a run written', async () => {
    const starter = await svc.newTenant({ plan: 'plan_starter' });
    await svc.database.db
      .insert(usageCounters)
      .values({ tenantId: starter.tenantId, period: usagePeriod(new Date()), metric: 'investigations', count: 15 });
    const key = await createKey(svc, starter.admin);
    const res = await postWebhook(
      svc,
      starter.tenantId,
      'generic',
      { name: 'CartErrors', severity: 'high', service: 'cart-api', summary: '5xx above 10%' },
      { key: key.key },
    );
    expect(res.status).toBe(202);
    const id = res.body.incidentIds[0] as string;
    const failed = await eventually(async () => {
      const [row] = await svc.database.db
        .select()
        .from(events)
        .where(and(eq(events.incidentId, id), eq(events.type, 'investigation.failed')));
      return row;
    }, 30_000);
    expect(failed.payload).toMatchObject({ incidentId: id, run: null, reason: 'quota_exceeded' });
    expect(await eventTypes(id)).not.toContain('investigation.started');
    expect(await svc.database.db.select().from(investigations).where(eq(investigations.incidentId, id))).toHaveLength(
      0,
    );
    const [counter] = await svc.database.db
      .select()
      .from(usageCounters)
      .where(and(eq(usageCounters.tenantId, starter.tenantId), eq(usageCounters.metric, 'investigations')));
    expect(counter!.count).toBe(15);
  });

  it('investigates automated incidents on their own', async () => {
    const key = await createKey(svc, tenant.admin);
    const res = await postWebhook(
      svc,
      tenant.tenantId,
      'generic',
      { name: 'CheckoutErrors', severity: 'high', service: 'checkout-api', summary: '5xx above 10%' },
      { key: key.key },
    );
    const id = res.body.incidentIds[0];
    const done = await completed(id);
    expect(done.body.rootCause).toEqual(expect.any(String));
    const stored = await svc.database.db.select().from(evidenceItems).where(eq(evidenceItems.incidentId, id));
    expect(stored.some((e) => e.type === 'alert')).toBe(true);
    expect(new Set(stored.map((e) => e.id)).size).toBe(stored.length);
  });
});

describe('POST /v1/investigation/{incidentId}/context', () => {
  it('stores context and re-synthesises a finished investigation with it', async () => {
    const id = await manualIncident();
    await svc.api('POST', '/v1/investigation/', { token: tenant.member, body: { incidentId: id } });
    await completed(id);
    const res = await svc.api('POST', `/v1/investigation/${id}/context`, {
      token: tenant.member,
      body: { content: 'We rotated the database password at 03:05' },
    });
    expect(res.status).toBe(202);
    expect(res.body).toMatchObject({ incidentId: id, sequence: 1, resynthesis: true });
    await completed(id, 2);
    const stored = await svc.database.db
      .select()
      .from(investigationContext)
      .where(eq(investigationContext.incidentId, id));
    expect(stored).toMatchObject([
      { seq: 1, content: 'We rotated the database password at 03:05', actorId: 'user-member' },
    ]);
    expect((await eventTypes(id)).filter((t) => t === 'investigation.completed').length).toBe(2);
  });

  it('re-synthesises with context sent after the incident was closed and reopened (a run that did not run the agents)', async () => {
    const id = await manualIncident();
    await svc.api('POST', '/v1/investigation/', { token: tenant.member, body: { incidentId: id } });
    await completed(id);
    expect(
      (await svc.api('PATCH', `/v1/incidents/${id}`, { token: tenant.member, body: { status: 'closed' } })).status,
    ).toBe(200);
    await svc.client.workflow.getHandle(id).result();
    const reopened = await svc.api('PATCH', `/v1/incidents/${id}`, { token: tenant.member, body: { status: 'open' } });
    expect(reopened.status).toBe(200);
    const res = await svc.api('POST', `/v1/investigation/${id}/context`, {
      token: tenant.member,
      body: { content: 'The orders-db failover started at 03:02' },
    });
    expect(res.body).toMatchObject({ incidentId: id, sequence: 1, resynthesis: true });
    await eventually(
      async () => (await eventTypes(id)).filter((t) => t === 'investigation.completed').length === 2,
      30_000,
    );
    const state = await svc.client.workflow.getHandle(id).query(getStateQuery);
    expect(state).toMatchObject({ investigationRun: 1, investigationStatus: 'completed', syntheses: 1 });
    const [row] = await svc.database.db.select().from(investigations).where(eq(investigations.incidentId, id));
    expect(row).toMatchObject({ run: 1, status: 'completed' });
  });

  it('validates the content and the incident', async () => {
    const id = await manualIncident();
    for (const body of [
      {},
      { content: '' },
      { content: '   ' },
      { content: '\u200b \u200d' },
      { content: 'x'.repeat(4001) },
    ]) {
      const res = await svc.api('POST', `/v1/investigation/${id}/context`, { token: tenant.member, body });
      expect(res.status).toBe(400);
      expect(res.body.error).toBe('validation_error');
    }
    const unknown = await svc.api('POST', '/v1/investigation/inc_missing/context', {
      token: tenant.member,
      body: { content: 'hello' },
    });
    expect(unknown.status).toBe(404);
    // Context before any investigation is kept for the one that comes.
    const early = await svc.api('POST', `/v1/investigation/${id}/context`, {
      token: tenant.member,
      body: { content: 'Payments were slow first' },
    });
    expect(early.status).toBe(202);
    expect(early.body).toMatchObject({ sequence: 1, resynthesis: false });
  });
});

describe('GET /v1/investigation/{incidentId}', () => {
  it('answers 404 before an investigation and for unknown incidents', async () => {
    const id = await manualIncident();
    const before = await svc.api('GET', `/v1/investigation/${id}`, { token: tenant.member });
    expect(before.status).toBe(404);
    expect(before.body.error).toBe('not_found');
    const unknown = await svc.api('GET', '/v1/investigation/inc_missing', { token: tenant.member });
    expect(unknown.status).toBe(404);
    expect(unknown.body.error).toBe('incident_not_found');
  });
});

describe('GET /v1/investigation/{incidentId} of a failed investigation', () => {
  // A service of its own, whose worker's synthesis holds until released and then fails for good.
  const env = useWorkerlessService();

  it('answers running with rootCause null, then failed with a root cause saying why and confidence 0', async () => {
    const { svc: own, connection } = env;
    const t = await own.newTenant({ plan: 'plan_business' });
    let reached = false;
    let release = false;
    const worker = await startTestWorker(own, connection, {
      synthesizeInvestigation: async () => {
        reached = true;
        while (!release) {
          Context.current().heartbeat();
          await Context.current().sleep(100);
        }
        throw ApplicationFailure.nonRetryable(
          'the model provider answered 503 Service Unavailable',
          'ModelUnavailable',
        );
      },
    });
    try {
      const created = await own.api('POST', '/v1/incidents/chat', {
        token: t.member,
        body: {
          title: 'Cart errors',
          description: 'Cart answers 502 errors since the 04:10 deploy',
          service: 'cart-api',
        },
      });
      const id = created.body.incidentId as string;
      expect((await own.api('POST', '/v1/investigation/', { token: t.member, body: { incidentId: id } })).status).toBe(
        202,
      );
      await eventually(async () => reached, 30_000);
      const running = await own.api('GET', `/v1/investigation/${id}`, { token: t.member });
      expect(running.status).toBe(200);
      expect(running.body).toMatchObject({ incidentId: id, status: 'running', rootCause: null, completedAt: null });

      release = true;
      const failed = await eventually(async () => {
        const res = await own.api('GET', `/v1/investigation/${id}`, { token: t.member });
        return res.body.status === 'failed' ? res : undefined;
      }, 30_000);
      expect(failed.status).toBe(200);
      expect(failed.body).toMatchObject({
        incidentId: id,
        status: 'failed',
        rootCause: 'The investigation failed: the model provider answered 503 Service Unavailable',
        confidence: 0,
        completedAt: expect.any(String),
      });
      expect(failed.body.rootCause).not.toMatch(/\n\s+at /); // no stack trace

      // Stored: the failure and its reason; the conclusion column stays empty (learning reads it).
      const [row] = await own.database.db.select().from(investigations).where(eq(investigations.incidentId, id));
      expect(row).toMatchObject({ status: 'failed', rootCause: null, confidence: 0, run: 1 });
      expect(row!.failure).toContain('the model provider answered 503 Service Unavailable');
      const [event] = await own.database.db
        .select()
        .from(events)
        .where(and(eq(events.incidentId, id), eq(events.type, 'investigation.failed')));
      expect(event!.payload).toMatchObject({ incidentId: id, run: 1, reason: row!.failure });
    } finally {
      await worker.stop();
    }
  });
});
