import { createHmac } from 'node:crypto';
import { NativeConnection, Worker } from '@temporalio/worker';
import { and, eq } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { createActivities } from '../../src/activities/index.js';
import { chatMessages } from '../../src/db/schema/knowledge.js';
import { usageCounters } from '../../src/db/schema/limits.js';
import {
  widgetKeys,
  widgetPushDeliveries,
  widgetPushSubscriptions,
  widgetSessionEvents,
  widgetSessions,
} from '../../src/db/schema/widget.js';
import { incidentWorkerInterceptors } from '../../src/temporal/incident-worker.js';
import { startTestService, type TestService } from '../helpers/service.js';
import { seedHistory } from '../memory/fixtures/history.js';
import { eventually, readEvents, startPushReceiver, type PushReceiver } from './receiver.js';

const PORTAL = 'https://portal.example.com';
const QUESTION = 'What caused the last checkout outage?';

let svc: TestService;
let receiver: PushReceiver;
let worker: Worker;
let running: Promise<void>;
let tenant: { tenantId: string; admin: string; member: string };
let other: { tenantId: string; admin: string; member: string };
let widgetKey: string;

const open = (key: string, origin = PORTAL) =>
  svc.api('POST', '/v1/widget/sessions', { token: key, headers: { origin } });
const ask = (s: { sessionId: string; token: string }, message: string) =>
  svc.api('POST', `/v1/widget/sessions/${s.sessionId}/messages`, { token: s.token, body: { message } });
const subscribe = (s: { sessionId: string; token: string }, body: unknown) =>
  svc.api('POST', `/v1/widget/sessions/${s.sessionId}/push`, { token: s.token, body });
const sessionRow = async (id: string) =>
  (await svc.database.db.select().from(widgetSessions).where(eq(widgetSessions.id, id)))[0]!;

beforeAll(async () => {
  receiver = await startPushReceiver();
  svc = await startTestService({
    withoutWorker: true,
    skills: { allowedNetworks: ['127.0.0.1/32'] },
    widget: {
      minInactivitySeconds: 1,
      push: { maxAttempts: 3, initialIntervalMs: 100, maximumIntervalMs: 200 },
    },
  });
  // The suite's worker, with the receiver's certificate trusted (a private CA, as an operator may have).
  worker = await Worker.create({
    connection: await NativeConnection.connect({ address: inject('temporalAddress') }),
    namespace: 'default',
    taskQueue: svc.taskQueue,
    workflowBundle: { codePath: inject('workflowBundlePath') },
    activities: createActivities({
      db: svc.database.db,
      skills: svc.skills,
      widget: { ca: receiver.ca, timeoutMs: 3000 },
    }),
    interceptors: incidentWorkerInterceptors,
    shutdownGraceTime: '100 milliseconds',
  });
  running = worker.run();
  tenant = await svc.newTenant();
  other = await svc.newTenant();
  await seedHistory(svc.database.db, tenant.tenantId);
});

afterAll(async () => {
  worker?.shutdown();
  await running;
  await svc?.stop();
  await receiver?.close();
});

