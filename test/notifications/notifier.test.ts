import { and, eq, inArray, max, sql } from 'drizzle-orm';
import pino from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { appendEventUnchecked as appendEvent } from '../../src/outbox/append.js';
import { ACTIVE_USER_WINDOW_MS } from '../../src/db/repositories/users.js';
import { events } from '../../src/db/schema/events.js';
import { eventConsumers, notifications, users } from '../../src/db/schema/remediation.js';
import { newId } from '../../src/ids.js';
import { createNotifier } from '../../src/notifications/notifier.js';
import { startTestService, type TestService } from '../helpers/service.js';
import { eventually } from '../helpers/webhooks.js';

let svc: TestService;

beforeAll(async () => {
  svc = await startTestService({ withoutWorker: true, withoutDispatcher: true });
});
afterAll(() => svc?.stop());

const db = () => svc.database.db;

/** A consumer of its own, positioned at the end of the outbox, that only notifies `tenantId`. */
async function privateNotifier(tenantId: string, extra: Parameters<typeof createNotifier>[1] = {}) {
  const name = `test-${newId('ntf')}`;
  const [top] = await db()
    .select({ seq: max(events.seq) })
    .from(events);
  await db()
    .insert(eventConsumers)
    .values({ name, lastSeq: top?.seq ?? 0 });
  return createNotifier(
    { db: db(), sql: svc.database.sql, logger: pino({ level: 'silent' }) },
    { name, tenantId, gapSettleMs: 0, ...extra },
  );
}

async function lastSeqOf(name: string) {
  const [row] = await db().select().from(eventConsumers).where(eq(eventConsumers.name, name));
  return row!.lastSeq;
}

/** Passes until the consumer is past `seq` (other test files append events meanwhile). */
async function drainPast(notifier: { name: string; runOnce: () => Promise<unknown> }, seq: number) {
  for (let i = 0; i < 200; i++) {
    await notifier.runOnce();
    if ((await lastSeqOf(notifier.name)) >= seq) return;
    await new Promise((r) => setTimeout(r, 20));
  }
  throw new Error(`consumer did not get past ${seq}`);
}

/** Passes that must all stop before `seq`: an earlier event is still being written. */
async function staysBefore(notifier: { runOnce: () => Promise<{ lastSeq: number }> }, seq: number, passes = 5) {
  for (let i = 0; i < passes; i++) {
    expect((await notifier.runOnce()).lastSeq).toBeLessThan(seq);
    await new Promise((r) => setTimeout(r, 20));
  }
}

async function tenantWithUsers() {
  const { tenantId } = await svc.newTenant();
  await db()
    .insert(users)
    .values([
      { tenantId, userId: 'alice-admin', roles: ['admin'] },
      { tenantId, userId: 'bob-member', roles: ['member'] },
      { tenantId, userId: 'carol-both', roles: ['member', 'admin'] },
    ]);
  return tenantId;
}

async function append(
  tenantId: string,
  type: string,
  payload: Record<string, unknown>,
  incidentId: string | null = null,
) {
  await db().transaction((tx) =>
    appendEvent(tx, { tenantId, type, incidentId, payload, idempotencyKey: newId('oev') }),
  );
  const [row] = await db()
    .select({ seq: max(events.seq) })
    .from(events)
    .where(eq(events.tenantId, tenantId));
  return row!.seq!;
}

/** Appended without NOTIFY, so a notifier of another test file only sees it on its interval. */
async function appendQuiet(
  tenantId: string,
  type: string,
  payload: Record<string, unknown>,
  incidentId: string | null = null,
) {
  const [row] = await db()
    .insert(events)
    .values({ id: newId('oev'), tenantId, type, incidentId, payload, idempotencyKey: newId('oev') })
    .returning({ seq: events.seq });
  return row!.seq;
}

const byUser = async (tenantId: string) => {
  const rows = await db().select().from(notifications).where(eq(notifications.tenantId, tenantId));
  const out: Record<string, string[]> = {};
  for (const r of rows) (out[r.userId] ??= []).push(r.type);
  for (const k of Object.keys(out)) out[k]!.sort();
  return { rows, out };
};

