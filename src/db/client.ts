import path from 'node:path';
import { drizzle, type PostgresJsDatabase } from 'drizzle-orm/postgres-js';
import { migrate } from 'drizzle-orm/postgres-js/migrator';
import postgres from 'postgres';
import { projectRoot } from '../config.js';
import * as schema from './schema/index.js';

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
}

/**
 * Seconds before a pool reconnects after a failed connection, `retries` being the pool's count of
 * failures since its last successful connect: 50 ms doubling to 1 s, with jitter. postgres.js's
 * default grows as 3^retries to 20 s, and the count is shared by the pool's connections: a
 * restart of PostgreSQL under load raised it past 10 within the second it took, and the pool
 * stayed away for up to 20 s after PostgreSQL was back, answering nothing (decision 236).
 */
export const reconnectBackoff = (retries: number): number => (0.5 + Math.random() / 2) * Math.min(0.05 * 2 ** retries, 1);

export function connectDatabase(url: string, options: DatabaseOptions = {}): Database {
  const bounds: Record<string, string> = options.statementTimeoutMs
    ? { statement_timeout: String(options.statementTimeoutMs), idle_in_transaction_session_timeout: String(options.statementTimeoutMs) }
    : {};
  const sql = postgres(url, {
    max: options.max ?? 10,
    connect_timeout: 10,
    idle_timeout: 30,
    backoff: reconnectBackoff,
    onnotice: () => undefined,
    connection: bounds,
  });
  const db = drizzle(sql, { schema });
  const relaxedSql = postgres(url, {
    max: 4,
    connect_timeout: 10,
    idle_timeout: 30,
    backoff: reconnectBackoff,
    onnotice: () => undefined,
    connection: { ...bounds, synchronous_commit: 'off' },
  });
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
