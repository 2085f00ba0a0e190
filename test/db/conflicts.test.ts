import { sql } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CONFLICT_ATTEMPTS, connectDatabase, transactionOnce, type Database } from '../../src/db/client.js';
import { createTestDatabase } from '../helpers/service.js';

let database: Database;

beforeAll(async () => {
  database = connectDatabase((await createTestDatabase()).url, { max: 4 });
  await database.sql`create table conflict_probe (id int primary key, n int not null)`;
  await database.sql`insert into conflict_probe values (1, 0), (2, 0)`;
});
afterAll(async () => {
  await database?.close();
});

const barrier = () => {
  let open!: () => void;
  const opened = new Promise<void>((resolve) => (open = resolve));
  return { open, opened };
};

describe('transactions aborted for a conflict (decision 242)', () => {
  it('runs the deadlock victim again, so both crossed transactions commit', async () => {
    const runs = { a: 0, b: 0 };
    const aHolds = barrier();
    const bHolds = barrier();
    const bump = (id: number) => sql`update conflict_probe set n = n + 1 where id = ${id}`;
    // A locks row 1 then row 2, B row 2 then row 1: a deadlock, which PostgreSQL ends after
    // deadlock_timeout (1 s) by aborting one of them.
    const a = database.db.transaction(async (tx) => {
      runs.a++;
      await tx.execute(bump(1));
      aHolds.open();
      await bHolds.opened;
      await tx.execute(bump(2));
    });
    const b = database.db.transaction(async (tx) => {
      runs.b++;
      await tx.execute(bump(2));
      bHolds.open();
      await aHolds.opened;
      await tx.execute(bump(1));
    });
    const settled = await Promise.allSettled([a, b]);
    expect(settled.map((s) => s.status)).toEqual(['fulfilled', 'fulfilled']);
    // One of them ran twice: its first run was the victim, rolled back whole.
    expect([runs.a, runs.b].sort()).toEqual([1, 2]);
    const rows = await database.sql<{ id: number; n: number }[]>`select id, n from conflict_probe order by id`;
    expect(rows.map((r) => ({ ...r }))).toEqual([
      { id: 1, n: 2 },
      { id: 2, n: 2 },
    ]);
  }, 20_000);

  it('runs a transactionOnce callback once, the victim failing with the deadlock', async () => {
    const runs = { a: 0, b: 0 };
    const aHolds = barrier();
    const bHolds = barrier();
    const bump = (id: number) => sql`update conflict_probe set n = n + 10 where id = ${id}`;
    const a = transactionOnce(database.db, async (tx) => {
      runs.a++;
      await tx.execute(bump(1));
      aHolds.open();
      await bHolds.opened;
      await tx.execute(bump(2));
    });
    const b = transactionOnce(database.db, async (tx) => {
      runs.b++;
      await tx.execute(bump(2));
      bHolds.open();
      await aHolds.opened;
      await tx.execute(bump(1));
    });
    const settled = await Promise.allSettled([a, b]);
    expect(runs).toEqual({ a: 1, b: 1 });
    const rejected = settled.filter((s): s is PromiseRejectedResult => s.status === 'rejected');
    expect(rejected).toHaveLength(1);
    expect((rejected[0]!.reason as { cause?: { code?: string } }).cause?.code).toBe('40P01');
    const rows = await database.sql<{ id: number; n: number }[]>`select id, n from conflict_probe order by id`;
    expect(rows.map((r) => r.n)).toEqual([12, 12]); // the survivor's two updates only
  }, 20_000);

  it(`gives up after ${CONFLICT_ATTEMPTS} runs with PostgreSQL's error`, async () => {
    let runs = 0;
    const failing = database.db.transaction(async (tx) => {
      runs++;
      await tx.execute(sql`update conflict_probe set n = n + 100 where id = 1`);
      await tx.execute(sql.raw(`do $$ begin raise exception 'conflict' using errcode = 'serialization_failure'; end $$`));
    });
    const err = await failing.then(() => undefined, (e: unknown) => e as Error & { cause?: { code?: string } });
    expect(err?.cause?.code).toBe('40001');
    expect(runs).toBe(CONFLICT_ATTEMPTS);
    const [row] = await database.sql<{ n: number }[]>`select n from conflict_probe where id = 1`;
    expect(row!.n).toBe(12); // every run rolled back
  });

  it('does not run a transaction again for any other error', async () => {
    let runs = 0;
    const failing = database.db.transaction(async (tx) => {
      runs++;
      await tx.execute(sql`insert into conflict_probe values (1, 0)`);
    });
    const err = await failing.then(() => undefined, (e: unknown) => e as Error & { cause?: { code?: string } });
    expect(err?.cause?.code).toBe('23505'); // unique_violation
    expect(runs).toBe(1);
  });
});
