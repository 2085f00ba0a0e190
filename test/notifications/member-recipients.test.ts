/**
 * A tenant's people are its members (by membership, whether or not they ever called the api) and
 * the token subjects the api has seen: an admin made with the CLI's `member add`, who never
 * called the api, gets the approval request of a real investigation; a membership's role wins
 * over a seen token's, and a signed-in user no longer a member gets nothing.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { and, eq } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { approvalRecipients } from '../../src/db/repositories/notifications.js';
import { tenantPeople } from '../../src/db/repositories/users.js';
import { memberships, userAccounts, type MemberRole } from '../../src/db/schema/identity.js';
import { notifications, users } from '../../src/db/schema/remediation.js';
import { newId } from '../../src/ids.js';
import { appendEventUnchecked } from '../../src/outbox/append.js';
import { runCli } from '../helpers/cli.js';
import { investigateToPendingApproval } from '../helpers/remediation.js';
import { startTestService, type TestService } from '../helpers/service.js';
import { eventually } from '../helpers/webhooks.js';

let svc: TestService;
const db = () => svc.database.db;
const dataDir = mkdtempSync(path.join(tmpdir(), 'iis-member-recipients-'));

beforeAll(async () => {
  svc = await startTestService();
});
afterAll(async () => {
  await svc?.stop();
  rmSync(dataDir, { recursive: true, force: true });
});

/** `npm run cli -- member add`, as the operator runs it on the service's database; the new user id. */
async function memberAdd(tenantId: string, email: string, role: MemberRole): Promise<string> {
  const res = await runCli(['member', 'add', '--tenant', tenantId, '--email', email, '--role', role], {
    DATA_DIR: dataDir,
    DATABASE_URL: svc.databaseUrl,
  });
  expect(res.stderr).toBe('');
  expect(res.code).toBe(0);
  return JSON.parse(res.stdout).userId as string;
}

/** A member made as a sign-in makes one: an account and a membership row. */
async function membershipOnly(tenantId: string, role: MemberRole): Promise<string> {
  const userId = newId('usr');
  await db()
    .insert(userAccounts)
    .values({ id: userId, email: `${userId}@example.com` });
  await db().insert(memberships).values({ tenantId, userId, role, addedBy: 'operator' });
  return userId;
}

async function told(tenantId: string, type: string): Promise<string[]> {
  const rows = await db()
    .select({ userId: notifications.userId })
    .from(notifications)
    .where(and(eq(notifications.tenantId, tenantId), eq(notifications.type, type)));
  return rows.map((r) => r.userId).sort();
}

describe('notifications reach members who never called the api', () => {
  it('an admin added with `member add` receives approval.requested; a member does not', async () => {
    const tenant = await svc.newTenant({ plan: 'plan_business' });
    const admin = await memberAdd(tenant.tenantId, 'On.Call.Lead@Example.com', 'admin');
    const member = await memberAdd(tenant.tenantId, 'engineer@example.com', 'member');
    // Nobody but the member token of the investigation has called the api.
    expect(await db().select().from(users).where(eq(users.userId, admin))).toEqual([]);

    const { incidentId, approval } = await investigateToPendingApproval(svc, tenant);
    const sent = await db()
      .select()
      .from(notifications)
      .where(and(eq(notifications.tenantId, tenant.tenantId), eq(notifications.type, 'approval.requested')));
    expect(sent.map((n) => n.userId)).toEqual([admin]);
    expect(sent[0]).toMatchObject({
      incidentId,
      idempotencyKey: `${approval.id}:${admin}`,
      payload: expect.objectContaining({ approvalId: approval.id, remediationId: approval.remediationId }),
    });
    expect(sent.map((n) => n.userId)).not.toContain(member);

    // Signed in afterwards, they find it in their list.
    const list = await svc.api('GET', '/v1/notifications?type=approval.requested', {
      token: svc.token(tenant.tenantId, 'member', { sub: admin }),
    });
    expect(list.status).toBe(200);
    expect(list.body.items).toEqual([
      expect.objectContaining({ type: 'approval.requested', approvalId: approval.id, incidentId }),
    ]);
  });

  it('an urgent incident reaches every member by membership, through the notifier', async () => {
    const tenant = await svc.newTenant();
    const admin = await membershipOnly(tenant.tenantId, 'admin');
    const member = await membershipOnly(tenant.tenantId, 'member');
    const incidentId = newId('inc');
    await db().transaction((tx) =>
      appendEventUnchecked(tx, {
        tenantId: tenant.tenantId,
        type: 'incident.created',
        incidentId,
        payload: { incidentId, title: 'Checkout is down', severity: 'critical', source: 'automated' },
        idempotencyKey: newId('oev'),
      }),
    );
    await eventually(async () => (await told(tenant.tenantId, 'incident.created')).length === 2);
    expect(await told(tenant.tenantId, 'incident.created')).toEqual([admin, member].sort());
  });
});

describe("one reading of a tenant's people", () => {
  it("dedupes by user id, takes a membership's role over a seen token's, keeps seen tokens, drops removed members", async () => {
    const tenant = await svc.newTenant();
    const promoted = await membershipOnly(tenant.tenantId, 'admin');
    const demoted = await membershipOnly(tenant.tenantId, 'member');
    const removed = newId('usr');
    const stale = new Date(Date.now() - 91 * 24 * 60 * 60 * 1000);
    await db()
      .insert(users)
      .values([
        // Seen with the role their token had then; the membership says otherwise now.
        { tenantId: tenant.tenantId, userId: promoted, roles: ['member'] },
        { tenantId: tenant.tenantId, userId: demoted, roles: ['admin'] },
        // A signed-in user seen as an admin, since removed from the tenant.
        { tenantId: tenant.tenantId, userId: removed, roles: ['admin'] },
        // An operator or identity-provider token: no membership, known from its use.
        { tenantId: tenant.tenantId, userId: 'sre-bot', roles: ['admin'] },
        { tenantId: tenant.tenantId, userId: 'gone-for-long', roles: ['admin'], lastSeenAt: stale, firstSeenAt: stale },
      ]);
    const other = await svc.newTenant();
    await membershipOnly(other.tenantId, 'admin');

    const people = await tenantPeople(db(), [tenant.tenantId]);
    expect(people.map((p) => [p.userId, p.roles]).sort()).toEqual(
      [
        [promoted, ['admin']],
        [demoted, ['member']],
        ['sre-bot', ['admin']],
      ].sort(),
    );
    expect(people.every((p) => p.tenantId === tenant.tenantId)).toBe(true);
    expect((await approvalRecipients(db(), tenant.tenantId)).map((r) => r.userId).sort()).toEqual(
      [promoted, 'sre-bot'].sort(),
    );
  });
});
