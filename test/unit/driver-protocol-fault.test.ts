// A connection that comes back from a stalled network can hand postgres.js a server message it did
// not expect; the driver then fails the query with a TypeError from its own connection code. That
// is the outage's, answered 503, not a 500 of ours (CI met it in the stall test of
// test/api/database-outage.test.ts). The server here speaks just enough of the protocol to send one.
import { createServer, type AddressInfo, type Server } from 'node:net';
import { drizzle } from 'drizzle-orm/postgres-js';
import postgres from 'postgres';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { isDependencyUnavailable } from '../../src/dependency-failures.js';

let server: Server;
let port: number;

beforeAll(async () => {
  server = createServer((socket) => {
    socket.once('data', () => {
      const authenticationOk = Buffer.from([0x52, 0, 0, 0, 8, 0, 0, 0, 0]);
      const parseComplete = Buffer.from([0x31, 0, 0, 0, 4]); // no statement was parsed
      socket.write(Buffer.concat([authenticationOk, parseComplete]));
    });
    socket.on('error', () => socket.destroy());
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  port = (server.address() as AddressInfo).port;
});
afterAll(() => new Promise<void>((resolve) => server.close(() => resolve())));

const failureOf = async (query: (sql: postgres.Sql) => Promise<unknown>) => {
  const sql = postgres({ host: '127.0.0.1', port, user: 'x', database: 'x', max: 1, connect_timeout: 2 });
  try {
    return await query(sql).then(
      () => undefined,
      (err: unknown) => err,
    );
  } finally {
    await sql.end({ timeout: 1 }).catch(() => undefined);
  }
};

describe('postgres.js failing a query on a message its connection did not expect', () => {
  it('counts as the dependency being unavailable, also when drizzle wraps it', async () => {
    const raw = await failureOf((sql) => sql`select 1`);
    expect(raw).toBeInstanceOf(TypeError);
    expect(isDependencyUnavailable(raw)).toBe(true);
    const wrapped = await failureOf((sql) => drizzle(sql).execute('select 1'));
    expect((wrapped as Error).cause).toBeInstanceOf(TypeError);
    expect(isDependencyUnavailable(wrapped)).toBe(true);
  });

  it('leaves a TypeError of our own code a fault', () => {
    const ours = (() => {
      try {
        (null as unknown as { parsing: boolean }).parsing = false;
      } catch (err) {
        return err;
      }
    })();
    expect(ours).toBeInstanceOf(TypeError);
    expect(isDependencyUnavailable(ours)).toBe(false);
  });
});
