import { randomUUID } from 'node:crypto';
import { and, asc, eq, sql } from 'drizzle-orm';
import pino from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { purgeExpiredAudit } from '../../src/db/repositories/audit-retention.js';
import { auditChainHeads, auditLog } from '../../src/db/schema/audit.js';
import { auditRetentionDays, type PlanId } from '../../src/domain/plans.js';
import { createTemporalWorkflowPort } from '../../src/temporal/port.js';
import { startDispatcher } from '../../src/temporal/reconciler.js';
import { startTestService, type TestService } from '../helpers/service.js';
import { createKey, eventually, postWebhook } from '../helpers/webhooks.js';

let svc: TestService;

beforeAll(async () => {
  svc = await startTestService();
});
afterAll(async () => {
  await svc?.stop();
});

type Tenant = Awaited<ReturnType<TestService['newTenant']>>;

const chain = (tenantId: string) =>
  svc.database.db.select().from(auditLog).where(eq(auditLog.tenantId, tenantId)).orderBy(asc(auditLog.seq));

const verify = (t: Tenant, query = '') => svc.api('GET', `/v1/audit/verify${query}`, { token: t.admin });

/** Changes a row the way someone with direct database access would: past the append-only trigger. */
async function tamper(statement: ReturnType<typeof sql>): Promise<void> {
  await svc.database.db.transaction(async (tx) => {
    await tx.execute(sql`set local session_replication_role = replica`);
    await tx.execute(statement);
  });
}

/** Runbook creations: simple audited mutations. */
const createRunbook = (t: Tenant, i: number) =>
  svc.api('POST', '/v1/runbooks', {
    token: t.admin,
    body: { title: `Runbook ${i}`, content: `1. step ${i}`, tags: ['audit'] },
  });

