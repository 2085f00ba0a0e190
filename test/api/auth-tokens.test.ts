import { and, eq } from 'drizzle-orm';
import jwt from 'jsonwebtoken';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startSession, type TokenPair } from '../../src/auth/sessions.js';
import { auditLog } from '../../src/db/schema/audit.js';
import { memberships, refreshTokens, userAccounts } from '../../src/db/schema/identity.js';
import { newId } from '../../src/ids.js';
import { startTestService, TEST_JWT_SECRET, type TestService } from '../helpers/service.js';

let svc: TestService;

beforeAll(async () => {
  svc = await startTestService({ withoutWorker: true, identity: { accessTtlSeconds: 900 } });
});
afterAll(async () => {
  await svc?.stop();
});

/** A person with a membership, signed in: what the sign-in callback does after the provider. */
async function signedIn(
  role: 'admin' | 'member' = 'admin',
): Promise<{ tenantId: string; userId: string; pair: TokenPair }> {
  const { tenantId } = await svc.newTenant();
  const userId = newId('usr');
  const email = `${userId}@example.test`;
  await svc.database.db.insert(userAccounts).values({ id: userId, email, name: 'Ada' });
  await svc.database.db.insert(memberships).values({ tenantId, userId, role, addedBy: 'operator' });
  const pair = await startSession(
    svc.database.db,
    svc.appDeps.identity!.sessions!,
    { userId, tenantId, email, role },
    new Date(),
  );
  return { tenantId, userId, pair };
}

const refresh = (refreshToken: unknown) => svc.api('POST', '/v1/auth/refresh', { body: { refreshToken } });

describe('the issued access token', () => {
  it('carries the interface claims and works on the api with the membership role', async () => {
    const { tenantId, userId, pair } = await signedIn('admin');
    expect(pair).toMatchObject({ tokenType: 'Bearer', expiresIn: 900, tenantId });
    const claims = jwt.verify(pair.accessToken, TEST_JWT_SECRET) as jwt.JwtPayload;
    expect(claims).toMatchObject({
      sub: userId,
      email: `${userId}@example.test`,
      tenant_id: tenantId,
      roles: ['admin'],
      iss: 'incident-service',
      aud: 'incident-service-api',
    });
    expect(claims.exp! - claims.iat!).toBe(900);
    expect((await svc.api('GET', '/v1/api-keys', { token: pair.accessToken })).status).toBe(200);
  });

  it('counts with the role the membership has now, and not at all once the membership is gone', async () => {
    const { tenantId, userId, pair } = await signedIn('admin');
    await svc.database.db
      .update(memberships)
      .set({ role: 'member' })
      .where(and(eq(memberships.tenantId, tenantId), eq(memberships.userId, userId)));
    const demoted = await svc.api('GET', '/v1/api-keys', { token: pair.accessToken });
    expect(demoted.status).toBe(403);
    expect((await svc.api('GET', '/v1/incidents', { token: pair.accessToken })).status).toBe(200);
    await svc.database.db
      .delete(memberships)
      .where(and(eq(memberships.tenantId, tenantId), eq(memberships.userId, userId)));
    const removed = await svc.api('GET', '/v1/incidents', { token: pair.accessToken });
    expect(removed.status).toBe(401);
    expect(removed.body.error).toBe('unauthorized');
  });
});

