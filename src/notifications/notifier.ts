import { and, asc, eq, gt, inArray, sql } from 'drizzle-orm';
import type { Logger } from 'pino';
import type postgres from 'postgres';
import type { Db } from '../db/client.js';
import { eventsChannel } from '../db/repositories/events.js';
import { events } from '../db/schema/events.js';
import { incidents } from '../db/schema/incidents.js';
import { eventConsumers, notifications, users } from '../db/schema/remediation.js';
import { activeUsers } from '../db/repositories/users.js';
import { newId } from '../ids.js';

/** The `event_consumers` row of the notifier. */
export const NOTIFIER_CONSUMER = 'notifications';

/** Created by the remediation activity itself (admins only, key `${approvalId}:${userId}`). */
const HANDLED_ELSEWHERE = new Set(['approval.requested']);
/**
 * Events only admins are told about, and only admins' event streams carry: an audit export is an
 * admin's (its download is an admin's alone). Everything else, quota warnings included (members'
 * alerts are refused past the quota), goes to every user of the tenant.
 */
export const ADMIN_ONLY_EVENTS: ReadonlySet<string> = new Set(['system.export_completed']);

const MAX_TITLE = 200;
const MAX_BODY = 1000;

const str = (v: unknown): string | undefined => (typeof v === 'string' && v.length > 0 ? v : undefined);
const num = (v: unknown): number | undefined => (typeof v === 'number' && Number.isFinite(v) ? v : undefined);
const clip = (text: string, max: number) => (text.length > max ? `${text.slice(0, max - 1)}…` : text);

/**
 * Short human title and body for an event of DESIGN §5; null for a type that is not one of them.
 * `incidentTitle` is the incident's title when the event concerns one.
 */
