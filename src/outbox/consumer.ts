import { and, asc, eq, gt, sql } from 'drizzle-orm';
import type { Logger } from 'pino';
import type postgres from 'postgres';
import type { Db } from '../db/client.js';
import { events } from '../db/schema/events.js';
import { incidents } from '../db/schema/incidents.js';
import { eventConsumers } from '../db/schema/remediation.js';
import { eventsChannel } from './append.js';

export interface OutboxDeps {
  db: Db;
  sql: postgres.Sql;
}

export interface PassResult {
  /** Events consumed (last_seq advanced past them). */
  consumed: number;
  /** Notifications inserted now. */
  created: number;
  /** An unsettled gap in `seq` stopped the pass; a later pass continues. */
  blocked: boolean;
  lastSeq: number;
}

interface Observation {
  /** The highest seq seen committed. */
  seq: number;
  /** `pg_snapshot_xmax` taken after it was seen. */
  xmax: bigint;
  at: number;
}

/** An outbox event as a consumer sees it (with the incident's title when it concerns one). */
export interface OutboxEvent {
  seq: number;
  tenantId: string;
  type: string;
  incidentId: string | null;
  payload: Record<string, unknown>;
  occurredAt: Date;
  incidentTitle: string | null;
}

export type ConsumerTx = Parameters<Parameters<Db['transaction']>[0]>[0];

export interface OutboxConsumerOptions {
  /** The consumer's name in `event_consumers`. */
  name: string;
  batchSize?: number;
  gapSettleMs?: number;
  /** Writes the consumer's rows for the events, inside the pass's transaction; returns what it inserted. */
  handle: (tx: ConsumerTx, rows: OutboxEvent[]) => Promise<string[]>;
  /** Called inside the transaction after `handle` (tests simulate a crash by throwing). */
  beforeCommit?: (inserted: string[]) => Promise<void> | void;
}

/**
 * A durable consumer of the outbox. Each pass, in one transaction, locks its `event_consumers`
 * row, reads the events after `last_seq` in seq order, lets `handle` write its rows (idempotent
 * keys, on conflict nothing) and advances `last_seq`; a crash commits either all of it or none.
 *
 * `seq` values commit out of order and leave holes (rollbacks, `on conflict do nothing`). A
 * hole is only stepped over once it is final: when every transaction that was running when a
 * later seq was seen has ended (the current snapshot's xmin has passed the xmax noted then) and
 * at least `gapSettleMs` has passed. Until then the pass stops before the hole.
 */
export function createOutboxConsumer(deps: OutboxDeps, options: OutboxConsumerOptions) {
  const name = options.name;
  const batchSize = options.batchSize ?? 500;
  const gapSettleMs = options.gapSettleMs ?? 1000;
  let observations: Observation[] = [];
  /** Every hole at or below this seq is final. */
  let settledThrough = 0;

  const settle = async (maxSeen: number) => {
    const [snap] = await deps.sql<Array<{ xmin: string; xmax: string }>>`
      select pg_snapshot_xmin(pg_current_snapshot())::text as xmin, pg_snapshot_xmax(pg_current_snapshot())::text as xmax`;
    const xmin = BigInt(snap!.xmin);
    const now = Date.now();
    const remaining: Observation[] = [];
    for (const o of observations) {
      if (xmin >= o.xmax && now - o.at >= gapSettleMs) settledThrough = Math.max(settledThrough, o.seq);
      else remaining.push(o);
    }
    if (maxSeen > settledThrough && !remaining.some((o) => o.seq >= maxSeen))
      remaining.push({ seq: maxSeen, xmax: BigInt(snap!.xmax), at: now });
    observations = remaining.slice(-100);
  };

  const runOnce = async (): Promise<PassResult> => {
    if (observations.length > 0) await settle(0);
    await deps.db
      .insert(eventConsumers)
      .values({ name, lastSeq: 0 })
      .onConflictDoNothing({ target: eventConsumers.name });
    const result = await deps.db.transaction(async (tx) => {
      const [consumer] = await tx.select().from(eventConsumers).where(eq(eventConsumers.name, name)).for('update');
      const lastSeq = consumer!.lastSeq;
      const rows = await tx
        .select({
          seq: events.seq,
          tenantId: events.tenantId,
          type: events.type,
          incidentId: events.incidentId,
          payload: events.payload,
          occurredAt: events.occurredAt,
          incidentTitle: incidents.title,
        })
        .from(events)
        .leftJoin(incidents, eq(incidents.id, events.incidentId))
        .where(gt(events.seq, lastSeq))
        .orderBy(asc(events.seq))
        .limit(batchSize);
      const take: typeof rows = [];
      let expected = lastSeq + 1;
      let blocked = false;
      for (const row of rows) {
        if (row.seq !== expected && row.seq > settledThrough + 1) {
          blocked = true;
          break;
        }
        take.push(row);
        expected = row.seq + 1;
      }
      const inserted = await options.handle(tx, take);
      const newLast = take.at(-1)?.seq ?? lastSeq;
      if (newLast !== lastSeq) {
        await tx
          .update(eventConsumers)
          .set({ lastSeq: newLast, updatedAt: sql`now()` })
          .where(and(eq(eventConsumers.name, name), eq(eventConsumers.lastSeq, lastSeq)));
      }
      await options.beforeCommit?.(inserted);
      return {
        consumed: take.length,
        created: inserted.length,
        blocked,
        lastSeq: newLast,
        maxSeen: rows.at(-1)?.seq ?? lastSeq,
      };
    });
    if (result.blocked) await settle(result.maxSeen);
    else observations = [];
    return { consumed: result.consumed, created: result.created, blocked: result.blocked, lastSeq: result.lastSeq };
  };

  return { name, runOnce };
}

