import { eq } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { hashApiKey } from '../../src/auth/api-keys.js';
import { auditLog } from '../../src/db/schema/audit.js';
import { apiKeys } from '../../src/db/schema/ingestion.js';
import { startTestService, type TestService } from '../helpers/service.js';
import { createKey, eventually, postWebhook } from '../helpers/webhooks.js';

let svc: TestService;
let tenant: { tenantId: string; admin: string; member: string };

beforeAll(async () => {
  svc = await startTestService();
  tenant = await svc.newTenant();
});
afterAll(() => svc?.stop());

const alert = { name: 'DiskFull', severity: 'high', service: 'db', summary: 'disk 95% full' };

describe('API keys', () => {
  it('creates a key shown once, storing only its hash and prefix', async () => {
    const res = await svc.api('POST', '/v1/api-keys', { token: tenant.admin, body: { name: 'prometheus-prod' } });
    expect(res.status).toBe(201);
    expect(res.body).toEqual({
      keyId: expect.stringMatching(/^key_/),
      name: 'prometheus-prod',
      key: expect.stringMatching(/^flo_[0-9A-Za-z]{43}$/),
      signingSecret: expect.stringMatching(/^whsec_[0-9A-Za-z]{43}$/),
      prefix: res.body.key.slice(0, 12),
      createdAt: expect.any(String),
    });
    const [row] = await svc.database.db.select().from(apiKeys).where(eq(apiKeys.id, res.body.keyId));
    expect(row!.keyHash).toBe(hashApiKey(res.body.key));
    expect(JSON.stringify(row)).not.toContain(res.body.key);
    const [audit] = await svc.database.db
      .select()
      .from(auditLog)
      .where(eq(auditLog.targetId, res.body.keyId))
      .orderBy(auditLog.seq);
    expect(audit!.action).toBe('api_key.created');
    expect(JSON.stringify(audit)).not.toContain(res.body.key);
    expect(JSON.stringify(audit)).not.toContain(res.body.signingSecret);
  });

  it('lists keys without any secret, newest first, with a cursor', async () => {
    const fresh = await svc.newTenant();
    const created = [];
    for (const name of ['a', 'b', 'c']) created.push(await createKey(svc, fresh.admin, name));
    const first = await svc.api('GET', '/v1/api-keys?limit=2', { token: fresh.admin });
    expect(first.status).toBe(200);
    expect(first.body.items.map((k: { name: string }) => k.name)).toEqual(['c', 'b']);
    expect(Object.keys(first.body.items[0]).sort()).toEqual([
      'createdAt',
      'keyId',
      'lastUsedAt',
      'name',
      'prefix',
      'revokedAt',
    ]);
    const text = JSON.stringify(first.body);
    for (const k of created) {
      expect(text).not.toContain(k.key);
      expect(text).not.toContain(k.signingSecret);
    }
    const second = await svc.api('GET', `/v1/api-keys?limit=2&cursor=${first.body.nextCursor}`, { token: fresh.admin });
    expect(second.body.items.map((k: { name: string }) => k.name)).toEqual(['a']);
    expect(second.body.nextCursor).toBeNull();
  });

  it('records when a key was last used', async () => {
    const key = await createKey(svc, tenant.admin, 'usage');
    expect((await postWebhook(svc, tenant.tenantId, 'generic', alert, { key: key.key })).status).toBe(202);
    // The route records the use after answering (it never delays the 202), so poll for it.
    const mine = await eventually(async () => {
      const listed = await svc.api('GET', '/v1/api-keys?limit=200', { token: tenant.admin });
      const found = listed.body.items.find((k: { keyId: string; lastUsedAt: string | null }) => k.keyId === key.keyId);
      return found?.lastUsedAt ? found : undefined;
    });
    expect(new Date(mine.lastUsedAt).getTime()).toBeGreaterThan(Date.now() - 60_000);
  });

  it('revokes with 204, refuses the very next webhook with 401, and answers 409 when revoked again', async () => {
    const key = await createKey(svc, tenant.admin, 'to-revoke');
    expect((await postWebhook(svc, tenant.tenantId, 'generic', alert, { key: key.key })).status).toBe(202);
    const revoked = await svc.api('DELETE', `/v1/api-keys/${key.keyId}`, { token: tenant.admin });
    expect(revoked.status).toBe(204);
    expect(revoked.body).toBe('');
    const refused = await postWebhook(svc, tenant.tenantId, 'generic', { ...alert, name: 'Other' }, { key: key.key });
    expect(refused.status).toBe(401);
    expect(refused.body.error).toBe('unauthorized');
    const again = await svc.api('DELETE', `/v1/api-keys/${key.keyId}`, { token: tenant.admin });
    expect(again.status).toBe(409);
    expect(again.body.error).toBe('conflict');
    const listed = await svc.api('GET', '/v1/api-keys?limit=200', { token: tenant.admin });
    expect(listed.body.items.find((k: { keyId: string }) => k.keyId === key.keyId).revokedAt).not.toBeNull();
  });

  it("answers 404 not_found for an unknown key and for another tenant's key", async () => {
    expect((await svc.api('DELETE', '/v1/api-keys/key_nope', { token: tenant.admin })).body.error).toBe('not_found');
    const other = await svc.newTenant();
    const theirs = await createKey(svc, other.admin);
    const res = await svc.api('DELETE', `/v1/api-keys/${theirs.keyId}`, { token: tenant.admin });
    expect(res.status).toBe(404);
    expect((await postWebhook(svc, other.tenantId, 'generic', alert, { key: theirs.key })).status).toBe(202);
  });

  it('is admin only, and validates the name', async () => {
    expect((await svc.api('POST', '/v1/api-keys', { token: tenant.member, body: { name: 'x' } })).status).toBe(403);
    expect((await svc.api('GET', '/v1/api-keys', { token: tenant.member })).status).toBe(403);
    expect((await svc.api('DELETE', '/v1/api-keys/key_x', { token: tenant.member })).status).toBe(403);
    for (const body of [{}, { name: '' }, { name: 'n'.repeat(101) }, { name: 7 }]) {
      const res = await svc.api('POST', '/v1/api-keys', { token: tenant.admin, body });
      expect(res.status).toBe(400);
      expect(res.body.error).toBe('validation_error');
    }
  });

  it('never accepts an API key as a user token, nor a JWT on the webhook', async () => {
    const key = await createKey(svc, tenant.admin);
    expect((await svc.api('GET', '/v1/incidents', { token: key.key })).status).toBe(401);
    const res = await svc.api('POST', `/v1/webhooks/${tenant.tenantId}/generic`, { token: tenant.admin, body: alert });
    expect(res.status).toBe(401);
  });
});
