import { createServer, type AddressInfo } from 'node:net';
import { drizzle } from 'drizzle-orm/postgres-js';
import postgres from 'postgres';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createUserRecorder, USER_SEEN_INTERVAL_MS } from '../../src/api/middleware/record-user.js';
import type { AppDeps } from '../../src/api/context.js';

// A database that does not answer (a port nothing listens on, as during a restart): the recorder
// meets a connection error, which is the outage's, not a bug of ours.
let sql: postgres.Sql;

beforeAll(async () => {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  await new Promise((resolve) => server.close(resolve));
  sql = postgres({ host: '127.0.0.1', port, max: 1, connect_timeout: 2, onnotice: () => undefined });
});
afterAll(async () => {
  await sql?.end({ timeout: 1 });
});

describe('recording a user while the database cannot be reached', () => {
  it('logs a warning, not an error, for the awaited first sighting and the later background write', async () => {
    let now = new Date('2031-01-01T00:00:00Z');
    const record = createUserRecorder({ db: drizzle(sql) as unknown as AppDeps['db'], clock: () => now });
    const lines: Array<{ level: string; msg: string }> = [];
    const log = {
      error: (_obj: object, msg: string) => lines.push({ level: 'error', msg }),
      warn: (_obj: object, msg: string) => lines.push({ level: 'warn', msg }),
    };
    const who = { tenantId: 'ten_1', userId: 'usr_1', email: 'a@example.test', roles: ['member' as const] };

    await record(who, log); // first sighting: awaited
    expect(lines).toEqual([{ level: 'warn', msg: 'recording the user failed: database unavailable' }]);

    await record(who, log); // failed, so not remembered: awaited again
    now = new Date(now.getTime() + USER_SEEN_INTERVAL_MS + 1);
    await record(who, log); // a later sighting: written in the background
    await expect.poll(() => lines.length, { timeout: 5000 }).toBe(3);
    expect(lines.map((l) => l.level)).toEqual(['warn', 'warn', 'warn']);
  });
});
