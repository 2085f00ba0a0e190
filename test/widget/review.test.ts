/**
 * Defects found reviewing the widget, each shown failing before its fix: unbounded push
 * subscriptions per session, unbounded open sessions per publishable key, a 500 on a malformed
 * session path, and an open stream outliving its session's deadline. No worker runs here: the
 * sessions' workflows never start, so only the api's own checks act on them.
 */
import { and, eq } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { usageCounters } from '../../src/db/schema/limits.js';
import { widgetPushSubscriptions, widgetSessionEvents, widgetSessions } from '../../src/db/schema/widget.js';
import { usagePeriod } from '../../src/domain/plans.js';
import { startTestService, type TestService } from '../helpers/service.js';
import { readEvents } from './receiver.js';

const PORTAL = 'https://portal.example.com';

let svc: TestService;
let tenant: { tenantId: string; admin: string; member: string };

const newKey = async () => {
  const res = await svc.api('POST', '/v1/widget/keys', {
    token: tenant.admin,
    body: { name: 'portal', allowedOrigins: [PORTAL] },
  });
  expect(res.status).toBe(201);
  return res.body.key as string;
};
const open = (key: string) => svc.api('POST', '/v1/widget/sessions', { token: key, headers: { origin: PORTAL } });
const subscribe = (s: { sessionId: string; token: string }, url: string) =>
  svc.api('POST', `/v1/widget/sessions/${s.sessionId}/push`, {
    token: s.token,
    body: { url, events: ['message.complete'] },
  });

beforeAll(async () => {
  svc = await startTestService({
    withoutWorker: true,
    skills: { allowedNetworks: ['127.0.0.1/32'] },
    widget: { minInactivitySeconds: 1, streamHeartbeatMs: 200, maxOpenSessionsPerKey: 2 },
    publicRateLimitPerMinute: 30,
  });
  tenant = await svc.newTenant();
});

afterAll(async () => {
  await svc?.stop();
});

