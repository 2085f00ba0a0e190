import { and, asc, eq, sql } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { findRunbooksFor } from '../../src/db/repositories/runbooks.js';
import { auditLog } from '../../src/db/schema/audit.js';
import { runbooks } from '../../src/db/schema/investigation.js';
import { startTestService, type TestService } from '../helpers/service.js';

let svc: TestService;
let tenant: { tenantId: string; admin: string; member: string };

beforeAll(async () => {
  svc = await startTestService({ withoutWorker: true, withoutDispatcher: true });
  tenant = await svc.newTenant();
});
afterAll(() => svc?.stop());

const postgresRunbook = {
  title: 'Postgres connection exhaustion',
  service: 'orders-db',
  tags: ['postgres', 'connections'],
  content:
    '# Postgres connection exhaustion\n\n1. Check `pg_stat_activity` for idle sessions\n2. Restart the pgbouncer pool\n3. Scale checkout-api down to 4 replicas\n',
};

async function createRunbook(token: string, body: Record<string, unknown> = postgresRunbook) {
  const res = await svc.api('POST', '/v1/runbooks', { token, body });
  expect(res.status).toBe(201);
  return res.body as { runbookId: string; title: string; createdAt: string; updatedAt: string; [key: string]: unknown };
}

async function auditRows(targetId: string) {
  return svc.database.db
    .select()
    .from(auditLog)
    .where(eq(auditLog.targetId, targetId))
    .orderBy(asc(auditLog.occurredAt), asc(auditLog.id));
}

const ids = (body: { items: Array<{ runbookId: string }> }) => body.items.map((r) => r.runbookId);

