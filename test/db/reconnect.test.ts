import net from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { connectDatabase, type Database } from '../../src/db/client.js';
import { createTestDatabase } from '../helpers/service.js';
import { freePort } from '../helpers/ports.js';

/**
 * A TCP proxy in front of the test PostgreSQL that can go away and come back on the same port,
 * as a PostgreSQL restart looks to the pool: every connection dropped, new ones refused, then
 * accepted again.
 */
function proxyTo(target: URL, port: number) {
  const sockets = new Set<net.Socket>();
  let server: net.Server | undefined;
  const up = () =>
    new Promise<void>((resolve) => {
      server = net.createServer((client) => {
        const upstream = net.connect(Number(target.port), target.hostname);
        for (const [a, b] of [[client, upstream], [upstream, client]] as const) {
          sockets.add(a);
          a.on('error', () => b.destroy());
          a.on('close', () => {
            sockets.delete(a);
            b.destroy();
          });
          a.pipe(b);
        }
      });
      server.listen(port, '127.0.0.1', () => resolve());
    });
  const down = () =>
    new Promise<void>((resolve) => {
      for (const socket of sockets) socket.destroy();
      server?.close(() => resolve());
    });
  return { up, down };
}

let database: Database;
let proxy: ReturnType<typeof proxyTo>;

beforeAll(async () => {
  const target = new URL((await createTestDatabase()).url);
  const port = await freePort();
  proxy = proxyTo(target, port);
  await proxy.up();
  const url = new URL(target);
  url.hostname = '127.0.0.1';
  url.port = String(port);
  database = connectDatabase(url.toString(), { max: 10 });
});
afterAll(async () => {
  await database?.close();
  await proxy?.down();
});

describe('the pool after PostgreSQL restarts (decision 236)', () => {
  it('answers every query sent once PostgreSQL is back within a second or so, after failures under load', async () => {
    let running = true;
    let backAt = 0;
    const afterBack: Array<{ ms: number; ok: boolean }> = [];
    // Ten callers at a time, as a loaded api has, each calling again 100 ms after an answer.
    const callers = Array.from({ length: 10 }, async () => {
      while (running) {
        const sent = Date.now();
        let ok = true;
        try {
          await database.sql`select 1`;
        } catch {
          ok = false; // refused or dropped while PostgreSQL is away
        }
        if (backAt && sent >= backAt) afterBack.push({ ms: Date.now() - sent, ok });
        await new Promise((r) => setTimeout(r, 100));
      }
    });
    await new Promise((r) => setTimeout(r, 500));
    await proxy.down(); // the restart: 1.5 s away, as measured for a killed postmaster
    await new Promise((r) => setTimeout(r, 1500));
    await proxy.up();
    backAt = Date.now();
    await new Promise((r) => setTimeout(r, 3000));
    running = false;
    await Promise.all(callers);

    expect(afterBack.length).toBeGreaterThan(50);
    expect(afterBack.every((call) => call.ok)).toBe(true);
    expect(Math.max(...afterBack.map((call) => call.ms))).toBeLessThan(2000);
  }, 60_000);
});
