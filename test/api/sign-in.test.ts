import { and, eq } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { auditLog } from '../../src/db/schema/audit.js';
import { invitations, memberships, userIdentities } from '../../src/db/schema/identity.js';
import { expectConformsToDocument } from '../helpers/openapi-conformance.js';
import {
  accountOf,
  API,
  APP_ORIGIN,
  claimsOf,
  invite,
  membershipRow,
  signIn,
  startBench,
  uniqueEmail,
  type Bench,
} from '../helpers/sign-in-setup.js';

let bench: Bench;

beforeAll(async () => {
  bench = await startBench();
}, 60_000);

afterAll(async () => {
  await bench?.stop();
});

describe('sign-in with Google (OpenID Connect, email in the id_token)', () => {
  it('accepts the invitation at first sign-in and issues tokens that work with the invited role', async () => {
    const { svc, google } = bench;
    const { tenantId } = await svc.newTenant();
    const email = uniqueEmail('ada');
    google.accounts.set('ada-google', { email: email.toUpperCase(), emailVerified: true, name: 'Ada Lovelace' });
    const invitationId = await invite(svc, tenantId, email, 'admin');

    const page = await signIn(bench, 'google', 'ada-google');
    expect(page.status, page.text).toBe(200);
    expect(page.headers.get('cache-control')).toBe('no-store');
    expect(page.json).toEqual({
      accessToken: expect.any(String),
      refreshToken: expect.stringMatching(/^frt_/),
      tokenType: 'Bearer',
      expiresIn: 3600,
      tenantId,
    });
    const account = (await accountOf(svc, email))!;
    expect(account).toMatchObject({ email, name: 'Ada Lovelace' });
    expect(claimsOf(page.json.accessToken)).toMatchObject({
      sub: account.id,
      email,
      tenant_id: tenantId,
      roles: ['admin'],
    });

    const incidents = await svc.api('GET', '/v1/incidents', { token: page.json.accessToken });
    expect(incidents.status).toBe(200);
    // The admin-only key listing answers too: the role is the invitation's.
    expect((await svc.api('GET', '/v1/api-keys', { token: page.json.accessToken })).status).toBe(200);

    expect(await membershipRow(svc, tenantId, account.id)).toMatchObject({
      role: 'admin',
      addedBy: `invitation:${invitationId}`,
    });
    const [invitation] = await svc.database.db.select().from(invitations).where(eq(invitations.id, invitationId));
    expect(invitation!.acceptedBy).toBe(account.id);
    expect(invitation!.acceptedAt).toBeInstanceOf(Date);
    const audit = await svc.database.db
      .select({ action: auditLog.action, actorId: auditLog.actorId, details: auditLog.details })
      .from(auditLog)
      .where(eq(auditLog.tenantId, tenantId));
    expect(audit).toEqual(
      expect.arrayContaining([
        expect.objectContaining({ action: 'member.joined', actorId: account.id }),
        expect.objectContaining({
          action: 'auth.signed_in',
          actorId: account.id,
          details: expect.objectContaining({ provider: 'google' }),
        }),
      ]),
    );
  });
});

describe('sign-in with a generic OpenID Connect provider (email from userinfo)', () => {
  it('signs an invited member in with the member role', async () => {
    const { svc, oidc } = bench;
    const { tenantId } = await svc.newTenant();
    const email = uniqueEmail('grace');
    oidc.accounts.set('grace', { email, emailVerified: true, name: 'Grace Hopper' });
    await invite(svc, tenantId, email, 'member');

    const page = await signIn(bench, 'oidc', 'grace');
    expect(page.status, page.text).toBe(200);
    expect(page.json.tenantId).toBe(tenantId);
    expect(claimsOf(page.json.accessToken)).toMatchObject({ email, tenant_id: tenantId, roles: ['member'] });
    expect((await svc.api('GET', '/v1/incidents', { token: page.json.accessToken })).status).toBe(200);
    const keys = await svc.api('GET', '/v1/api-keys', { token: page.json.accessToken });
    expect(keys.status).toBe(403);
    const account = (await accountOf(svc, email))!;
    const identities = await svc.database.db.select().from(userIdentities).where(eq(userIdentities.userId, account.id));
    expect(identities).toEqual([expect.objectContaining({ provider: 'oidc', subject: 'grace', email })]);
  });
});

