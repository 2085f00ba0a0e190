/**
 * `/v1/members`: members and invitations of a tenant, over real HTTP and PostgreSQL. Members are
 * made as the CLI and a sign-in make them (a user account and a membership row); their tokens
 * name their `usr_…` id, so their role is read from the membership on every request.
 */
import { and, eq } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startSession } from '../../src/auth/sessions.js';
import { auditLog } from '../../src/db/schema/audit.js';
import {
  invitations,
  memberships,
  refreshTokens,
  userAccounts,
  type MemberRole,
} from '../../src/db/schema/identity.js';
import { newId } from '../../src/ids.js';
import { expectConformsToDocument } from '../helpers/openapi-conformance.js';
import { startTestService, type TestService } from '../helpers/service.js';

let svc: TestService;
const db = () => svc.database.db;

beforeAll(async () => {
  svc = await startTestService({ withoutWorker: true });
});
afterAll(() => svc?.stop());

interface Person {
  userId: string;
  email: string;
  token: string;
}

let people = 0;

/** A user account and its membership of the tenant, and a token naming the user (its role claim is ignored). */
async function member(tenantId: string, role: MemberRole, name = 'Grace Hopper'): Promise<Person> {
  const userId = newId('usr');
  const email = `person-${++people}-${userId.slice(-6)}@example.com`;
  await db().insert(userAccounts).values({ id: userId, email, name });
  await db().insert(memberships).values({ tenantId, userId, role, addedBy: 'operator' });
  // The token says admin whatever the membership says: the membership decides.
  return { userId, email, token: svc.token(tenantId, 'admin', { sub: userId }) };
}

async function audits(tenantId: string, action: string) {
  return db()
    .select()
    .from(auditLog)
    .where(and(eq(auditLog.tenantId, tenantId), eq(auditLog.action, action)))
    .orderBy(auditLog.seq);
}

async function membershipRow(tenantId: string, userId: string) {
  const [row] = await db()
    .select()
    .from(memberships)
    .where(and(eq(memberships.tenantId, tenantId), eq(memberships.userId, userId)));
  return row;
}

const DAY = 24 * 60 * 60 * 1000;

describe('GET /v1/members', () => {
  it('lists members and open invitations to admins and members, newest first, a page at a time, within the tenant', async () => {
    const tenant = await svc.newTenant();
    const other = await svc.newTenant();
    const ada = await member(tenant.tenantId, 'admin', 'Ada Lovelace');
    const max = await member(tenant.tenantId, 'member', 'Max Planck');
    await member(other.tenantId, 'admin');
    const invited = await svc.api('POST', '/v1/members', {
      token: ada.token,
      body: { email: 'New.Person@Example.com', role: 'member' },
    });
    expect(invited.status).toBe(201);
    // An expired invitation and an accepted one are not open.
    await db()
      .insert(invitations)
      .values([
        {
          id: newId('inv'),
          tenantId: tenant.tenantId,
          email: 'late@example.com',
          role: 'member',
          invitedBy: ada.userId,
          expiresAt: new Date(Date.now() - 1000),
        },
        {
          id: newId('inv'),
          tenantId: tenant.tenantId,
          email: max.email,
          role: 'member',
          invitedBy: ada.userId,
          expiresAt: new Date(Date.now() + DAY),
          acceptedAt: new Date(),
          acceptedBy: max.userId,
        },
      ]);

    for (const token of [ada.token, max.token, tenant.member]) {
      const res = await svc.api('GET', '/v1/members', { token });
      expect(res.status).toBe(200);
      expect(res.body).toEqual({
        members: [
          { userId: max.userId, email: max.email, name: 'Max Planck', role: 'member', joinedAt: expect.any(String) },
          { userId: ada.userId, email: ada.email, name: 'Ada Lovelace', role: 'admin', joinedAt: expect.any(String) },
        ],
        invitations: [
          {
            invitationId: invited.body.invitationId,
            email: 'new.person@example.com',
            role: 'member',
            invitedBy: ada.userId,
            expiresAt: invited.body.expiresAt,
          },
        ],
        nextCursor: null,
      });
      await expectConformsToDocument(svc, '/v1/members', 'get', 200, res.body);
    }

    // One keyset over both: the invitation (newest), then Max, then Ada.
    const seen: string[] = [];
    let cursor: string | null = null;
    do {
      const page: { status: number; body: any } = await svc.api(
        'GET',
        `/v1/members?limit=1${cursor ? `&cursor=${cursor}` : ''}`,
        { token: max.token },
      );
      expect(page.status).toBe(200);
      expect(page.body.members.length + page.body.invitations.length).toBe(1);
      seen.push(
        ...page.body.invitations.map((i: any) => i.invitationId),
        ...page.body.members.map((m: any) => m.userId),
      );
      cursor = page.body.nextCursor;
    } while (cursor);
    expect(seen).toEqual([invited.body.invitationId, max.userId, ada.userId]);

    expect((await svc.api('GET', '/v1/members?limit=0', { token: ada.token })).status).toBe(400);
    expect((await svc.api('GET', '/v1/members?cursor=nonsense!', { token: ada.token })).status).toBe(400);
    expect((await svc.api('GET', '/v1/members')).status).toBe(401);
  });
});

