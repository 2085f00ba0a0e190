import { randomBytes } from 'node:crypto';
import { and, eq, inArray } from 'drizzle-orm';
import pino from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { verifySignature } from '../../src/auth/api-keys.js';
import { appendEventUnchecked as appendEvent } from '../../src/outbox/append.js';
import { purgeTriggerFirings, TRIGGER_FIRING_RETENTION_MS } from '../../src/db/repositories/trigger-firings.js';
import { notifications } from '../../src/db/schema/remediation.js';
import { skillInvocations } from '../../src/db/schema/skills.js';
import { triggerFirings, triggers } from '../../src/db/schema/triggers.js';
import { newId } from '../../src/ids.js';
import { createTriggerDispatcher, type TriggerDispatcherOptions } from '../../src/triggers/dispatcher.js';
import { startSkillServer, type SkillServer } from '../helpers/skill-server.js';
import { housekeepUntil, startTestService, type TestService } from '../helpers/service.js';
import { eventually } from '../helpers/webhooks.js';

let svc: TestService;
let server: SkillServer;
let t: { tenantId: string; admin: string; member: string };
let other: { tenantId: string; admin: string; member: string };

beforeAll(async () => {
  [svc, server] = await Promise.all([
    startTestService({
      withoutWorker: true,
      withoutDispatcher: true,
      skills: { allowedNetworks: ['127.0.0.1/32'], limits: { retryBaseDelayMs: 10, timeoutMs: 3000 } },
    }),
    startSkillServer(),
  ]);
  t = await svc.newTenant({ settings: { allowHttpSkills: true } });
  other = await svc.newTenant();
});
afterAll(async () => {
  await server?.close();
  await svc?.stop();
});

const create = (token: string, body: unknown) => svc.api('POST', '/v1/triggers', { token, body });

/** A dispatcher with its own consumer row that only sees one tenant's events. */
function privateDispatcher(tenantId: string, extra: TriggerDispatcherOptions = {}) {
  return createTriggerDispatcher(
    { db: svc.database.db, sql: svc.database.sql, logger: pino({ level: 'silent' }), skills: svc.skills },
    { name: `triggers_${randomBytes(4).toString('hex')}`, tenantId, gapSettleMs: 0, ...extra },
  );
}

const emit = (tenantId: string, type: string, payload: Record<string, unknown>) =>
  svc.database.db.transaction((tx) =>
    appendEvent(tx, { tenantId, type, incidentId: null, payload, idempotencyKey: newId('oev') }),
  );

