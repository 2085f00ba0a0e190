import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { connectDatabase, type Database } from '../../src/db/client.js';
import { createTestDatabase } from '../helpers/service.js';
import { startTcpProxy, type TcpProxy } from '../helpers/tcp-proxy.js';

let database: Database;
let proxy: TcpProxy;

// The pool reaches the test database through a relay that the test cuts and restores on the
// same port, as a PostgreSQL restart looks to it: connections dropped, new ones refused, then
// accepted again.
beforeAll(async () => {
  const url = new URL((await createTestDatabase()).url);
  proxy = await startTcpProxy({ host: url.hostname, port: Number(url.port) });
  url.port = String(proxy.port);
  database = connectDatabase(url.toString(), { max: 10 });
});
afterAll(async () => {
  await database?.close();
  await proxy?.close();
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
    await proxy.cut(); // the restart: 1.5 s away, as measured for a killed postmaster
    await new Promise((r) => setTimeout(r, 1500));
    await proxy.restore();
    backAt = Date.now();
    await new Promise((r) => setTimeout(r, 3000));
    running = false;
    await Promise.all(callers);

    expect(afterBack.length).toBeGreaterThan(50);
    expect(afterBack.every((call) => call.ok)).toBe(true);
    expect(Math.max(...afterBack.map((call) => call.ms))).toBeLessThan(2000);
  }, 60_000);
});