describe('POST /v1/members', () => {
  it('invites an email for 7 days, renews its open invitation, and audits both', async () => {
    const tenant = await svc.newTenant();
    const ada = await member(tenant.tenantId, 'admin');
    const before = Date.now();
    const res = await svc.api('POST', '/v1/members', {
      token: ada.token,
      body: { email: '  Linus@Example.COM ', role: 'admin' },
    });
    expect(res.status).toBe(201);
    expect(res.body).toEqual({
      invitationId: expect.stringMatching(/^inv_[0-9a-z]{26}$/),
      email: 'linus@example.com',
      role: 'admin',
      invitedBy: ada.userId,
      expiresAt: expect.any(String),
    });
    await expectConformsToDocument(svc, '/v1/members', 'post', 201, res.body);
    const expiresIn = new Date(res.body.expiresAt).getTime() - before;
    expect(expiresIn).toBeGreaterThan(7 * DAY - 60_000);
    expect(expiresIn).toBeLessThan(7 * DAY + 60_000);
    const [row] = await db().select().from(invitations).where(eq(invitations.id, res.body.invitationId));
    expect(row).toMatchObject({
      tenantId: tenant.tenantId,
      email: 'linus@example.com',
      role: 'admin',
      acceptedAt: null,
    });

    // Again, as a member now: the same invitation, renewed.
    const again = await svc.api('POST', '/v1/members', {
      token: ada.token,
      body: { email: 'linus@example.com', role: 'member' },
    });
    expect(again.status).toBe(201);
    expect(again.body).toMatchObject({ invitationId: res.body.invitationId, role: 'member' });
    const rows = await db()
      .select()
      .from(invitations)
      .where(and(eq(invitations.tenantId, tenant.tenantId), eq(invitations.email, 'linus@example.com')));
    expect(rows).toHaveLength(1);
    expect(rows[0]!.role).toBe('member');

    const entries = await audits(tenant.tenantId, 'member.invited');
    expect(entries.map((e) => [e.actorType, e.actorId, e.targetId, e.details])).toEqual([
      [
        'user',
        ada.userId,
        res.body.invitationId,
        expect.objectContaining({ email: 'linus@example.com', role: 'admin', renewed: false }),
      ],
      ['user', ada.userId, res.body.invitationId, expect.objectContaining({ role: 'member', renewed: true })],
    ]);
  });

  it('refuses an email that is already a member (409), bad input (400) and members (403)', async () => {
    const tenant = await svc.newTenant();
    const ada = await member(tenant.tenantId, 'admin');
    const max = await member(tenant.tenantId, 'member');
    const taken = await svc.api('POST', '/v1/members', {
      token: ada.token,
      body: { email: max.email.toUpperCase(), role: 'admin' },
    });
    expect(taken.status).toBe(409);
    expect(taken.body.error).toBe('conflict');
    await expectConformsToDocument(svc, '/v1/members', 'post', 409, taken.body);

    for (const body of [
      { email: 'not-an-email', role: 'member' },
      { email: `${'a'.repeat(250)}@example.com`, role: 'member' },
      { email: 'x@example.com', role: 'owner' },
      { email: 'x@example.com' },
      { role: 'member' },
      { email: 'x@example.com', role: 'member', tenantId: 'ten_other' },
    ]) {
      const res = await svc.api('POST', '/v1/members', { token: ada.token, body });
      expect(res.status, JSON.stringify(body)).toBe(400);
      expect(res.body.error).toBe('validation_error');
    }
    const byMember = await svc.api('POST', '/v1/members', {
      token: max.token,
      body: { email: 'x@example.com', role: 'member' },
    });
    expect(byMember.status).toBe(403);
    expect(await db().select().from(invitations).where(eq(invitations.tenantId, tenant.tenantId))).toEqual([]);
  });
});