describe('trigger CRUD', () => {
  it('creates, lists with filters and pages, updates and deletes; members read only', async () => {
    const a = await create(t.admin, {
      name: 'page on critical',
      eventType: 'incident.created',
      conditions: { severities: ['critical'] },
      action: 'notify',
    });
    expect(a.status).toBe(201);
    expect(a.body).toMatchObject({
      name: 'page on critical',
      eventType: 'incident.created',
      action: 'notify',
      enabled: true,
      conditions: { severities: ['critical'] },
      actionConfig: {},
    });
    expect(a.body.triggerId).toMatch(/^trg_/);
    expect(a.body.signingSecret).toBeUndefined();
    const b = await create(t.admin, {
      name: 'hook',
      eventType: 'triage.completed',
      action: 'webhook',
      actionConfig: { url: `${server.url}/echo` },
      enabled: false,
    });
    expect(b.status).toBe(201);
    expect(b.body.signingSecret).toMatch(/^whsec_/);
    const c = await create(t.admin, {
      name: 'skill',
      eventType: 'incident.created',
      action: 'invoke_skill',
      actionConfig: { skillId: 'skl_builtin_recent_deployments' },
    });
    expect(c.status).toBe(201);

    const all = await svc.api('GET', '/v1/triggers', { token: t.member });
    expect(all.status).toBe(200);
    expect(all.body.total).toBe(3);
    expect(all.body.items.map((i: { triggerId: string }) => i.triggerId)).toEqual([
      c.body.triggerId,
      b.body.triggerId,
      a.body.triggerId,
    ]);
    expect(all.body.items[1].signingSecret).toBeUndefined();
    expect(all.body.nextCursor).toBeNull();
    const enabled = await svc.api('GET', '/v1/triggers?enabled=false', { token: t.member });
    expect(enabled.body.items.map((i: { name: string }) => i.name)).toEqual(['hook']);
    const byType = await svc.api('GET', '/v1/triggers?eventType=incident.created&limit=1', { token: t.member });
    expect(byType.body).toMatchObject({ total: 2, items: [{ name: 'skill' }] });
    const next = await svc.api(
      'GET',
      `/v1/triggers?eventType=incident.created&limit=1&cursor=${byType.body.nextCursor}`,
      { token: t.member },
    );
    expect(next.body.items.map((i: { name: string }) => i.name)).toEqual(['page on critical']);
    expect(next.body.nextCursor).toBeNull();
    expect((await svc.api('GET', '/v1/triggers?limit=201', { token: t.member })).status).toBe(400);

    const patched = await svc.api('PATCH', `/v1/triggers/${a.body.triggerId}`, {
      token: t.admin,
      body: { enabled: false, conditions: { sources: ['manual'] } },
    });
    expect(patched.status).toBe(200);
    expect(patched.body).toMatchObject({ enabled: false, conditions: { sources: ['manual'] }, action: 'notify' });
    const toHook = await svc.api('PATCH', `/v1/triggers/${a.body.triggerId}`, {
      token: t.admin,
      body: { action: 'webhook', actionConfig: { url: 'https://example.com/hook' } },
    });
    expect(toHook.status).toBe(200);
    expect(toHook.body.signingSecret).toMatch(/^whsec_/);
    expect(
      (await svc.api('PATCH', `/v1/triggers/${a.body.triggerId}`, { token: t.admin, body: { action: 'invoke_skill' } }))
        .status,
    ).toBe(400);

    expect(
      (await svc.api('PATCH', `/v1/triggers/${a.body.triggerId}`, { token: t.member, body: { enabled: true } })).status,
    ).toBe(403);
    expect((await svc.api('DELETE', `/v1/triggers/${a.body.triggerId}`, { token: t.member })).status).toBe(403);
    expect((await create(t.member, { name: 'x', eventType: 'incident.created', action: 'notify' })).status).toBe(403);
    expect((await svc.api('GET', '/v1/triggers')).status).toBe(401);

    expect((await svc.api('DELETE', `/v1/triggers/${a.body.triggerId}`, { token: t.admin })).status).toBe(204);
    const gone = await svc.api('DELETE', `/v1/triggers/${a.body.triggerId}`, { token: t.admin });
    expect(gone.status).toBe(404);
    expect(gone.body.error).toBe('not_found');
    for (const id of [b.body.triggerId, c.body.triggerId])
      await svc.api('DELETE', `/v1/triggers/${id}`, { token: t.admin });
  });

  it('shows members a webhook URL with its path and query values masked; admins see it whole', async () => {
    const url = 'https://hooks.example.com/services/T000/B000/s3cr3t-path?channel=ops&token=s3cr3t-value';
    const hook = await create(t.admin, {
      name: 'masked hook',
      eventType: 'incident.created',
      action: 'webhook',
      actionConfig: { url },
    });
    expect(hook.status).toBe(201);
    expect(hook.body.actionConfig.url).toBe(url);
    const asMember = await svc.api('GET', '/v1/triggers', { token: t.member });
    const seen = asMember.body.items.find((i: { triggerId: string }) => i.triggerId === hook.body.triggerId);
    expect(seen.actionConfig).toEqual({ url: 'https://hooks.example.com/***/***/***/***?channel=***&token=***' });
    expect(JSON.stringify(asMember.body)).not.toContain('s3cr3t');
    const asAdmin = await svc.api('GET', '/v1/triggers', { token: t.admin });
    expect(
      asAdmin.body.items.find((i: { triggerId: string }) => i.triggerId === hook.body.triggerId).actionConfig.url,
    ).toBe(url);
    expect((await svc.api('DELETE', `/v1/triggers/${hook.body.triggerId}`, { token: t.admin })).status).toBe(204);
  });

  it('keeps a webhook trigger signed when its action switches while other changes race it', async () => {
    const trigger = await create(t.admin, { name: 'racing', eventType: 'incident.created', action: 'notify' });
    expect(trigger.status).toBe(201);
    const id = trigger.body.triggerId as string;
    for (let round = 0; round < 5; round++) {
      const [toWebhook, ...others] = await Promise.all([
        svc.api('PATCH', `/v1/triggers/${id}`, {
          token: t.admin,
          body: { action: 'webhook', actionConfig: { url: 'https://hooks.example.com/race' } },
        }),
        ...[true, false, true, false].map((enabled) =>
          svc.api('PATCH', `/v1/triggers/${id}`, { token: t.admin, body: { enabled } }),
        ),
      ]);
      expect([toWebhook!.status, ...others.map((r) => r.status)]).toEqual([200, 200, 200, 200, 200]);
      const [row] = await svc.database.db.select().from(triggers).where(eq(triggers.id, id));
      expect(row!.action).toBe('webhook');
      // The secret stored is the one shown, once, to the switch.
      expect(row!.secret).toBe(toWebhook!.body.signingSecret);
      expect(others.every((r) => r.body.signingSecret === undefined)).toBe(true);
      expect(
        (await svc.api('PATCH', `/v1/triggers/${id}`, { token: t.admin, body: { action: 'notify' } })).status,
      ).toBe(200);
    }
    expect((await svc.api('DELETE', `/v1/triggers/${id}`, { token: t.admin })).status).toBe(204);
  });

  it('validates the event type, conditions and the config of each action', async () => {
    const bad = async (body: unknown, token = t.admin) => {
      const res = await create(token, body);
      expect(res.status, JSON.stringify(body)).toBe(400);
      expect(res.body.error).toBe('validation_error');
    };
    await bad({ name: 'x', eventType: 'incident.exploded', action: 'notify' });
    await bad({ name: 'x', eventType: 'incident.created', action: 'page' });
    await bad({ name: '', eventType: 'incident.created', action: 'notify' });
    await bad({ name: 'x', eventType: 'incident.created', action: 'notify', conditions: { severities: ['huge'] } });
    await bad({ name: 'x', eventType: 'incident.created', action: 'notify', actionConfig: { url: 'https://a.test' } });
    await bad({ name: 'x', eventType: 'incident.created', action: 'webhook' });
    await bad({ name: 'x', eventType: 'incident.created', action: 'webhook', actionConfig: { url: 'not a url' } });
    await bad({ name: 'x', eventType: 'incident.created', action: 'webhook', actionConfig: { url: 'ftp://a.test/x' } });
    await bad({ name: 'x', eventType: 'incident.created', action: 'invoke_skill', actionConfig: {} });
    // plain http only with allowHttpSkills
    await bad(
      { name: 'x', eventType: 'incident.created', action: 'webhook', actionConfig: { url: 'http://a.test/x' } },
      other.admin,
    );
    expect(
      (
        await create(t.admin, {
          name: 'x',
          eventType: 'incident.created',
          action: 'webhook',
          actionConfig: { url: 'http://a.test/x' },
        })
      ).status,
    ).toBe(201);
    // The skills' address rules, judged when written: no credentials, no private, loopback or
    // metadata address written into the URL (only 127.0.0.1 is allowlisted in this test).
    for (const [url, message] of [
      ['https://user:pw@hooks.example.com/x', /must not carry credentials/],
      ['https://169.254.169.254/latest', /169\.254\.169\.254 is a link-local \(cloud metadata\) address/],
      ['https://10.0.0.1/hook', /10\.0\.0\.1 is a private address/],
      ['https://[::1]/hook', /::1 is a loopback address/],
      ['https://0x7f000002/hook', /127\.0\.0\.2 is a loopback address/],
    ] as const) {
      const res = await create(t.admin, {
        name: 'x',
        eventType: 'incident.created',
        action: 'webhook',
        actionConfig: { url },
      });
      expect(res.status, url).toBe(400);
      expect(res.body).toMatchObject({
        error: 'validation_error',
        details: [{ path: 'actionConfig.url', message: expect.stringMatching(message) }],
      });
    }
  });

  it("invoke_skill names a skill the tenant can call: a builtin or its own; another tenant's or none is 404", async () => {
    const pro = await svc.newTenant({ plan: 'plan_business', settings: { allowHttpSkills: true } });
    const otherPro = await svc.newTenant({ plan: 'plan_business', settings: { allowHttpSkills: true } });
    const skill = (tenant: typeof pro) =>
      svc.api('POST', `/api/v1/tenants/${tenant.tenantId}/skills`, {
        token: tenant.admin,
        body: {
          name: `lookup_${Math.random().toString(36).slice(2, 8)}`,
          description: 'Looks things up',
          type: 'http',
          config: { url: `${server.url}/echo`, method: 'GET' },
        },
      });
    const own = await skill(pro);
    const theirs = await skill(otherPro);
    expect([own.status, theirs.status]).toEqual([201, 201]);
    const invoke = (skillId: string) =>
      create(pro.admin, {
        name: 'run it',
        eventType: 'incident.created',
        action: 'invoke_skill',
        actionConfig: { skillId },
      });
    expect((await invoke(own.body.skillId)).status).toBe(201);
    expect((await invoke('skl_builtin_recent_deployments')).status).toBe(201);
    for (const skillId of [theirs.body.skillId, 'skl_nowhere']) {
      const refused = await invoke(skillId);
      expect(refused.status).toBe(404);
      expect(refused.body).toMatchObject({ error: 'skill_not_found', details: [{ path: 'actionConfig.skillId' }] });
    }
    // Nor can a PATCH point a trigger at one.
    const made = await invoke(own.body.skillId);
    const moved = await svc.api('PATCH', `/v1/triggers/${made.body.triggerId}`, {
      token: pro.admin,
      body: { actionConfig: { skillId: theirs.body.skillId } },
    });
    expect(moved.status).toBe(404);
    const [row] = await svc.database.db.select().from(triggers).where(eq(triggers.id, made.body.triggerId));
    expect(row!.actionConfig).toEqual({ skillId: own.body.skillId });
    const stored = await svc.database.db.select().from(triggers).where(eq(triggers.tenantId, pro.tenantId));
    expect(stored).toHaveLength(3);
  });

  it('keeps tenants apart: another tenant’s trigger is not listed and is 404', async () => {
    const mine = await create(t.admin, { name: 'mine', eventType: 'incident.resolved', action: 'notify' });
    expect(mine.status).toBe(201);
    const theirs = await svc.api('GET', '/v1/triggers', { token: other.admin });
    expect(theirs.body.items.map((i: { triggerId: string }) => i.triggerId)).not.toContain(mine.body.triggerId);
    expect(
      (await svc.api('PATCH', `/v1/triggers/${mine.body.triggerId}`, { token: other.admin, body: { enabled: false } }))
        .status,
    ).toBe(404);
    expect((await svc.api('DELETE', `/v1/triggers/${mine.body.triggerId}`, { token: other.admin })).status).toBe(404);
    // Untouched, and still its own tenant's.
    const [row] = await svc.database.db.select().from(triggers).where(eq(triggers.id, mine.body.triggerId));
    expect(row).toMatchObject({ tenantId: t.tenantId, enabled: true });
    const own = await svc.api('GET', '/v1/triggers', { token: t.admin });
    expect(own.body.items.map((i: { triggerId: string }) => i.triggerId)).toContain(mine.body.triggerId);
  });
});

