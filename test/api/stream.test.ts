import { createHash, randomUUID } from 'node:crypto';
import http from 'node:http';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { appendEventUnchecked as appendEvent } from '../../src/outbox/append.js';
import { streamTokens } from '../../src/db/schema/remediation.js';
import { createRealtimeHub, type Subscription } from '../../src/realtime/hub.js';
import { defaultStreamSettings } from '../../src/realtime/sse.js';
import { purgeExpiredStreamTokens } from '../../src/realtime/stream-tokens.js';
import { startTestService, type TestService } from '../helpers/service.js';
import { eventually } from '../helpers/webhooks.js';
import { eq, inArray, sql } from 'drizzle-orm';
import pino from 'pino';

interface SseMessage {
  id: string | undefined;
  event: string | undefined;
  data: any;
}

interface SseClient {
  status: number;
  messages: SseMessage[];
  comments: string[];
  /** Resolves when the response ends or fails (the server closed or dropped the stream). */
  ended: Promise<void>;
  isEnded(): boolean;
  /** Waits until `count` messages have arrived. */
  waitFor(count: number, timeoutMs?: number): Promise<SseMessage[]>;
  waitForComment(text: string, timeoutMs?: number): Promise<void>;
  pause(): void;
  resume(): void;
  close(): void;
}