describe('the hash chain', () => {
  it('chains every entry of a tenant without gaps or forks under concurrent writers (api, ingestion, workflows)', async () => {
    const t = await svc.newTenant();
    const key = await createKey(svc, t.admin);
    const writes = [
      ...Array.from({ length: 24 }, (_, i) => createRunbook(t, i)),
      ...Array.from({ length: 12 }, (_, i) =>
        svc.api('POST', '/v1/graph/nodes', { token: t.member, body: { name: `svc-${i}`, type: 'api' } }),
      ),
      ...Array.from({ length: 12 }, (_, i) =>
        postWebhook(
          svc,
          t.tenantId,
          'generic',
          { name: `Alert${i}`, service: `svc-${i}`, severity: 'high' },
          { key: key.key, headers: { 'x-delivery-id': `d-${i}` } },
        ),
      ),
      ...Array.from({ length: 6 }, (_, i) =>
        svc.api('POST', '/v1/incidents/chat', {
          token: t.member,
          body: { title: `Manual ${i}`, description: 'Checkout is slow' },
        }),
      ),
    ];
    const responses = await Promise.all(writes);
    for (const r of responses) expect([201, 202]).toContain(r.status);

    const rows = await chain(t.tenantId);
    // 1 key + 24 runbooks + 12 nodes + 12 ingested incidents + 6 manual incidents, at least (workflows add more).
    expect(rows.length).toBeGreaterThanOrEqual(55);
    rows.forEach((row, index) => {
      expect(row.seq).toBe(index + 1);
      expect(row.prevHash).toBe(index === 0 ? '0'.repeat(64) : rows[index - 1]!.hash);
      expect(row.hash).toMatch(/^[0-9a-f]{64}$/);
    });
    const [head] = await svc.database
      .sql`select last_seq, last_hash from audit_chain_heads where tenant_id = ${t.tenantId}`;
    const res = await verify(t);
    expect(res.status).toBe(200);
    // Workflows may still be writing; the verification covers at least what we read.
    expect(res.body.valid).toBe(true);
    expect(res.body.firstInvalidAuditId).toBeNull();
    expect(res.body.checked).toBeGreaterThanOrEqual(rows.length);
    expect(Number(head!.last_seq)).toBeGreaterThanOrEqual(rows.length);
  });

  it('refuses updates and deletes of sealed entries', async () => {
    const t = await svc.newTenant();
    await createRunbook(t, 1);
    const before = await chain(t.tenantId);
    const row = before.at(-1);
    const refusal = { cause: { message: expect.stringMatching(/audit_log is append-only/) } };
    await expect(
      svc.database.db.update(auditLog).set({ actorId: 'someone-else' }).where(eq(auditLog.id, row!.id)),
    ).rejects.toMatchObject(refusal);
    await expect(svc.database.db.delete(auditLog).where(eq(auditLog.id, row!.id))).rejects.toMatchObject(refusal);
    expect(await chain(t.tenantId)).toEqual(before);
  });

  it('detects an entry changed directly in the database, and names it', async () => {
    const t = await svc.newTenant();
    for (let i = 0; i < 5; i++) expect((await createRunbook(t, i)).status).toBe(201);
    const rows = await chain(t.tenantId);
    expect((await verify(t)).body).toEqual({
      valid: true,
      checked: rows.length,
      firstInvalidAuditId: null,
      fromSeq: 1,
      toSeq: rows.length,
      problem: null,
    });

    const victim = rows[2]!;
    await tamper(sql`update audit_log set details = '{"title":"Nothing to see"}'::jsonb where id = ${victim.id}`);
    const res = await verify(t);
    expect(res.body.valid).toBe(false);
    expect(res.body.firstInvalidAuditId).toBe(victim.id);
    expect(res.body.problem).toMatch(/does not match its hash/);
    // A range that ends before the edited entry still verifies.
    const before = await verify(t, `?to=${encodeURIComponent(rows[1]!.occurredAt.toISOString())}`);
    expect(before.body.valid).toBe(true);
    expect(before.body.toSeq).toBeLessThan(victim.seq!);
  });

  it('detects a changed entry whose own hash was recomputed: the next entry no longer links to it', async () => {
    const t = await svc.newTenant();
    for (let i = 0; i < 4; i++) await createRunbook(t, i);
    const rows = await chain(t.tenantId);
    const victim = rows[1]!;
    await tamper(sql`update audit_log set actor_id = 'mallory' where id = ${victim.id}`);
    await tamper(sql`update audit_log a set hash = audit_entry_hash(a) where id = ${victim.id}`);
    const res = await verify(t);
    expect(res.body).toMatchObject({ valid: false, firstInvalidAuditId: rows[2]!.id });
    expect(res.body.problem).toMatch(/does not link/);
  });

  it('detects a deleted entry (a gap) and deleted newest entries (the head is ahead)', async () => {
    const t = await svc.newTenant();
    for (let i = 0; i < 5; i++) await createRunbook(t, i);
    const rows = await chain(t.tenantId);
    await tamper(sql`delete from audit_log where id = ${rows.at(-1)!.id}`);
    const tail = await verify(t);
    expect(tail.body.valid).toBe(false);
    expect(tail.body.problem).toMatch(/chain head/);
    await tamper(sql`delete from audit_log where id = ${rows[1]!.id}`);
    const gap = await verify(t);
    expect(gap.body).toMatchObject({ valid: false, firstInvalidAuditId: rows[2]!.id });
    expect(gap.body.problem).toMatch(/missing/);
  });

  it('keeps tenants apart: another tenant’s tampering does not affect this chain', async () => {
    const a = await svc.newTenant();
    const b = await svc.newTenant();
    await createRunbook(a, 1);
    await createRunbook(b, 1);
    const [bRow] = await chain(b.tenantId);
    await tamper(sql`update audit_log set action = 'runbook.deleted' where id = ${bRow!.id}`);
    expect((await verify(a)).body.valid).toBe(true);
    expect((await verify(b)).body.valid).toBe(false);
  });

  it('verify: admin only, validated range; an empty range is valid with nothing checked', async () => {
    const t = await svc.newTenant();
    expect((await svc.api('GET', '/v1/audit/verify', { token: t.member })).status).toBe(403);
    expect((await svc.api('GET', '/v1/audit/verify')).status).toBe(401);
    const bad = await verify(t, '?from=yesterday');
    expect(bad.status).toBe(400);
    expect(bad.body.error).toBe('validation_error');
    const reversed = await verify(t, '?from=2026-02-01T00:00:00Z&to=2026-01-01T00:00:00Z');
    expect(reversed.status).toBe(400);
    const empty = await verify(t, '?from=2020-01-01T00:00:00Z&to=2020-01-02T00:00:00Z');
    expect(empty.body).toEqual({
      valid: true,
      checked: 0,
      firstInvalidAuditId: null,
      fromSeq: null,
      toSeq: null,
      problem: null,
    });
  });
});

