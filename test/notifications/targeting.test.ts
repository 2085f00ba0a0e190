/**
 * Who the notifier tells of what (ADR 0259), rule by rule, on real outbox events in PostgreSQL:
 * an event reaches only the people it needs, and each person's preferences take more away.
 */
import { eq, max } from 'drizzle-orm';
import pino from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { appendAudit } from '../../src/db/repositories/audit.js';
import { savePreferences } from '../../src/db/repositories/notifications.js';
import { events } from '../../src/db/schema/events.js';
import { incidents, type Severity } from '../../src/db/schema/incidents.js';
import { eventConsumers, notifications, users } from '../../src/db/schema/remediation.js';
import { newId } from '../../src/ids.js';
import { createNotifier } from '../../src/notifications/notifier.js';
import { audienceOf } from '../../src/notifications/targeting.js';
import { appendEventUnchecked } from '../../src/outbox/append.js';
import { EVENT_TYPES } from '../../src/outbox/events.js';
import { startTestService, type TestService } from '../helpers/service.js';

let svc: TestService;
const db = () => svc.database.db;

beforeAll(async () => {
  svc = await startTestService({ withoutWorker: true, withoutDispatcher: true });
});
afterAll(() => svc?.stop());

const ADMIN = 'ada-admin';
const MEMBER = 'max-member';
const OTHER = 'olga-member';

/** A tenant with an admin and two members the api has seen, and a consumer of its own at the end of the outbox. */
async function setting() {
  const { tenantId } = await svc.newTenant();
  await db()
    .insert(users)
    .values([
      { tenantId, userId: ADMIN, roles: ['admin'] },
      { tenantId, userId: MEMBER, roles: ['member'] },
      { tenantId, userId: OTHER, roles: ['member'] },
    ]);
  const name = `test-${newId('ntf')}`;
  const [top] = await db()
    .select({ seq: max(events.seq) })
    .from(events);
  await db()
    .insert(eventConsumers)
    .values({ name, lastSeq: top?.seq ?? 0 });
  const notifier = createNotifier(
    { db: db(), sql: svc.database.sql, logger: pino({ level: 'silent' }) },
    { name, tenantId, gapSettleMs: 0 },
  );

  let last = 0;
  const emit = async (type: string, payload: Record<string, unknown>) => {
    const incidentId = typeof payload.incidentId === 'string' ? payload.incidentId : null;
    await db().transaction((tx) =>
      appendEventUnchecked(tx, { tenantId, type, incidentId, payload, idempotencyKey: newId('oev') }),
    );
    const [row] = await db()
      .select({ seq: max(events.seq) })
      .from(events)
      .where(eq(events.tenantId, tenantId));
    last = row!.seq!;
  };
  /** Runs the notifier past every event emitted so far; the notifications of the tenant by person. */
  const told = async (): Promise<Record<string, string[]>> => {
    for (let i = 0; i < 200; i++) {
      await notifier.runOnce();
      const [row] = await db().select().from(eventConsumers).where(eq(eventConsumers.name, name));
      if (row!.lastSeq >= last) break;
      await new Promise((r) => setTimeout(r, 20));
    }
    const rows = await db().select().from(notifications).where(eq(notifications.tenantId, tenantId));
    const out: Record<string, string[]> = { [ADMIN]: [], [MEMBER]: [], [OTHER]: [] };
    for (const r of rows.sort((a, b) => Number(a.payload.eventSeq) - Number(b.payload.eventSeq)))
      (out[r.userId] ??= []).push(`${r.type}${r.incidentId ? `@${r.incidentId}` : ''}`);
    return out;
  };
  const incident = async (severity: Severity) => {
    const id = newId('inc');
    await db()
      .insert(incidents)
      .values({
        id,
        tenantId,
        title: `t ${id}`,
        description: 'd',
        severity,
        status: 'investigating',
        source: 'automated',
      });
    return id;
  };
  /** A person acted on the incident (the audit log says so). */
  const acted = (incidentId: string, userId: string, action = 'incident.status_changed') =>
    appendAudit(db(), {
      tenantId,
      actorType: 'user',
      actorId: userId,
      action,
      targetType: 'incident',
      targetId: incidentId,
      incidentId,
    });
  return { tenantId, emit, told, incident, acted };
}

