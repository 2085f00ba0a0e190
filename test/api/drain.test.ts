/**
 * A stopping api (decision 210): it answers the requests it has, tells keep-alive clients to
 * reconnect elsewhere, and finishes even while they keep sending; past its bound it cuts off
 * what is left. Also: the Temporal runtime leaves SIGINT/SIGTERM to the launchers.
 */
import { spawnSync } from 'node:child_process';
import { Agent, request } from 'node:http';
import type { AddressInfo } from 'node:net';
import { serve, type ServerType } from '@hono/node-server';
import { Hono } from 'hono';
import { describe, expect, it } from 'vitest';
import { drain, drainable } from '../../src/composition.js';
import { projectRoot } from '../../src/config.js';

function listen(handlerMs: number | null): Promise<{ server: ServerType; port: number }> {
  const app = new Hono();
  app.post('/work', async (c) => {
    if (handlerMs === null) await new Promise(() => undefined); // never answers
    await new Promise((r) => setTimeout(r, handlerMs!));
    return c.json({ ok: true }, 202);
  });
  return new Promise((resolve) => {
    const server = drainable(
      serve({ fetch: app.fetch, hostname: '127.0.0.1', port: 0 }, (info) => resolve({ server, port: info.port })),
    );
  });
}

type Outcome = { status: number; connection: string | undefined } | { error: string };

function post(agent: Agent, port: number): Promise<Outcome> {
  return new Promise((resolve) => {
    const req = request(
      {
        host: '127.0.0.1',
        port,
        path: '/work',
        method: 'POST',
        agent,
        headers: { 'content-type': 'application/json', 'content-length': 2 },
      },
      (res) => {
        res.resume();
        res.on('end', () => resolve({ status: res.statusCode ?? 0, connection: res.headers.connection }));
      },
    );
    req.on('error', (err: NodeJS.ErrnoException) => resolve({ error: err.code ?? err.message }));
    req.end('{}');
  });
}

describe('an api stopping under keep-alive load', () => {
  it('answers every request it took, says Connection: close, and stops although the clients keep sending', async () => {
    // Each request takes 200 ms, so at the drain every connection has one in flight (a
    // connection idle at that instant is closed, and a request a client sends on it just then
    // is reset: the race of closing any idle keep-alive connection).
    const { server, port } = await listen(200);
    const agent = new Agent({ keepAlive: true, maxSockets: 8 });
    const outcomes: Array<Outcome & { sentBefore: boolean; answeredWhileDraining: boolean }> = [];
    let draining = false;
    let stopped = false;
    const senders = Array.from({ length: 8 }, async () => {
      // Each sender goes on until its request is refused: a client that never stops on its own.
      for (;;) {
        const sentBefore = !draining;
        const outcome = await post(agent, port);
        outcomes.push({ ...outcome, sentBefore, answeredWhileDraining: draining });
        if ('error' in outcome || stopped) return;
      }
    });
    await new Promise((r) => setTimeout(r, 500));
    draining = true;
    const started = Date.now();
    await drain(server, 10_000);
    stopped = true;
    const took = Date.now() - started;
    await Promise.all(senders);
    agent.destroy();

    // It stopped well before its bound: nothing had to be cut off.
    expect(took).toBeLessThan(5_000);
    const answered = outcomes.filter(
      (
        o,
      ): o is { status: number; connection: string | undefined; sentBefore: boolean; answeredWhileDraining: boolean } =>
        'status' in o,
    );
    expect(answered.length).toBeGreaterThanOrEqual(16);
    expect(answered.every((o) => o.status === 202)).toBe(true);
    // Every request in flight when the drain began was answered; those whose answer was not yet
    // on its way told the client to close the connection (one already sent cannot), so the
    // senders' next requests found the server closed (ECONNREFUSED).
    const late = answered.filter((o) => o.answeredWhileDraining);
    expect(late.length).toBe(8);
    expect(late.filter((o) => o.connection === 'close').length).toBeGreaterThanOrEqual(7);
    // The only failures are refused new connections, never a request cut off in flight.
    const failed = outcomes.filter((o) => 'error' in o) as Array<{ error: string }>;
    expect(failed.map((f) => f.error).filter((code) => code !== 'ECONNREFUSED')).toEqual([]);
  }, 30_000);

  it('cuts off what is still running at its bound', async () => {
    const { server, port } = await listen(null);
    const agent = new Agent({ keepAlive: true });
    const hanging = post(agent, port);
    await new Promise((r) => setTimeout(r, 200));
    const started = Date.now();
    await drain(server, 500);
    expect(Date.now() - started).toBeGreaterThanOrEqual(450);
    expect(await hanging).toEqual({ error: 'ECONNRESET' });
    agent.destroy();
    expect((server.address() as AddressInfo | null)?.port).toBeUndefined();
  });
});

describe('the Temporal runtime of the service', () => {
  it('installs no SIGINT/SIGTERM handler of its own: the launchers stop the api before the worker', () => {
    // In a process of its own: a runtime is installed once per process.
    const script = `
      import pino from 'pino';
      import { Runtime } from '@temporalio/worker';
      import { installTemporalRuntimeLogger } from './src/temporal/runtime-logger.ts';
      const before = ['SIGINT', 'SIGTERM'].map((s) => process.listenerCount(s));
      installTemporalRuntimeLogger(pino({ level: 'silent' }));
      Runtime.instance();
      const after = ['SIGINT', 'SIGTERM'].map((s) => process.listenerCount(s));
      console.log(JSON.stringify({ before, after }));
      process.exit(0);`;
    const run = spawnSync(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', script], {
      cwd: projectRoot,
      encoding: 'utf8',
      timeout: 60_000,
    });
    expect(run.status, run.stderr).toBe(0);
    const { before, after } = JSON.parse(run.stdout.trim().split('\n').at(-1)!) as {
      before: number[];
      after: number[];
    };
    expect(after).toEqual(before);
  });
});
