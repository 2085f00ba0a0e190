/**
 * The widget session stream is woken by `NOTIFY widget_events`: with its fallback read set to a
 * minute (the heartbeat), an event can only reach an open stream within seconds through the
 * notification, or through the wake-up of every stream after the LISTEN connection reconnects.
 */
import postgres from 'postgres';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { widgetSessionEvents } from '../../src/db/schema/widget.js';
import { createLogger } from '../../src/logger.js';
import { closeWidgetStreamWakeups, widgetStreamWakeups } from '../../src/widget/stream-wakeups.js';
import { startTestService, type TestService } from '../helpers/service.js';
import { eventually } from './receiver.js';

const HEARTBEAT_MS = 60_000;
/** Well under the fallback read: only a wake-up can deliver an event this fast. */
const PROMPT_MS = 3_000;

type Sse = { id?: string; event?: string; data?: any; receivedAt: number };

let svc: TestService;
let probe: postgres.Sql;
let tenant: { tenantId: string; admin: string; member: string };
/** Closed after each test, passed or failed, so a failure leaves no stream to the next one. */
const opened: Array<() => Promise<void>> = [];

/** An open stream read in the background: the events so far, until `close`. */
function openStream(session: { sessionId: string; token: string }) {
  const controller = new AbortController();
  const events: Sse[] = [];
  const comments: string[] = [];
  let ended = false;
  const done = (async () => {
    const res = await fetch(`${svc.baseUrl}/v1/widget/sessions/${session.sessionId}/stream?token=${session.token}`, {
      signal: controller.signal,
    });
    expect(res.status).toBe(200);
    const reader = res.body!.getReader();
    const decoder = new TextDecoder();
    let buffer = '';
    for (;;) {
      const { value, done: finished } = await reader.read();
      if (finished) break;
      buffer += decoder.decode(value, { stream: true });
      let cut: number;
      while ((cut = buffer.indexOf('\n\n')) >= 0) {
        const block = buffer.slice(0, cut);
        buffer = buffer.slice(cut + 2);
        if (block.startsWith(':')) comments.push(block);
        const event: Sse = { receivedAt: Date.now() };
        for (const line of block.split('\n')) {
          if (line.startsWith('id: ')) event.id = line.slice(4);
          else if (line.startsWith('event: ')) event.event = line.slice(7);
          else if (line.startsWith('data: ')) event.data = JSON.parse(line.slice(6));
        }
        if (event.event) events.push(event);
      }
    }
    ended = true;
  })().catch((err: unknown) => {
    if (!controller.signal.aborted) throw err;
  });
  const close = async () => {
    controller.abort();
    await done;
  };
  opened.push(close);
  return { events, comments, ended: () => ended, close };
}

const wakeups = () => widgetStreamWakeups(svc.appDeps.sql, createLogger('silent'));
const openSession = async () => {
  const res = await svc.api('POST', '/v1/widget/sessions', { token: tenant.member });
  expect(res.status).toBe(201);
  return res.body as { sessionId: string; token: string };
};
const ask = async (s: { sessionId: string; token: string }, message: string) => {
  const res = await svc.api('POST', `/v1/widget/sessions/${s.sessionId}/messages`, {
    token: s.token,
    body: { message },
  });
  expect(res.status).toBe(200);
  return res.body as { messageId: string };
};
/** A session's event inserted without a notification (as one whose notification nobody heard). */
const insertUnheard = async (sessionId: string, messageId: string) => {
  const [row] = await svc.database.db
    .insert(widgetSessionEvents)
    .values({
      tenantId: tenant.tenantId,
      sessionId,
      type: 'message.complete',
      data: { sessionId, messageId, reply: 'Checkout is healthy again' },
    })
    .returning();
  return row!;
};
/** Streams registered with the process's listener (each is then past its LISTEN and about to read). */
const registered = (n: number) => eventually(() => wakeups().size() === n, 5_000);

beforeAll(async () => {
  svc = await startTestService({
    withoutDispatcher: true,
    widget: { minInactivitySeconds: 1, streamHeartbeatMs: HEARTBEAT_MS },
  });
  probe = postgres(svc.databaseUrl, { max: 1, onnotice: () => undefined });
  tenant = await svc.newTenant();
});

afterEach(async () => {
  await Promise.all(opened.splice(0).map((close) => close()));
});

afterAll(async () => {
  await probe?.end();
  await svc?.stop();
});