describe('the rules', () => {
  it('names an audience for each of the 21 event types', () => {
    const table = Object.fromEntries(EVENT_TYPES.map((t) => [t, audienceOf(t, {})]));
    expect(table).toEqual({
      'incident.created': 'nobody', // unless critical or high (below)
      'incident.status_changed': 'involved', // unless the system made it, or it is to resolved
      'incident.severity_changed': 'nobody', // unless raised to critical or high
      'incident.resolved': 'involved',
      'triage.completed': 'nobody',
      'triage.failed': 'nobody',
      'investigation.started': 'nobody',
      'investigation.evidence_added': 'nobody',
      'investigation.completed': 'involved',
      'investigation.failed': 'involved',
      'approval.requested': 'nobody', // written to the admins by the proposal itself
      'approval.expired': 'nobody', // unless at its deadline
      'remediation.approved': 'nobody',
      'remediation.rejected': 'nobody',
      'remediation.completed': 'nobody',
      'remediation.failed': 'involved',
      'knowledge.pattern_created': 'nobody',
      'knowledge.pattern_promoted': 'nobody',
      'knowledge.feedback_received': 'nobody',
      'system.quota_warning': 'admins',
      'system.export_completed': 'admins',
    });
    expect(audienceOf('incident.created', { severity: 'critical' })).toBe('everyone');
    expect(audienceOf('incident.created', { severity: 'high' })).toBe('everyone');
    expect(audienceOf('incident.created', { severity: 'medium' })).toBe('nobody');
    expect(audienceOf('incident.severity_changed', { from: 'medium', to: 'high' })).toBe('everyone');
    expect(audienceOf('incident.severity_changed', { from: 'high', to: 'critical' })).toBe('everyone');
    expect(audienceOf('incident.severity_changed', { from: 'critical', to: 'high' })).toBe('nobody');
    expect(audienceOf('incident.severity_changed', { from: 'low', to: 'medium' })).toBe('nobody');
    expect(audienceOf('incident.status_changed', { actorType: 'system', to: 'awaiting_approval' })).toBe('nobody');
    expect(audienceOf('incident.status_changed', { actorType: 'user', to: 'resolved' })).toBe('nobody');
    expect(audienceOf('approval.expired', { reason: 'deadline' })).toBe('involved');
    expect(audienceOf('approval.expired', { reason: 'superseded' })).toBe('nobody');
  });
});

