import { inArray } from 'drizzle-orm';
import type { Logger } from 'pino';
import type postgres from 'postgres';
import type { Db } from '../db/client.js';
import { notifications, users } from '../db/schema/remediation.js';
import { activeUsers } from '../db/repositories/users.js';
import { newId } from '../ids.js';
import { createOutboxConsumer, startOutboxLoop, type OutboxEvent, type OutboxLoop } from '../outbox/consumer.js';
import { ADMIN_ONLY_EVENTS, isEventType, type EventType } from '../outbox/events.js';

/** The `event_consumers` row of the notifier. */
export const NOTIFIER_CONSUMER = 'notifications';

/** Created by the remediation activity itself (admins only, key `${approvalId}:${userId}`). */
const HANDLED_ELSEWHERE: ReadonlySet<string> = new Set<EventType>(['approval.requested']);

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
  if (!isEventType(type)) return null;
  const about = incidentTitle ? `Incident "${incidentTitle}"` : 'The incident';
  const d = ((): { title: string; body: string } => {
    switch (type) {
      case 'incident.created':
        return {
          title: `Incident opened: ${str(payload.title) ?? incidentTitle ?? 'untitled'}`,
          body: `A ${str(payload.severity) ?? 'new'} severity incident was opened (${str(payload.source) ?? 'manual'}).`,
        };
      case 'incident.status_changed':
        return {
          title: `Incident ${str(payload.to) ?? 'updated'}`,
          body: `${about} moved from ${str(payload.from) ?? '?'} to ${str(payload.to) ?? '?'}.`,
        };
      case 'incident.severity_changed':
        return {
          title: `Severity changed to ${str(payload.to) ?? '?'}`,
          body: `${about} changed severity from ${str(payload.from) ?? '?'} to ${str(payload.to) ?? '?'}${str(payload.reason) ? ` (${str(payload.reason)})` : ''}.`,
        };
      case 'incident.resolved':
        return {
          title: `Incident resolved${incidentTitle ? `: ${incidentTitle}` : ''}`,
          body: `${about} was resolved.`,
        };
      case 'triage.completed':
        return {
          title: `Triage completed: ${str(payload.priority) ?? '?'} priority`,
          body: str(payload.summary) ?? `${about} was triaged.`,
        };
      case 'triage.failed':
        return {
          title: 'Triage failed',
          body: `${about} could not be triaged${str(payload.reason) ? `: ${str(payload.reason)}` : '.'}`,
        };
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
          body: `${about} could not be investigated${(str(payload.message) ?? str(payload.reason)) ? `: ${str(payload.message) ?? str(payload.reason)}` : '.'}`,
        };
      case 'approval.requested':
        return {
          title: 'Approval requested',
          body: `A remediation for ${incidentTitle ? `"${incidentTitle}"` : 'an incident'} awaits approval${str(payload.deadline) ? ` until ${str(payload.deadline)}` : ''}.`,
        };
      case 'approval.expired':
        return {
          title: 'Approval expired',
          body: `The remediation for ${incidentTitle ? `"${incidentTitle}"` : 'the incident'} was not approved in time and is cancelled.`,
        };
      case 'remediation.approved':
        return {
          title: 'Remediation approved',
          body: `The remediation for ${incidentTitle ? `"${incidentTitle}"` : 'the incident'} was approved and is executing.`,
        };
      case 'remediation.rejected':
        return {
          title: 'Remediation rejected',
          body: `The remediation for ${incidentTitle ? `"${incidentTitle}"` : 'the incident'} was rejected.`,
        };
      case 'remediation.completed':
        return {
          title: 'Remediation completed',
          body: `The remediation for ${incidentTitle ? `"${incidentTitle}"` : 'the incident'} completed${str(payload.verification) ? `: ${str(payload.verification)}` : '.'}`,
        };
      case 'remediation.failed':
        return {
          title: 'Remediation failed',
          body: `The remediation for ${incidentTitle ? `"${incidentTitle}"` : 'the incident'} failed${str(payload.failure) ? `: ${str(payload.failure)}` : '.'}`,
        };
      case 'knowledge.pattern_created':
        return {
          title: 'New pattern learned',
          body: str(payload.title) ?? str(payload.description) ?? 'A new incident pattern was recorded.',
        };
      case 'knowledge.pattern_promoted':
        return {
          title: 'Pattern promoted to stable',
          body: str(payload.title) ?? str(payload.description) ?? 'An incident pattern is now stable.',
        };
      case 'knowledge.feedback_received':
        return {
          title: 'Feedback received',
          body: `Feedback was given on ${incidentTitle ? `"${incidentTitle}"` : 'an investigation'}.`,
        };
      case 'system.quota_warning': {
        const metric = str(payload.metric) ?? 'usage';
        return {
          title: `Quota warning: ${metric} at ${num(payload.percent) ?? '?'}%`,
          body: `${num(payload.used) ?? '?'} of ${num(payload.limit) ?? '?'} ${metric} used${str(payload.period) ? ` in ${str(payload.period)}` : ''}.`,
        };
      }
      case 'system.export_completed':
        return {
          title: 'Export completed',
          body: str(payload.url) ? `Your export is ready: ${str(payload.url)}` : 'Your export is ready.',
        };
    }
  })();
  return { title: clip(d.title, MAX_TITLE), body: clip(d.body, MAX_BODY) };
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
  /** How long a gap in `seq` must have been seen before it counts as final (see createOutboxConsumer). */
  gapSettleMs?: number;
  /** Only notify this tenant's users (tests: a private consumer ignores the rest of the outbox). */
  tenantId?: string;
  intervalMs?: number;
  listen?: boolean;
  /** Called inside the transaction after the inserts (tests simulate a crash by throwing). */
  beforeCommit?: (inserted: string[]) => Promise<void> | void;
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
      : await tx
          .select({ tenantId: users.tenantId, userId: users.userId, roles: users.roles })
          .from(users)
          .where(activeUsers(inArray(users.tenantId, tenantIds)));
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
      if (
        adminOnly
          ? !person.roles.includes('admin')
          : !person.roles.includes('admin') && !person.roles.includes('member')
      )
        continue;
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
      const concerned = rows.filter(
        (r) => !HANDLED_ELSEWHERE.has(r.type) && (options.tenantId === undefined || r.tenantId === options.tenantId),
      );
      return insertNotifications(tx, await notificationsFor(tx, concerned));
    },
  });
}

export type NotifierLoop = OutboxLoop;

/** Runs notifier passes on outbox wake-ups and every `intervalMs` (default 2 s); see startOutboxLoop. */
export function startNotifier(deps: NotifierDeps, options: NotifierOptions = {}): NotifierLoop {
  return startOutboxLoop(deps, createNotifier(deps, options), options, 'notification pass failed');
}