describe('retention', () => {
  /** An entry written as if it happened `daysAgo` days ago; each is its own commit, so chained in call order. */
  async function entryAged(tenantId: string, daysAgo: number): Promise<string> {
    const id = `aud_retention_${randomUUID()}`;
    await svc.database.sql`
      insert into audit_log (id, tenant_id, occurred_at, actor_type, actor_id, action, target_type, target_id)
      values (${id}, ${tenantId}, now() - make_interval(days => ${daysAgo}), 'system', 'test', 'test.entry', 'test', ${id})`;
    return id;
  }
  /**
   * A new tenant on `plan` whose chain's first entry (`tenant.created`) is dated `daysAgo` days
   * back, resealed with the head, as if the tenant had been created then.
   */
  async function tenantCreated(plan: PlanId, daysAgo: number): Promise<Tenant> {
    const t = await svc.newTenant({ plan });
    await tamper(
      sql`update audit_log set occurred_at = now() - make_interval(days => ${daysAgo}) where tenant_id = ${t.tenantId} and seq = 1`,
    );
    await tamper(sql`update audit_log a set hash = audit_entry_hash(a) where tenant_id = ${t.tenantId} and seq = 1`);
    await tamper(
      sql`update audit_chain_heads h set last_hash = a.hash from audit_log a where a.tenant_id = h.tenant_id and a.seq = 1 and h.tenant_id = ${t.tenantId}`,
    );
    expect((await verify(t)).body).toMatchObject({ valid: true, checked: 1 });
    return t;
  }
  const head = async (tenantId: string) =>
    (await svc.database.db.select().from(auditChainHeads).where(eq(auditChainHeads.tenantId, tenantId)))[0]!;
  const ids = async (tenantId: string) => (await chain(tenantId)).map((r) => r.id);

  it("purges the entries past the plan's retention from the start of the chain, and the rest still verifies", async () => {
    const starter = await tenantCreated('plan_starter', 41); // 30 days
    const business = await tenantCreated('plan_business', 41); // 365 days
    const expired = [
      await entryAged(starter.tenantId, 40),
      await entryAged(starter.tenantId, 39),
      await entryAged(starter.tenantId, 35),
    ];
    const kept = await entryAged(starter.tenantId, 20);
    const lateButOld = await entryAged(starter.tenantId, 45); // committed after a younger entry
    expect((await createRunbook(starter, 1)).status).toBe(201);
    const businessOld = [await entryAged(business.tenantId, 40), await entryAged(business.tenantId, 300)];
    const before = await chain(starter.tenantId);
    expect(before).toHaveLength(7); // tenant.created first

    await purgeExpiredAudit(svc.database.sql);
    const after = await chain(starter.tenantId);
    expect(after.map((r) => r.id)).toEqual([kept, lateButOld, before[6]!.id]);
    expect(after.map((r) => r.seq)).toEqual([5, 6, 7]);
    expect(after[0]!.prevHash).toBe(before[3]!.hash);
    expect(await head(starter.tenantId)).toMatchObject({ purgedSeq: 4, purgedHash: before[3]!.hash, lastSeq: 7 });
    expect(expired.every((id) => !after.some((r) => r.id === id))).toBe(true);
    expect((await verify(starter)).body).toEqual({
      valid: true,
      checked: 3,
      firstInvalidAuditId: null,
      fromSeq: 5,
      toSeq: 7,
      problem: null,
    });
    expect((await ids(business.tenantId)).slice(1)).toEqual(businessOld);
    expect(await head(business.tenantId)).toMatchObject({ purgedSeq: 0, purgedHash: null });

    // Nothing more is due: the 45-day-old entry waits behind the 20-day-old one.
    await purgeExpiredAudit(svc.database.sql);
    expect((await chain(starter.tenantId)).map((r) => r.id)).toEqual(after.map((r) => r.id));

    // Deleting the first remaining entry some other way still shows.
    await tamper(sql`delete from audit_log where id = ${kept}`);
    const gap = await verify(starter);
    expect(gap.body).toMatchObject({ valid: false, firstInvalidAuditId: lateButOld });
    expect(gap.body.problem).toMatch(/entries before 6 are missing/);
  });

  it('stops at a gap, so a deletion made some other way stays visible', async () => {
    const t = await tenantCreated('plan_starter', 51);
    const rows = [
      await entryAged(t.tenantId, 50),
      await entryAged(t.tenantId, 49),
      await entryAged(t.tenantId, 48),
      await entryAged(t.tenantId, 47),
    ];
    await tamper(sql`delete from audit_log where id = ${rows[2]!}`); // seq 4
    await purgeExpiredAudit(svc.database.sql);
    expect(await ids(t.tenantId)).toEqual([rows[3]]);
    expect(await head(t.tenantId)).toMatchObject({ purgedSeq: 3 });
    const res = await verify(t);
    expect(res.body).toMatchObject({ valid: false, firstInvalidAuditId: rows[3] });
    expect(res.body.problem).toMatch(/entries before 5 are missing/);
  });

  it('purges a whole chain in chunks; the empty chain verifies, and the next entry links to the anchor', async () => {
    const t = await tenantCreated('plan_pro', 101); // 90 days
    const rows = [(await ids(t.tenantId))[0]!];
    for (let i = 0; i < 5; i++) rows.push(await entryAged(t.tenantId, 100 - i));
    const hashes = (await chain(t.tenantId)).map((r) => r.hash);
    let statements = 0;
    const deleted = await purgeExpiredAudit(svc.database.sql, { chunkSize: 2, shouldStop: () => statements++ >= 1 });
    expect(deleted).toBe(2); // stopped after one chunk
    expect(await ids(t.tenantId)).toEqual(rows.slice(2));
    await purgeExpiredAudit(svc.database.sql, { chunkSize: 2 });
    expect(await ids(t.tenantId)).toEqual([]);
    expect(await head(t.tenantId)).toMatchObject({ purgedSeq: 6, purgedHash: hashes[5], lastSeq: 6 });
    expect((await verify(t)).body).toEqual({
      valid: true,
      checked: 0,
      firstInvalidAuditId: null,
      fromSeq: null,
      toSeq: null,
      problem: null,
    });
    expect((await createRunbook(t, 1)).status).toBe(201);
    const [next] = await chain(t.tenantId);
    expect(next).toMatchObject({ seq: 7, prevHash: hashes[5] });
    expect((await verify(t)).body).toMatchObject({ valid: true, checked: 1, fromSeq: 7, toSeq: 7 });
  });

  it('lets no entry be deleted that the head does not record as purged, nor one younger than 30 days', async () => {
    // The trigger's floor (migration 0014) is the shortest plan retention: a shorter plan would
    // have its purges refused, so this fails first.
    expect(Math.min(...Object.values(auditRetentionDays))).toBe(30);
    const t = await svc.newTenant({ plan: 'plan_starter' });
    const [created] = await ids(t.tenantId); // tenant.created, now
    const old = await entryAged(t.tenantId, 40); // seq 2
    const refusal = { cause: { message: expect.stringMatching(/audit_log is append-only/) } };
    await expect(svc.database.db.delete(auditLog).where(eq(auditLog.id, old))).rejects.toMatchObject(refusal);
    await svc.database.db.update(auditChainHeads).set({ purgedSeq: 2 }).where(eq(auditChainHeads.tenantId, t.tenantId));
    await expect(svc.database.db.delete(auditLog).where(eq(auditLog.id, created!))).rejects.toMatchObject(refusal);
    expect(await ids(t.tenantId)).toEqual([created, old]);
  });

  it("is run by the worker's dispatcher", async () => {
    const t = await tenantCreated('plan_starter', 32);
    await entryAged(t.tenantId, 31);
    const dispatcher = startDispatcher(
      {
        db: svc.database.db,
        sql: svc.database.sql,
        workflows: createTemporalWorkflowPort(svc.client, svc.taskQueue),
        logger: pino({ level: 'silent' }),
      },
      { listen: false, intervalMs: 60_000 },
    );
    try {
      await eventually(async () => (await ids(t.tenantId)).length === 0, 5_000);
    } finally {
      await dispatcher.stop();
    }
  });
});