describe('the trigger dispatcher', () => {
  it('posts matching events to a webhook, signed with the trigger’s secret, exactly once across passes and a crash', async () => {
    const tenant = await svc.newTenant({ settings: { allowHttpSkills: true } });
    const path = `/echo`;
    const hook = await create(tenant.admin, {
      name: 'hook',
      eventType: 'incident.created',
      conditions: { severities: ['critical', 'high'] },
      action: 'webhook',
      actionConfig: { url: `${server.url}${path}?trigger=${tenant.tenantId}` },
    });
    expect(hook.status).toBe(201);
    const secret: string = hook.body.signingSecret;
    const hits = () => server.received.filter((r) => r.query.trigger === tenant.tenantId);

    await emit(tenant.tenantId, 'incident.created', { title: 'low one', severity: 'low' }); // conditions do not match
    await emit(tenant.tenantId, 'incident.resolved', { severity: 'critical' }); // another type
    await emit(tenant.tenantId, 'incident.created', { title: 'db down', severity: 'critical' });

    let crash = true;
    const dispatcher = privateDispatcher(tenant.tenantId, {
      beforeCommit: () => {
        if (crash) throw new Error('crash before commit');
      },
    });
    await expect(dispatcher.runOnce()).rejects.toThrow('crash before commit');
    expect(hits()).toHaveLength(0);
    crash = false;
    const first = await dispatcher.runOnce();
    expect(first.consumed).toBe(3);
    expect(first.ran.map((r) => r.status)).toEqual(['succeeded']);
    const second = await dispatcher.runOnce();
    expect(second).toMatchObject({ consumed: 0, ran: [] });

    expect(hits()).toHaveLength(1);
    const [request] = hits();
    expect(request!.method).toBe('POST');
    expect(verifySignature(secret, Buffer.from(request!.body), String(request!.headers['x-webhook-signature']))).toBe(
      true,
    );
    expect(
      verifySignature('whsec_wrong', Buffer.from(request!.body), String(request!.headers['x-webhook-signature'])),
    ).toBe(false);
    const posted = JSON.parse(request!.body);
    expect(posted).toMatchObject({
      triggerId: hook.body.triggerId,
      event: {
        type: 'incident.created',
        tenantId: tenant.tenantId,
        payload: { title: 'db down', severity: 'critical' },
      },
    });

    const firings = await svc.database.db
      .select()
      .from(triggerFirings)
      .where(eq(triggerFirings.triggerId, hook.body.triggerId));
    expect(firings.map((f) => [f.status, f.attempts])).toEqual([['succeeded', 1]]);
  });

  it('retries a webhook that answers 5xx, records failures, ignores disabled triggers and other tenants', async () => {
    const tenant = await svc.newTenant({ settings: { allowHttpSkills: true } });
    const key = randomBytes(4).toString('hex');
    const flaky = await create(tenant.admin, {
      name: 'flaky',
      eventType: 'triage.completed',
      action: 'webhook',
      actionConfig: { url: `${server.url}/flaky?fail=2&key=${key}` },
    });
    const down = await create(tenant.admin, {
      name: 'down',
      eventType: 'triage.completed',
      action: 'webhook',
      actionConfig: { url: `${server.url}/always-503` },
    });
    const off = await create(tenant.admin, {
      name: 'off',
      eventType: 'triage.completed',
      action: 'webhook',
      enabled: false,
      actionConfig: { url: `${server.url}/echo?off=${key}` },
    });
    const theirs = await create(other.admin, { name: 'theirs', eventType: 'triage.completed', action: 'notify' });
    for (const made of [flaky, down, off, theirs]) expect(made.status).toBe(201);
    await emit(tenant.tenantId, 'triage.completed', { priority: 'P1' });

    const dispatcher = privateDispatcher(tenant.tenantId, { maxRuns: 1 });
    const pass = await dispatcher.runOnce();
    expect(pass.ran).toHaveLength(2);
    expect(server.received.filter((r) => r.query.key === key)).toHaveLength(3); // 2 × 503, then 200
    expect(server.received.filter((r) => r.query.off === key)).toHaveLength(0);
    const [ok] = await svc.database.db
      .select()
      .from(triggerFirings)
      .where(eq(triggerFirings.triggerId, flaky.body.triggerId));
    expect(ok!.status).toBe('succeeded');
    const [failed] = await svc.database.db
      .select()
      .from(triggerFirings)
      .where(eq(triggerFirings.triggerId, down.body.triggerId));
    expect(failed!.status).toBe('failed');
    expect(failed!.error).toContain('503');
    for (const ignored of [off, theirs]) {
      expect(
        await svc.database.db.select().from(triggerFirings).where(eq(triggerFirings.triggerId, ignored.body.triggerId)),
      ).toEqual([]);
    }
  });

  it('notify: one notification per user of the tenant', async () => {
    const tenant = await svc.newTenant();
    const alice = svc.token(tenant.tenantId, 'admin', { sub: 'alice' });
    const bob = svc.token(tenant.tenantId, 'member', { sub: 'bob' });
    const trig = await create(alice, { name: 'tell', eventType: 'knowledge.pattern_created', action: 'notify' });
    await svc.api('GET', '/v1/notifications', { token: bob }); // bob is a known user now
    await emit(tenant.tenantId, 'knowledge.pattern_created', { title: 'Pool exhaustion' });
    const dispatcher = privateDispatcher(tenant.tenantId);
    await dispatcher.runOnce();
    await dispatcher.runOnce();
    const rows = await svc.database.db
      .select()
      .from(notifications)
      .where(and(eq(notifications.tenantId, tenant.tenantId), eq(notifications.type, 'knowledge.pattern_created')));
    expect(rows.map((r) => r.userId).sort()).toEqual(['alice', 'bob']);
    expect(rows.every((r) => r.idempotencyKey.startsWith(`trigger:${trig.body.triggerId}:`))).toBe(true);
  });

  it('invoke_skill runs the skill once per event; start_investigation without a workflow client records its failure', async () => {
    const tenant = await svc.newTenant();
    const skill = await create(tenant.admin, {
      name: 'deploys',
      eventType: 'incident.status_changed',
      action: 'invoke_skill',
      actionConfig: { skillId: 'skl_builtin_recent_deployments', input: {} },
    });
    const missing = await create(tenant.admin, {
      name: 'nope',
      eventType: 'incident.status_changed',
      action: 'invoke_skill',
      actionConfig: { skillId: 'skl_builtin_recent_deployments' },
    });
    expect(missing.status).toBe(201);
    // Its skill gone since (a deleted skill): the firing fails and says so.
    await svc.database.db
      .update(triggers)
      .set({ actionConfig: { skillId: 'skl_missing' } })
      .where(eq(triggers.id, missing.body.triggerId));
    const investigate = await create(tenant.admin, {
      name: 'investigate',
      eventType: 'incident.status_changed',
      action: 'start_investigation',
    });
    await emit(tenant.tenantId, 'incident.status_changed', { from: 'open', to: 'investigating' });
    const dispatcher = privateDispatcher(tenant.tenantId, { maxRuns: 1 });
    await dispatcher.runOnce();
    await dispatcher.runOnce();
    const runs = await svc.database.db
      .select()
      .from(skillInvocations)
      .where(eq(skillInvocations.tenantId, tenant.tenantId));
    expect(runs.map((r) => [r.skillId, r.status])).toEqual(
      expect.arrayContaining([
        ['skl_builtin_recent_deployments', 'succeeded'],
        ['skl_missing', 'failed'],
      ]),
    );
    expect(runs).toHaveLength(2);
    const status = async (triggerId: string) =>
      (await svc.database.db.select().from(triggerFirings).where(eq(triggerFirings.triggerId, triggerId)))[0];
    expect((await status(skill.body.triggerId))!.status).toBe('succeeded');
    expect((await status(missing.body.triggerId))!).toMatchObject({
      status: 'failed',
      error: expect.stringContaining('skill_not_found'),
    });
    expect((await status(investigate.body.triggerId))!).toMatchObject({
      status: 'failed',
      error: expect.stringContaining('workflow client'),
    });
  });
});