describe('widget review', () => {
  it('bounds the push subscriptions of a session, and refuses private, mapped and credentialed push URLs', async () => {
    const s = (await svc.api('POST', '/v1/widget/sessions', { token: tenant.member })).body;
    for (let i = 0; i < 5; i++) expect((await subscribe(s, `https://127.0.0.1:9/hook-${i}`)).status).toBe(201);
    const sixth = await subscribe(s, 'https://127.0.0.1:9/hook-5');
    expect([sixth.status, sixth.body.error]).toEqual([400, 'validation_error']);
    expect(sixth.body.message).toContain('5 push subscriptions');
    const rows = await svc.database.db
      .select()
      .from(widgetPushSubscriptions)
      .where(
        and(eq(widgetPushSubscriptions.tenantId, tenant.tenantId), eq(widgetPushSubscriptions.sessionId, s.sessionId)),
      );
    expect(rows).toHaveLength(5);

    const t = (await svc.api('POST', '/v1/widget/sessions', { token: tenant.member })).body;
    for (const url of [
      'https://[::1]/hook',
      'https://[::ffff:10.0.0.1]/hook',
      'https://[::ffff:a00:1]/hook',
      'https://0xa000001/hook',
      'https://169.254.169.254/latest/meta-data',
      'https://[fd00::1]/hook',
      'https://user:pass@127.0.0.1:9/hook',
      `https://example.com/${'a'.repeat(2100)}`,
      'HTTP://127.0.0.1:9/hook',
    ]) {
      const res = await subscribe(t, url);
      expect([res.status, res.body.error], url).toEqual([400, 'validation_error']);
    }
  });

  it('bounds the open sessions of one publishable key (429), not its tenant’s members nor its other keys', async () => {
    const key = await newKey();
    const first = await open(key);
    const second = await open(key);
    expect([first.status, second.status]).toEqual([201, 201]);
    const third = await open(key);
    expect([third.status, third.body.error]).toEqual([429, 'rate_limit_exceeded']);
    expect(third.body.message).toContain('2 open sessions');
    expect((await open(await newKey())).status).toBe(201);
    expect((await svc.api('POST', '/v1/widget/sessions', { token: tenant.member })).status).toBe(201);
    const closed = await svc.api('DELETE', `/v1/widget/sessions/${first.body.sessionId}`, { token: first.body.token });
    expect(closed.status).toBe(204);
    expect((await open(key)).status).toBe(201);
  });

  it('opens a key’s session only for its origin exactly as a browser sends it', async () => {
    const key = await newKey();
    for (const origin of ['null', 'https://PORTAL.example.com', 'https://portal.example.com:443', `${PORTAL}/`]) {
      const res = await svc.api('POST', '/v1/widget/sessions', { token: key, headers: { origin } });
      expect([res.status, res.body.error], origin).toEqual([403, 'forbidden']);
    }
  });

  it('refuses a wildcard in a key’s allowed origins, which no browser sends and so would never match', async () => {
    const res = await svc.api('POST', '/v1/widget/keys', {
      token: tenant.admin,
      body: { name: 'wild', allowedOrigins: ['https://*.example.com'] },
    });
    expect([res.status, res.body.error]).toEqual([400, 'validation_error']);
    expect(res.body.message).toContain('wildcard');
  });

  it('refuses a message past the monthly chat quota exactly as /v1/memory/chat does, and records nothing', async () => {
    const spent = await svc.newTenant();
    await svc.database.db.insert(usageCounters).values({
      tenantId: spent.tenantId,
      period: usagePeriod(new Date()),
      metric: 'chat_messages',
      count: 10_000_000,
    });
    const s = (await svc.api('POST', '/v1/widget/sessions', { token: spent.member })).body;
    const before = (await svc.database.db.select().from(widgetSessions).where(eq(widgetSessions.id, s.sessionId)))[0]!;
    const widget = await svc.api('POST', `/v1/widget/sessions/${s.sessionId}/messages`, {
      token: s.token,
      body: { message: 'What caused the last checkout outage?' },
    });
    const chat = await svc.api('POST', '/v1/memory/chat', {
      token: spent.member,
      body: { message: 'What caused the last checkout outage?' },
    });
    expect([widget.status, widget.body]).toEqual([chat.status, chat.body]);
    expect([widget.status, widget.body.error]).toEqual([429, 'quota_exceeded']);
    const after = (await svc.database.db.select().from(widgetSessions).where(eq(widgetSessions.id, s.sessionId)))[0]!;
    expect(after.expiresAt).toEqual(before.expiresAt);
    const events = await svc.database.db
      .select()
      .from(widgetSessionEvents)
      .where(and(eq(widgetSessionEvents.tenantId, spent.tenantId), eq(widgetSessionEvents.sessionId, s.sessionId)));
    expect(events).toEqual([]);
  });

  it('answers a malformed session path with a token as an unknown session, not a 500', async () => {
    const s = (await svc.api('POST', '/v1/widget/sessions', { token: tenant.member })).body;
    const res = await svc.api('POST', '/v1/widget/sessions/%E0%A4%A/messages', {
      token: s.token,
      body: { message: 'hello' },
    });
    expect([res.status, res.body.error]).toEqual([401, 'unauthorized']);
  });

  it('ends an open stream at its session’s deadline with session.closed even when no workflow has expired it', async () => {
    const put = await svc.api('PUT', '/v1/widget/settings', {
      token: tenant.admin,
      body: { sessionInactivitySeconds: 1, expiryWarningSeconds: 0 },
    });
    expect(put.status).toBe(200);
    const s = (await svc.api('POST', '/v1/widget/sessions', { token: tenant.member })).body;
    const url = `${svc.baseUrl}/v1/widget/sessions/${s.sessionId}/stream?token=${s.token}`;
    const started = Date.now();
    const read = await readEvents(url, {}, () => false, 6000);
    expect(read.status).toBe(200);
    expect(read.ended).toBe(true);
    expect(Date.now() - started).toBeLessThan(3000);
    // The stream expired it as its workflow would have, and said so before it ended.
    expect(read.events.map((e) => [e.event, e.data.reason])).toEqual([['session.closed', 'inactivity']]);
    const [row] = await svc.database.db.select().from(widgetSessions).where(eq(widgetSessions.id, s.sessionId));
    expect([row!.status, row!.closeReason]).toEqual(['expired', 'inactivity']);
    expect((await fetch(url)).status).toBe(404);
  });

  // Last: it spends the address's window, which the refusals above count in too.
  it('counts a key sent from a refused origin in its address’s window, as a refused credential is', async () => {
    const key = await newKey();
    const statuses: number[] = [];
    for (let i = 0; i < 61; i++) {
      // Twice the window and one: a minute boundary crossed meanwhile cannot hide the bound.
      const res = await svc.api('POST', '/v1/widget/sessions', {
        token: key,
        headers: { origin: 'https://evil.example.net' },
      });
      statuses.push(res.status);
      if (res.status === 429) {
        expect(res.body.error).toBe('rate_limit_exceeded');
        break;
      }
    }
    expect(statuses[0]).toBe(403);
    expect(statuses.at(-1)).toBe(429);
  });
});