describe('open invitations are bounded', () => {
  it('refuses a 501st open invitation (409) but renews one of the 500, and counts neither expired nor accepted ones', async () => {
    const tenant = await svc.newTenant();
    const ada = await member(tenant.tenantId, 'admin');
    const rows = Array.from({ length: 500 }, (_, i) => ({
      id: newId('inv'),
      tenantId: tenant.tenantId,
      email: `invitee-${i}@example.com`,
      role: 'member' as const,
      invitedBy: ada.userId,
      expiresAt: new Date(Date.now() + DAY),
    }));
    await db()
      .insert(invitations)
      .values([
        ...rows,
        { ...rows[0]!, id: newId('inv'), email: 'expired@example.com', expiresAt: new Date(Date.now() - 1000) },
        {
          ...rows[0]!,
          id: newId('inv'),
          email: 'accepted@example.com',
          acceptedAt: new Date(),
          acceptedBy: ada.userId,
        },
      ]);
    const full = await svc.api('POST', '/v1/members', {
      token: ada.token,
      body: { email: 'one-more@example.com', role: 'member' },
    });
    expect(full.status).toBe(409);
    expect(full.body).toMatchObject({ error: 'conflict', message: expect.stringContaining('500 open invitations') });
    const renewed = await svc.api('POST', '/v1/members', {
      token: ada.token,
      body: { email: 'invitee-7@example.com', role: 'admin' },
    });
    expect(renewed.status).toBe(201);
    expect(renewed.body.invitationId).toBe(rows[7]!.id);
    expect((await svc.api('DELETE', `/v1/members/invitations/${rows[0]!.id}`, { token: ada.token })).status).toBe(204);
    const room = await svc.api('POST', '/v1/members', {
      token: ada.token,
      body: { email: 'one-more@example.com', role: 'member' },
    });
    expect(room.status).toBe(201);
  });
});