describe('the worker’s trigger dispatcher', () => {
  let full: TestService;
  beforeAll(async () => {
    full = await startTestService();
  });
  afterAll(() => full?.stop());

  it('starts an investigation through the workflow client when a matching incident is opened', async () => {
    const tenant = await full.newTenant({ plan: 'plan_business' });
    const trig = await full.api('POST', '/v1/triggers', {
      token: tenant.admin,
      body: {
        name: 'auto investigate checkout',
        eventType: 'incident.created',
        conditions: { services: ['checkout-api'] },
        action: 'start_investigation',
      },
    });
    expect(trig.status).toBe(201);
    const open = (service: string) =>
      full.api('POST', '/v1/incidents/chat', {
        token: tenant.member,
        body: { title: `${service} errors`, description: `${service} answers 502 errors`, service },
      });
    const other = await open('search-api');
    const checkout = await open('checkout-api');
    expect(checkout.status).toBe(201);
    const firing = await eventually(async () => {
      const [row] = await full.database.db
        .select()
        .from(triggerFirings)
        .where(eq(triggerFirings.triggerId, trig.body.triggerId));
      return row?.status === 'succeeded' ? row : undefined;
    }, 20_000);
    expect(firing.attempts).toBe(1);
    const investigation = await eventually(async () => {
      const res = await full.api('GET', `/v1/investigation/${checkout.body.incidentId}`, { token: tenant.member });
      return res.status === 200 ? res : undefined;
    }, 20_000);
    expect(['running', 'completed']).toContain(investigation.body.status);
    const firings = await full.database.db
      .select()
      .from(triggerFirings)
      .where(eq(triggerFirings.tenantId, tenant.tenantId));
    expect(firings).toHaveLength(1); // the search-api incident did not match
    expect(other.status).toBe(201);
  });
});

