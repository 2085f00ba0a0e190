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

type Run = (fn: (tx: Parameters<Parameters<Database['db']['transaction']>[0]>[0]) => Promise<void>) => Promise<void>;

/**
 * Two transactions, run by `run`, crossing the probe's two rows: A adds `delta` to row 1 then row
 * 2, B to row 2 then row 1, each waiting for the other's first lock. A deadlock, which PostgreSQL
 * ends after deadlock_timeout (1 s) by aborting one of them. Returns how each settled, how many
 * times each callback ran, and the rows' values before and after.
 */
async function crossRows(run: Run, delta: number) {
  const values = async () =>
    (await database.sql<{ n: number }[]>`select n from conflict_probe order by id`).map((r) => r.n);
  const before = await values();
  const runs = { a: 0, b: 0 };
  const holds = { a: barrier(), b: barrier() };
  const bump = (id: number) => sql`update conflict_probe set n = n + ${delta} where id = ${id}`;
  const side = (me: 'a' | 'b', first: number, other: 'a' | 'b', second: number) =>
    run(async (tx) => {
      runs[me]++;
      await tx.execute(bump(first));
      holds[me].open();
      await holds[other].opened;
      await tx.execute(bump(second));
    });
  const settled = await Promise.allSettled([side('a', 1, 'b', 2), side('b', 2, 'a', 1)]);
  return { settled, runs, before, after: await values() };
}

describe('transactions aborted for a conflict (decision 242)', () => {
  it('runs the deadlock victim again, so both crossed transactions commit', async () => {
    const { settled, runs, before, after } = await crossRows((fn) => database.db.transaction(fn), 1);
    expect(settled.map((s) => s.status)).toEqual(['fulfilled', 'fulfilled']);
    // One of them ran twice: its first run was the victim, rolled back whole.
    expect([runs.a, runs.b].sort()).toEqual([1, 2]);
    expect(after).toEqual(before.map((n) => n + 2));
  }, 20_000);

  it('runs a transactionOnce callback once, the victim failing with the deadlock', async () => {
    const { settled, runs, before, after } = await crossRows((fn) => transactionOnce(database.db, fn), 10);
    expect(runs).toEqual({ a: 1, b: 1 });
    const rejected = settled.filter((s): s is PromiseRejectedResult => s.status === 'rejected');
    expect(rejected).toHaveLength(1);
    expect((rejected[0]!.reason as { cause?: { code?: string } }).cause?.code).toBe('40P01');
    expect(after).toEqual(before.map((n) => n + 10)); // the survivor's two updates only
  }, 20_000);

  it(`gives up after ${CONFLICT_ATTEMPTS} runs with PostgreSQL's error`, async () => {
    const [before] = await database.sql<{ n: number }[]>`select n from conflict_probe where id = 1`;
    let runs = 0;
    const failing = database.db.transaction(async (tx) => {
      runs++;
      await tx.execute(sql`update conflict_probe set n = n + 100 where id = 1`);
      await tx.execute(
        sql.raw(`do $$ begin raise exception 'conflict' using errcode = 'serialization_failure'; end $$`),
      );
    });
    const err = await failing.then(
      () => undefined,
      (e: unknown) => e as Error & { cause?: { code?: string } },
    );
    expect(err?.cause?.code).toBe('40001');
    expect(runs).toBe(CONFLICT_ATTEMPTS);
    const [row] = await database.sql<{ n: number }[]>`select n from conflict_probe where id = 1`;
    expect(row!.n).toBe(before!.n); // every run rolled back
  });

  it('does not run a transaction again for any other error', async () => {
    let runs = 0;
    const failing = database.db.transaction(async (tx) => {
      runs++;
      await tx.execute(sql`insert into conflict_probe values (1, 0)`);
    });
    const err = await failing.then(
      () => undefined,
      (e: unknown) => e as Error & { cause?: { code?: string } },
    );
    expect(err?.cause?.code).toBe('23505'); // unique_violation
    expect(runs).toBe(1);
  });
});