describe('POST /v1/auth/refresh', () => {
  it('rotates: a new pair, the old refresh token spent, the new access token with the role as it is now', async () => {
    const { tenantId, userId, pair } = await signedIn('admin');
    await svc.database.db
      .update(memberships)
      .set({ role: 'member' })
      .where(and(eq(memberships.tenantId, tenantId), eq(memberships.userId, userId)));
    const res = await refresh(pair.refreshToken);
    expect(res.status).toBe(200);
    expect(res.headers.get('cache-control')).toBe('no-store');
    expect(res.body).toMatchObject({ tokenType: 'Bearer', expiresIn: 900, tenantId });
    expect(res.body.refreshToken).toMatch(/^frt_[0-9A-Za-z]{43}$/);
    expect(res.body.refreshToken).not.toBe(pair.refreshToken);
    expect((jwt.decode(res.body.accessToken) as jwt.JwtPayload).roles).toEqual(['member']);
    const rows = await svc.database.db.select().from(refreshTokens).where(eq(refreshTokens.userId, userId));
    expect(rows).toHaveLength(2);
    expect(new Set(rows.map((r) => r.familyId)).size).toBe(1);
    expect(rows.filter((r) => r.rotatedAt !== null)).toHaveLength(1);
    // Only hashes are stored.
    expect(JSON.stringify(rows)).not.toContain(pair.refreshToken.slice(4));
    const audit = await svc.database.db.select().from(auditLog).where(eq(auditLog.tenantId, tenantId));
    expect(audit.map((a) => a.action)).toContain('auth.token_refreshed');
  });

  it('a spent refresh token presented again revokes the whole family, the newest token too', async () => {
    const { tenantId, pair } = await signedIn();
    const first = await refresh(pair.refreshToken);
    expect(first.status).toBe(200);
    const reused = await refresh(pair.refreshToken);
    expect(reused.status).toBe(401);
    expect(reused.body.error).toBe('unauthorized');
    const newest = await refresh(first.body.refreshToken);
    expect(newest.status).toBe(401);
    const audit = await svc.database.db
      .select()
      .from(auditLog)
      .where(and(eq(auditLog.tenantId, tenantId), eq(auditLog.action, 'auth.refresh_token_reused')));
    expect(audit).toHaveLength(1);
    const family = await svc.database.db
      .select()
      .from(refreshTokens)
      .where(eq(refreshTokens.familyId, audit[0]!.targetId));
    expect(family.every((r) => r.revokedAt !== null && r.revokedReason === 'reuse')).toBe(true);
  });

  it('two refreshes of one token at once: one pair, and the other is taken as reuse', async () => {
    const { pair } = await signedIn();
    const answers = await Promise.all([refresh(pair.refreshToken), refresh(pair.refreshToken)]);
    expect(answers.map((a) => a.status).sort()).toEqual([200, 401]);
  });

  it('refuses a removed member (their session ends) and an expired token', async () => {
    const { tenantId, userId, pair } = await signedIn();
    await svc.database.db
      .delete(memberships)
      .where(and(eq(memberships.tenantId, tenantId), eq(memberships.userId, userId)));
    expect((await refresh(pair.refreshToken)).status).toBe(401);
    const [row] = await svc.database.db.select().from(refreshTokens).where(eq(refreshTokens.userId, userId));
    expect(row!.revokedReason).toBe('member_removed');

    const other = await signedIn();
    await svc.database.db
      .update(refreshTokens)
      .set({ expiresAt: new Date(Date.now() - 1000) })
      .where(eq(refreshTokens.userId, other.userId));
    expect((await refresh(other.pair.refreshToken)).status).toBe(401);
  });

  it('answers 400 for what is not a refresh token and 401 for an unknown one', async () => {
    for (const body of [
      {},
      { refreshToken: 42 },
      { refreshToken: 'abc' },
      { refreshToken: `frt_${'a'.repeat(43)}`, x: 1 },
    ]) {
      const res = await svc.api('POST', '/v1/auth/refresh', { body });
      expect(res.status).toBe(400);
      expect(res.body.error).toBe('validation_error');
    }
    const unknown = await refresh(`frt_${'a'.repeat(43)}`);
    expect(unknown.status).toBe(401);
    expect(unknown.body.message).not.toContain('frt_');
  });
});

describe('POST /v1/auth/logout', () => {
  it('ends the session: its refresh token no longer refreshes; audited; again or unknown is 204 too', async () => {
    const { tenantId, pair } = await signedIn();
    const out = await svc.api('POST', '/v1/auth/logout', { body: { refreshToken: pair.refreshToken } });
    expect(out.status).toBe(204);
    expect((await refresh(pair.refreshToken)).status).toBe(401);
    const again = await svc.api('POST', '/v1/auth/logout', { body: { refreshToken: pair.refreshToken } });
    expect(again.status).toBe(204);
    const audit = await svc.database.db
      .select()
      .from(auditLog)
      .where(and(eq(auditLog.tenantId, tenantId), eq(auditLog.action, 'auth.logged_out')));
    expect(audit).toHaveLength(1);
  });
});