describe('runbooks: create and read', () => {
  it('creates a runbook with its parsed steps, stores it and audits it in the same transaction', async () => {
    const res = await svc.api('POST', '/v1/runbooks', {
      token: tenant.member,
      body: {
        ...postgresRunbook,
        title: '  Postgres connection exhaustion  ',
        tags: ['Postgres', ' connections', 'postgres'],
      },
    });
    expect(res.status).toBe(201);
    expect(res.body).toEqual({
      runbookId: expect.stringMatching(/^rbk_[0-9a-z]{26}$/),
      title: 'Postgres connection exhaustion',
      service: 'orders-db',
      tags: ['postgres', 'connections'],
      content: postgresRunbook.content,
      steps: [
        { number: 1, text: 'Check `pg_stat_activity` for idle sessions' },
        { number: 2, text: 'Restart the pgbouncer pool' },
        { number: 3, text: 'Scale checkout-api down to 4 replicas' },
      ],
      createdAt: expect.any(String),
      updatedAt: res.body.createdAt,
    });
    const [row] = await svc.database.db
      .select({ row: runbooks, tagsType: sql<string>`jsonb_typeof(${runbooks.tags})` })
      .from(runbooks)
      .where(eq(runbooks.id, res.body.runbookId));
    expect(row!.row).toMatchObject({
      tenantId: tenant.tenantId,
      title: 'Postgres connection exhaustion',
      service: 'orders-db',
      tags: ['postgres', 'connections'],
      content: postgresRunbook.content,
    });
    expect(row!.tagsType).toBe('array');
    expect(row!.row.createdAt.toISOString()).toBe(res.body.createdAt);
    const audit = await auditRows(res.body.runbookId);
    expect(audit).toHaveLength(1);
    expect(audit[0]).toMatchObject({
      tenantId: tenant.tenantId,
      actorType: 'user',
      actorId: 'user-member',
      action: 'runbook.created',
      targetType: 'runbook',
      requestId: res.headers.get('x-request-id'),
      details: { title: 'Postgres connection exhaustion', service: 'orders-db', tags: ['postgres', 'connections'] },
    });
  });

  it('stores a missing service as null and missing tags as none, and accepts the largest allowed values', async () => {
    const tags = Array.from({ length: 20 }, (_, i) => `t${i}`);
    const res = await svc.api('POST', '/v1/runbooks', {
      token: tenant.admin,
      body: { title: 't'.repeat(200), tags, content: 'c'.repeat(50_000) },
    });
    expect(res.status).toBe(201);
    expect(res.body).toMatchObject({ service: null, tags, steps: [] });
    const minimal = await createRunbook(tenant.member, { title: 'Minimal', content: 'Call the database team.' });
    expect(minimal).toMatchObject({ service: null, tags: [], steps: [] });
    // Tags count once duplicates are dropped (after trimming and lowercasing).
    const repeated = await svc.api('POST', '/v1/runbooks', {
      token: tenant.admin,
      body: { title: 'Repeated tags', tags: [...tags, 't0', 'T1 '], content: 'Call the database team.' },
    });
    expect(repeated.status).toBe(201);
    expect(repeated.body).toMatchObject({ service: null, tags });
    const [row] = await svc.database.db.select().from(runbooks).where(eq(runbooks.id, minimal.runbookId));
    expect(row).toMatchObject({ service: null, tags: [] });
    // An explicit null means "no service", as it does in a PATCH.
    const explicit = await createRunbook(tenant.member, {
      title: 'For no service',
      service: null,
      content: 'Call the database team.',
    });
    expect(explicit).toMatchObject({ service: null });
    const [stored] = await svc.database.db.select().from(runbooks).where(eq(runbooks.id, explicit.runbookId));
    expect(stored!.service).toBeNull();
  });

  it('reads one runbook back with its content and steps', async () => {
    const created = await createRunbook(tenant.member);
    const res = await svc.api('GET', `/v1/runbooks/${created.runbookId}`, { token: tenant.member });
    expect(res.status).toBe(200);
    expect(res.body).toEqual(created);
  });

  it.each([
    [
      '## Step headings',
      '## Step 1: Find the clients\n- run the query\n## Step 2 — Restart pgbouncer\n',
      ['Find the clients', 'Restart pgbouncer'],
    ],
    ['checkboxes', 'Notes first.\n\n- [ ] Drain the node\n- [x] Cordon it\n', ['Drain the node', 'Cordon it']],
    ['plain bullets', '* Free space on /var\n* Rotate the logs\n', ['Free space on /var', 'Rotate the logs']],
    ['numbered items over bullets', '- symptom\n1. act\n2. verify\n', ['act', 'verify']],
    ['no list at all', 'Just call the vendor.', []],
  ])('parses steps from %s', async (_kind, content, steps) => {
    const created = await createRunbook(tenant.member, { title: 'Steps', content });
    expect(created.steps).toEqual(steps.map((text, i) => ({ number: i + 1, text })));
  });
});