describe('DELETE /v1/members/invitations/{invitationId}', () => {
  it('withdraws an open invitation of the tenant, audited; another tenant’s is 404 and stays', async () => {
    const tenant = await svc.newTenant();
    const other = await svc.newTenant();
    const ada = await member(tenant.tenantId, 'admin');
    const olga = await member(other.tenantId, 'admin');
    const mine = await svc.api('POST', '/v1/members', {
      token: ada.token,
      body: { email: 'a@example.com', role: 'member' },
    });
    const theirs = await svc.api('POST', '/v1/members', {
      token: olga.token,
      body: { email: 'a@example.com', role: 'member' },
    });

    const cross = await svc.api('DELETE', `/v1/members/invitations/${theirs.body.invitationId}`, { token: ada.token });
    expect(cross.status).toBe(404);
    expect(cross.body.error).toBe('not_found');
    expect(await db().select().from(invitations).where(eq(invitations.id, theirs.body.invitationId))).toHaveLength(1);

    const res = await svc.api('DELETE', `/v1/members/invitations/${mine.body.invitationId}`, { token: ada.token });
    expect(res.status).toBe(204);
    expect(await db().select().from(invitations).where(eq(invitations.id, mine.body.invitationId))).toEqual([]);
    expect((await audits(tenant.tenantId, 'member.invitation_withdrawn')).map((e) => [e.actorId, e.targetId])).toEqual([
      [ada.userId, mine.body.invitationId],
    ]);
    expect(
      (await svc.api('DELETE', `/v1/members/invitations/${mine.body.invitationId}`, { token: ada.token })).status,
    ).toBe(404);
    expect(
      (await svc.api('DELETE', `/v1/members/invitations/${theirs.body.invitationId}`, { token: tenant.member })).status,
    ).toBe(403);
  });
});

describe('PATCH /v1/members/{userId}', () => {
  it('changes a role (audited, effective on the next request); unknown or another tenant’s member is 404', async () => {
    const tenant = await svc.newTenant();
    const other = await svc.newTenant();
    const ada = await member(tenant.tenantId, 'admin');
    const bob = await member(tenant.tenantId, 'admin', 'Bob Kahn');
    const olga = await member(other.tenantId, 'member');

    // Bob is an admin: an admin route answers him.
    expect((await svc.api('GET', '/v1/api-keys', { token: bob.token })).status).toBe(200);
    const res = await svc.api('PATCH', `/v1/members/${bob.userId}`, { token: ada.token, body: { role: 'member' } });
    expect(res.status).toBe(200);
    expect(res.body).toEqual({
      userId: bob.userId,
      email: bob.email,
      name: 'Bob Kahn',
      role: 'member',
      joinedAt: expect.any(String),
    });
    await expectConformsToDocument(svc, '/v1/members/{userId}', 'patch', 200, res.body);
    expect((await membershipRow(tenant.tenantId, bob.userId))!.role).toBe('member');
    // The same token, right after: a member now.
    const denied = await svc.api('GET', '/v1/api-keys', { token: bob.token });
    expect(denied.status).toBe(403);
    expect(denied.body.error).toBe('forbidden');
    expect((await svc.api('GET', '/v1/members', { token: bob.token })).status).toBe(200);
    expect(
      (await svc.api('PATCH', `/v1/members/${ada.userId}`, { token: bob.token, body: { role: 'member' } })).status,
    ).toBe(403);
    expect(
      (await audits(tenant.tenantId, 'member.role_changed')).map((e) => [e.actorId, e.targetId, e.details]),
    ).toEqual([[ada.userId, bob.userId, { from: 'admin', to: 'member' }]]);

    // Removed: the same token is refused outright.
    expect((await svc.api('DELETE', `/v1/members/${bob.userId}`, { token: ada.token })).status).toBe(204);
    expect((await svc.api('GET', '/v1/members', { token: bob.token })).status).toBe(401);

    const cross = await svc.api('PATCH', `/v1/members/${olga.userId}`, { token: ada.token, body: { role: 'admin' } });
    expect(cross.status).toBe(404);
    expect(cross.body.error).toBe('member_not_found');
    expect((await membershipRow(other.tenantId, olga.userId))!.role).toBe('member');
    const unknown = await svc.api('PATCH', `/v1/members/${newId('usr')}`, {
      token: ada.token,
      body: { role: 'admin' },
    });
    expect(unknown.status).toBe(404);
    expect(unknown.body.error).toBe('member_not_found');
    for (const body of [{ role: 'owner' }, {}, { role: 'admin', email: 'x@example.com' }]) {
      const bad = await svc.api('PATCH', `/v1/members/${bob.userId}`, { token: ada.token, body });
      expect(bad.status, JSON.stringify(body)).toBe(400);
    }
  });

  it('refuses to demote the last admin (409 last_admin), and allows it once there is another', async () => {
    const tenant = await svc.newTenant();
    const ada = await member(tenant.tenantId, 'admin');
    const max = await member(tenant.tenantId, 'member');
    const res = await svc.api('PATCH', `/v1/members/${ada.userId}`, { token: ada.token, body: { role: 'member' } });
    expect(res.status).toBe(409);
    expect(res.body.error).toBe('last_admin');
    expect((await membershipRow(tenant.tenantId, ada.userId))!.role).toBe('admin');
    // An operator token (not a member) cannot leave the tenant without an admin member either.
    expect(
      (await svc.api('PATCH', `/v1/members/${ada.userId}`, { token: tenant.admin, body: { role: 'member' } })).status,
    ).toBe(409);

    expect(
      (await svc.api('PATCH', `/v1/members/${max.userId}`, { token: ada.token, body: { role: 'admin' } })).status,
    ).toBe(200);
    expect(
      (await svc.api('PATCH', `/v1/members/${ada.userId}`, { token: ada.token, body: { role: 'member' } })).status,
    ).toBe(200);
    expect((await membershipRow(tenant.tenantId, ada.userId))!.role).toBe('member');
    expect(await audits(tenant.tenantId, 'member.role_changed')).toHaveLength(2);
  });
});

