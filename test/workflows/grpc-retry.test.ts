import { createServer, connect, type AddressInfo, type Server } from 'node:net';
import { Connection } from '@temporalio/client';
import { afterAll, afterEach, beforeAll, describe, expect, inject, it } from 'vitest';
import { TEMPORAL_RECONNECT_BACKOFF_MAX_MS, temporalConnectionOptions } from '../../src/temporal/connection.js';

// The retry of the service's Temporal connections (decision 221), with a real client against a
// TCP server that drops every connection (each attempt then fails UNAVAILABLE, which is retried),
// and against the suite's Temporal server behind a relay that drops the first connections.

let dropper: Server;
let dropperAddress: string;
const uncaught: unknown[] = [];
const onUncaught = (err: unknown) => uncaught.push(err);

function listen(server: Server): Promise<string> {
  return new Promise((resolve) =>
    server.listen(0, '127.0.0.1', () => resolve(`127.0.0.1:${(server.address() as AddressInfo).port}`)),
  );
}

beforeAll(async () => {
  dropper = createServer((socket) => socket.destroy());
  dropperAddress = await listen(dropper);
  process.on('uncaughtException', onUncaught);
});
afterAll(async () => {
  process.off('uncaughtException', onUncaught);
  await new Promise((resolve) => dropper.close(resolve));
});
afterEach(() => {
  expect(uncaught).toEqual([]);
});

async function settle<T>(call: Promise<T>): Promise<{ ms: number; value?: T; error?: Error & { code?: number } }> {
  const started = performance.now();
  return call.then(
    (value) => ({ ms: performance.now() - started, value }),
    (error: Error & { code?: number }) => ({ ms: performance.now() - started, error }),
  );
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

describe('the Temporal connection retry', () => {
  it('ends a call whose connection is closed during a backoff, with its status and no exception from a timer', async () => {
    const connection = Connection.lazy(temporalConnectionOptions(dropperAddress));
    const call = settle(
      connection.withDeadline(Date.now() + 30_000, () => connection.workflowService.getSystemInfo({})),
    );
    await sleep(500); // past the first attempt, inside a backoff
    await connection.close();
    const result = await call;
    expect(result.error?.code).toBe(14); // UNAVAILABLE, the status that made it retry
    expect(result.ms).toBeLessThan(6_000); // a backoff is at most 5 s
    await sleep(6_000); // any timer left behind would have fired (and thrown) by now
  });

  it('stops retrying when its caller cancels, at once', async () => {
    const connection = Connection.lazy(temporalConnectionOptions(dropperAddress));
    const abort = new AbortController();
    const call = settle(connection.withAbortSignal(abort.signal, () => connection.workflowService.getSystemInfo({})));
    await sleep(700);
    abort.abort();
    const result = await call;
    expect(result.error?.code).toBe(1); // CANCELLED
    expect(result.ms).toBeLessThan(2_000); // the SDK's own retry went on for its ten attempts, about 20 s
    await connection.close();
  });

  it('never backs off past the call deadline', async () => {
    const connection = Connection.lazy(temporalConnectionOptions(dropperAddress));
    const result = await settle(
      connection.withDeadline(Date.now() + 1_500, () => connection.workflowService.getSystemInfo({})),
    );
    expect(result.error?.code).toBe(4); // DEADLINE_EXCEEDED
    expect(result.ms).toBeGreaterThanOrEqual(1_400);
    expect(result.ms).toBeLessThan(1_900);
    await connection.close();
  });

  it('answers with the server response when a retry gets through', async () => {
    const [host, port] = inject('temporalAddress').split(':');
    let connections = 0;
    const relay = createServer((client) => {
      if (connections++ < 2) return client.destroy(); // the first two connections are dropped
      const upstream = connect({ host: host!, port: Number(port) });
      client.pipe(upstream).pipe(client);
      client.on('error', () => upstream.destroy());
      upstream.on('error', () => client.destroy());
    });
    const connection = Connection.lazy(temporalConnectionOptions(await listen(relay)));
    const result = await settle(
      connection.withDeadline(Date.now() + 20_000, () => connection.workflowService.getSystemInfo({})),
    );
    expect(result.error).toBeUndefined();
    expect(result.value?.serverVersion).toMatch(/^\d+\.\d+\.\d+/);
    expect(connections).toBeGreaterThanOrEqual(3);
    await connection.close();
    relay.close();
  });
});

describe('the Temporal connection after an outage', () => {
  it('tries to reconnect at least every few seconds however long the server was away', async () => {
    // A server that drops every connection stands for Temporal while it is away; the client is
    // called every half second, as the gate's probes and the dispatcher call it.
    const attempts: number[] = [];
    const away = createServer((socket) => {
      attempts.push(performance.now());
      socket.destroy();
    });
    const connection = Connection.lazy(temporalConnectionOptions(await listen(away)));
    const started = performance.now();
    while (performance.now() - started < 35_000) {
      await connection
        .withDeadline(Date.now() + 1_000, () => connection.workflowService.getSystemInfo({}))
        .catch(() => undefined);
      await sleep(500);
    }
    const ended = performance.now();
    await connection.close();
    await new Promise((resolve) => away.close(resolve));
    // The longest stretch without an attempt, the end of the window included: what a server
    // back at the worst moment would wait. gRPC's own backoff (1 s growing 1.6 times, ±20 %)
    // goes past 8 s within this window; ours stays at 5 s ±20 %.
    const silences = [...attempts.slice(1).map((at, i) => at - attempts[i]!), ended - attempts.at(-1)!];
    expect(attempts.length).toBeGreaterThanOrEqual(8);
    expect(Math.max(...silences)).toBeLessThan(TEMPORAL_RECONNECT_BACKOFF_MAX_MS * 1.2 + 1_500);
  });
});