describe('runbooks: validation', () => {
  const valid = { title: 'T', content: '1. step' };

  it.each([
    ['title', { content: '1. step' }],
    ['title', { ...valid, title: '   ' }],
    ['title', { ...valid, title: '\u200b' }],
    ['content', { ...valid, content: '\u200b\n\u00ad' }],
    ['title', { ...valid, title: 't'.repeat(201) }],
    ['title', { ...valid, title: 42 }],
    ['service', { ...valid, service: '' }],
    ['service', { ...valid, service: '   ' }],
    ['service', { ...valid, service: 's'.repeat(201) }],
    ['tags', { ...valid, tags: 'postgres' }],
    ['tags', { ...valid, tags: Array.from({ length: 21 }, (_, i) => `t${i}`) }],
    ['tags', { ...valid, tags: Array.from({ length: 101 }, () => 'same') }],
    ['tags.1', { ...valid, tags: ['ok', 'has space'] }],
    ['tags.0', { ...valid, tags: ['-leading-dash'] }],
    ['tags.0', { ...valid, tags: ['t'.repeat(41)] }],
    ['tags.0', { ...valid, tags: ['sla/p1'] }],
    ['tags.0', { ...valid, tags: [''] }],
    ['tags.0', { ...valid, tags: [7] }],
    ['content', { title: 'T' }],
    ['content', { ...valid, content: '' }],
    ['content', { ...valid, content: ' \n\t ' }],
    ['content', { ...valid, content: 'c'.repeat(50_001) }],
    ['content', { ...valid, content: ['1. step'] }],
  ])('rejects a creation with an invalid %s: 400 validation_error naming it', async (path, body) => {
    const res = await svc.api('POST', '/v1/runbooks', { token: tenant.member, body });
    expect(res.status).toBe(400);
    expect(res.body.error).toBe('validation_error');
    expect(res.body.details).toEqual(expect.arrayContaining([expect.objectContaining({ path })]));
  });

  it('rejects unknown fields, a body that is not an object and malformed JSON, storing nothing', async () => {
    const fresh = await svc.newTenant();
    const unknown = await svc.api('POST', '/v1/runbooks', {
      token: fresh.member,
      body: { ...valid, severity: 'high' },
    });
    expect(unknown.status).toBe(400);
    expect(unknown.body.error).toBe('validation_error');
    expect(unknown.body.message).toContain('severity');
    expect(unknown.body.details).toEqual([expect.objectContaining({ path: '' })]);
    const array = await svc.api('POST', '/v1/runbooks', { token: fresh.member, body: [valid] });
    expect(array.status).toBe(400);
    expect(array.body.error).toBe('validation_error');
    const malformed = await svc.api('POST', '/v1/runbooks', {
      token: fresh.member,
      rawBody: '{"title": "x",',
      headers: { 'content-type': 'application/json' },
    });
    expect(malformed.status).toBe(400);
    expect(malformed.body.error).toBe('validation_error');
    const stored = await svc.database.db.select().from(runbooks).where(eq(runbooks.tenantId, fresh.tenantId));
    expect(stored).toEqual([]);
  });

  it.each([
    ['no field', '', {}],
    ['an unknown field', '', { title: 'x', extra: true }],
    ['an empty title', 'title', { title: '' }],
    ['an empty service', 'service', { service: '' }],
    ['an invalid tag', 'tags.0', { tags: ['Not Valid'] }],
    ['null tags', 'tags', { tags: null }],
    ['too long a content', 'content', { content: 'c'.repeat(50_001) }],
    ['a blank content', 'content', { content: '   ' }],
  ])('rejects a change with %s: 400 validation_error naming "%s", changing nothing', async (_label, path, body) => {
    const created = await createRunbook(tenant.member);
    const res = await svc.api('PATCH', `/v1/runbooks/${created.runbookId}`, { token: tenant.member, body });
    expect(res.status).toBe(400);
    expect(res.body.error).toBe('validation_error');
    expect(res.body.details).toEqual(expect.arrayContaining([expect.objectContaining({ path })]));
    const [row] = await svc.database.db.select().from(runbooks).where(eq(runbooks.id, created.runbookId));
    expect(row!.updatedAt.toISOString()).toBe(created.updatedAt);
    expect(row!.title).toBe(created.title);
    expect(await auditRows(created.runbookId)).toHaveLength(1);
  });

  it('says a change needs at least one field', async () => {
    const created = await createRunbook(tenant.member);
    const res = await svc.api('PATCH', `/v1/runbooks/${created.runbookId}`, { token: tenant.member, body: {} });
    expect(res.body.message).toBe('Give at least one of title, service, tags, content');
  });

  it.each([
    ['limit=0', 'limit'],
    ['limit=201', 'limit'],
    ['limit=abc', 'limit'],
    ['q=', 'q'],
    ['q=%20%20', 'q'],
    [`q=${'q'.repeat(201)}`, 'q'],
    ['tag=no%20spaces', 'tag'],
    ['service=', 'service'],
    [`service=${'s'.repeat(201)}`, 'service'],
  ])('rejects the list query %s with 400 validation_error naming %s', async (query, path) => {
    const res = await svc.api('GET', `/v1/runbooks?${query}`, { token: tenant.member });
    expect(res.status).toBe(400);
    expect(res.body.error).toBe('validation_error');
    expect(res.body.details).toEqual(expect.arrayContaining([expect.objectContaining({ path })]));
  });

  it('rejects a cursor that is not one of ours', async () => {
    const res = await svc.api('GET', '/v1/runbooks?cursor=not-a-cursor', { token: tenant.member });
    expect(res.status).toBe(400);
    expect(res.body).toEqual({ error: 'validation_error', message: 'cursor is not valid' });
  });
});