describe('DELETE /v1/members/{userId}', () => {
  it('removes a member: 204, audited, their refresh tokens revoked in the same breath and their token refused', async () => {
    const tenant = await svc.newTenant();
    const ada = await member(tenant.tenantId, 'admin');
    const max = await member(tenant.tenantId, 'member');
    const sessions = svc.appDeps.identity!.sessions!;
    const pair = await startSession(
      db(),
      sessions,
      { userId: max.userId, tenantId: tenant.tenantId, email: max.email, role: 'member' },
      new Date(),
    );
    expect((await svc.api('GET', '/v1/members', { token: pair.accessToken })).status).toBe(200);

    const res = await svc.api('DELETE', `/v1/members/${max.userId}`, { token: ada.token });
    expect(res.status).toBe(204);
    expect(await membershipRow(tenant.tenantId, max.userId)).toBeUndefined();
    const tokens = await db().select().from(refreshTokens).where(eq(refreshTokens.userId, max.userId));
    expect(tokens).toHaveLength(1);
    expect(tokens[0]).toMatchObject({ revokedReason: 'member_removed', revokedAt: expect.any(Date) });
    expect((await svc.api('GET', '/v1/members', { token: max.token })).status).toBe(401);
    expect((await svc.api('GET', '/v1/members', { token: pair.accessToken })).status).toBe(401);
    const refreshed = await svc.api('POST', '/v1/auth/refresh', { body: { refreshToken: pair.refreshToken } });
    expect(refreshed.status).toBe(401);
    expect((await audits(tenant.tenantId, 'member.removed')).map((e) => [e.actorId, e.targetId, e.details])).toEqual([
      [ada.userId, max.userId, { email: max.email, role: 'member' }],
    ]);
    // The account stays (they may be invited again, or belong to other tenants).
    expect(await db().select().from(userAccounts).where(eq(userAccounts.id, max.userId))).toHaveLength(1);

    expect((await svc.api('DELETE', `/v1/members/${max.userId}`, { token: ada.token })).status).toBe(404);
  });

  it('refuses the last admin (409), another tenant’s member (404) and members (403)', async () => {
    const tenant = await svc.newTenant();
    const other = await svc.newTenant();
    const ada = await member(tenant.tenantId, 'admin');
    const max = await member(tenant.tenantId, 'member');
    const olga = await member(other.tenantId, 'admin');

    const last = await svc.api('DELETE', `/v1/members/${ada.userId}`, { token: ada.token });
    expect(last.status).toBe(409);
    expect(last.body.error).toBe('last_admin');
    expect(await membershipRow(tenant.tenantId, ada.userId)).toBeDefined();

    const cross = await svc.api('DELETE', `/v1/members/${olga.userId}`, { token: ada.token });
    expect(cross.status).toBe(404);
    expect(cross.body.error).toBe('member_not_found');
    expect(await membershipRow(other.tenantId, olga.userId)).toBeDefined();

    const byMember = await svc.api('DELETE', `/v1/members/${ada.userId}`, { token: max.token });
    expect(byMember.status).toBe(403);
    expect(await membershipRow(tenant.tenantId, ada.userId)).toBeDefined();
    expect(await audits(tenant.tenantId, 'member.removed')).toEqual([]);
  });
});

