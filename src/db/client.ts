import path from 'node:path';
import type { Tracer } from '@opentelemetry/api';
import { drizzle, type PostgresJsDatabase } from 'drizzle-orm/postgres-js';
import { migrate } from 'drizzle-orm/postgres-js/migrator';
import postgres from 'postgres';
import { projectRoot } from '../config.js';
import { isTransactionConflict } from '../dependency-failures.js';
import * as schema from './schema/index.js';
import { traceSql } from '../tracing/db.js';

export type Db = PostgresJsDatabase<typeof schema>;

export interface Database {
  db: Db;
  sql: postgres.Sql;
  /**
   * A small pool whose sessions commit asynchronously (`synchronous_commit = off`), for counters
   * that may lose their last few increments in a crash (rate-limit windows). Its commits do not
   * wait for the WAL flush, so a hot counter row is not serialised on disk latency.
   */
  relaxedSql: postgres.Sql;
  close(): Promise<void>;
}

export interface DatabaseOptions {
  max?: number;
  /**
   * Ends a statement that runs longer, and a session left idle inside a transaction that long
   * (a client that went away mid-transaction keeps its locks until then). Unset or 0: no bound.
   */
  statementTimeoutMs?: number;
  /** With tracing on: each statement run inside a span is a span (no wrapper when absent). */
  tracer?: Tracer | undefined;
}

/**
 * Seconds before a pool reconnects after a failed connection, `retries` being the pool's count of
 * failures since its last successful connect: 50 ms doubling to 1 s, with jitter. postgres.js's
 * default grows as 3^retries to 20 s, and the count is shared by the pool's connections: a
 * restart of PostgreSQL under load raised it past 10 within the second it took, and the pool
 * stayed away for up to 20 s after PostgreSQL was back, answering nothing (ADR 0236).
 */
export const reconnectBackoff = (retries: number): number =>
  (0.5 + Math.random() / 2) * Math.min(0.05 * 2 ** retries, 1);

const RUN_ONCE = Symbol('transaction run once');
type OnceDb = Db & { [RUN_ONCE]?: Db['transaction'] };
type Tx = Parameters<Parameters<Db['transaction']>[0]>[0];

/**
 * A transaction whose callback runs once whatever PostgreSQL aborts it for: for the one callback
 * that acts outside the database (a remediation step calling the tenant's HTTP skill, whose
 * record and row lock share its transaction), where running it again would act
 * twice.
 */
export function transactionOnce<T>(db: Db, fn: (tx: Tx) => Promise<T>): Promise<T> {
  const once = (db as OnceDb)[RUN_ONCE] ?? db.transaction.bind(db);
  return once(fn);
}

/** How many times a transaction runs at most when PostgreSQL aborts it for a conflict. */
export const CONFLICT_ATTEMPTS = 3;

/**
 * Makes `db.transaction` run its callback again, on a fresh transaction, when PostgreSQL aborted
 * it as a deadlock victim or for a serialization failure: the whole transaction was rolled back,
 * so nothing of the attempt stays, and the other side of the conflict has gone ahead. Up to
 * `CONFLICT_ATTEMPTS` runs, 10–40 ms apart (jittered, so two crossed callers do not meet again);
 * then the error as before. Without it the caller got the error: a 500 for a person's request
 * (two crossed root-cause corrections). Callbacks therefore do only
 * database work (ADR 0242), or run through `transactionOnce`; a savepoint
 * (`tx.transaction`) is not retried on its own, since its whole transaction is aborted.
 */
export function retryConflicts(db: Db): Db {
  const once = db.transaction.bind(db);
  (db as OnceDb)[RUN_ONCE] = once;
  db.transaction = (async (...args: Parameters<Db['transaction']>) => {
    for (let attempt = 1; ; attempt++) {
      try {
        return await once(...args);
      } catch (err) {
        if (attempt >= CONFLICT_ATTEMPTS || !isTransactionConflict(err)) throw err;
        await new Promise((resolve) => setTimeout(resolve, 10 * attempt * (1 + Math.random())));
      }
    }
  }) as Db['transaction'];
  return db;
}

export function connectDatabase(url: string, options: DatabaseOptions = {}): Database {
  const bounds: Record<string, string> = options.statementTimeoutMs
    ? {
        statement_timeout: String(options.statementTimeoutMs),
        idle_in_transaction_session_timeout: String(options.statementTimeoutMs),
      }
    : {};
  const traced = <S extends postgres.Sql>(client: S): S => (options.tracer ? traceSql(client, options.tracer) : client);
  const sql = traced(
    postgres(url, {
      max: options.max ?? 10,
      connect_timeout: 10,
      idle_timeout: 30,
      backoff: reconnectBackoff,
      onnotice: () => undefined,
      connection: bounds,
    }),
  );
  const db = retryConflicts(drizzle(sql, { schema }));
  const relaxedSql = traced(
    postgres(url, {
      max: 4,
      connect_timeout: 10,
      idle_timeout: 30,
      backoff: reconnectBackoff,
      onnotice: () => undefined,
      connection: { ...bounds, synchronous_commit: 'off' },
    }),
  );
  return {
    db,
    sql,
    relaxedSql,
    close: async () => {
      await Promise.all([sql.end({ timeout: 5 }), relaxedSql.end({ timeout: 5 })]);
    },
  };
}

export const migrationsFolder = path.join(projectRoot, 'drizzle');

/** Applies the committed drizzle-kit migrations; safe to run on every start. */
export async function runMigrations(url: string): Promise<void> {
  const sql = postgres(url, { max: 1, onnotice: () => undefined });
  try {
    await migrate(drizzle(sql), { migrationsFolder });
  } finally {
    await sql.end({ timeout: 5 });
  }
}