describe('runbooks: list', () => {
  it('pages newest first with a cursor, with the total across pages and no content', async () => {
    const fresh = await svc.newTenant();
    const created = [];
    for (let i = 0; i < 5; i++)
      created.push(await createRunbook(fresh.member, { title: `Runbook ${i}`, content: `1. step ${i}` }));
    const newestFirst = [...created]
      .sort((a, b) => b.createdAt.localeCompare(a.createdAt) || b.runbookId.localeCompare(a.runbookId))
      .map((r) => r.runbookId);

    const first = await svc.api('GET', '/v1/runbooks?limit=2', { token: fresh.member });
    expect(first.status).toBe(200);
    expect(first.body.total).toBe(5);
    expect(ids(first.body)).toEqual(newestFirst.slice(0, 2));
    expect(first.body.nextCursor).toEqual(expect.any(String));
    expect(Object.keys(first.body.items[0]).sort()).toEqual([
      'createdAt',
      'runbookId',
      'service',
      'tags',
      'title',
      'updatedAt',
    ]);
    const second = await svc.api('GET', `/v1/runbooks?limit=2&cursor=${first.body.nextCursor}`, {
      token: fresh.member,
    });
    expect(ids(second.body)).toEqual(newestFirst.slice(2, 4));
    expect(second.body.total).toBe(5);
    const third = await svc.api('GET', `/v1/runbooks?limit=2&cursor=${second.body.nextCursor}`, {
      token: fresh.member,
    });
    expect(ids(third.body)).toEqual(newestFirst.slice(4));
    expect(third.body.nextCursor).toBeNull();

    const all = await svc.api('GET', '/v1/runbooks', { token: fresh.admin });
    expect(all.body).toMatchObject({ total: 5, nextCursor: null });
    expect(ids(all.body)).toEqual(newestFirst);
    const empty = await svc.api('GET', '/v1/runbooks', { token: (await svc.newTenant()).member });
    expect(empty.body).toEqual({ items: [], total: 0, nextCursor: null });
  });

  it('filters by exact service, by tag and by text in title or content, case-insensitively, with matching totals', async () => {
    const fresh = await svc.newTenant();
    const pg = await createRunbook(fresh.member, postgresRunbook);
    const disk = await createRunbook(fresh.member, {
      title: 'Disk full on orders-db',
      service: 'orders-db',
      tags: ['disk'],
      content: '- Free space on /var',
    });
    const cert = await createRunbook(fresh.member, {
      title: 'Expired certificate',
      tags: ['tls', 'postgres'],
      content: '1. Renew with cert-manager\n2. Roll the ingress 100%_done',
    });

    const list = async (query: string) => {
      const res = await svc.api('GET', `/v1/runbooks?${query}`, { token: fresh.member });
      expect(res.status).toBe(200);
      expect(res.body.total).toBe(res.body.items.length);
      return ids(res.body).sort();
    };
    expect(await list('service=orders-db')).toEqual([pg.runbookId, disk.runbookId].sort());
    expect(await list('service=ORDERS-DB')).toEqual([]);
    expect(await list('tag=postgres')).toEqual([pg.runbookId, cert.runbookId].sort());
    expect(await list('tag=POSTGRES')).toEqual([pg.runbookId, cert.runbookId].sort());
    expect(await list('tag=disk')).toEqual([disk.runbookId]);
    expect(await list('q=PGBOUNCER')).toEqual([pg.runbookId]);
    expect(await list('q=expired%20CERT')).toEqual([cert.runbookId]);
    expect(await list('q=orders-db')).toEqual([disk.runbookId]);
    expect(await list('q=100%25_')).toEqual([cert.runbookId]);
    expect(await list('q=%25')).toEqual([cert.runbookId]);
    expect(await list('q=_done')).toEqual([cert.runbookId]);
    expect(await list('service=orders-db&tag=postgres')).toEqual([pg.runbookId]);
    expect(await list('service=orders-db&q=free%20space')).toEqual([disk.runbookId]);
    expect(await list('tag=tls&q=pgbouncer')).toEqual([]);

    const paged = await svc.api('GET', '/v1/runbooks?tag=postgres&limit=1', { token: fresh.member });
    expect(paged.body.items).toHaveLength(1);
    expect(paged.body.total).toBe(2);
    const rest = await svc.api('GET', `/v1/runbooks?tag=postgres&limit=1&cursor=${paged.body.nextCursor}`, {
      token: fresh.member,
    });
    expect([...ids(paged.body), ...ids(rest.body)].sort()).toEqual([pg.runbookId, cert.runbookId].sort());
    expect(rest.body.nextCursor).toBeNull();
  });
});

