import { and, asc, eq, sql } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { auditLog } from '../../src/db/schema/audit.js';
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
  svc.api('POST', '/v1/runbooks', { token: t.admin, body: { title: `Runbook ${i}`, content: `1. step ${i}`, tags: ['audit'] } });

describe('the hash chain', () => {
  it('chains every entry of a tenant without gaps or forks under concurrent writers (api, ingestion, workflows)', async () => {
    const t = await svc.newTenant();
    const key = await createKey(svc, t.admin);
    const writes = [
      ...Array.from({ length: 24 }, (_, i) => createRunbook(t, i)),
      ...Array.from({ length: 12 }, (_, i) => svc.api('POST', '/v1/graph/nodes', { token: t.member, body: { name: `svc-${i}`, type: 'api' } })),
      ...Array.from({ length: 12 }, (_, i) =>
        postWebhook(svc, t.tenantId, 'generic', { name: `Alert${i}`, service: `svc-${i}`, severity: 'high' }, { key: key.key, headers: { 'x-delivery-id': `d-${i}` } }),
      ),
      ...Array.from({ length: 6 }, (_, i) => svc.api('POST', '/v1/incidents/chat', { token: t.member, body: { title: `Manual ${i}`, description: 'Checkout is slow' } })),
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
    const [head] = await svc.database.sql`select last_seq, last_hash from audit_chain_heads where tenant_id = ${t.tenantId}`;
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
    await expect(svc.database.db.update(auditLog).set({ actorId: 'someone-else' }).where(eq(auditLog.id, row!.id))).rejects.toMatchObject(refusal);
    await expect(svc.database.db.delete(auditLog).where(eq(auditLog.id, row!.id))).rejects.toMatchObject(refusal);
    expect(await chain(t.tenantId)).toEqual(before);
  });

  it('detects an entry changed directly in the database, and names it', async () => {
    const t = await svc.newTenant();
    for (let i = 0; i < 5; i++) expect((await createRunbook(t, i)).status).toBe(201);
    const rows = await chain(t.tenantId);
    expect((await verify(t)).body).toEqual({ valid: true, checked: rows.length, firstInvalidAuditId: null, fromSeq: 1, toSeq: rows.length, problem: null });

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
    expect(empty.body).toEqual({ valid: true, checked: 0, firstInvalidAuditId: null, fromSeq: null, toSeq: null, problem: null });
  });
});

describe('GET /v1/audit', () => {
  it('lists newest first with filters (actorType, exact and prefix action, incidentId, from/to) and cursor pages', async () => {
    const t = await svc.newTenant();
    const other = await svc.newTenant();
    await createRunbook(other, 99);
    const created = await svc.api('POST', '/v1/incidents/chat', { token: t.member, body: { title: 'Checkout down', description: 'Errors on pay' } });
    expect(created.status).toBe(201);
    const incidentId = created.body.incidentId as string;
    for (let i = 0; i < 5; i++) await createRunbook(t, i);
    const patched = await svc.api('PATCH', `/v1/incidents/${incidentId}`, { token: t.admin, body: { status: 'resolved' } });
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
    expect(runbooks.body.items[0]).toMatchObject({ actorType: 'user', actorId: 'user-admin', targetType: 'runbook', incidentId: null });
    const incidentEntries = await svc.api('GET', '/v1/audit?action=incident.*', { token: t.admin });
    expect(incidentEntries.body.items.map((e: any) => e.action)).toEqual(expect.arrayContaining(['incident.created', 'incident.status_changed']));
    expect(incidentEntries.body.items.every((e: any) => e.action.startsWith('incident.'))).toBe(true);
    const byIncident = await svc.api('GET', `/v1/audit?incidentId=${incidentId}`, { token: t.admin });
    expect(byIncident.body.items.length).toBeGreaterThanOrEqual(2);
    expect(byIncident.body.items.every((e: any) => e.incidentId === incidentId)).toBe(true);
    const users = await svc.api('GET', '/v1/audit?actorType=user&limit=200', { token: t.admin });
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
    const window = await svc.api('GET', `/v1/audit?from=${encodeURIComponent(third.occurredAt)}&to=${encodeURIComponent(third.occurredAt)}`, { token: t.admin });
    expect(window.body.items.map((e: any) => e.auditId)).toContain(third.auditId);

    // Pages of 2 walk the same list without duplicates.
    const seen: string[] = [];
    let cursor: string | null = null;
    do {
      const page: any = await svc.api('GET', `/v1/audit?limit=2${cursor ? `&cursor=${cursor}` : ''}`, { token: t.admin });
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
    for (const query of ['actorType=robot', 'limit=0', 'limit=201', 'from=nope', 'cursor=%%%', 'from=2026-02-01T00:00:00Z&to=2026-01-01T00:00:00Z']) {
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
    expect((await postWebhook(svc, t.tenantId, 'generic', body, { key: key.key, signature: 'sha256=00' })).status).toBe(401);
    expect((await svc.api('PATCH', `/v1/tenants/${t.tenantId}`, { token: t.member, body: { name: 'mine now' } })).status).toBe(403);
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
    expect(rows[1]!.details).toMatchObject({ reason: expect.stringMatching(/signature/i), path: `/v1/webhooks/${t.tenantId}/generic` });
    expect(JSON.stringify(rows)).not.toContain(key.key);
    expect(JSON.stringify(rows)).not.toContain('flo_notarealkey');
    expect(rows[2]!.details).toMatchObject({ method: 'PATCH', reason: expect.stringMatching(/admin/) });
    const [{ n }] = (await svc.database.sql`select count(*)::int as n from audit_log where tenant_id = 'ten_doesnotexist'`) as unknown as [{ n: number }];
    expect(n).toBe(0);
  });

  it('records the mutations of notifications, stream tokens, and trigger firings (system)', async () => {
    const t = await svc.newTenant();
    const trigger = await svc.api('POST', '/v1/triggers', { token: t.admin, body: { name: 'tell everyone', eventType: 'incident.created', action: 'notify' } });
    expect(trigger.status).toBe(201);
    const created = await svc.api('POST', '/v1/incidents/chat', { token: t.member, body: { title: 'Queue backlog', description: 'Jobs pile up' } });
    expect(created.status).toBe(201);
    const fired = await eventually(async () => {
      const [row] = await svc.database.db.select().from(auditLog).where(and(eq(auditLog.tenantId, t.tenantId), eq(auditLog.action, 'trigger.fired'))).orderBy(auditLog.seq);
      return row;
    });
    expect(fired).toMatchObject({ actorType: 'system', actorId: 'trigger-dispatcher', targetId: trigger.body.triggerId, incidentId: created.body.incidentId });
    expect(fired.details).toMatchObject({ eventType: 'incident.created', action: 'notify' });

    const token = await svc.api('POST', '/v1/notifications/stream-token', { token: t.member });
    expect(token.status).toBe(201);
    await eventually(async () => (await svc.api('GET', '/v1/notifications', { token: t.member })).body.unreadCount > 0);
    expect((await svc.api('POST', '/v1/notifications/read', { token: t.member, body: { all: true } })).status).toBe(204);

    const actions = (await svc.api('GET', '/v1/audit?actorType=user&limit=200', { token: t.admin })).body.items.map((e: any) => e.action);
    expect(actions).toEqual(expect.arrayContaining(['trigger.created', 'incident.created', 'stream_token.issued', 'notification.read']));
    const issued = (await svc.api('GET', '/v1/audit?action=stream_token.issued', { token: t.admin })).body.items[0];
    expect(JSON.stringify(issued)).not.toContain(token.body.token);
  });
});