describe('sign-in with GitHub', () => {
  it('runs the web flow with PKCE and takes the primary verified email', async () => {
    const { svc, github } = bench;
    const { tenantId } = await svc.newTenant();
    const email = uniqueEmail('octo');
    github.accounts.set('octocat', {
      id: 583231,
      login: 'octocat',
      name: 'The Octocat',
      email: null,
      emails: [
        { email: uniqueEmail('octo-old'), primary: false, verified: true, visibility: null },
        { email, primary: true, verified: true, visibility: 'private' },
        { email: uniqueEmail('octo-unverified'), primary: false, verified: false, visibility: null },
      ],
    });
    await invite(svc, tenantId, email, 'admin');

    const page = await signIn(bench, 'github', 'octocat');
    expect(page.status, page.text).toBe(200);
    expect(claimsOf(page.json.accessToken)).toMatchObject({ email, tenant_id: tenantId, roles: ['admin'] });
    expect((await svc.api('GET', '/v1/incidents', { token: page.json.accessToken })).status).toBe(200);

    const authorize = github.authorizeRequests.at(-1)!;
    expect(Object.fromEntries(authorize)).toMatchObject({
      client_id: github.clientId,
      redirect_uri: `${API}/auth/github/callback`,
      scope: 'read:user user:email',
      code_challenge_method: 'S256',
      code_challenge: expect.stringMatching(/^[A-Za-z0-9_-]{43}$/),
      state: expect.any(String),
    });
    const token = github.tokenRequests.at(-1)!;
    expect(token.get('redirect_uri')).toBe(`${API}/auth/github/callback`);
    expect(token.get('code_verifier')).toMatch(/^[A-Za-z0-9_-]{43,128}$/);
    const account = (await accountOf(svc, email))!;
    expect(account.name).toBe('The Octocat');
  });

  it('makes the same verified email through GitHub and then Google one person', async () => {
    const { svc, github, google } = bench;
    const { tenantId } = await svc.newTenant();
    const email = uniqueEmail('linus');
    github.accounts.set('linus', {
      id: 1024025,
      login: 'linus',
      name: null,
      email,
      emails: [{ email, primary: true, verified: true, visibility: 'public' }],
    });
    google.accounts.set('linus-google', { email, emailVerified: true, name: 'Linus' });
    await invite(svc, tenantId, email, 'member');

    const first = await signIn(bench, 'github', 'linus');
    expect(first.status, first.text).toBe(200);
    const second = await signIn(bench, 'google', 'linus-google');
    expect(second.status, second.text).toBe(200);
    const account = (await accountOf(svc, email))!;
    expect(claimsOf(first.json.accessToken).sub).toBe(account.id);
    expect(claimsOf(second.json.accessToken).sub).toBe(account.id);
    const identities = await svc.database.db.select().from(userIdentities).where(eq(userIdentities.userId, account.id));
    expect(identities.map((i) => `${i.provider}:${i.subject}`).sort()).toEqual([
      'github:1024025',
      'google:linus-google',
    ]);
    // The invitation was accepted once; the second sign-in found the membership.
    const rows = await svc.database.db.select().from(memberships).where(eq(memberships.userId, account.id));
    expect(rows).toHaveLength(1);
  });

  it('keeps the person of a known GitHub account whose email changed', async () => {
    const { svc, github } = bench;
    const { tenantId } = await svc.newTenant();
    const before = uniqueEmail('mona');
    const after = uniqueEmail('mona-new');
    github.accounts.set('mona', {
      id: 7000001,
      login: 'mona',
      name: 'Mona',
      email: null,
      emails: [{ email: before, primary: true, verified: true, visibility: null }],
    });
    await invite(svc, tenantId, before, 'member');
    const first = await signIn(bench, 'github', 'mona');
    expect(first.status, first.text).toBe(200);
    github.accounts.get('mona')!.emails = [{ email: after, primary: true, verified: true, visibility: null }];
    const second = await signIn(bench, 'github', 'mona');
    expect(second.status, second.text).toBe(200);
    expect(claimsOf(second.json.accessToken).sub).toBe(claimsOf(first.json.accessToken).sub);
    const [identity] = await svc.database.db
      .select()
      .from(userIdentities)
      .where(and(eq(userIdentities.provider, 'github'), eq(userIdentities.subject, '7000001')));
    expect(identity!.email).toBe(after);
    expect(await accountOf(svc, after)).toBeUndefined();
  });
});