describe('runbooks: change and remove', () => {
  it('changes any field, moves updatedAt, re-parses the steps and audits the fields changed', async () => {
    const created = await createRunbook(tenant.member);
    await new Promise((resolve) => setTimeout(resolve, 5));
    const res = await svc.api('PATCH', `/v1/runbooks/${created.runbookId}`, {
      token: tenant.member,
      body: {
        title: ' Pool exhaustion ',
        service: null,
        tags: ['Pool', 'pool', 'db'],
        content: '## Step 1: Kill idle sessions\n## Step 2: Raise max_connections\n',
      },
    });
    expect(res.status).toBe(200);
    expect(res.body).toEqual({
      runbookId: created.runbookId,
      title: 'Pool exhaustion',
      service: null,
      tags: ['pool', 'db'],
      content: '## Step 1: Kill idle sessions\n## Step 2: Raise max_connections\n',
      steps: [
        { number: 1, text: 'Kill idle sessions' },
        { number: 2, text: 'Raise max_connections' },
      ],
      createdAt: created.createdAt,
      updatedAt: expect.any(String),
    });
    expect(new Date(res.body.updatedAt).getTime()).toBeGreaterThan(new Date(created.updatedAt).getTime());
    const [row] = await svc.database.db.select().from(runbooks).where(eq(runbooks.id, created.runbookId));
    expect(row).toMatchObject({ title: 'Pool exhaustion', service: null, tags: ['pool', 'db'] });
    expect(row!.updatedAt.toISOString()).toBe(res.body.updatedAt);
    expect((await svc.api('GET', `/v1/runbooks/${created.runbookId}`, { token: tenant.member })).body).toEqual(
      res.body,
    );

    const audit = await auditRows(created.runbookId);
    expect(audit.map((a) => a.action)).toEqual(['runbook.created', 'runbook.updated']);
    expect(audit[1]).toMatchObject({
      tenantId: tenant.tenantId,
      actorId: 'user-member',
      targetType: 'runbook',
      requestId: res.headers.get('x-request-id'),
      details: { fields: ['title', 'service', 'tags', 'content'], title: 'Pool exhaustion' },
    });
  });

  it('changes only the fields given', async () => {
    const created = await createRunbook(tenant.member);
    const res = await svc.api('PATCH', `/v1/runbooks/${created.runbookId}`, {
      token: tenant.admin,
      body: { tags: [] },
    });
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({
      title: created.title,
      service: 'orders-db',
      tags: [],
      content: postgresRunbook.content,
      steps: created.steps,
    });
    const service = await svc.api('PATCH', `/v1/runbooks/${created.runbookId}`, {
      token: tenant.member,
      body: { service: 'payments-db' },
    });
    expect(service.body).toMatchObject({ service: 'payments-db', tags: [], title: created.title });
    expect((await auditRows(created.runbookId)).map((a) => a.details)).toEqual([
      expect.anything(),
      { fields: ['tags'], title: created.title },
      { fields: ['service'], title: created.title },
    ]);
  });

  it('removes a runbook with 204 (admin only), audits it, and then answers 404', async () => {
    const created = await createRunbook(tenant.member);
    const forbidden = await svc.api('DELETE', `/v1/runbooks/${created.runbookId}`, { token: tenant.member });
    expect(forbidden.status).toBe(403);
    expect(forbidden.body.error).toBe('forbidden');
    expect(await svc.database.db.select().from(runbooks).where(eq(runbooks.id, created.runbookId))).toHaveLength(1);

    const removed = await svc.api('DELETE', `/v1/runbooks/${created.runbookId}`, { token: tenant.admin });
    expect(removed.status).toBe(204);
    expect(removed.body).toBe('');
    expect(await svc.database.db.select().from(runbooks).where(eq(runbooks.id, created.runbookId))).toEqual([]);
    const audit = await auditRows(created.runbookId);
    expect(audit.map((a) => a.action)).toEqual(['runbook.created', 'runbook.deleted']);
    expect(audit[1]).toMatchObject({
      actorId: 'user-admin',
      requestId: removed.headers.get('x-request-id'),
      details: { title: postgresRunbook.title, service: 'orders-db' },
    });
    for (const method of ['GET', 'PATCH', 'DELETE']) {
      const res = await svc.api(method, `/v1/runbooks/${created.runbookId}`, {
        token: tenant.admin,
        ...(method === 'PATCH' ? { body: { title: 'x' } } : {}),
      });
      expect(res.status).toBe(404);
      expect(res.body).toEqual({ error: 'not_found', message: 'No runbook has that identifier' });
    }
  });
});