describe('publishable widget keys', () => {
  it('are created by an admin for allowed origins, shown once, stored as a hash, listed and revoked', async () => {
    expect(
      (
        await svc.api('POST', '/v1/widget/keys', {
          token: tenant.member,
          body: { name: 'x', allowedOrigins: [PORTAL] },
        })
      ).status,
    ).toBe(403);
    const bad = await svc.api('POST', '/v1/widget/keys', {
      token: tenant.admin,
      body: { name: 'portal', allowedOrigins: ['https://portal.example.com/path'] },
    });
    expect([bad.status, bad.body.error]).toEqual([400, 'validation_error']);
    expect(bad.body.message).toContain('allowedOrigins');
    const plain = await svc.api('POST', '/v1/widget/keys', {
      token: tenant.admin,
      body: { name: 'portal', allowedOrigins: ['http://portal.example.com'] },
    });
    expect(plain.status).toBe(400);

    const created = await svc.api('POST', '/v1/widget/keys', {
      token: tenant.admin,
      body: { name: 'portal', allowedOrigins: [PORTAL, `${svc.baseUrl}`] },
    });
    expect(created.status).toBe(201);
    expect(created.body.key).toMatch(/^wpk_/);
    expect(created.body.keyId).toMatch(/^wkey_/);
    expect(created.body.allowedOrigins).toEqual([PORTAL, svc.baseUrl]);
    widgetKey = created.body.key;
    const [row] = await svc.database.db.select().from(widgetKeys).where(eq(widgetKeys.id, created.body.keyId));
    expect(row!.keyHash).not.toContain(widgetKey);
    expect(JSON.stringify(row)).not.toContain(widgetKey);

    const listed = await svc.api('GET', '/v1/widget/keys', { token: tenant.admin });
    expect(listed.status).toBe(200);
    expect(listed.body.items.map((k: { keyId: string }) => k.keyId)).toEqual([created.body.keyId]);
    expect(listed.body.items[0].key).toBeUndefined();
    // Another tenant sees none of them, and cannot revoke them.
    expect((await svc.api('GET', '/v1/widget/keys', { token: other.admin })).body.items).toEqual([]);
    expect((await svc.api('DELETE', `/v1/widget/keys/${created.body.keyId}`, { token: other.admin })).status).toBe(404);

    const spare = await svc.api('POST', '/v1/widget/keys', {
      token: tenant.admin,
      body: { name: 'spare', allowedOrigins: [PORTAL] },
    });
    expect((await svc.api('DELETE', `/v1/widget/keys/${spare.body.keyId}`, { token: tenant.admin })).status).toBe(204);
    const again = await svc.api('DELETE', `/v1/widget/keys/${spare.body.keyId}`, { token: tenant.admin });
    expect([again.status, again.body.error]).toEqual([409, 'conflict']);
    const revokedOpen = await open(spare.body.key);
    expect([revokedOpen.status, revokedOpen.body.error]).toEqual([401, 'unauthorized']);
  });
});