describe('GET /v1/audit', () => {
  it('lists newest first with filters (actorType, exact and prefix action, incidentId, from/to) and cursor pages', async () => {
    const t = await svc.newTenant();
    const other = await svc.newTenant();
    await createRunbook(other, 99);
    const created = await svc.api('POST', '/v1/incidents/chat', {
      token: t.member,
      body: { title: 'Checkout down', description: 'Errors on pay' },
    });
    expect(created.status).toBe(201);
    const incidentId = created.body.incidentId as string;
    for (let i = 0; i < 5; i++) await createRunbook(t, i);
    const patched = await svc.api('PATCH', `/v1/incidents/${incidentId}`, {
      token: t.admin,
      body: { status: 'resolved' },
    });
    expect(patched.status).toBe(200);

    const all = await svc.api('GET', '/v1/audit?limit=200', { token: t.admin });
    expect(all.status).toBe(200);
    const items = all.body.items as Array<Record<string, any>>;
    expect(items.every((e) => typeof e.auditId === 'string' && e.auditId.startsWith('aud_'))).toBe(true);
    const times = items.map((e) => Date.parse(e.occurredAt));
    expect([...times].sort((x, y) => y - x)).toEqual(times);
    // Another tenant's entries never show.
    expect(items.some((e) => e.action === 'runbook.created' && e.details.title === 'Runbook 99')).toBe(false);

    const runbooks = await svc.api('GET', '/v1/audit?action=runbook.created', { token: t.admin });
    expect(runbooks.body.items).toHaveLength(5);
    expect(runbooks.body.items[0]).toMatchObject({
      actorType: 'user',
      actorId: 'user-admin',
      targetType: 'runbook',
      incidentId: null,
    });
    const incidentEntries = await svc.api('GET', '/v1/audit?action=incident.*', { token: t.admin });
    expect(incidentEntries.body.items.map((e: any) => e.action)).toEqual(
      expect.arrayContaining(['incident.created', 'incident.status_changed']),
    );
    expect(incidentEntries.body.items.every((e: any) => e.action.startsWith('incident.'))).toBe(true);
    const byIncident = await svc.api('GET', `/v1/audit?incidentId=${incidentId}`, { token: t.admin });
    expect(byIncident.body.items.length).toBeGreaterThanOrEqual(2);
    expect(byIncident.body.items.every((e: any) => e.incidentId === incidentId)).toBe(true);
    const users = await svc.api('GET', '/v1/audit?actorType=user&limit=200', { token: t.admin });
    expect(users.body.items.length).toBeGreaterThan(0);
    expect(users.body.items.every((e: any) => e.actorType === 'user')).toBe(true);

    // The status change came from the workflow: its workflow id and the deciding history event.
    const change = incidentEntries.body.items.find((e: any) => e.action === 'incident.status_changed');
    expect(change).toMatchObject({ workflowId: incidentId, actorType: 'user', details: { to: 'resolved' } });
    expect(change.historyEventId).toBeGreaterThan(0);
    const history = await svc.client.workflow.getHandle(incidentId).fetchHistory();
    const decided = history.events?.find((e) => Number(e.eventId) === change.historyEventId);
    expect(decided?.workflowTaskStartedEventAttributes).toBeTruthy();

    // from/to bounds are inclusive.
    const third = items[2]!;
    const window = await svc.api(
      'GET',
      `/v1/audit?from=${encodeURIComponent(third.occurredAt)}&to=${encodeURIComponent(third.occurredAt)}`,
      { token: t.admin },
    );
    expect(window.body.items.map((e: any) => e.auditId)).toContain(third.auditId);
    // A date alone is its whole UTC day, as in exports: `to` the day itself includes the entry.
    const day = third.occurredAt.slice(0, 10);
    const byDay = await svc.api('GET', `/v1/audit?from=${day}&to=${day}&limit=200`, { token: t.admin });
    expect(byDay.status).toBe(200);
    expect(byDay.body.items.map((e: any) => e.auditId)).toContain(third.auditId);
    const dayBefore = new Date(Date.parse(`${day}T00:00:00Z`) - 86_400_000).toISOString().slice(0, 10);
    const before = await svc.api('GET', `/v1/audit?to=${dayBefore}&limit=200`, { token: t.admin });
    expect(before.status).toBe(200);
    expect(before.body.items.map((e: any) => e.auditId)).not.toContain(third.auditId);
    const sameDay = await svc.api('GET', `/v1/audit?from=${encodeURIComponent(third.occurredAt)}&to=${day}&limit=200`, {
      token: t.admin,
    });
    expect(sameDay.status).toBe(200);
    expect(sameDay.body.items.map((e: any) => e.auditId)).toContain(third.auditId);

    // Pages of 2 walk the same list without duplicates.
    const seen: string[] = [];
    let cursor: string | null = null;
    do {
      const page: any = await svc.api('GET', `/v1/audit?limit=2${cursor ? `&cursor=${cursor}` : ''}`, {
        token: t.admin,
      });
      expect(page.status).toBe(200);
      seen.push(...page.body.items.map((e: any) => e.auditId));
      cursor = page.body.nextCursor;
    } while (cursor);
    const again = await svc.api('GET', '/v1/audit?limit=200', { token: t.admin });
    expect(seen).toEqual(again.body.items.map((e: any) => e.auditId));
  });

  it('is admin only and validates its query', async () => {
    const t = await svc.newTenant();
    expect((await svc.api('GET', '/v1/audit', { token: t.member })).status).toBe(403);
    expect((await svc.api('GET', '/v1/audit')).status).toBe(401);
    for (const query of [
      'actorType=robot',
      'limit=0',
      'limit=201',
      'from=nope',
      'from=2026-02-30',
      'from=0000-01-01',
      'to=0001-01-01T00:00:00%2B01:00',
      'to=2026-01-01T00:00:00',
      'cursor=%%%',
      'from=2026-01-02&to=2026-01-01',
      'from=2026-02-01T00:00:00Z&to=2026-01-01T00:00:00Z',
    ]) {
      const res = await svc.api('GET', `/v1/audit?${query}`, { token: t.admin });
      expect(res.status, query).toBe(400);
      expect(res.body.error, query).toBe('validation_error');
    }
  });
});