describe('the notifier', () => {
  it('tells everyone of an incident opened at critical or high, nobody of one opened lower; and the progress of none', async () => {
    const s = await setting();
    const [crit, high, medium, low] = ['inc_c', 'inc_h', 'inc_m', 'inc_l'].map((p) => `${p}_${newId('inc')}`);
    await s.emit('incident.created', { incidentId: crit, title: 'C', severity: 'critical', source: 'automated' });
    await s.emit('incident.created', { incidentId: high, title: 'H', severity: 'high', source: 'automated' });
    await s.emit('incident.created', { incidentId: medium, title: 'M', severity: 'medium', source: 'automated' });
    await s.emit('incident.created', { incidentId: low, title: 'L', severity: 'low', source: 'automated' });
    for (const type of ['triage.completed', 'investigation.started', 'investigation.evidence_added']) {
      await s.emit(type, { incidentId: crit, run: 1, priority: 'critical', summary: 's', added: 2 });
    }
    await s.emit('incident.status_changed', {
      incidentId: crit,
      from: 'triaging',
      to: 'investigating',
      actorType: 'system',
      actorId: 'auto-investigate',
    });
    await s.emit('remediation.approved', { incidentId: crit, actorType: 'user', actorId: ADMIN });
    await s.emit('remediation.completed', { incidentId: crit, remediationId: 'rem_x' });
    await s.emit('knowledge.pattern_created', { patternId: 'pat_x', title: 'p', incidentId: crit });
    const out = await s.told();
    for (const person of [ADMIN, MEMBER, OTHER])
      expect(out[person]).toEqual([`incident.created@${crit}`, `incident.created@${high}`]);
  });

  it('tells of a conclusion the people who acted on the incident or were notified of it, in the same batch too', async () => {
    const s = await setting();
    const owned = await s.incident('medium');
    const told = await s.incident('medium');
    const nobodys = await s.incident('medium');
    const opened = await s.incident('high');
    await s.acted(owned, MEMBER, 'investigation.started'); // the member started its investigation
    await db()
      .insert(notifications)
      .values({
        id: newId('ntf'),
        tenantId: s.tenantId,
        userId: ADMIN,
        type: 'approval.requested',
        incidentId: told,
        payload: { incidentId: told },
        idempotencyKey: newId('ntf'),
      });
    // Opened at high and concluded in one batch: the conclusion reaches whom the opening reached.
    await s.emit('incident.created', { incidentId: opened, title: 'H', severity: 'high', source: 'automated' });
    for (const id of [owned, told, nobodys, opened])
      await s.emit('investigation.completed', { incidentId: id, run: 1, rootCause: 'r', confidence: 0.7 });
    const out = await s.told();
    expect(out[MEMBER]).toEqual([
      `incident.created@${opened}`,
      `investigation.completed@${owned}`,
      `investigation.completed@${opened}`,
    ]);
    expect(out[ADMIN]).toEqual([
      'approval.requested@' + told, // the row inserted above
      `incident.created@${opened}`,
      `investigation.completed@${told}`,
      `investigation.completed@${opened}`,
    ]);
    expect(out[OTHER]).toEqual([`incident.created@${opened}`, `investigation.completed@${opened}`]);
  });

  it('never tells people of a status change they made themselves; the others involved are told', async () => {
    const s = await setting();
    const id = await s.incident('critical');
    await s.acted(id, MEMBER);
    await s.acted(id, ADMIN);
    await s.acted(id, OTHER);
    await s.emit('incident.status_changed', {
      incidentId: id,
      from: 'investigating',
      to: 'open',
      actorType: 'user',
      actorId: MEMBER,
    });
    await s.emit('incident.status_changed', {
      incidentId: id,
      from: 'open',
      to: 'resolved',
      actorType: 'user',
      actorId: ADMIN,
    });
    await s.emit('incident.resolved', {
      incidentId: id,
      from: 'open',
      to: 'resolved',
      actorType: 'user',
      actorId: ADMIN,
    });
    const out = await s.told();
    expect(out[MEMBER]).toEqual([`incident.resolved@${id}`]); // not their own move to open
    expect(out[ADMIN]).toEqual([`incident.status_changed@${id}`]); // not their own resolve
    expect(out[OTHER]).toEqual([`incident.status_changed@${id}`, `incident.resolved@${id}`]);
  });

  it('tells the involved of what hands an incident back to them; the admins of quota and exports; nobody of the rest', async () => {
    const s = await setting();
    const id = await s.incident('low');
    await s.acted(id, MEMBER);
    await s.emit('investigation.failed', { incidentId: id, run: 1, reason: 'timeout' });
    await s.emit('approval.expired', {
      incidentId: id,
      approvalId: 'apr_1',
      remediationId: 'rem_1',
      reason: 'deadline',
    });
    await s.emit('approval.expired', {
      incidentId: id,
      approvalId: 'apr_2',
      remediationId: 'rem_2',
      reason: 'superseded',
    });
    await s.emit('remediation.failed', { incidentId: id, remediationId: 'rem_3', failure: 'step 1 failed' });
    await s.emit('incident.resolved', { incidentId: id, from: 'investigating', to: 'resolved', actorType: 'system' });
    await s.emit('system.quota_warning', { metric: 'events', period: '2026-11', used: 80, limit: 100, percent: 80 });
    await s.emit('system.export_completed', { exportId: 'exp_1', format: 'ndjson' });
    await s.emit('incident.severity_changed', { incidentId: id, from: 'low', to: 'high', reason: 'triage' });
    const out = await s.told();
    expect(out[MEMBER]).toEqual([
      `investigation.failed@${id}`,
      `approval.expired@${id}`,
      `remediation.failed@${id}`,
      `incident.resolved@${id}`,
      `incident.severity_changed@${id}`,
    ]);
    expect(out[ADMIN]).toEqual(['system.quota_warning', 'system.export_completed', `incident.severity_changed@${id}`]);
    expect(out[OTHER]).toEqual([`incident.severity_changed@${id}`]);
  });

  it('honours each person’s preferences: switched-off types, and incidents below their minimum severity (the incident’s severity now)', async () => {
    const s = await setting();
    await savePreferences(db(), s.tenantId, MEMBER, { disabledTypes: ['investigation.completed'], minSeverity: 'low' });
    await savePreferences(db(), s.tenantId, OTHER, { disabledTypes: [], minSeverity: 'critical' });
    await savePreferences(db(), s.tenantId, ADMIN, { disabledTypes: ['system.quota_warning'], minSeverity: 'high' });
    const high = await s.incident('high');
    const crit = await s.incident('critical');
    await s.emit('incident.created', { incidentId: high, title: 'H', severity: 'high', source: 'automated' });
    await s.emit('incident.created', { incidentId: crit, title: 'C', severity: 'critical', source: 'automated' });
    await s.emit('investigation.completed', { incidentId: high, run: 1, rootCause: 'r', confidence: 0.5 });
    await s.emit('investigation.completed', { incidentId: crit, run: 1, rootCause: 'r', confidence: 0.5 });
    await s.emit('system.quota_warning', { metric: 'events', period: '2026-11', used: 80, limit: 100, percent: 80 });
    await s.told();
    // Lowered to medium since: below the admin's minimum now.
    await db().update(incidents).set({ severity: 'medium' }).where(eq(incidents.id, high));
    await s.emit('incident.status_changed', {
      incidentId: high,
      from: 'investigating',
      to: 'open',
      actorType: 'user',
      actorId: 'someone-else',
    });
    const out = await s.told();
    expect(out[MEMBER]).toEqual([
      `incident.created@${high}`,
      `incident.created@${crit}`,
      `incident.status_changed@${high}`,
    ]);
    expect(out[OTHER]).toEqual([`incident.created@${crit}`, `investigation.completed@${crit}`]);
    expect(out[ADMIN]).toEqual([
      `incident.created@${high}`,
      `incident.created@${crit}`,
      `investigation.completed@${high}`,
      `investigation.completed@${crit}`,
    ]);
  });

  it('counts involvement within the tenant only', async () => {
    const s = await setting();
    const other = await setting();
    const id = await s.incident('medium');
    // A person of the same name acted on it in another tenant's audit log: not involvement here.
    await appendAudit(db(), {
      tenantId: other.tenantId,
      actorType: 'user',
      actorId: MEMBER,
      action: 'incident.status_changed',
      targetType: 'incident',
      targetId: id,
      incidentId: id,
    });
    await s.emit('investigation.completed', { incidentId: id, run: 1, rootCause: 'r', confidence: 0.5 });
    const out = await s.told();
    expect(out).toEqual({ [ADMIN]: [], [MEMBER]: [], [OTHER]: [] });
  });
});