describe('widget sessions', () => {
  it('open with a key from an allowed origin only, or with a member token', async () => {
    const opened = await open(widgetKey);
    expect(opened.status).toBe(201);
    expect(Object.keys(opened.body).sort()).toEqual(['expiresAt', 'sessionId', 'token']);
    expect(opened.body.sessionId).toMatch(/^wsess_/);
    expect(opened.body.token).toMatch(/^wst_/);
    expect(opened.headers.get('access-control-allow-origin')).toBe(PORTAL);
    const minutes = (Date.parse(opened.body.expiresAt) - Date.now()) / 60_000;
    expect(minutes).toBeGreaterThan(29);
    expect(minutes).toBeLessThanOrEqual(30);
    const row = await sessionRow(opened.body.sessionId);
    expect(row).toMatchObject({ tenantId: tenant.tenantId, status: 'open', origin: PORTAL, userId: null });
    expect(row.tokenHash).not.toBe(opened.body.token);

    const elsewhere = await open(widgetKey, 'https://evil.example.net');
    expect([elsewhere.status, elsewhere.body.error]).toEqual([403, 'forbidden']);
    const noOrigin = await svc.api('POST', '/v1/widget/sessions', { token: widgetKey });
    expect(noOrigin.status).toBe(403);
    expect((await svc.api('POST', '/v1/widget/sessions')).status).toBe(401);
    expect(
      (await svc.api('POST', '/v1/widget/sessions', { token: 'wpk_unknown', headers: { origin: PORTAL } })).status,
    ).toBe(401);
    const byMember = await svc.api('POST', '/v1/widget/sessions', { token: tenant.member });
    expect(byMember.status).toBe(201);
    expect((await sessionRow(byMember.body.sessionId)).userId).toBe('user-member');
    const preflight = await fetch(`${svc.baseUrl}/v1/widget/sessions`, {
      method: 'OPTIONS',
      headers: { origin: PORTAL, 'access-control-request-method': 'POST' },
    });
    expect(preflight.status).toBe(204);
    expect(preflight.headers.get('access-control-allow-headers')).toContain('Authorization');
  });

  it('answers a message from the tenant history with sources, counts the chat quota and records the event', async () => {
    const s = (await open(widgetKey)).body;
    const res = await ask(s, QUESTION);
    expect(res.status).toBe(200);
    expect(res.body.sessionId).toBe(s.sessionId);
    expect(res.body.messageId).toMatch(/^msg_/);
    expect(res.body.reply.length).toBeGreaterThan(0);
    expect(res.body.sources.length).toBeGreaterThan(0);
    expect(res.body.sources[0]).toMatchObject({
      type: 'incident',
      title: 'Checkout outage after a configuration push',
    });
    const stored = await svc.database.db
      .select()
      .from(chatMessages)
      .where(and(eq(chatMessages.tenantId, tenant.tenantId), eq(chatMessages.id, res.body.messageId)));
    expect(stored[0]!.content).toBe(res.body.reply);
    const [usage] = await svc.database.db
      .select()
      .from(usageCounters)
      .where(and(eq(usageCounters.tenantId, tenant.tenantId), eq(usageCounters.metric, 'chat_messages')));
    expect(usage!.count).toBeGreaterThanOrEqual(1);
    const events = await svc.database.db
      .select()
      .from(widgetSessionEvents)
      .where(eq(widgetSessionEvents.sessionId, s.sessionId));
    expect(events.map((e) => e.type)).toEqual(['message.complete']);
    expect(events[0]!.data).toMatchObject({ messageId: res.body.messageId, reply: res.body.reply });
    // A follow-up continues the same conversation.
    const next = await ask(s, 'And who fixed it?');
    expect(next.status).toBe(200);
    expect((await sessionRow(s.sessionId)).chatSessionId).toBe(stored[0]!.sessionId);

    const empty = await ask(s, '   ');
    expect([empty.status, empty.body.error]).toEqual([400, 'validation_error']);
  });

  it('takes its token only on its own session endpoints: 401 on another session and everywhere else', async () => {
    const a = (await open(widgetKey)).body;
    const b = (await open(widgetKey)).body;
    const cross = await svc.api('POST', `/v1/widget/sessions/${b.sessionId}/messages`, {
      token: a.token,
      body: { message: QUESTION },
    });
    expect([cross.status, cross.body.error]).toEqual([401, 'unauthorized']);
    for (const [method, path] of [
      ['GET', '/v1/incidents'],
      ['POST', '/v1/memory/chat'],
      ['GET', '/v1/widget/keys'],
      ['POST', '/v1/widget/sessions'],
      ['GET', '/v1/notifications/stream'],
    ] as const) {
      const res = await svc.api(method, path, {
        token: a.token,
        body: method === 'POST' ? { message: QUESTION } : undefined,
        headers: { origin: PORTAL },
      });
      expect([res.status, res.body.error], `${method} ${path}`).toEqual([401, 'unauthorized']);
    }
    const stream = await fetch(`${svc.baseUrl}/v1/notifications/stream?token=${a.token}`);
    expect(stream.status).toBe(401);
    // A member's JWT is not a session token either.
    const jwt = await svc.api('POST', `/v1/widget/sessions/${a.sessionId}/messages`, {
      token: tenant.member,
      body: { message: QUESTION },
    });
    expect([jwt.status, jwt.body.error]).toEqual([401, 'unauthorized']);
    // Another tenant's admin cannot reach it.
    const otherAdmin = await svc.api('DELETE', `/v1/widget/sessions/${a.sessionId}`, { token: other.admin });
    expect(otherAdmin.status).toBe(401);
  });

  it('pushes message.complete to an HTTPS subscriber, signed, with a delivery id that the stored delivery carries', async () => {
    const s = (await open(widgetKey)).body;
    const notHttps = await subscribe(s, { url: 'http://127.0.0.1/x', events: ['message.complete'] });
    expect([notHttps.status, notHttps.body.error]).toEqual([400, 'validation_error']);
    const noEvents = await subscribe(s, { url: `${receiver.origin}/ok`, events: [] });
    expect([noEvents.status, noEvents.body.error]).toEqual([400, 'validation_error']);
    const privateUrl = await subscribe(s, { url: 'https://10.1.2.3/hook', events: ['message.complete'] });
    expect([privateUrl.status, privateUrl.body.error]).toEqual([400, 'validation_error']);
    expect(privateUrl.body.message).toContain('private');
    const loopback = await subscribe(s, { url: 'https://[::1]/hook', events: ['message.complete'] });
    expect(loopback.status).toBe(400);
    const unknownEvent = await subscribe(s, { url: `${receiver.origin}/ok`, events: ['session.closed'] });
    expect(unknownEvent.status).toBe(400);

    const secret = 'a-widget-secret-of-enough-length';
    const sub = await subscribe(s, {
      url: `${receiver.origin}/ok/${s.sessionId}`,
      events: ['message.complete'],
      secret,
    });
    expect(sub.status).toBe(201);
    expect(Object.keys(sub.body).sort()).toEqual(['createdAt', 'events', 'sessionId', 'subscriptionId', 'url']);
    expect(sub.body).toMatchObject({ sessionId: s.sessionId, events: ['message.complete'] });
    expect(sub.body.subscriptionId).toMatch(/^wsub_/);
    const [subRow] = await svc.database.db
      .select()
      .from(widgetPushSubscriptions)
      .where(eq(widgetPushSubscriptions.id, sub.body.subscriptionId));
    expect(subRow!.secretCiphertext).not.toContain(secret);

    const reply = await ask(s, QUESTION);
    expect(reply.status).toBe(200);
    const push = await eventually(() => receiver.received.find((r) => r.path === `/ok/${s.sessionId}`));
    const body = JSON.parse(push.rawBody);
    expect(body).toMatchObject({
      event: 'message.complete',
      sessionId: s.sessionId,
      data: { messageId: reply.body.messageId },
    });
    expect(push.headers['x-widget-signature']).toBe(
      `sha256=${createHmac('sha256', secret).update(push.rawBody).digest('hex')}`,
    );
    expect(push.headers['x-widget-delivery']).toBe(body.deliveryId);
    expect(push.headers['x-widget-event']).toBe('message.complete');
    const delivery = await eventually(async () => {
      const [d] = await svc.database.db
        .select()
        .from(widgetPushDeliveries)
        .where(eq(widgetPushDeliveries.id, body.deliveryId));
      return d?.status === 'delivered' ? d : undefined;
    });
    expect(delivery).toMatchObject({ subscriptionId: sub.body.subscriptionId, attempts: 1, lastStatusCode: 200 });
  });

  it('retries a failing endpoint with the same delivery id, then disables its subscription with a reason', async () => {
    const s = (await open(widgetKey)).body;
    const sub = await subscribe(s, { url: `${receiver.origin}/fail/${s.sessionId}`, events: ['message.complete'] });
    expect(sub.status).toBe(201);
    expect((await ask(s, QUESTION)).status).toBe(200);
    const row = await eventually(async () => {
      const [r] = await svc.database.db
        .select()
        .from(widgetPushSubscriptions)
        .where(eq(widgetPushSubscriptions.id, sub.body.subscriptionId));
      return r?.status === 'disabled' ? r : undefined;
    });
    expect(row.disabledReason).toContain('3 attempts failed');
    expect(row.disabledReason).toContain('500');
    const attempts = receiver.received.filter((r) => r.path === `/fail/${s.sessionId}`);
    expect(attempts).toHaveLength(3);
    expect(new Set(attempts.map((a) => a.headers['x-widget-delivery'])).size).toBe(1);
    expect(attempts[0]!.headers['x-widget-signature']).toBeUndefined();
    const [delivery] = await svc.database.db
      .select()
      .from(widgetPushDeliveries)
      .where(eq(widgetPushDeliveries.subscriptionId, sub.body.subscriptionId));
    expect(delivery).toMatchObject({ status: 'failed', attempts: 3, lastStatusCode: 500 });
    // Disabled: the next reply is not pushed to it.
    expect((await ask(s, QUESTION)).status).toBe(200);
    await new Promise((r) => setTimeout(r, 1000));
    expect(receiver.received.filter((r) => r.path === `/fail/${s.sessionId}`)).toHaveLength(3);
  });

  it('streams its events with ?token=, resumes after Last-Event-ID, and ends after DELETE, whose token then stops working', async () => {
    const s = (await open(widgetKey)).body;
    const first = await ask(s, QUESTION);
    const second = await ask(s, 'Which runbook applies?');
    const url = `${svc.baseUrl}/v1/widget/sessions/${s.sessionId}/stream`;
    const all = await readEvents(`${url}?token=${s.token}`, {}, (e) => e.length >= 2);
    expect(all.status).toBe(200);
    expect(all.events.map((e) => e.data.messageId)).toEqual([first.body.messageId, second.body.messageId]);
    const resumed = await readEvents(
      url,
      { authorization: `Bearer ${s.token}`, 'last-event-id': all.events[0]!.id! },
      (e) => e.length >= 1,
    );
    expect(resumed.events.map((e) => e.data.messageId)).toEqual([second.body.messageId]);
    expect((await fetch(`${url}?token=wst_nope`)).status).toBe(401);

    // An open stream sees the close and ends.
    const live = readEvents(`${url}?token=${s.token}&lastEventId=${all.events[1]!.id}`, {}, (e) =>
      e.some((x) => x.event === 'session.closed'),
    );
    await new Promise((r) => setTimeout(r, 300));
    const closed = await svc.api('DELETE', `/v1/widget/sessions/${s.sessionId}`, { token: s.token });
    expect([closed.status, closed.body]).toEqual([204, '']);
    const ending = await live;
    expect(ending.events.map((e) => e.event)).toEqual(['session.closed']);
    expect(ending.events[0]!.data).toMatchObject({ sessionId: s.sessionId, reason: 'closed' });
    expect((await sessionRow(s.sessionId)).status).toBe('closed');
    for (const res of [
      await ask(s, QUESTION),
      await svc.api('DELETE', `/v1/widget/sessions/${s.sessionId}`, { token: s.token }),
      await subscribe(s, { url: `${receiver.origin}/ok`, events: ['message.complete'] }),
    ]) {
      expect([res.status, res.body.error]).toEqual([404, 'session_not_found']);
    }
    expect((await fetch(`${url}?token=${s.token}`)).status).toBe(404);
    const handle = svc.client.workflow.getHandle(s.sessionId);
    await handle.result();
  });
});