describe('choosing a tenant', () => {
  it('lists the tenants of a person with several, then signs in to the one chosen', async () => {
    const { svc, google } = bench;
    const one = await svc.newTenant({ name: 'Acme Retail' });
    const two = await svc.newTenant({ name: 'Acme Labs' });
    const email = uniqueEmail('joan');
    google.accounts.set('joan', { email, emailVerified: true, name: 'Joan Clarke' });
    await invite(svc, one.tenantId, email, 'admin');
    await invite(svc, two.tenantId, email, 'member');

    const page = await signIn(bench, 'google', 'joan');
    expect(page.status, page.text).toBe(400);
    expect(page.json.error).toBe('tenant_choice_required');
    expect(page.json.details.tenants).toEqual(
      expect.arrayContaining([
        { tenantId: one.tenantId, name: 'Acme Retail', role: 'admin' },
        { tenantId: two.tenantId, name: 'Acme Labs', role: 'member' },
      ]),
    );
    expect(page.json.details.tenants).toHaveLength(2);

    const chosen = await signIn(bench, 'google', 'joan', { query: { tenant: two.tenantId } });
    expect(chosen.status, chosen.text).toBe(200);
    expect(chosen.json.tenantId).toBe(two.tenantId);
    expect(claimsOf(chosen.json.accessToken).roles).toEqual(['member']);
    const listed = await svc.api('GET', '/v1/incidents', { token: chosen.json.accessToken });
    expect(listed.status).toBe(200);
  });
});

describe('start and redirect_to', () => {
  it('redirects to the provider with state, PKCE S256 and a nonce, and binds the browser with a signed cookie', async () => {
    const { google } = bench;
    const page = await bench.browser().request(`${API}/auth/google`);
    expect(page.status).toBe(302);
    const location = new URL(page.headers.get('location')!);
    expect(location.origin).toBe(google.issuer);
    expect(Object.fromEntries(location.searchParams)).toMatchObject({
      client_id: google.clientId,
      response_type: 'code',
      scope: 'openid email profile',
      redirect_uri: `${API}/auth/google/callback`,
      code_challenge_method: 'S256',
      code_challenge: expect.stringMatching(/^[A-Za-z0-9_-]{43}$/),
      nonce: expect.stringMatching(/^[A-Za-z0-9_-]{20,}$/),
      state: expect.stringMatching(/^[A-Za-z0-9_-]{43}$/),
    });
    const cookie = page.headers.getSetCookie().find((c) => c.startsWith('iis_signin='))!;
    expect(cookie).toContain('Path=/auth/google/callback');
    expect(cookie).toContain('HttpOnly');
    expect(cookie).toContain('SameSite=Lax');
    expect(cookie).toContain('Max-Age=600');
  });

  it('sends the tokens to an allowed redirect_to in the fragment and sets the session cookie', async () => {
    const { svc, google } = bench;
    const { tenantId } = await svc.newTenant();
    const email = uniqueEmail('alan');
    google.accounts.set('alan', { email, emailVerified: true, name: 'Alan Turing' });
    await invite(svc, tenantId, email, 'member');

    const page = await signIn(bench, 'google', 'alan', {
      query: { redirect_to: `${APP_ORIGIN}/signed-in?from=login` },
    });
    expect(page.status, page.text).toBe(302);
    const target = new URL(page.stoppedAt!);
    expect(`${target.origin}${target.pathname}${target.search}`).toBe(`${APP_ORIGIN}/signed-in?from=login`);
    const fragment = Object.fromEntries(new URLSearchParams(target.hash.slice(1)));
    expect(fragment).toEqual({
      access_token: expect.any(String),
      refresh_token: expect.stringMatching(/^frt_/),
      token_type: 'Bearer',
      expires_in: '3600',
      tenant_id: tenantId,
    });
    expect((await svc.api('GET', '/v1/incidents', { token: fragment.access_token })).status).toBe(200);
    const cookies = page.headers.getSetCookie();
    const session = cookies.find((c) => c.startsWith('iis_session='))!;
    expect(session).toContain(`iis_session=${fragment.access_token}`);
    expect(session).toContain('Path=/v1/integrations/connect');
    expect(session).toContain('HttpOnly');
    expect(session).toContain('SameSite=Lax');
    expect(session).toContain('Max-Age=3600');
    expect(cookies.find((c) => c.startsWith('iis_signin='))).toMatch(/Max-Age=0/);
  });

  it('refuses a redirect_to on an origin that is not listed', async () => {
    for (const target of [
      'https://evil.example.test/x',
      `${APP_ORIGIN}.evil.test/x`,
      '/relative',
      'javascript:alert(1)',
    ]) {
      const page = await bench.browser().request(`${API}/auth/github?redirect_to=${encodeURIComponent(target)}`);
      expect(page.status, target).toBe(400);
      expect(page.json.error).toBe('validation_error');
      expect(page.headers.get('location')).toBeNull();
    }
  });
});