describe('notifier: fan-out', () => {
  it('notifies the members and admins of the event tenant seen in the last 90 days whom the event is for (targeting.test.ts has every rule), approval requests not again', async () => {
    const tenantId = await tenantWithUsers();
    // Seen just inside the active window, and just past it (decision 231).
    await db()
      .insert(users)
      .values([
        {
          tenantId,
          userId: 'erin-away',
          roles: ['member'],
          lastSeenAt: new Date(Date.now() - ACTIVE_USER_WINDOW_MS + 86_400_000),
        },
        {
          tenantId,
          userId: 'dave-left',
          roles: ['member', 'admin'],
          lastSeenAt: new Date(Date.now() - ACTIVE_USER_WINDOW_MS - 86_400_000),
        },
      ]);
    const other = await tenantWithUsers();
    const notifier = await privateNotifier(tenantId);
    const incidentId = newId('inc');
    await append(
      tenantId,
      'incident.created',
      { incidentId, title: 'Checkout down', severity: 'high', source: 'manual' },
      incidentId,
    );
    await append(
      tenantId,
      'investigation.completed',
      { incidentId, rootCause: 'pool exhausted', confidence: 0.9 },
      incidentId,
    );
    await append(
      tenantId,
      'approval.requested',
      { incidentId, remediationId: 'rem_x', approvalId: 'apr_x' },
      incidentId,
    );
    await append(
      tenantId,
      'remediation.completed',
      { incidentId, remediationId: 'rem_1', verification: 'healthy' },
      incidentId,
    );
    await append(tenantId, 'system.quota_warning', {
      metric: 'events',
      period: '2025-01',
      used: 800,
      limit: 1000,
      percent: 80,
    });
    await append(tenantId, 'system.export_completed', { exportId: 'exp_1', rows: 10 });
    await append(tenantId, 'not.in.catalogue', {});
    const last = await append(other, 'incident.created', { incidentId: 'inc_other', title: 'Other tenant' });
    await drainPast(notifier, last);

    const { rows, out } = await byUser(tenantId);
    // A high incident reaches everyone, so its conclusion reaches everyone notified of it; a
    // completed remediation is progress (nobody); quota warnings and exports are the admins'.
    const all = ['incident.created', 'investigation.completed'];
    const admins = ['incident.created', 'investigation.completed', 'system.export_completed', 'system.quota_warning'];
    expect(out['bob-member']).toEqual(all);
    expect(out['alice-admin']).toEqual(admins);
    expect(out['carol-both']).toEqual(admins);
    expect(out['erin-away']).toEqual(all);
    expect(out['dave-left']).toBeUndefined();
    const opened = rows.find((r) => r.type === 'incident.created' && r.userId === 'bob-member')!;
    expect(opened.payload).toMatchObject({ title: 'Incident opened: Checkout down', incidentId });
    expect(opened.incidentId).toBe(incidentId);
    expect(rows.find((r) => r.type === 'investigation.completed')!.payload.title).toBe(
      'Root cause found: pool exhausted',
    );
    expect(rows.find((r) => r.type === 'system.quota_warning')!.payload.title).toBe('Quota warning: events at 80%');
    // The tenant's events reached none of the other tenant's users.
    const seqs = rows.map((r) => `${String(r.payload.eventSeq)}:`);
    const leaked = await db().select().from(notifications).where(eq(notifications.tenantId, other));
    expect(leaked.filter((r) => seqs.some((s) => r.idempotencyKey.startsWith(s)))).toEqual([]);
  });
});