/** A real SSE client over HTTP: parses `id:`, `event:`, `data:` and comment lines. */
function openStream(baseUrl: string, path: string, headers: Record<string, string> = {}): Promise<SseClient> {
  return new Promise((resolve, reject) => {
    const req = http.get(`${baseUrl}${path}`, { headers: { accept: 'text/event-stream', ...headers } }, (res) => {
      const messages: SseMessage[] = [];
      const comments: string[] = [];
      let buffer = '';
      let ended = false;
      let notify = () => undefined as void;
      const ended$ = new Promise<void>((done) => {
        const finish = () => {
          ended = true;
          notify();
          done();
        };
        res.on('end', finish);
        res.on('error', finish);
        res.on('aborted', finish);
        res.on('close', finish);
      });
      res.setEncoding('utf8');
      res.on('data', (chunk: string) => {
        buffer += chunk;
        let index: number;
        while ((index = buffer.indexOf('\n\n')) >= 0) {
          const block = buffer.slice(0, index);
          buffer = buffer.slice(index + 2);
          const message: SseMessage = { id: undefined, event: undefined, data: undefined };
          let hasData = false;
          for (const line of block.split('\n')) {
            if (line.startsWith(':')) comments.push(line.slice(1).trim());
            else if (line.startsWith('id: ')) message.id = line.slice(4);
            else if (line.startsWith('event: ')) message.event = line.slice(7);
            else if (line.startsWith('data: ')) {
              message.data = JSON.parse(line.slice(6));
              hasData = true;
            }
          }
          if (hasData) messages.push(message);
        }
        notify();
      });
      const waitUntil = (check: () => boolean, timeoutMs: number, what: string) =>
        new Promise<void>((done, fail) => {
          if (check()) return done();
          const timer = setTimeout(() => fail(new Error(`timed out waiting for ${what}`)), timeoutMs);
          const previous = notify;
          notify = () => {
            previous();
            if (check()) {
              clearTimeout(timer);
              done();
            }
          };
        });
      resolve({
        status: res.statusCode ?? 0,
        messages,
        comments,
        ended: ended$,
        isEnded: () => ended,
        async waitFor(count, timeoutMs = 5000) {
          await waitUntil(() => messages.length >= count, timeoutMs, `${count} messages (have ${messages.length})`);
          return messages.slice(0, count);
        },
        waitForComment: (text, timeoutMs = 5000) =>
          waitUntil(() => comments.includes(text), timeoutMs, `comment ${text}`),
        pause: () => res.pause(),
        resume: () => res.resume(),
        close: () => req.destroy(),
      });
    });
    req.on('error', reject);
  });
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
/** Waits for the stream to end, failing after `ms` with what was expected. */
const endsWithin = (client: SseClient, ms: number) =>
  Promise.race([
    client.ended,
    sleep(ms).then(() => Promise.reject(new Error(`the stream did not end within ${ms} ms`))),
  ]);

describe('GET /v1/notifications/stream', () => {
  let svc: TestService;
  const open: SseClient[] = [];
  const stream = async (path: string, headers: Record<string, string> = {}) => {
    const client = await openStream(svc.baseUrl, path, headers);
    open.push(client);
    return client;
  };
  const auth = (token: string) => ({ authorization: `Bearer ${token}` });

  async function append(
    tenantId: string,
    type: string,
    payload: Record<string, unknown> = {},
    count = 1,
  ): Promise<void> {
    await svc.database.db.transaction(async (tx) => {
      for (let i = 0; i < count; i++) {
        await appendEvent(tx, {
          tenantId,
          type,
          incidentId: 'inc_test',
          payload: { incidentId: 'inc_test', ...payload },
          idempotencyKey: randomUUID(),
        });
      }
    });
  }

  beforeAll(async () => {
    svc = await startTestService({
      withoutWorker: true,
      stream: { heartbeatMs: 150, maxQueuedMessages: 20, maxQueuedBytes: 256 * 1024, maxStreamsPerUser: 3 },
    });
  });
  afterAll(async () => {
    for (const client of open) client.close();
    await svc?.stop();
  });

  it('sends the tenant events in order with id, event and data', async () => {
    const { tenantId, member } = await svc.newTenant();
    const client = await stream('/v1/notifications/stream', auth(member));
    expect(client.status).toBe(200);
    await append(tenantId, 'incident.created', { title: 'Checkout down' });
    await append(tenantId, 'approval.requested', { remediationId: 'rem_1', approvalId: 'apr_1' }, 3);
    await append(tenantId, 'incident.resolved');
    const messages = await client.waitFor(5);
    expect(messages.map((m) => m.event)).toEqual([
      'incident.created',
      'approval.requested',
      'approval.requested',
      'approval.requested',
      'incident.resolved',
    ]);
    const ids = messages.map((m) => Number(m.id));
    expect([...ids].sort((a, b) => a - b)).toEqual(ids);
    expect(new Set(ids).size).toBe(5);
    expect(messages[0]!.data).toMatchObject({
      type: 'incident.created',
      incidentId: 'inc_test',
      summary: 'Checkout down',
      remediationId: null,
    });
    expect(Date.parse(messages[0]!.data.occurredAt)).not.toBeNaN();
    expect(messages[1]!.data).toMatchObject({
      remediationId: 'rem_1',
      approvalId: 'apr_1',
      payload: { remediationId: 'rem_1' },
    });
  });

  it('resumes with Last-Event-ID: exactly the missed events, then live ones, no duplicate', async () => {
    const { tenantId, member } = await svc.newTenant();
    const first = await stream('/v1/notifications/stream', auth(member));
    await append(tenantId, 'incident.created', { n: 1 });
    await append(tenantId, 'incident.status_changed', { n: 2 });
    const seen = await first.waitFor(2);
    first.close();
    await append(tenantId, 'incident.status_changed', { n: 3 });
    await append(tenantId, 'incident.severity_changed', { n: 4 });

    const resumed = await stream('/v1/notifications/stream', { ...auth(member), 'last-event-id': seen[1]!.id! });
    await resumed.waitFor(2);
    await append(tenantId, 'incident.resolved', { n: 5 });
    await resumed.waitFor(3);
    await sleep(300);
    expect(resumed.messages.map((m) => m.data.payload.n)).toEqual([3, 4, 5]);

    // The query parameter works the same way, from the first event.
    const byQuery = await stream(`/v1/notifications/stream?lastEventId=${seen[0]!.id}`, auth(member));
    await byQuery.waitFor(4);
    await sleep(200);
    expect(byQuery.messages.map((m) => m.data.payload.n)).toEqual([2, 3, 4, 5]);
  });

  it('resumes from the newest event when Last-Event-ID is beyond it (a stale id), missing no later event', async () => {
    const { tenantId, member } = await svc.newTenant();
    for (let n = 1; n <= 10; n++) await append(tenantId, 'incident.created', { n });
    const client = await stream('/v1/notifications/stream', { ...auth(member), 'last-event-id': '15' });
    await sleep(300); // the replay has found nothing to send
    for (let n = 11; n <= 20; n++) await append(tenantId, 'incident.created', { n });
    const got = await client.waitFor(10, 10_000);
    expect(got.map((m) => [Number(m.id), m.data.payload.n])).toEqual(
      [...Array(10).keys()].map((i) => [11 + i, 11 + i]),
    );
    client.close();
  });

  it('resumes without missing an event whose transaction committed after a later one was seen', async () => {
    const { tenantId, member } = await svc.newTenant();
    const client = await stream('/v1/notifications/stream', auth(member));
    // The slow transaction appends first (the lower outbox seq) but commits last.
    let commitSlow!: () => void;
    const slowMayCommit = new Promise<void>((done) => (commitSlow = done));
    let slowAppended!: () => void;
    const slowHasAppended = new Promise<void>((done) => (slowAppended = done));
    const slow = svc.database.db.transaction(async (tx) => {
      await appendEvent(tx, {
        tenantId,
        type: 'incident.created',
        incidentId: 'inc_test',
        payload: { incidentId: 'inc_test', n: 'slow' },
        idempotencyKey: randomUUID(),
      });
      slowAppended();
      await slowMayCommit;
    });
    await slowHasAppended;
    await append(tenantId, 'incident.status_changed', { n: 'fast' });
    const [fast] = await client.waitFor(1);
    expect(fast!.data.payload.n).toBe('fast');
    client.close();
    commitSlow();
    await slow;

    // The client saw the later event only; resuming after it delivers the slow one.
    const resumed = await stream('/v1/notifications/stream', { ...auth(member), 'last-event-id': fast!.id! });
    const [missed] = await resumed.waitFor(1);
    expect(missed!.data.payload.n).toBe('slow');
    expect(Number(missed!.id)).toBeGreaterThan(Number(fast!.id));
    const [outbox] = await svc.database
      .sql`select min(seq)::text as slow_seq, max(seq)::text as fast_seq from events where tenant_id = ${tenantId}`;
    expect(Number(outbox!.slow_seq)).toBeLessThan(Number(outbox!.fast_seq)); // inserted first, committed last
  });

  it('gives no gap and no duplicate while events are appended during the replay', async () => {
    const { tenantId, member } = await svc.newTenant();
    await append(tenantId, 'incident.created', { n: 0 });
    const first = await stream('/v1/notifications/stream?lastEventId=0', auth(member));
    await first.waitFor(1);
    const start = first.messages[0]!.id!;
    first.close();
    const writes = Array.from({ length: 10 }, (_, i) => append(tenantId, 'incident.status_changed', { n: i + 1 }));
    const client = await stream('/v1/notifications/stream', { ...auth(member), 'last-event-id': start });
    await Promise.all(writes);
    await client.waitFor(10);
    await sleep(300);
    expect(client.messages.map((m) => m.data.payload.n).sort((a: number, b: number) => a - b)).toEqual([
      1, 2, 3, 4, 5, 6, 7, 8, 9, 10,
    ]);
  });

  it('never shows one tenant the events of another', async () => {
    const a = await svc.newTenant();
    const b = await svc.newTenant();
    const streamA = await stream('/v1/notifications/stream?lastEventId=0', auth(a.member));
    const streamB = await stream('/v1/notifications/stream', auth(b.admin));
    await append(b.tenantId, 'incident.created', { tenant: 'b' });
    await append(a.tenantId, 'incident.created', { tenant: 'a' });
    await streamA.waitFor(1);
    await streamB.waitFor(1);
    await sleep(300);
    expect(streamA.messages.map((m) => m.data.payload.tenant)).toEqual(['a']);
    expect(streamB.messages.map((m) => m.data.payload.tenant)).toEqual(['b']);
  });

  it('needs the member or admin role, and carries admin-only events to admins only', async () => {
    const { tenantId, admin, member } = await svc.newTenant();
    const viewer = svc.token(tenantId, 'viewer' as never);
    for (const [method, path] of [
      ['POST', '/v1/notifications/stream-token'],
      ['GET', '/v1/notifications/stream'],
    ] as const) {
      const refused = await svc.api(method, path, { token: viewer });
      expect(refused.status).toBe(403);
      expect(refused.body).toMatchObject({
        error: 'forbidden',
        message: 'This operation requires the member or admin role',
      });
    }
    expect(await svc.database.db.select().from(streamTokens).where(eq(streamTokens.tenantId, tenantId))).toEqual([]);

    const asMember = await stream('/v1/notifications/stream?lastEventId=0', auth(member));
    const issued = await svc.api('POST', '/v1/notifications/stream-token', { token: admin });
    const asAdmin = await stream(`/v1/notifications/stream?token=${issued.body.token}`, {});
    await append(tenantId, 'system.export_completed', { exportId: 'aex_1', location: 'exports/ten/aex_1.jsonl' });
    await append(tenantId, 'incident.created');
    await asAdmin.waitFor(2);
    await asMember.waitFor(1);
    await sleep(300);
    expect(asAdmin.messages.map((m) => m.event)).toEqual(['system.export_completed', 'incident.created']);
    expect(asMember.messages.map((m) => m.event)).toEqual(['incident.created']);
    // A member's replay skips them too.
    const replay = await stream('/v1/notifications/stream?lastEventId=0', auth(member));
    await replay.waitFor(1);
    await sleep(200);
    expect(replay.messages.map((m) => m.event)).toEqual(['incident.created']);
  });

  it('holds at most maxStreamsPerUser streams open per user: 429 past it, a place again once one closes', async () => {
    const { admin, member } = await svc.newTenant();
    const clients = [
      await stream('/v1/notifications/stream', auth(member)),
      await stream('/v1/notifications/stream', auth(member)),
      await stream('/v1/notifications/stream', auth(member)),
    ];
    expect(clients.map((c) => c.status)).toEqual([200, 200, 200]);
    const refused = await svc.api('GET', '/v1/notifications/stream', { token: member });
    expect(refused.status).toBe(429);
    expect(refused.body).toEqual({
      error: 'rate_limit_exceeded',
      message: 'At most 3 event streams may be open at once per user; close one first',
    });
    expect(refused.headers.get('retry-after')).toBe('5');
    // Another user of the tenant has places of their own.
    expect((await stream('/v1/notifications/stream', auth(admin))).status).toBe(200);
    clients[0]!.close();
    const again = await eventually(async () => {
      const next = await stream('/v1/notifications/stream', auth(member));
      if (next.status === 200) return next;
      next.close();
      return undefined;
    });
    expect(again.status).toBe(200);
  });

  it('filters by types', async () => {
    const { tenantId, member } = await svc.newTenant();
    const client = await stream('/v1/notifications/stream?types=incident.resolved,approval.requested', auth(member));
    await append(tenantId, 'incident.created');
    await append(tenantId, 'approval.requested');
    await append(tenantId, 'triage.completed');
    await append(tenantId, 'incident.resolved');
    await client.waitFor(2);
    await sleep(300);
    expect(client.messages.map((m) => m.event)).toEqual(['approval.requested', 'incident.resolved']);
  });

  it('accepts a stream token again until it expires, and no other credential in the URL', async () => {
    const { tenantId, member } = await svc.newTenant();
    const issued = await svc.api('POST', '/v1/notifications/stream-token', { token: member });
    expect(issued.status).toBe(201);
    expect(Date.parse(issued.body.expiresAt) - Date.now()).toBeLessThanOrEqual(300_000);
    const client = await stream(`/v1/notifications/stream?token=${issued.body.token}`);
    expect(client.status).toBe(200);
    await append(tenantId, 'incident.created', { n: 1 });
    const [first] = await client.waitFor(1);
    client.close();

    // What a browser's EventSource does on its own after a drop: the same URL, with Last-Event-ID.
    await append(tenantId, 'incident.status_changed', { n: 2 });
    await append(tenantId, 'incident.resolved', { n: 3 });
    const resumed = await stream(`/v1/notifications/stream?token=${issued.body.token}`, {
      'last-event-id': first!.id!,
    });
    expect(resumed.status).toBe(200);
    await resumed.waitFor(2);
    await sleep(200);
    expect(resumed.messages.map((m) => m.data.payload.n)).toEqual([2, 3]);
    resumed.close();

    // Past its expiry it is refused.
    await svc.database.db
      .update(streamTokens)
      .set({ expiresAt: sql`now() - interval '1 second'` })
      .where(eq(streamTokens.tenantId, tenantId));
    const late = await svc.api('GET', `/v1/notifications/stream?token=${issued.body.token}`, {
      headers: { 'last-event-id': first!.id! },
    });
    expect(late.status).toBe(401);
    expect(late.body).toEqual({ error: 'unauthorized', message: 'The stream token is unknown or expired' });

    expect((await svc.api('GET', `/v1/notifications/stream?token=${member}`)).status).toBe(401);
    expect((await svc.api('GET', '/v1/notifications/stream?token=sst_unknown')).status).toBe(401);
    expect((await svc.api('GET', '/v1/notifications/stream')).status).toBe(401);
    expect((await svc.api('POST', '/v1/notifications/stream-token')).status).toBe(401);
    // A stream token is no credential for any other route, in the URL or the header.
    const other = await svc.api('POST', '/v1/notifications/stream-token', { token: member });
    expect((await svc.api('GET', `/v1/runbooks?token=${other.body.token}`)).status).toBe(401);
    expect((await svc.api('GET', '/v1/runbooks', { token: other.body.token })).status).toBe(401);
  });

  it("ends a stream opened with a stream token at the token's expiry, saying so in a final stream.expired event", async () => {
    const { tenantId, member } = await svc.newTenant();
    const issued = await svc.api('POST', '/v1/notifications/stream-token', { token: member });
    await svc.database.db
      .update(streamTokens)
      .set({ expiresAt: sql`now() + interval '1500 milliseconds'` })
      .where(eq(streamTokens.tenantId, tenantId));
    const expiresAt = (await svc.database.db.select().from(streamTokens).where(eq(streamTokens.tenantId, tenantId)))[0]!
      .expiresAt;
    // Only the first events of a types filter: the final event is sent whatever the filter.
    const client = await stream(`/v1/notifications/stream?token=${issued.body.token}&types=incident.created`);
    expect(client.status).toBe(200);
    await append(tenantId, 'incident.created', { n: 1 });
    await client.waitFor(1);
    const subscribed = svc.realtimeHub.size();
    await endsWithin(client, 5_000);
    const endedAt = Date.now();
    expect(endedAt).toBeGreaterThanOrEqual(expiresAt.getTime() - 50);
    expect(endedAt).toBeLessThan(expiresAt.getTime() + 1500);
    expect(client.messages.map((m) => [m.id, m.event])).toEqual([
      [client.messages[0]!.id, 'incident.created'],
      [undefined, 'stream.expired'],
    ]);
    expect(client.messages[1]!.data).toEqual({
      type: 'stream.expired',
      reason: 'token_expired',
      expiresAt: expiresAt.toISOString(),
    });
    // The subscription went with it.
    await eventually(async () => svc.realtimeHub.size() < subscribed, 5_000);
  });

  it("ends a stream opened with an access token at the token's exp", async () => {
    const { tenantId } = await svc.newTenant();
    const shortLived = svc.token(tenantId, 'member', { ttlSeconds: 2 });
    const exp =
      (JSON.parse(Buffer.from(shortLived.split('.')[1]!, 'base64url').toString()) as { exp: number }).exp * 1000;
    const client = await stream('/v1/notifications/stream', auth(shortLived));
    expect(client.status).toBe(200);
    await endsWithin(client, 5_000);
    expect(Date.now()).toBeGreaterThanOrEqual(exp - 50);
    expect(client.messages.map((m) => m.event)).toEqual(['stream.expired']);
    expect(client.messages[0]!.data).toEqual({
      type: 'stream.expired',
      reason: 'token_expired',
      expiresAt: new Date(exp).toISOString(),
    });
  });

  it('purges expired stream tokens, used or not, and keeps the live ones working', async () => {
    const { tenantId, member } = await svc.newTenant();
    const issue = async () =>
      (await svc.api('POST', '/v1/notifications/stream-token', { token: member })).body.token as string;
    const [used, unused, live] = [await issue(), await issue(), await issue()];
    const hash = (t: string) => createHash('sha256').update(t).digest('hex');
    const client = await stream(`/v1/notifications/stream?token=${used}`);
    expect(client.status).toBe(200);
    await svc.database.db
      .update(streamTokens)
      .set({ expiresAt: sql`now() - interval '1 second'` })
      .where(inArray(streamTokens.tokenHash, [hash(used), hash(unused)]));
    expect(await purgeExpiredStreamTokens(svc.database.sql)).toBeGreaterThanOrEqual(2);
    const left = await svc.database.db.select().from(streamTokens).where(eq(streamTokens.tenantId, tenantId));
    expect(left.map((r) => r.tokenHash)).toEqual([hash(live)]);
    const liveClient = await stream(`/v1/notifications/stream?token=${live}`);
    expect(liveClient.status).toBe(200);
    expect((await svc.api('GET', `/v1/notifications/stream?token=${unused}`)).status).toBe(401);
  });

  it('sends a heartbeat comment', async () => {
    const { member } = await svc.newTenant();
    const client = await stream('/v1/notifications/stream', auth(member));
    await client.waitForComment('ping', 2000);
  });

  it('drops a client that does not read, and keeps serving the others', async () => {
    const { tenantId, member } = await svc.newTenant();
    const slow = await stream('/v1/notifications/stream', auth(member));
    const fast = await stream('/v1/notifications/stream', auth(member));
    slow.pause();
    // The drop is the service's decision, logged by it: not an error printed raw to stderr by
    // the HTTP server (a multi-line stack in a JSON log stream).
    const printed = [vi.spyOn(console, 'error'), vi.spyOn(console, 'info'), vi.spyOn(console, 'warn')];
    try {
      // Far more than the socket buffers hold (25 MiB; loopback buffers take up to about 10 MiB):
      // the server's bounded queue stays full for the slow one past the drain grace.
      const big = 'x'.repeat(64 * 1024);
      for (let i = 0; i < 400; i++) await append(tenantId, 'investigation.evidence_added', { big, i });
      await fast.waitFor(400, 20_000);
      // Still unread past the drain grace, however quickly the 400 went out: the server drops it.
      // (Resumed within the grace, a client that drains in time is kept, as designed.)
      await sleep(defaultStreamSettings.drainGraceMs + 1_000);
      slow.resume();
      await Promise.race([slow.ended, sleep(10_000)]);
      expect(slow.isEnded()).toBe(true);
      expect(slow.messages.length).toBeLessThan(400);
      expect(fast.isEnded()).toBe(false);
      await sleep(200);
      expect(printed.flatMap((spy) => spy.mock.calls)).toEqual([]);
    } finally {
      for (const spy of printed) spy.mockRestore();
    }
  });

  it('replays a history of more than one page to a client that reads, then goes live', async () => {
    const { tenantId, member } = await svc.newTenant();
    // 1,500 events of 16 KiB: two replay pages, each far past the queue's bound.
    await append(tenantId, 'investigation.evidence_added', { big: 'x'.repeat(16 * 1024) }, 1500);
    const client = await stream('/v1/notifications/stream', { ...auth(member), 'last-event-id': '0' });
    const replayed = await client.waitFor(1500, 30_000);
    expect(replayed.map((m) => Number(m.id))).toEqual([...replayed.keys()].map((i) => i + 1));
    await append(tenantId, 'incident.resolved', { after: 'replay' });
    const [live] = (await client.waitFor(1501, 10_000)).slice(1500);
    expect(live).toMatchObject({ id: '1501', event: 'incident.resolved', data: { payload: { after: 'replay' } } });
    expect(client.isEnded()).toBe(false);
    client.close();
  }, 60_000);

  it('replays a long history page by page as the client reads: one that does not read holds one page, then is dropped', async () => {
    const { tenantId, member } = await svc.newTenant();
    // 1,500 events of 16 KiB (24 MiB, past what loopback socket buffers hold): two replay pages.
    await append(tenantId, 'investigation.evidence_added', { big: 'x'.repeat(16 * 1024) }, 1500);
    const hub = svc.realtimeHub;
    const readEvents = hub.readEvents.bind(hub);
    let pagesRead = 0;
    hub.readEvents = (...args: Parameters<typeof readEvents>) => {
      if (args[0] === tenantId) pagesRead++;
      return readEvents(...args);
    };
    try {
      const before = svc.realtimeHub.size();
      const client = await stream('/v1/notifications/stream', { ...auth(member), 'last-event-id': '0' });
      client.pause();
      expect(svc.realtimeHub.size()).toBe(before + 1);
      // Dropped by the server (its subscription ends) after the drain grace...
      await eventually(async () => svc.realtimeHub.size() === before, defaultStreamSettings.drainGraceMs + 8_000);
      expect(pagesRead).toBe(1); // the second page was never read for it
      // ...which the client sees once it reads again: what the socket held, then the end.
      client.resume();
      await Promise.race([client.ended, sleep(10_000)]);
      expect(client.isEnded()).toBe(true);
      expect(client.messages.length).toBeLessThanOrEqual(1000);
    } finally {
      hub.readEvents = readEvents;
    }
  }, 60_000);

  it('keeps a client that reads when one commit brings more than the bound at once', async () => {
    const { tenantId, member } = await svc.newTenant();
    const client = await stream('/v1/notifications/stream', auth(member));
    // 60 messages of 16 KiB in one transaction: one read, fanned out in one go, far past the
    // 20-message, 256 KiB bound before the socket can take any of it.
    await append(tenantId, 'investigation.evidence_added', { big: 'x'.repeat(16 * 1024) }, 60);
    const got = await client.waitFor(60, 10_000);
    expect(got.map((m) => Number(m.id))).toEqual([...got.keys()].map((i) => Number(got[0]!.id) + i));
    await sleep(2_500); // past the drain grace: a client that caught up is not dropped after it
    expect(client.isEnded()).toBe(false);
    await append(tenantId, 'incident.created');
    await client.waitFor(61);
  });

  it('starts a new subscriber at the newest event after the last one left while events were being read', async () => {
    const tenant = await svc.newTenant();
    const hub = createRealtimeHub({ sql: svc.database.sql, logger: pino({ level: 'silent' }) });
    try {
      // The only subscriber leaves while the hub is reading for it (inside delivery).
      let delivered = 0;
      const first: Subscription = await hub.subscribe(tenant.tenantId, {
        deliver: () => {
          delivered++;
          first.unsubscribe(); // called only after subscribe resolved (on the first event)
        },
        close: () => undefined,
      });
      await append(tenant.tenantId, 'incident.created', { n: 1 });
      await eventually(async () => delivered > 0, 5_000);
      // Events committed while nobody listens, then a new subscriber.
      await append(tenant.tenantId, 'incident.created', { n: 2 }, 3);
      const [newest] = await svc.database.sql<
        { max: string }[]
      >`select max(stream_seq) as max from events where tenant_id = ${tenant.tenantId}`;
      const received: number[] = [];
      const second = await hub.subscribe(tenant.tenantId, {
        deliver: (events) => received.push(...events.map((e) => e.seq)),
        close: () => undefined,
      });
      expect(second.startSeq).toBe(Number(newest!.max));
      // It then receives only what is committed after it started.
      await append(tenant.tenantId, 'incident.created', { n: 3 });
      await eventually(async () => received.length > 0, 5_000);
      expect(Math.min(...received)).toBeGreaterThan(second.startSeq);
      second.unsubscribe();
    } finally {
      await hub.close();
    }
  });

  it('ends the subscription when the client goes away', async () => {
    const { tenantId, member } = await svc.newTenant();
    // The streams of the tests before are ended first: this one's subscription is then the only one.
    for (const earlier of open.splice(0)) earlier.close();
    await eventually(async () => svc.realtimeHub.size() === 0, 5_000);
    const before = 0;
    const client = await stream('/v1/notifications/stream', auth(member));
    expect(svc.realtimeHub.size()).toBe(before + 1);
    client.close();
    await eventually(async () => svc.realtimeHub.size() === before, 5_000);
    await append(tenantId, 'incident.created');
    const other = await stream('/v1/notifications/stream?lastEventId=0', auth(member));
    expect(svc.realtimeHub.size()).toBe(before + 1);
    await other.waitFor(1);
    other.close();
    await eventually(async () => svc.realtimeHub.size() === before, 5_000);
  });
});