export function describeEvent(
  type: string,
  payload: Record<string, unknown>,
  incidentTitle?: string | null,
): { title: string; body: string } | null {
  const about = incidentTitle ? `Incident "${incidentTitle}"` : 'The incident';
  const d = ((): { title: string; body: string } | null => {
    switch (type) {
      case 'incident.created':
        return {
          title: `Incident opened: ${str(payload.title) ?? incidentTitle ?? 'untitled'}`,
          body: `A ${str(payload.severity) ?? 'new'} severity incident was opened (${str(payload.source) ?? 'manual'}).`,
        };
      case 'incident.status_changed':
        return { title: `Incident ${str(payload.to) ?? 'updated'}`, body: `${about} moved from ${str(payload.from) ?? '?'} to ${str(payload.to) ?? '?'}.` };
      case 'incident.severity_changed':
        return {
          title: `Severity changed to ${str(payload.to) ?? '?'}`,
          body: `${about} changed severity from ${str(payload.from) ?? '?'} to ${str(payload.to) ?? '?'}${str(payload.reason) ? ` (${str(payload.reason)})` : ''}.`,
        };
      case 'incident.resolved':
        return { title: `Incident resolved${incidentTitle ? `: ${incidentTitle}` : ''}`, body: `${about} was resolved.` };
      case 'triage.completed':
        return { title: `Triage completed: ${str(payload.priority) ?? '?'} priority`, body: str(payload.summary) ?? `${about} was triaged.` };
      case 'triage.failed':
        return { title: 'Triage failed', body: `${about} could not be triaged${str(payload.reason) ? `: ${str(payload.reason)}` : '.'}` };
      case 'investigation.started':
        return { title: 'Investigation started', body: `${about} is being investigated.` };
      case 'investigation.evidence_added': {
        const added = num(payload.added) ?? 0;
        return {
          title: `Evidence added: ${added} item${added === 1 ? '' : 's'}`,
          body: `${str(payload.agentRole) ? `The ${str(payload.agentRole)} agent` : 'An agent'} added evidence to ${incidentTitle ? `"${incidentTitle}"` : 'the incident'}.`,
        };
      }
      case 'investigation.completed': {
        const confidence = num(payload.confidence);
        return {
          title: `Root cause found: ${str(payload.rootCause) ?? 'see the investigation'}`,
          body: `${about} was investigated${confidence !== undefined ? ` (confidence ${Math.round(confidence * 100)}%)` : ''}.`,
        };
      }
      case 'investigation.failed':
        return {
          title: 'Investigation failed',
          body: `${about} could not be investigated${str(payload.message) ?? str(payload.reason) ? `: ${str(payload.message) ?? str(payload.reason)}` : '.'}`,
        };
      case 'approval.requested':
        return {
          title: 'Approval requested',
          body: `A remediation for ${incidentTitle ? `"${incidentTitle}"` : 'an incident'} awaits approval${str(payload.deadline) ? ` until ${str(payload.deadline)}` : ''}.`,
        };
      case 'approval.expired':
        return { title: 'Approval expired', body: `The remediation for ${incidentTitle ? `"${incidentTitle}"` : 'the incident'} was not approved in time and is cancelled.` };
      case 'remediation.approved':
        return { title: 'Remediation approved', body: `The remediation for ${incidentTitle ? `"${incidentTitle}"` : 'the incident'} was approved and is executing.` };
      case 'remediation.rejected':
        return { title: 'Remediation rejected', body: `The remediation for ${incidentTitle ? `"${incidentTitle}"` : 'the incident'} was rejected.` };
      case 'remediation.completed':
        return { title: 'Remediation completed', body: `The remediation for ${incidentTitle ? `"${incidentTitle}"` : 'the incident'} completed${str(payload.verification) ? `: ${str(payload.verification)}` : '.'}` };
      case 'remediation.failed':
        return { title: 'Remediation failed', body: `The remediation for ${incidentTitle ? `"${incidentTitle}"` : 'the incident'} failed${str(payload.failure) ? `: ${str(payload.failure)}` : '.'}` };
      case 'knowledge.pattern_created':
        return { title: 'New pattern learned', body: str(payload.title) ?? str(payload.description) ?? 'A new incident pattern was recorded.' };
      case 'knowledge.pattern_promoted':
        return { title: 'Pattern promoted to stable', body: str(payload.title) ?? str(payload.description) ?? 'An incident pattern is now stable.' };
      case 'knowledge.feedback_received':
        return { title: 'Feedback received', body: `Feedback was given on ${incidentTitle ? `"${incidentTitle}"` : 'an investigation'}.` };
      case 'system.quota_warning': {
        const metric = str(payload.metric) ?? 'usage';
        return {
          title: `Quota warning: ${metric} at ${num(payload.percent) ?? '?'}%`,
          body: `${num(payload.used) ?? '?'} of ${num(payload.limit) ?? '?'} ${metric} used${str(payload.period) ? ` in ${str(payload.period)}` : ''}.`,
        };
      }
      case 'system.export_completed':
        return { title: 'Export completed', body: str(payload.url) ? `Your export is ready: ${str(payload.url)}` : 'Your export is ready.' };
      default:
        return null;
    }
  })();
  return d && { title: clip(d.title, MAX_TITLE), body: clip(d.body, MAX_BODY) };
}

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
  /** How long a gap in `seq` must have been seen before it counts as final (see below). */
  gapSettleMs?: number;
  /** Only notify this tenant's users (tests: a private consumer ignores the rest of the outbox). */
  tenantId?: string;
  intervalMs?: number;
  listen?: boolean;
  /** Called inside the transaction after the inserts (tests simulate a crash by throwing). */
  beforeCommit?: (inserted: string[]) => Promise<void> | void;
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
export function createOutboxConsumer(deps: Pick<NotifierDeps, 'db' | 'sql'>, options: OutboxConsumerOptions) {
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
    if (maxSeen > settledThrough && !remaining.some((o) => o.seq >= maxSeen)) remaining.push({ seq: maxSeen, xmax: BigInt(snap!.xmax), at: now });
    observations = remaining.slice(-100);
  };

  const runOnce = async (): Promise<PassResult> => {
    if (observations.length > 0) await settle(0);
    await deps.db.insert(eventConsumers).values({ name, lastSeq: 0 }).onConflictDoNothing({ target: eventConsumers.name });
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
      return { consumed: take.length, created: inserted.length, blocked, lastSeq: newLast, maxSeen: rows.at(-1)?.seq ?? lastSeq };
    });
    if (result.blocked) await settle(result.maxSeen);
    else observations = [];
    return { consumed: result.consumed, created: result.created, blocked: result.blocked, lastSeq: result.lastSeq };
  };

  return { name, runOnce };
}