describe('notifier: exactly once', () => {
  it('a second run creates nothing more', async () => {
    const tenantId = await tenantWithUsers();
    const notifier = await privateNotifier(tenantId);
    const last = await append(
      tenantId,
      'incident.created',
      { incidentId: 'inc_1', title: 'Down', severity: 'critical', source: 'manual' },
      'inc_1',
    );
    await drainPast(notifier, last);
    const again = await notifier.runOnce();
    expect(again.created).toBe(0);
    const { rows } = await byUser(tenantId);
    expect(rows).toHaveLength(3);
    expect(new Set(rows.map((r) => r.idempotencyKey)).size).toBe(3);
    expect(rows.map((r) => r.idempotencyKey).sort()).toEqual(
      ['alice-admin', 'bob-member', 'carol-both'].map((u) => `${last}:${u}`),
    );
  });

  it('a pass that crashes after inserting commits nothing; the next pass creates each notification once', async () => {
    const tenantId = await tenantWithUsers();
    let crash = true;
    const crashed: string[] = [];
    const notifier = await privateNotifier(tenantId, {
      beforeCommit: (inserted) => {
        if (crash && inserted.length > 0) {
          crashed.push(...inserted);
          throw new Error('simulated crash');
        }
      },
    });
    // Written without NOTIFY, so only this consumer picks them up at once.
    const first = await appendQuiet(
      tenantId,
      'incident.created',
      { incidentId: 'inc_2', title: 'DB saturated', severity: 'high', source: 'automated' },
      'inc_2',
    );
    const last = await appendQuiet(
      tenantId,
      'investigation.completed',
      { incidentId: 'inc_2', rootCause: 'pool exhausted', confidence: 0.8 },
      'inc_2',
    );
    const before = await lastSeqOf(notifier.name);
    let thrown: unknown;
    for (let i = 0; i < 200 && !thrown; i++) {
      await notifier.runOnce().catch((err: unknown) => (thrown = err));
      if (!thrown) await new Promise((r) => setTimeout(r, 20));
    }
    expect(String(thrown)).toContain('simulated crash');
    expect(crashed.length).toBeGreaterThan(0);
    expect(await lastSeqOf(notifier.name)).toBeLessThan(first);
    expect(await lastSeqOf(notifier.name)).toBeGreaterThanOrEqual(before);
    expect(await db().select().from(notifications).where(inArray(notifications.id, crashed))).toEqual([]);

    crash = false;
    await drainPast(notifier, last);
    await notifier.runOnce();
    const { rows, out } = await byUser(tenantId);
    expect(rows).toHaveLength(6);
    for (const u of ['alice-admin', 'bob-member', 'carol-both'])
      expect(out[u]).toEqual(['incident.created', 'investigation.completed']);
    expect(rows.find((r) => r.type === 'incident.created')!.payload.title).toBe('Incident opened: DB saturated');
  });

  it('waits for an earlier seq that is still being written instead of skipping it', async () => {
    const tenantId = await tenantWithUsers();
    const notifier = await privateNotifier(tenantId);
    let release!: () => void;
    let inserted!: () => void;
    const wasInserted = new Promise<void>((r) => (inserted = r));
    const held = svc.database.sql.begin(async (tx) => {
      await tx`insert into events (id, tenant_id, type, incident_id, payload, idempotency_key)
               values (${newId('oev')}, ${tenantId}, 'incident.created', 'inc_slow', '{"incidentId":"inc_slow","severity":"critical"}'::jsonb, ${newId('oev')})`;
      inserted();
      await new Promise<void>((r) => (release = r));
    });
    await wasInserted;
    const later = await append(tenantId, 'incident.created', { incidentId: 'inc_fast', severity: 'high' }, 'inc_fast');
    await staysBefore(notifier, later);
    release();
    await held;
    await drainPast(notifier, later);
    const { out } = await byUser(tenantId);
    expect(out['bob-member']).toEqual(['incident.created', 'incident.created']);
  });

  it('waits for a seq drawn when its transaction had no transaction id yet (decision 244)', async () => {
    // A BEFORE trigger holds the insert after its seq is drawn and before its row is written,
    // where a transaction whose first write is the event used to have no transaction id.
    const lockKey = 244_001;
    await svc.database.sql.unsafe(`
      create or replace function test_hold_event() returns trigger language plpgsql as $$
      begin
        if new.incident_id = 'inc_held' then perform pg_advisory_xact_lock(${lockKey}); end if;
        return new;
      end $$;
      create or replace trigger test_hold_event before insert on events for each row execute function test_hold_event()`);
    const holder = await svc.database.sql.reserve();
    let release: (() => void) | undefined;
    let held: Promise<unknown> | undefined;
    try {
      await holder`select pg_advisory_lock(${lockKey})`;
      const tenantId = await tenantWithUsers();
      const notifier = await privateNotifier(tenantId);
      held = svc.database.sql.begin(async (tx) => {
        await tx`insert into events (id, tenant_id, type, incident_id, payload, idempotency_key)
                 values (${newId('oev')}, ${tenantId}, 'incident.created', 'inc_held', '{"incidentId":"inc_held","severity":"critical"}'::jsonb, ${newId('oev')})`;
        await new Promise<void>((r) => (release = r));
      });
      // The insert is waiting in its trigger: its seq is drawn.
      await eventually(async () => {
        const [waiting] = await svc.database.sql<{ n: number }[]>`
          select count(*)::int as n from pg_locks where locktype = 'advisory' and objid = ${lockKey} and not granted`;
        return waiting!.n === 1;
      });
      const later = await append(
        tenantId,
        'incident.created',
        { incidentId: 'inc_fast', severity: 'high' },
        'inc_fast',
      );
      await staysBefore(notifier, later);
      await holder`select pg_advisory_unlock(${lockKey})`;
      // Written, still uncommitted: the consumer still waits for it.
      await staysBefore(notifier, later, 1);
      release!();
      await held;
      await drainPast(notifier, later);
      const { out } = await byUser(tenantId);
      expect(out['bob-member']).toEqual(['incident.created', 'incident.created']);
    } finally {
      await holder`select pg_advisory_unlock_all()`;
      holder.release();
      release?.();
      await held?.catch(() => undefined);
      await svc.database.sql.unsafe(
        'drop trigger if exists test_hold_event on events; drop function if exists test_hold_event()',
      );
    }
  });
});

describe('notifier: consumer row', () => {
  // That the two are one transaction is the crash test's (above); this is that the row moves.
  it('advances last_seq past the events it notified, and a later pass notifies nobody again', async () => {
    const tenantId = await tenantWithUsers();
    const notifier = await privateNotifier(tenantId);
    const last = await append(
      tenantId,
      'incident.created',
      { incidentId: 'inc_3', title: 'Disk full', severity: 'critical', source: 'manual' },
      'inc_3',
    );
    await drainPast(notifier, last);
    expect(await lastSeqOf(notifier.name)).toBeGreaterThanOrEqual(last);
    const count = async () =>
      (
        await db()
          .select({ n: sql<number>`count(*)::int` })
          .from(notifications)
          .where(and(eq(notifications.tenantId, tenantId), eq(notifications.type, 'incident.created')))
      )[0]!.n;
    expect(await count()).toBe(3);
    await notifier.runOnce();
    expect(await count()).toBe(3);
  });
});