describe('trigger firing retention', () => {
  it('deletes settled firings 30 days after they settled, keeps unsettled ones, and the events are not fired again', async () => {
    const tenant = await svc.newTenant({ settings: { allowHttpSkills: true } });
    const key = randomBytes(4).toString('hex');
    const ok = await create(tenant.admin, {
      name: 'ok',
      eventType: 'incident.created',
      action: 'webhook',
      actionConfig: { url: `${server.url}/echo?retention=${key}` },
    });
    const down = await create(tenant.admin, {
      name: 'down',
      eventType: 'incident.created',
      action: 'webhook',
      actionConfig: { url: `${server.url}/always-503?retention=${key}` },
    });
    const young = await create(tenant.admin, { name: 'young', eventType: 'incident.created', action: 'notify' });
    for (const made of [ok, down, young]) expect(made.status).toBe(201);
    await emit(tenant.tenantId, 'incident.created', { title: 'db down', severity: 'critical' });
    const dispatcher = privateDispatcher(tenant.tenantId, { maxRuns: 1 });
    expect((await dispatcher.runOnce()).ran.map((r) => r.status).sort()).toEqual(['failed', 'succeeded', 'succeeded']);
    const calls = () => server.received.filter((r) => r.query.retention === key).length;
    const callsBefore = calls();

    const firingOf = async (triggerId: string) =>
      (await svc.database.db.select().from(triggerFirings).where(eq(triggerFirings.triggerId, triggerId)))[0]!;
    const [settledOk, settledDown, youngFiring] = [
      await firingOf(ok.body.triggerId),
      await firingOf(down.body.triggerId),
      await firingOf(young.body.triggerId),
    ];
    // A pending firing as old as they are: still to run, so it stays.
    const pendingId = newId('trg');
    await svc.database.db.insert(triggerFirings).values({
      id: pendingId,
      tenantId: tenant.tenantId,
      triggerId: young.body.triggerId,
      eventSeq: -1,
      status: 'pending',
    });
    const aged = [settledOk.id, settledDown.id, pendingId];
    const day = 24 * 60 * 60 * 1000;
    // Written long ago, settled 29 days ago: kept, since the age counts from settling.
    await svc.database
      .sql`update trigger_firings set created_at = now() - interval '90 days', updated_at = now() - make_interval(secs => ${(TRIGGER_FIRING_RETENTION_MS - day) / 1000}) where id = any(${aged})`;
    expect(await purgeTriggerFirings(svc.database.sql)).toBe(0);
    await svc.database
      .sql`update trigger_firings set updated_at = now() - make_interval(secs => ${(TRIGGER_FIRING_RETENTION_MS + day) / 1000}) where id = any(${aged})`;
    expect(await purgeTriggerFirings(svc.database.sql, TRIGGER_FIRING_RETENTION_MS, { chunkSize: 1 })).toBe(2);
    const left = await svc.database.db
      .select({ id: triggerFirings.id })
      .from(triggerFirings)
      .where(inArray(triggerFirings.id, [...aged, youngFiring.id]));
    expect(left.map((r) => r.id).sort()).toEqual([pendingId, youngFiring.id].sort());
    await svc.database.db.delete(triggerFirings).where(eq(triggerFirings.id, pendingId));

    // The event lies behind the consumer's position: its purged firings are not decided again.
    expect(await dispatcher.runOnce()).toMatchObject({ consumed: 0, ran: [] });
    expect(calls()).toBe(callsBefore);
    expect(
      await svc.database.db
        .select()
        .from(triggerFirings)
        .where(inArray(triggerFirings.triggerId, [ok.body.triggerId, down.body.triggerId])),
    ).toEqual([]);
  });

  it('is run by the dispatcher housekeeping', async () => {
    const tenant = await svc.newTenant();
    const trig = await create(tenant.admin, { name: 'tell', eventType: 'incident.created', action: 'notify' });
    await emit(tenant.tenantId, 'incident.created', { title: 'cache down' });
    await privateDispatcher(tenant.tenantId).runOnce();
    const firings = () =>
      svc.database.db.select().from(triggerFirings).where(eq(triggerFirings.triggerId, trig.body.triggerId));
    expect((await firings()).map((f) => f.status)).toEqual(['succeeded']);
    await svc.database
      .sql`update trigger_firings set updated_at = now() - interval '31 days' where trigger_id = ${trig.body.triggerId}`;
    await housekeepUntil(svc, async () => (await firings()).length === 0);
  });
});