describe('runbooks: access', () => {
  it('answers 401 without a token or with a bad one on every endpoint', async () => {
    const created = await createRunbook(tenant.member);
    const calls: Array<[string, string, unknown?]> = [
      ['POST', '/v1/runbooks', postgresRunbook],
      ['GET', '/v1/runbooks'],
      ['GET', `/v1/runbooks/${created.runbookId}`],
      ['PATCH', `/v1/runbooks/${created.runbookId}`, { title: 'x' }],
      ['DELETE', `/v1/runbooks/${created.runbookId}`],
    ];
    for (const [method, path, body] of calls) {
      for (const token of [undefined, 'not-a-jwt', svc.token(tenant.tenantId, 'admin', { ttlSeconds: -60 })]) {
        const res = await svc.api(method, path, { ...(token ? { token } : {}), ...(body ? { body } : {}) });
        expect(res.status, `${method} ${path}`).toBe(401);
        expect(res.body.error).toBe('unauthorized');
      }
    }
    const [row] = await svc.database.db.select().from(runbooks).where(eq(runbooks.id, created.runbookId));
    expect(row!.title).toBe(postgresRunbook.title);
  });

  it('lets members read, create and change runbooks, and only admins remove them', async () => {
    const created = await createRunbook(tenant.member);
    expect((await svc.api('GET', '/v1/runbooks', { token: tenant.member })).status).toBe(200);
    expect((await svc.api('GET', `/v1/runbooks/${created.runbookId}`, { token: tenant.member })).status).toBe(200);
    expect(
      (await svc.api('PATCH', `/v1/runbooks/${created.runbookId}`, { token: tenant.member, body: { title: 'x' } }))
        .status,
    ).toBe(200);
    expect((await svc.api('DELETE', `/v1/runbooks/${created.runbookId}`, { token: tenant.member })).status).toBe(403);
    expect((await svc.api('POST', '/v1/runbooks', { token: tenant.admin, body: postgresRunbook })).status).toBe(201);
    expect((await svc.api('DELETE', `/v1/runbooks/${created.runbookId}`, { token: tenant.admin })).status).toBe(204);
  });

  it("answers 404 not_found for an unknown id and for another tenant's runbook, which it never lists nor changes", async () => {
    for (const method of ['GET', 'PATCH', 'DELETE']) {
      const res = await svc.api(method, '/v1/runbooks/rbk_nope', {
        token: tenant.admin,
        ...(method === 'PATCH' ? { body: { title: 'x' } } : {}),
      });
      expect(res.status).toBe(404);
      expect(res.body.error).toBe('not_found');
    }
    const other = await svc.newTenant();
    const theirs = await createRunbook(other.member, {
      ...postgresRunbook,
      title: 'Theirs: postgres connection exhaustion',
    });
    for (const method of ['GET', 'PATCH', 'DELETE']) {
      const res = await svc.api(method, `/v1/runbooks/${theirs.runbookId}`, {
        token: tenant.admin,
        ...(method === 'PATCH' ? { body: { title: 'mine now' } } : {}),
      });
      expect(res.status).toBe(404);
      expect(res.body).toEqual({ error: 'not_found', message: 'No runbook has that identifier' });
    }
    const [row] = await svc.database.db.select().from(runbooks).where(eq(runbooks.id, theirs.runbookId));
    expect(row).toMatchObject({ tenantId: other.tenantId, title: 'Theirs: postgres connection exhaustion' });
    expect((await auditRows(theirs.runbookId)).map((a) => a.action)).toEqual(['runbook.created']);
    for (const query of ['limit=200', 'q=theirs', 'service=orders-db&limit=200', 'tag=postgres&limit=200']) {
      const listed = await svc.api('GET', `/v1/runbooks?${query}`, { token: tenant.admin });
      expect(ids(listed.body)).not.toContain(theirs.runbookId);
    }
    expect((await svc.api('GET', '/v1/runbooks?q=theirs', { token: tenant.admin })).body.total).toBe(0);
    expect((await svc.api('GET', `/v1/runbooks/${theirs.runbookId}`, { token: other.member })).status).toBe(200);
  });
});