describe('refresh and logout after signing in', () => {
  it('rotates the refresh token, detects its reuse, and logs out', async () => {
    const { svc, github } = bench;
    const { tenantId } = await svc.newTenant();
    const email = uniqueEmail('ken');
    github.accounts.set('ken', {
      id: 9100001,
      login: 'ken',
      name: 'Ken',
      email: null,
      emails: [{ email, primary: true, verified: true, visibility: null }],
    });
    await invite(svc, tenantId, email, 'member');
    const page = await signIn(bench, 'github', 'ken');
    expect(page.status, page.text).toBe(200);

    const first = await svc.api('POST', '/v1/auth/refresh', { body: { refreshToken: page.json.refreshToken } });
    expect(first.status).toBe(200);
    expect(first.body.refreshToken).not.toBe(page.json.refreshToken);
    expect((await svc.api('GET', '/v1/incidents', { token: first.body.accessToken })).status).toBe(200);
    const reused = await svc.api('POST', '/v1/auth/refresh', { body: { refreshToken: page.json.refreshToken } });
    expect(reused.status).toBe(401);
    const rotated = await svc.api('POST', '/v1/auth/refresh', { body: { refreshToken: first.body.refreshToken } });
    expect(rotated.status).toBe(401);

    const again = await signIn(bench, 'github', 'ken');
    expect(again.status, again.text).toBe(200);
    const logout = await svc.api('POST', '/v1/auth/logout', { body: { refreshToken: again.json.refreshToken } });
    expect(logout.status).toBe(204);
    const after = await svc.api('POST', '/v1/auth/refresh', { body: { refreshToken: again.json.refreshToken } });
    expect(after.status).toBe(401);
  });
});

describe('the OpenAPI document', () => {
  it('covers both routes: their query parameters, the redirects and the token answer', async () => {
    const { svc, google } = bench;
    const doc = (await svc.api('GET', '/openapi.json')).body;
    const start = doc.paths['/auth/{provider}'].get;
    const callback = doc.paths['/auth/{provider}/callback'].get;
    expect(start.parameters.map((p: { name: string }) => p.name)).toEqual(
      expect.arrayContaining(['provider', 'tenant', 'redirect_to']),
    );
    expect(callback.parameters.map((p: { name: string }) => p.name)).toEqual(
      expect.arrayContaining(['provider', 'state', 'code', 'error', 'error_description']),
    );
    expect(Object.keys(start.responses)).toEqual(expect.arrayContaining(['302', '400', '404', '502']));
    expect(Object.keys(callback.responses)).toEqual(expect.arrayContaining(['200', '302', '400', '403', '404', '502']));
    expect(start.security ?? []).toEqual([]);

    const { tenantId } = await svc.newTenant();
    const email = uniqueEmail('doc');
    google.accounts.set('doc', { email, emailVerified: true, name: 'Doc' });
    await invite(svc, tenantId, email, 'member');
    const page = await signIn(bench, 'google', 'doc');
    expect(page.status).toBe(200);
    await expectConformsToDocument(svc, '/auth/{provider}/callback', 'get', 200, page.json);
    const denied = await signIn(bench, 'google', 'doc', { deny: true });
    await expectConformsToDocument(svc, '/auth/{provider}/callback', 'get', 403, denied.json);
  });
});

describe('secrets', () => {
  it('never shows a provider secret, code or token in an answer or a log line', async () => {
    const { github, google, oidc, logLines, seen, locations } = bench;
    // The providers' redirects to the callback carry codes to the browser, as they must.
    const codes = locations
      .filter((location) => /^http:\/\/api\.test\/auth\/\w+\/callback\?/.test(location))
      .map((location) => new URL(location).searchParams.get('code'))
      .filter((code): code is string => code !== null);
    expect(codes.length).toBeGreaterThan(10);
    const secrets = [github.clientSecret, google.clientSecret, oidc.clientSecret, ...github.issued, ...codes];
    expect(github.issued.length).toBeGreaterThan(4);
    expect(logLines.length).toBeGreaterThan(10);
    expect(logLines.some((l) => l.includes('signed in'))).toBe(true);
    expect(seen.length).toBeGreaterThan(50);
    for (const secret of secrets) {
      expect(seen.filter((text) => text.includes(secret))).toEqual([]);
      expect(logLines.filter((line) => line.includes(secret))).toEqual([]);
    }
  });
});