describe('the last admin under concurrency', () => {
  // Operator tokens (not members) are admitted whatever the memberships say, so both requests
  // reach their transactions and only the lock decides.
  it('two demotions of the only two admins at the same moment: exactly one succeeds', async () => {
    for (let round = 0; round < 8; round++) {
      const tenant = await svc.newTenant();
      const ada = await member(tenant.tenantId, 'admin');
      const bob = await member(tenant.tenantId, 'admin');
      const results = await Promise.all(
        [ada, bob].map((p) =>
          svc.api('PATCH', `/v1/members/${p.userId}`, { token: tenant.admin, body: { role: 'member' } }),
        ),
      );
      expect(results.map((r) => r.status).sort()).toEqual([200, 409]);
      expect(results.find((r) => r.status === 409)!.body.error).toBe('last_admin');
      const admins = await db()
        .select()
        .from(memberships)
        .where(and(eq(memberships.tenantId, tenant.tenantId), eq(memberships.role, 'admin')));
      expect(admins).toHaveLength(1);
      expect(await audits(tenant.tenantId, 'member.role_changed')).toHaveLength(1);
    }
  });

  it('a demotion and a removal of the only two admins at the same moment: exactly one succeeds', async () => {
    for (let round = 0; round < 8; round++) {
      const tenant = await svc.newTenant();
      const ada = await member(tenant.tenantId, 'admin');
      const bob = await member(tenant.tenantId, 'admin');
      const results = await Promise.all([
        svc.api('DELETE', `/v1/members/${ada.userId}`, { token: tenant.admin }),
        svc.api('PATCH', `/v1/members/${bob.userId}`, { token: tenant.admin, body: { role: 'member' } }),
      ]);
      expect(results.filter((r) => r.status === 409).map((r) => r.body.error)).toEqual(['last_admin']);
      const admins = await db()
        .select()
        .from(memberships)
        .where(and(eq(memberships.tenantId, tenant.tenantId), eq(memberships.role, 'admin')));
      expect(admins).toHaveLength(1);
    }
  });

  it('two admins demoting each other with their own tokens: never both', async () => {
    for (let round = 0; round < 5; round++) {
      const tenant = await svc.newTenant();
      const ada = await member(tenant.tenantId, 'admin');
      const bob = await member(tenant.tenantId, 'admin');
      const results = await Promise.all([
        svc.api('PATCH', `/v1/members/${bob.userId}`, { token: ada.token, body: { role: 'member' } }),
        svc.api('PATCH', `/v1/members/${ada.userId}`, { token: bob.token, body: { role: 'member' } }),
      ]);
      // The loser is 409 when both were admitted, 403 when it was admitted after the winner's commit.
      const statuses = results.map((r) => r.status).sort();
      expect([
        [200, 409],
        [200, 403],
      ]).toContainEqual(statuses);
      const admins = await db()
        .select()
        .from(memberships)
        .where(and(eq(memberships.tenantId, tenant.tenantId), eq(memberships.role, 'admin')));
      expect(admins).toHaveLength(1);
    }
  });
});
