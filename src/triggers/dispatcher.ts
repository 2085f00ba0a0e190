/**
 * The trigger dispatcher: the outbox consumer 'triggers'. Each pass, in the consumer's
 * transaction, matches the new events against the tenants' enabled triggers and inserts one
 * `trigger_firings` row per (trigger, event seq) (on conflict nothing), so a crash neither skips
 * nor repeats a firing decision. After the commit the pending firings are run (and any left
 * `running` by a crashed process for longer than `staleMs`), each recording its outcome.
 */
import { appendAudit } from '../db/repositories/audit.js';
import { and, eq, inArray, lt, or, sql } from 'drizzle-orm';
import type { Logger } from 'pino';
import type postgres from 'postgres';
import { signBody } from '../auth/api-keys.js';
import type { Db } from '../db/client.js';
import { findIncident, markWorkflowStarted, toWorkflowInput } from '../db/repositories/incidents.js';
import { findTenant } from '../db/repositories/tenants.js';
import { events } from '../db/schema/events.js';
import { incidents } from '../db/schema/incidents.js';
import { triggerFirings, triggers, type TriggerConditions, type TriggerRow } from '../db/schema/triggers.js';
import { newId } from '../ids.js';
import { insertNotifications, notificationsFor } from '../notifications/notifier.js';
import {
  createOutboxConsumer,
  startOutboxLoop,
  type ConsumerTx,
  type OutboxLoop,
  type OutboxEvent,
  type PassResult,
} from '../outbox/consumer.js';
import { callHttpSkill } from '../skills/http.js';
import { createSkillInvoker, type SkillInvoker, type SkillRuntime } from '../skills/invoke.js';
import type { WorkflowPort } from '../temporal/port.js';
import { failureReason } from '../dependency-failures.js';

export const TRIGGERS_CONSUMER = 'triggers';

export interface TriggerDispatcherDeps {
  db: Db;
  sql: postgres.Sql;
  logger: Logger;
  skills: SkillRuntime;
  /** Needed by `start_investigation`; without it those firings fail with a recorded error. */
  workflows?: WorkflowPort;
}

export interface TriggerDispatcherOptions {
  name?: string;
  batchSize?: number;
  gapSettleMs?: number;
  intervalMs?: number;
  listen?: boolean;
  /** Only this tenant's events (tests: a private consumer ignores the rest of the outbox). */
  tenantId?: string;
  /** Times a firing is run before it stays `failed` (webhooks retry inside each run as well). */
  maxRuns?: number;
  /** A firing `running` for longer than this was left by a crashed process and is run again. */
  staleMs?: number;
  beforeCommit?: (inserted: string[]) => Promise<void> | void;
}

export interface TriggerPassResult extends PassResult {
  /** Firings run after the commit, by final status. */
  ran: Array<{ firingId: string; status: 'succeeded' | 'failed' | 'pending' }>;
}

/** Incident fields the conditions look at, when the event concerns an incident. */
interface IncidentFacts {
  severity: string | null;
  source: string | null;
  service: string | null;
}

type EventRow = typeof events.$inferSelect;
type FiringRow = typeof triggerFirings.$inferSelect;
type FiringStatus = 'succeeded' | 'failed' | 'pending';

const text = (v: unknown): string | null => (typeof v === 'string' && v.length > 0 ? v : null);

/** Whether an event (with its incident's facts) meets a trigger's conditions; an absent or empty list matches anything. */
export function conditionsMatch(
  conditions: TriggerConditions,
  event: OutboxEvent,
  incident: IncidentFacts | undefined,
): boolean {
  const facts = {
    severities:
      text(event.payload.severity) ??
      (event.type === 'incident.severity_changed' ? text(event.payload.to) : null) ??
      incident?.severity ??
      null,
    sources: text(event.payload.source) ?? incident?.source ?? null,
    services: text(event.payload.service) ?? incident?.service ?? null,
  };
  for (const key of ['severities', 'sources', 'services'] as const) {
    const allowed = conditions[key];
    if (!allowed || allowed.length === 0) continue;
    const value = facts[key];
    if (value === null || !allowed.includes(value)) return false;
  }
  return true;
}

/** The JSON a webhook trigger posts (and a skill trigger passes as input). */
export function eventBody(trigger: Pick<TriggerRow, 'id' | 'name'>, event: EventRow) {
  return {
    triggerId: trigger.id,
    triggerName: trigger.name,
    event: {
      seq: event.seq,
      id: event.id,
      type: event.type,
      tenantId: event.tenantId,
      incidentId: event.incidentId,
      payload: event.payload,
      occurredAt: event.occurredAt.toISOString(),
    },
  };
}

/**
 * In the consumer's transaction: one firing row per (enabled trigger, event it matches), on
 * conflict nothing. Answers the ids inserted.
 */