export interface OutboxLoopOptions {
  /** Events per transaction: a full batch schedules another pass at once. */
  batchSize?: number;
  /** A pass stopped by an unsettled hole is retried after this long. */
  gapSettleMs?: number;
  intervalMs?: number;
  listen?: boolean;
}

export interface OutboxLoop {
  runOnce(): Promise<PassResult>;
  stop(): Promise<void>;
}

/**
 * Runs an outbox consumer's passes when an event is appended (LISTEN on the outbox channel) and
 * every `intervalMs` (default 2 s) as a safety net. Passes never overlap; a wake-up during a pass
 * schedules one more, as does a full batch or a hole in `seq` that is not final yet.
 */
export function startOutboxLoop(
  deps: Pick<OutboxDeps, 'sql'> & { logger: Logger },
  notifier: { runOnce(): Promise<PassResult> },
  options: OutboxLoopOptions,
  failureMessage: string,
): OutboxLoop {
  const batchSize = options.batchSize ?? 500;
  let running: Promise<unknown> | null = null;
  let again = false;
  let stopped = false;
  let retry: NodeJS.Timeout | null = null;

  const wake = (): void => {
    if (stopped) return;
    if (running) {
      again = true;
      return;
    }
    running = notifier
      .runOnce()
      .then((r) => {
        if (r.consumed >= batchSize) again = true;
        else if (r.blocked && !retry) {
          retry = setTimeout(() => {
            retry = null;
            wake();
          }, options.gapSettleMs ?? 1000);
          retry.unref();
        }
      })
      .catch((err: unknown) => deps.logger.warn({ err }, failureMessage))
      .finally(() => {
        running = null;
        if (again) {
          again = false;
          wake();
        }
      });
  };

  const timer = setInterval(wake, options.intervalMs ?? 2_000);
  timer.unref();
  const listening =
    options.listen === false
      ? Promise.resolve(null)
      : deps.sql
          .listen(eventsChannel, () => wake(), wake)
          .catch((err: unknown) => {
            deps.logger.warn({ err }, 'LISTEN failed; passes run on the interval only');
            return null;
          });

  return {
    runOnce: notifier.runOnce,
    async stop() {
      stopped = true;
      clearInterval(timer);
      if (retry) clearTimeout(retry);
      const listener = await listening;
      // Its connection may be gone already (PostgreSQL stopped first, as a terminal's Ctrl-C
      // does): nothing is left to unlisten, and the rest of the stop must still run.
      await listener?.unlisten().catch(() => undefined);
      await running;
    },
  };
}
