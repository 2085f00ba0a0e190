import type { Logger } from 'pino';
import type postgres from 'postgres';
import type { Db } from '../db/client.js';
import { notifications } from '../db/schema/remediation.js';
import { tenantPeople } from '../db/repositories/users.js';
import { createOutboxConsumer, startOutboxLoop, type OutboxEvent, type OutboxLoop } from '../outbox/consumer.js';
import { ADMIN_ONLY_EVENTS, type EventType } from '../outbox/events.js';
import { notificationOf } from './describe.js';
import { targetedNotifications } from './targeting.js';

/** The `event_consumers` row of the notifier. */
export const NOTIFIER_CONSUMER = 'notifications';

/** Created by the remediation activity itself (admins only, key `${approvalId}:${userId}`). */
const HANDLED_ELSEWHERE: ReadonlySet<string> = new Set<EventType>(['approval.requested']);

export { describeEvent } from './describe.js';

export interface NotifierDeps {
  db: Db;
  sql: postgres.Sql;
  logger: Logger;
}

export interface NotifierOptions {
  /** The consumer's name in `event_consumers` (tests use their own). */
  name?: string;
  /** Events per transaction. */
  batchSize?: number;
  /** How long a gap in `seq` must have been seen before it counts as final (see createOutboxConsumer). */
  gapSettleMs?: number;
  /** Only notify this tenant's users (tests: a private consumer ignores the rest of the outbox). */
  tenantId?: string;
  intervalMs?: number;
  listen?: boolean;
  /** Called inside the transaction after the inserts (tests simulate a crash by throwing). */
  beforeCommit?: (inserted: string[]) => Promise<void> | void;
}

/**
 * One notification per admin and member of each event (export completions to admins only): a
 * `notify` trigger's fan-out, the tenant's own explicit rule. The notifier sends less
 * (targeting.ts).
 */
export async function notificationsFor(
  tx: Pick<Db, 'select'>,
  rows: OutboxEvent[],
  keyOf: (row: OutboxEvent, userId: string) => string = (row, userId) => `${row.seq}:${userId}`,
): Promise<Array<typeof notifications.$inferInsert>> {
  const tenantIds = [...new Set(rows.map((r) => r.tenantId))];
  const people = await tenantPeople(tx, tenantIds);
  const values: Array<typeof notifications.$inferInsert> = [];
  for (const row of rows) {
    const adminOnly = ADMIN_ONLY_EVENTS.has(row.type);
    for (const person of people) {
      if (person.tenantId !== row.tenantId) continue;
      if (
        adminOnly
          ? !person.roles.includes('admin')
          : !person.roles.includes('admin') && !person.roles.includes('member')
      )
        continue;
      const value = notificationOf(row, person.userId, keyOf(row, person.userId));
      if (!value) break; // not one of the catalogue's events
      values.push(value);
    }
  }
  return values;
}

/** Inserts notifications, once per idempotency key; returns the ids inserted now. */
export async function insertNotifications(
  tx: Pick<Db, 'insert'>,
  values: Array<typeof notifications.$inferInsert>,
): Promise<string[]> {
  const inserted: string[] = [];
  for (let i = 0; i < values.length; i += 1000) {
    const done = await tx
      .insert(notifications)
      .values(values.slice(i, i + 1000))
      .onConflictDoNothing({ target: notifications.idempotencyKey })
      .returning({ id: notifications.id });
    inserted.push(...done.map((r) => r.id));
  }
  return inserted;
}

/**
 * The notifier: the outbox consumer that inserts a notification for each person an event is for
 * (targeting.ts; key `${seq}:${userId}`, on conflict nothing).
 */
export function createNotifier(deps: NotifierDeps, options: NotifierOptions = {}) {
  return createOutboxConsumer(deps, {
    name: options.name ?? NOTIFIER_CONSUMER,
    ...(options.batchSize !== undefined ? { batchSize: options.batchSize } : {}),
    ...(options.gapSettleMs !== undefined ? { gapSettleMs: options.gapSettleMs } : {}),
    ...(options.beforeCommit ? { beforeCommit: options.beforeCommit } : {}),
    handle: async (tx, rows) => {
      const concerned = rows.filter(
        (r) => !HANDLED_ELSEWHERE.has(r.type) && (options.tenantId === undefined || r.tenantId === options.tenantId),
      );
      return insertNotifications(tx, await targetedNotifications(tx, concerned));
    },
  });
}

export type NotifierLoop = OutboxLoop;

/** Runs notifier passes on outbox wake-ups and every `intervalMs` (default 2 s); see startOutboxLoop. */
export function startNotifier(deps: NotifierDeps, options: NotifierOptions = {}): NotifierLoop {
  return startOutboxLoop(deps, createNotifier(deps, options), options, 'notification pass failed');
}