describe('the widget session stream, woken by NOTIFY widget_events', () => {
  it('delivers the api’s message.complete and the worker’s expiry warning and close at once, then ends', async () => {
    const other = await svc.newTenant();
    const set = await svc.api('PUT', '/v1/widget/settings', {
      token: other.admin,
      body: { sessionInactivitySeconds: 3, expiryWarningSeconds: 2 },
    });
    expect(set.status).toBe(200);
    const opened = await svc.api('POST', '/v1/widget/sessions', { token: other.member });
    expect(opened.status).toBe(201);
    const s = opened.body as { sessionId: string; token: string };
    const stream = openStream(s);
    await registered(1);
    const asked = Date.now();
    const reply = await ask(s, 'What caused the last checkout outage?');
    // The workflow's timers write the warning (~1 s after the message) and the close (~3 s) in the worker.
    await eventually(() => stream.ended(), 10_000);
    expect(stream.events.map((e) => e.event)).toEqual(['message.complete', 'session.expiry_warning', 'session.closed']);
    expect(stream.events[0]!.data.messageId).toBe(reply.messageId);
    expect(stream.events[2]!.data).toMatchObject({ sessionId: s.sessionId, reason: 'inactivity' });
    expect(stream.events[0]!.receivedAt - asked).toBeLessThan(PROMPT_MS);
    for (const e of stream.events) expect(e.receivedAt - Date.parse(e.data.createdAt)).toBeLessThan(PROMPT_MS);
    expect(stream.comments).toEqual([]); // no heartbeat: nothing waited a minute
    await stream.close();
    await registered(0);
    await svc.client.workflow.getHandle(s.sessionId).result();
  });

  it('wakes only the streams of the session written to', async () => {
    const [a, b] = [await openSession(), await openSession()];
    const [streamA, streamB] = [openStream(a), openStream(b)];
    await registered(2);
    const toA = await ask(a, 'Which runbook applies to checkout?');
    await eventually(() => streamA.events.length === 1, PROMPT_MS);
    const toB = await ask(b, 'Who is on call for payments?');
    await eventually(() => streamB.events.length === 1, PROMPT_MS);
    const toA2 = await ask(a, 'And for the database?');
    await eventually(() => streamA.events.length === 2, PROMPT_MS);
    expect(streamA.events.map((e) => e.data.messageId)).toEqual([toA.messageId, toA2.messageId]);
    expect(streamB.events.map((e) => e.data.messageId)).toEqual([toB.messageId]);
    expect(streamB.events.every((e) => e.data.sessionId === b.sessionId)).toBe(true);
    await Promise.all([streamA.close(), streamB.close()]);
    await registered(0);
  });

  it('reads what was written without a notification once the LISTEN connection is back', async () => {
    const s = await openSession();
    const stream = openStream(s);
    await registered(1);
    // Written while nobody heard it (as when the LISTEN connection is down): no notification reaches the stream.
    const row = await insertUnheard(s.sessionId, 'msg_unheard');
    const listeners = await probe<Array<{ pid: number }>>`
      select pid from pg_stat_activity
      where datname = current_database() and pid <> pg_backend_pid() and query ilike 'listen%widget_events%'`;
    expect(listeners).toHaveLength(1);
    expect(stream.events).toEqual([]);
    await probe`select pg_terminate_backend(${listeners[0]!.pid})`;
    // postgres.js reconnects and listens again; its onListen wakes every stream, which reads the row.
    await eventually(() => stream.events.length === 1, 10_000);
    expect(stream.events[0]).toMatchObject({ id: String(row.id), data: { messageId: 'msg_unheard' } });
    const [again] = await probe<Array<{ pid: number }>>`
      select pid from pg_stat_activity
      where datname = current_database() and query ilike 'listen%widget_events%'`;
    expect(again?.pid).not.toBe(listeners[0]!.pid);
    // And the new connection hears the next notification.
    const next = await ask(s, 'Is checkout healthy now?');
    await eventually(() => stream.events.length === 2, PROMPT_MS);
    expect(stream.events[1]!.data.messageId).toBe(next.messageId);
    await stream.close();
    await registered(0);
  });

  it('makes no query while its session is quiet', async () => {
    const s = await openSession();
    // Read by the stream's first read (Last-Event-ID 0), so the stream is past its reads once it has it.
    await insertUnheard(s.sessionId, 'msg_before');
    const stream = openStream(s);
    await eventually(() => stream.events.length === 1, PROMPT_MS);
    // Every statement of another backend of this database that started from here on, sampled for 3 s
    // (a poll every 500 ms, as the stream did before, shows here several times).
    const [{ start } = { start: new Date(0) }] = await probe<Array<{ start: Date }>>`select now() as start`;
    const seen = new Set<string>();
    const until = Date.now() + 3_000;
    while (Date.now() < until) {
      const rows = await probe<Array<{ pid: number; started: Date; query: string }>>`
        select pid, query_start as started, query from pg_stat_activity
        where datname = current_database() and pid <> pg_backend_pid()
          and query_start > ${start} and query ilike '%widget%' and query not ilike 'listen%'`;
      for (const r of rows) seen.add(`${r.pid} ${r.started.toISOString()} ${r.query}`);
      await new Promise((r) => setTimeout(r, 50));
    }
    expect([...seen]).toEqual([]);
    expect(stream.events).toHaveLength(1);
    await stream.close();
    await registered(0);
  });

  // Last: it closes this api's listener, as the api's shutdown does (src/composition.ts).
  it('ends its open streams when the api shuts down', async () => {
    const s = await openSession();
    const stream = openStream(s);
    await registered(1);
    await closeWidgetStreamWakeups(svc.appDeps.sql);
    // Only the close can end it this soon: the session is open and the heartbeat is a minute away.
    await eventually(() => stream.ended(), PROMPT_MS);
    expect(stream.events).toEqual([]);
    expect(stream.comments).toEqual([]);
  });
});