async function recordFirings(tx: ConsumerTx, rows: OutboxEvent[], tenantId: string | undefined): Promise<string[]> {
  const concerned = rows.filter((r) => tenantId === undefined || r.tenantId === tenantId);
  const tenantIds = [...new Set(concerned.map((r) => r.tenantId))];
  if (tenantIds.length === 0) return [];
  const enabled = await tx
    .select()
    .from(triggers)
    .where(and(inArray(triggers.tenantId, tenantIds), eq(triggers.enabled, true)));
  if (enabled.length === 0) return [];
  const incidentIds = [...new Set(concerned.map((r) => r.incidentId).filter((id): id is string => id !== null))];
  const facts = new Map<string, IncidentFacts>();
  if (incidentIds.length > 0) {
    const found = await tx
      .select({
        id: incidents.id,
        severity: incidents.severity,
        source: incidents.source,
        service: incidents.service,
      })
      .from(incidents)
      .where(inArray(incidents.id, incidentIds));
    for (const i of found) facts.set(i.id, i);
  }
  const values: Array<typeof triggerFirings.$inferInsert> = [];
  for (const event of concerned) {
    for (const trigger of enabled) {
      if (trigger.tenantId !== event.tenantId || trigger.eventType !== event.type) continue;
      if (!conditionsMatch(trigger.conditions, event, event.incidentId ? facts.get(event.incidentId) : undefined))
        continue;
      values.push({ id: newId('trg'), tenantId: event.tenantId, triggerId: trigger.id, eventSeq: event.seq });
    }
  }
  if (values.length === 0) return [];
  const inserted = await tx
    .insert(triggerFirings)
    .values(values)
    .onConflictDoNothing({ target: [triggerFirings.triggerId, triggerFirings.eventSeq] })
    .returning({ id: triggerFirings.id });
  return inserted.map((r) => r.id);
}

/** Runs a firing's action once; throws on failure. */
async function execute(
  deps: TriggerDispatcherDeps,
  invoker: SkillInvoker,
  trigger: TriggerRow,
  event: EventRow,
): Promise<void> {
  switch (trigger.action) {
    case 'notify': {
      const [row] = await deps.db
        .select({ title: incidents.title })
        .from(incidents)
        .where(eq(incidents.id, event.incidentId ?? ''));
      const outbox: OutboxEvent = { ...event, incidentTitle: row?.title ?? null };
      const values = await notificationsFor(
        deps.db,
        [outbox],
        (e, userId) => `trigger:${trigger.id}:${e.seq}:${userId}`,
      );
      await insertNotifications(deps.db, values);
      return;
    }
    case 'start_investigation': {
      if (!deps.workflows)
        throw new Error('start_investigation needs the workflow client, which this process does not have');
      const incidentId = event.incidentId ?? text(event.payload.incidentId);
      if (!incidentId) throw new Error(`A ${event.type} event concerns no incident`);
      const incident = await findIncident(deps.db, trigger.tenantId, incidentId);
      if (!incident) throw new Error(`No incident ${incidentId}`);
      if (incident.status === 'closed') throw new Error(`The incident ${incidentId} is closed`);
      await deps.workflows.startInvestigation(toWorkflowInput(incident), incident.title, {
        actor: { type: 'system', id: `trigger:${trigger.id}` },
      });
      if (!incident.workflowStartedAt) await markWorkflowStarted(deps.db, incident.id);
      return;
    }
    case 'invoke_skill': {
      const skillId = text(trigger.actionConfig.skillId);
      if (!skillId) throw new Error('The trigger names no skill');
      const input = trigger.actionConfig.input ?? eventBody(trigger, event);
      const outcome = await invoker.invoke({
        tenantId: trigger.tenantId,
        skillId,
        input,
        idempotencyKey: `trigger:${trigger.id}:${event.seq}`,
      });
      if (!outcome.ok) throw new Error(`${outcome.error.code}: ${outcome.error.message}`);
      return;
    }
    case 'webhook': {
      const url = text(trigger.actionConfig.url);
      if (!url || !trigger.secret) throw new Error('The webhook trigger has no url or secret');
      const tenant = await findTenant(deps.db, trigger.tenantId);
      const body = eventBody(trigger, event);
      // callHttpSkill sends JSON.stringify(input): the same bytes are signed here.
      const signature = signBody(trigger.secret, Buffer.from(JSON.stringify(body)));
      const result = await callHttpSkill({
        url,
        method: 'POST',
        headers: {
          'x-webhook-signature': signature,
          'x-webhook-event': event.type,
          'x-webhook-delivery': `${trigger.id}:${event.seq}`,
        },
        input: body,
        allowPlainHttp: tenant?.settings.allowHttpSkills === true,
        allowlist: deps.skills.allowlist,
        resolver: deps.skills.resolver,
        limits: { ...deps.skills.limits, maxRedirects: 0 },
        onRetry: (attempt, error) =>
          deps.logger.info({ triggerId: trigger.id, attempt, code: error.code }, 'webhook retried'),
      });
      if (result.status >= 400) throw new Error(`The webhook answered ${result.status}`);
      return;
    }
  }
}