describe('widget session timing', () => {
  it('is a tenant setting an admin sets within bounds', async () => {
    const initial = await svc.api('GET', '/v1/widget/settings', { token: other.admin });
    expect(initial.body).toEqual({ sessionInactivitySeconds: 1800, expiryWarningSeconds: 300 });
    expect((await svc.api('GET', '/v1/widget/settings', { token: other.member })).status).toBe(403);
    const tooLong = await svc.api('PUT', '/v1/widget/settings', {
      token: other.admin,
      body: { sessionInactivitySeconds: 86_401, expiryWarningSeconds: 0 },
    });
    expect([tooLong.status, tooLong.body.error]).toEqual([400, 'validation_error']);
    const warnAfter = await svc.api('PUT', '/v1/widget/settings', {
      token: other.admin,
      body: { sessionInactivitySeconds: 60, expiryWarningSeconds: 60 },
    });
    expect(warnAfter.status).toBe(400);
  });

  it('warns before the inactivity deadline and expires the session through its workflow timers', async () => {
    const set = await svc.api('PUT', '/v1/widget/settings', {
      token: other.admin,
      body: { sessionInactivitySeconds: 4, expiryWarningSeconds: 2 },
    });
    expect(set.status).toBe(200);
    const s = (await svc.api('POST', '/v1/widget/sessions', { token: other.member })).body;
    const sub = await subscribe(s, {
      url: `${receiver.origin}/ok/warn/${s.sessionId}`,
      events: ['session.expiry_warning'],
    });
    expect(sub.status).toBe(201);
    // A message moves the deadline: the warning comes about 2 s after it, not after opening.
    await new Promise((r) => setTimeout(r, 1000));
    const asked = await ask(s, 'Anything about checkout?');
    expect(asked.status).toBe(200);
    const warning = await eventually(() => receiver.received.find((r) => r.path === `/ok/warn/${s.sessionId}`), 15_000);
    const body = JSON.parse(warning.rawBody);
    expect(body).toMatchObject({
      event: 'session.expiry_warning',
      sessionId: s.sessionId,
      data: { expiresAt: asked.body.expiresAt },
    });
    expect(Date.parse(asked.body.expiresAt) - Date.now()).toBeLessThan(2500);
    // message.complete was not asked for.
    expect(receiver.received.filter((r) => r.path === `/ok/warn/${s.sessionId}`)).toHaveLength(1);
    const expired = await eventually(async () => {
      const row = await sessionRow(s.sessionId);
      return row.status === 'expired' ? row : undefined;
    }, 15_000);
    expect(expired.closeReason).toBe('inactivity');
    expect(expired.closedAt!.getTime()).toBeGreaterThanOrEqual(Date.parse(asked.body.expiresAt));
    const res = await ask(s, QUESTION);
    expect([res.status, res.body.error]).toEqual([404, 'session_not_found']);
    const events = await readEvents(
      `${svc.baseUrl}/v1/widget/sessions/${s.sessionId}/stream?token=${s.token}`,
      {},
      () => false,
      3000,
    );
    expect(events.status).toBe(404);
    const stored = await svc.database.db
      .select()
      .from(widgetSessionEvents)
      .where(eq(widgetSessionEvents.sessionId, s.sessionId));
    expect(stored.map((e) => e.type)).toEqual(['message.complete', 'session.expiry_warning', 'session.closed']);
    await svc.client.workflow.getHandle(s.sessionId).result();
  });
});

describe('the widget assets', () => {
  it('serves widget.js without external assets or eval, and the demo page under a strict policy', async () => {
    const script = await fetch(`${svc.baseUrl}/widget.js`);
    expect(script.status).toBe(200);
    expect(script.headers.get('content-type')).toContain('text/javascript');
    const code = await script.text();
    expect(code).not.toMatch(/https?:\/\//);
    expect(code).not.toMatch(/\beval\(|new Function|innerHTML|setAttribute\('style'/);
    const etag = script.headers.get('etag')!;
    expect((await fetch(`${svc.baseUrl}/widget.js`, { headers: { 'if-none-match': etag } })).status).toBe(304);
    const demo = await fetch(`${svc.baseUrl}/widget/demo`);
    expect(demo.status).toBe(200);
    const csp = demo.headers.get('content-security-policy')!;
    expect(csp).toContain("default-src 'none'");
    expect(csp).toContain("script-src 'self'");
    const html = await demo.text();
    expect(html).toContain('<script src="/widget.js"');
    expect(html).not.toMatch(/<script>|<style|style="/);
  });
});