/** One notification per concerned user of each event (key `${seq}:${userId}`), for the notifier and `notify` triggers. */
export async function notificationsFor(
  tx: Pick<Db, 'select'>,
  rows: OutboxEvent[],
  keyOf: (row: OutboxEvent, userId: string) => string = (row, userId) => `${row.seq}:${userId}`,
): Promise<Array<typeof notifications.$inferInsert>> {
  const tenantIds = [...new Set(rows.map((r) => r.tenantId))];
  const people =
    tenantIds.length === 0
      ? []
      : await tx.select({ tenantId: users.tenantId, userId: users.userId, roles: users.roles }).from(users).where(activeUsers(inArray(users.tenantId, tenantIds)));
  const values: Array<typeof notifications.$inferInsert> = [];
  for (const row of rows) {
    const text = describeEvent(row.type, row.payload, row.incidentTitle);
    if (!text) continue; // not one of the catalogue's events
    const adminOnly = ADMIN_ONLY_EVENTS.has(row.type);
    const payload: Record<string, unknown> = { ...text, eventSeq: row.seq };
    for (const k of ['incidentId', 'remediationId', 'approvalId'] as const) {
      const v = str(row.payload[k]);
      if (v) payload[k] = v;
    }
    for (const person of people) {
      if (person.tenantId !== row.tenantId) continue;
      if (adminOnly ? !person.roles.includes('admin') : !person.roles.includes('admin') && !person.roles.includes('member')) continue;
      values.push({
        id: newId('ntf'),
        tenantId: row.tenantId,
        userId: person.userId,
        type: row.type,
        incidentId: row.incidentId ?? str(row.payload.incidentId) ?? null,
        payload,
        idempotencyKey: keyOf(row, person.userId),
        createdAt: row.occurredAt,
      });
    }
  }
  return values;
}

/** Inserts notifications, once per idempotency key; returns the ids inserted now. */
export async function insertNotifications(tx: Pick<Db, 'insert'>, values: Array<typeof notifications.$inferInsert>): Promise<string[]> {
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
 * The notifier: the outbox consumer that inserts one notification per concerned user of each
 * event (key `${seq}:${userId}`, on conflict nothing).
 */
export function createNotifier(deps: NotifierDeps, options: NotifierOptions = {}) {
  return createOutboxConsumer(deps, {
    name: options.name ?? NOTIFIER_CONSUMER,
    ...(options.batchSize !== undefined ? { batchSize: options.batchSize } : {}),
    ...(options.gapSettleMs !== undefined ? { gapSettleMs: options.gapSettleMs } : {}),
    ...(options.beforeCommit ? { beforeCommit: options.beforeCommit } : {}),
    handle: async (tx, rows) => {
      const concerned = rows.filter((r) => !HANDLED_ELSEWHERE.has(r.type) && (options.tenantId === undefined || r.tenantId === options.tenantId));
      return insertNotifications(tx, await notificationsFor(tx, concerned));
    },
  });
}

export interface NotifierLoop {
  runOnce(): Promise<PassResult>;
  stop(): Promise<void>;
}

/**
 * Runs notifier passes when an event is appended (LISTEN on the outbox channel) and every
 * `intervalMs` (default 2 s) as a safety net. Passes never overlap; a wake-up during a pass
 * schedules one more, as does a full batch or a hole in `seq` that is not final yet.
 */
export function startNotifier(deps: NotifierDeps, options: NotifierOptions = {}): NotifierLoop {
  return startOutboxLoop(deps, createNotifier(deps, options), options, 'notification pass failed');
}

/** Runs an outbox consumer's passes on LISTEN wake-ups and every `intervalMs`, never overlapping (see startNotifier). */
export function startOutboxLoop(
  deps: Pick<NotifierDeps, 'sql' | 'logger'>,
  notifier: { runOnce(): Promise<PassResult> },
  options: Pick<NotifierOptions, 'batchSize' | 'gapSettleMs' | 'intervalMs' | 'listen'>,
  failureMessage: string,
): NotifierLoop {
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
      : deps.sql.listen(eventsChannel, () => wake(), wake).catch((err: unknown) => {
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