/** Marks up to 20 pending (or stale running) firings running, one attempt more each, and answers them. */
function claimFirings(db: Db, tenantId: string | undefined, staleMs: number) {
  return db
    .update(triggerFirings)
    .set({ status: 'running', attempts: sql`${triggerFirings.attempts} + 1`, updatedAt: sql`now()` })
    .where(
      inArray(
        triggerFirings.id,
        db
          .select({ id: triggerFirings.id })
          .from(triggerFirings)
          .where(
            and(
              tenantId !== undefined ? eq(triggerFirings.tenantId, tenantId) : undefined,
              or(
                eq(triggerFirings.status, 'pending'),
                and(
                  eq(triggerFirings.status, 'running'),
                  lt(triggerFirings.updatedAt, sql`now() - ${`${staleMs} milliseconds`}::interval`),
                ),
              ),
            ),
          )
          .orderBy(triggerFirings.eventSeq)
          .limit(20)
          .for('update', { skipLocked: true }),
      ),
    )
    .returning();
}

/** Runs a claimed firing's action and records the outcome: succeeded, failed, or pending (run again later). */
async function runFiring(
  deps: TriggerDispatcherDeps,
  invoker: SkillInvoker,
  firing: FiringRow,
  maxRuns: number,
): Promise<FiringStatus> {
  let status: FiringStatus = 'succeeded';
  let error: string | null = null;
  let trigger: TriggerRow | undefined;
  let event: EventRow | undefined;
  try {
    [trigger] = await deps.db.select().from(triggers).where(eq(triggers.id, firing.triggerId));
    [event] = await deps.db.select().from(events).where(eq(events.seq, firing.eventSeq));
    if (!trigger || !event) throw new Error('The trigger or its event is gone');
    await execute(deps, invoker, trigger, event);
  } catch (err) {
    // Kept and audited, so never with a failed statement's parameters.
    error = failureReason(err).slice(0, 1000);
    status = firing.attempts >= maxRuns ? 'failed' : 'pending';
    deps.logger.warn(
      { firingId: firing.id, triggerId: firing.triggerId, attempts: firing.attempts, error },
      'trigger action failed',
    );
  }
  await deps.db.transaction(async (tx) => {
    await tx
      .update(triggerFirings)
      .set({ status, error, updatedAt: sql`now()` })
      .where(eq(triggerFirings.id, firing.id));
    if (status === 'pending') return; // tried again on a later pass; the outcome is audited
    await appendAudit(tx, {
      tenantId: firing.tenantId,
      actorType: 'system',
      actorId: 'trigger-dispatcher',
      action: status === 'succeeded' ? 'trigger.fired' : 'trigger.failed',
      targetType: 'trigger',
      targetId: firing.triggerId,
      incidentId: event?.incidentId ?? null,
      details: {
        firingId: firing.id,
        eventSeq: firing.eventSeq,
        eventType: event?.type ?? null,
        action: trigger?.action ?? null,
        attempts: firing.attempts,
        ...(error ? { error } : {}),
      },
      idempotencyKey: `${firing.id}:outcome:audit`,
    });
  });
  return status;
}

/** Claims and runs the pending (and stale running) firings. */
async function runFirings(
  deps: TriggerDispatcherDeps,
  invoker: SkillInvoker,
  settings: { tenantId: string | undefined; staleMs: number; maxRuns: number },
): Promise<TriggerPassResult['ran']> {
  const ran: TriggerPassResult['ran'] = [];
  for (;;) {
    const claimed = await claimFirings(deps.db, settings.tenantId, settings.staleMs);
    if (claimed.length === 0) return ran;
    for (const firing of claimed) {
      ran.push({ firingId: firing.id, status: await runFiring(deps, invoker, firing, settings.maxRuns) });
    }
    if (ran.some((r) => r.status === 'pending')) return ran; // retried on the next pass, not in a tight loop
  }
}

export function createTriggerDispatcher(deps: TriggerDispatcherDeps, options: TriggerDispatcherOptions = {}) {
  const settings = {
    tenantId: options.tenantId,
    staleMs: options.staleMs ?? 5 * 60_000,
    maxRuns: options.maxRuns ?? 3,
  };
  const invoker = createSkillInvoker({ db: deps.db, runtime: deps.skills, logger: deps.logger });
  const consumer = createOutboxConsumer(deps, {
    name: options.name ?? TRIGGERS_CONSUMER,
    ...(options.batchSize !== undefined ? { batchSize: options.batchSize } : {}),
    ...(options.gapSettleMs !== undefined ? { gapSettleMs: options.gapSettleMs } : {}),
    ...(options.beforeCommit ? { beforeCommit: options.beforeCommit } : {}),
    handle: (tx, rows) => recordFirings(tx, rows, options.tenantId),
  });
  return {
    name: consumer.name,
    async runOnce(): Promise<TriggerPassResult> {
      const pass = await consumer.runOnce();
      const ran = await runFirings(deps, invoker, settings);
      return { ...pass, ran };
    },
  };
}

/** Runs dispatcher passes on outbox wake-ups and every `intervalMs` (default 2 s), like the notifier. */
export function startTriggerDispatcher(
  deps: TriggerDispatcherDeps,
  options: TriggerDispatcherOptions = {},
): OutboxLoop {
  return startOutboxLoop(deps, createTriggerDispatcher(deps, options), options, 'trigger pass failed');
}