describe('runbooks: OpenAPI', () => {
  it('documents the five operations and the strict bodies', async () => {
    const doc = (await svc.api('GET', '/openapi.json')).body;
    expect(Object.keys(doc.paths['/v1/runbooks']).sort()).toEqual(['get', 'post']);
    expect(Object.keys(doc.paths['/v1/runbooks/{runbookId}']).sort()).toEqual(['delete', 'get', 'patch']);
    expect(doc.components.schemas.CreateRunbook).toMatchObject({
      required: ['title', 'content'],
      additionalProperties: false,
    });
    expect(doc.components.schemas.UpdateRunbook).toMatchObject({ additionalProperties: false });
    expect(Object.keys(doc.components.schemas.Runbook.properties).sort()).toEqual([
      'content',
      'createdAt',
      'runbookId',
      'service',
      'steps',
      'tags',
      'title',
      'updatedAt',
    ]);
    expect(Object.keys(doc.components.schemas.RunbookList.properties).sort()).toEqual(['items', 'nextCursor', 'total']);
  });
});

describe('findRunbooksFor', () => {
  let matching: { tenantId: string; admin: string; member: string };
  const created: Record<string, string> = {};

  beforeAll(async () => {
    matching = await svc.newTenant();
    const specs: Record<string, Record<string, unknown>> = {
      postgres: postgresRunbook,
      rollback: {
        title: 'Checkout API rollback',
        service: 'checkout-api',
        tags: ['deploy'],
        content: '1. Roll back the last release\n2. Watch the error rate',
      },
      cache: { title: 'Cache failure', service: 'Checkout-API', content: '- Flush the cache' },
      disk: { title: 'Disk full', tags: ['disk'], content: '- Free space on /var\n- Check the spool directory' },
      regex: { title: 'Upstream a.b* config', content: '- Reload c++ (native) workers' },
    };
    for (const [name, body] of Object.entries(specs))
      created[name] = (await createRunbook(matching.member, body)).runbookId;
    const other = await svc.newTenant();
    await createRunbook(other.member, {
      title: 'Postgres deploy rollback',
      service: 'checkout-api',
      tags: ['postgres', 'deploy'],
      content: '1. postgres deploy',
    });
  });

  const find = (incident: { service?: string | null; keywords: string[] }, limit?: number) =>
    findRunbooksFor(svc.database.db, matching.tenantId, incident, limit);

  it('ranks service matches and keyword hits, best first, with the parsed steps and what matched', async () => {
    const found = await find({
      service: 'checkout-api',
      keywords: ['Postgres', 'connection', 'deploy', 'pgbouncer', 'pool', 'x'],
    });
    expect(found.map((r) => r.runbookId)).toEqual([created.postgres, created.rollback, created.cache]);
    expect(found[0]).toMatchObject({
      title: 'Postgres connection exhaustion',
      service: 'orders-db',
      tags: ['postgres', 'connections'],
      score: 6,
      serviceMatch: false,
      matchedKeywords: ['postgres', 'connection', 'pgbouncer', 'pool'],
      steps: [
        { number: 1, text: 'Check `pg_stat_activity` for idle sessions' },
        { number: 2, text: 'Restart the pgbouncer pool' },
        { number: 3, text: 'Scale checkout-api down to 4 replicas' },
      ],
    });
    expect(found[0]!.updatedAt).toBeInstanceOf(Date);
    expect(found[1]).toMatchObject({ score: 5, serviceMatch: true, matchedKeywords: ['deploy'] });
    expect(found[1]!.steps.map((s) => s.text)).toEqual(['Roll back the last release', 'Watch the error rate']);
    expect(found[2]).toMatchObject({ service: 'Checkout-API', score: 3, serviceMatch: true, matchedKeywords: [] });
  });

  it('breaks equal scores by the most recently updated runbook', async () => {
    const before = await find({ service: 'checkout-api', keywords: [] });
    expect(before.map((r) => r.score)).toEqual([3, 3]);
    const older = before[1]!.runbookId;
    await svc.api('PATCH', `/v1/runbooks/${older}`, {
      token: matching.member,
      body: { tags: older === created.rollback ? ['deploy'] : [] },
    });
    const after = await find({ service: 'checkout-api', keywords: [] });
    expect(after.map((r) => r.runbookId)).toEqual([older, before[0]!.runbookId]);
  });

  it('matches keywords at the start of words, in title, tags or content, and takes punctuation literally', async () => {
    expect((await find({ keywords: ['spool'] })).map((r) => r.runbookId)).toEqual([created.disk]);
    expect(await find({ keywords: ['pool'] })).toEqual([
      expect.objectContaining({ runbookId: created.postgres, score: 1 }),
    ]);
    expect(await find({ keywords: ['ool', 'ollback'] })).toEqual([]);
    expect(await find({ keywords: ['DISK'] })).toEqual([
      expect.objectContaining({ runbookId: created.disk, score: 2 }),
    ]);
    expect(await find({ keywords: ['a.b*'] })).toEqual([
      expect.objectContaining({ runbookId: created.regex, score: 2 }),
    ]);
    expect(await find({ keywords: ['axb'] })).toEqual([]);
    expect(await find({ keywords: ['c++', '(native)'] })).toEqual([
      expect.objectContaining({ runbookId: created.regex, score: 2, matchedKeywords: ['c++', '(native)'] }),
    ]);
    expect(await find({ keywords: ['[', '\\', '.*'] })).toEqual([]);
  });

  it('honours the limit and returns nothing without a service or a usable keyword', async () => {
    expect(await find({ service: 'checkout-api', keywords: ['postgres', 'disk'] }, 1)).toHaveLength(1);
    expect(await find({ service: 'checkout-api', keywords: ['postgres', 'disk'] })).toHaveLength(4);
    expect(await find({ keywords: [] })).toEqual([]);
    expect(await find({ service: null, keywords: ['a', ' ', ''] })).toEqual([]);
    expect(await find({ service: '  ', keywords: [] })).toEqual([]);
    expect(await find({ service: 'unknown-service', keywords: ['nothing-matches-this'] })).toEqual([]);
  });

  it("never finds another tenant's runbooks", async () => {
    const found = await find({ service: 'checkout-api', keywords: ['postgres', 'deploy', 'rollback'] }, 50);
    const mine = await svc.database.db
      .select({ id: runbooks.id })
      .from(runbooks)
      .where(and(eq(runbooks.tenantId, matching.tenantId)));
    expect(found.length).toBeGreaterThan(0);
    for (const r of found) expect(mine.map((m) => m.id)).toContain(r.runbookId);
    expect(found.map((r) => r.title)).not.toContain('Postgres deploy rollback');
    const theirs = await findRunbooksFor(svc.database.db, tenant.tenantId, { keywords: ['native'] });
    expect(theirs).toEqual([]);
  });
});