describe('what is audited', () => {
  it('records authentication failures attributable to a tenant, not unverifiable ones, and throttles repeats', async () => {
    const t = await svc.newTenant();
    const key = await createKey(svc, t.admin);
    const body = { name: 'DiskFull', service: 'db' };
    expect((await postWebhook(svc, t.tenantId, 'generic', body, { key: 'flo_notarealkey' })).status).toBe(401);
    expect((await postWebhook(svc, t.tenantId, 'generic', body, { key: 'flo_notarealkey2' })).status).toBe(401);
    expect((await postWebhook(svc, t.tenantId, 'generic', body, { key: key.key, signature: 'sha256=00' })).status).toBe(
      401,
    );
    expect(
      (await svc.api('PATCH', `/v1/tenants/${t.tenantId}`, { token: t.member, body: { name: 'mine now' } })).status,
    ).toBe(403);
    expect((await svc.api('GET', '/v1/audit', { token: 'not-a-jwt' })).status).toBe(401);
    // A webhook naming a tenant that does not exist writes nothing (and fails the same way).
    expect((await postWebhook(svc, 'ten_doesnotexist', 'generic', body, { key: 'flo_x' })).status).toBe(401);

    const rows = await svc.database.db
      .select()
      .from(auditLog)
      .where(and(eq(auditLog.tenantId, t.tenantId), sql`${auditLog.action} like 'auth.%'`))
      .orderBy(asc(auditLog.seq));
    expect(rows.map((r) => [r.action, r.actorType, r.actorId])).toEqual([
      // The second unknown key within the interval is counted, not written.
      ['auth.webhook_rejected', 'api_key', 'unknown'],
      ['auth.webhook_rejected', 'api_key', key.keyId],
      ['auth.forbidden', 'user', 'user-member'],
    ]);
    expect(rows[1]!.details).toMatchObject({
      reason: expect.stringMatching(/signature/i),
      path: `/v1/webhooks/${t.tenantId}/generic`,
    });
    expect(JSON.stringify(rows)).not.toContain(key.key);
    expect(JSON.stringify(rows)).not.toContain('flo_notarealkey');
    expect(rows[2]!.details).toMatchObject({ method: 'PATCH', reason: expect.stringMatching(/admin/) });
    const [{ n }] = (await svc.database
      .sql`select count(*)::int as n from audit_log where tenant_id = 'ten_doesnotexist'`) as unknown as [
      { n: number },
    ];
    expect(n).toBe(0);
  });

  it('records the mutations of notifications, stream tokens, and trigger firings (system)', async () => {
    const t = await svc.newTenant();
    const trigger = await svc.api('POST', '/v1/triggers', {
      token: t.admin,
      body: { name: 'tell everyone', eventType: 'incident.created', action: 'notify' },
    });
    expect(trigger.status).toBe(201);
    const created = await svc.api('POST', '/v1/incidents/chat', {
      token: t.member,
      body: { title: 'Queue backlog', description: 'Jobs pile up' },
    });
    expect(created.status).toBe(201);
    const fired = await eventually(async () => {
      const [row] = await svc.database.db
        .select()
        .from(auditLog)
        .where(and(eq(auditLog.tenantId, t.tenantId), eq(auditLog.action, 'trigger.fired')))
        .orderBy(auditLog.seq);
      return row;
    });
    expect(fired).toMatchObject({
      actorType: 'system',
      actorId: 'trigger-dispatcher',
      targetId: trigger.body.triggerId,
      incidentId: created.body.incidentId,
    });
    expect(fired.details).toMatchObject({ eventType: 'incident.created', action: 'notify' });

    const token = await svc.api('POST', '/v1/notifications/stream-token', { token: t.member });
    expect(token.status).toBe(201);
    await eventually(async () => (await svc.api('GET', '/v1/notifications', { token: t.member })).body.unreadCount > 0);
    expect((await svc.api('POST', '/v1/notifications/read', { token: t.member, body: { all: true } })).status).toBe(
      204,
    );

    const actions = (await svc.api('GET', '/v1/audit?actorType=user&limit=200', { token: t.admin })).body.items.map(
      (e: any) => e.action,
    );
    expect(actions).toEqual(
      expect.arrayContaining(['trigger.created', 'incident.created', 'stream_token.issued', 'notification.read']),
    );
    const issued = (await svc.api('GET', '/v1/audit?action=stream_token.issued', { token: t.admin })).body.items[0];
    expect(JSON.stringify(issued)).not.toContain(token.body.token);
  });
});
