import { eq, sql } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { invitations, oauthStates } from '../../src/db/schema/identity.js';
import { tenants } from '../../src/db/schema/tenants.js';
import { createApp } from '../../src/api/app.js';
import { Browser } from '../helpers/browser.js';
import { startTestService, type TestService } from '../helpers/service.js';
import {
  accountOf,
  API,
  APP_ORIGIN,
  invite,
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

/** A GitHub account with one verified email, invited as a member of a new tenant. */
async function invitedGithubUser(login: string, id: number): Promise<{ email: string; tenantId: string }> {
  const { svc, github } = bench;
  const { tenantId } = await svc.newTenant();
  const email = uniqueEmail(login);
  github.accounts.set(login, {
    id,
    login,
    name: login,
    email: null,
    emails: [{ email, primary: true, verified: true, visibility: null }],
  });
  await invite(svc, tenantId, email, 'member');
  return { email, tenantId };
}

describe('providers', () => {
  it('answers 404 not_found for a provider name it does not know', async () => {
    for (const path of ['/auth/facebook', '/auth/facebook/callback?state=x']) {
      const page = await bench.browser().request(`${API}${path}`);
      expect(page.status, path).toBe(404);
      expect(page.json.error).toBe('not_found');
    }
  });
});

describe('state and browser binding', () => {
  it('refuses a callback without state, or with one it never issued', async () => {
    const none = await bench.browser().request(`${API}/auth/github/callback?code=abc`);
    expect(none.status).toBe(400);
    expect(none.json.error).toBe('invalid_state');
    const unknown = await bench.browser().request(`${API}/auth/github/callback?code=abc&state=${'A'.repeat(43)}`);
    expect(unknown.status).toBe(400);
    expect(unknown.json.error).toBe('invalid_state');
  });

  it('reads past the parameters providers add (Google: authuser, prompt, hd) to judge the state', async () => {
    const page = await bench
      .browser()
      .request(`${API}/auth/google/callback?code=x&authuser=0&prompt=consent&hd=example.com&anything=else`);
    expect(page.status).toBe(400);
    expect(page.json.error).toBe('invalid_state');
  });

  it('refuses an expired state', async () => {
    await invitedGithubUser('expiring', 8100001);
    const b = bench.browser();
    const page = await signIn(bench, 'github', 'expiring', { browser: b, stopAtCallback: true });
    const callback = new URL(page.stoppedAt!);
    await bench.svc.database.db
      .update(oauthStates)
      .set({ expiresAt: sql`now() - interval '1 second'` })
      .where(eq(oauthStates.purpose, 'sign_in'));
    const answer = await b.request(callback.toString());
    expect(answer.status).toBe(400);
    expect(answer.json.error).toBe('invalid_state');
  });

  it('refuses a replayed callback (the state is single use)', async () => {
    await invitedGithubUser('replayer', 8100002);
    const b = bench.browser();
    const page = await signIn(bench, 'github', 'replayer', { browser: b, stopAtCallback: true });
    const first = await b.request(page.stoppedAt!);
    expect(first.status, first.text).toBe(200);
    const again = await b.request(page.stoppedAt!);
    expect(again.status).toBe(400);
    expect(again.json.error).toBe('invalid_state');
  });

  it('refuses a callback in a browser that lost the binding cookie', async () => {
    await invitedGithubUser('cookieless', 8100003);
    const b = bench.browser();
    const page = await signIn(bench, 'github', 'cookieless', { browser: b, stopAtCallback: true });
    expect(b.cookieNames(API)).toContain('iis_signin');
    b.dropCookie(API, 'iis_signin');
    const answer = await b.request(page.stoppedAt!);
    expect(answer.status).toBe(400);
    expect(answer.json.error).toBe('invalid_state');
  });

  it("refuses a callback in another browser (login CSRF: someone else's state and code)", async () => {
    await invitedGithubUser('mallory', 8100004);
    const attacker = bench.browser();
    const page = await signIn(bench, 'github', 'mallory', { browser: attacker, stopAtCallback: true });
    const victim = bench.browser();
    // The victim started a sign-in of their own: they hold a binding cookie, not the attacker's.
    expect((await victim.request(`${API}/auth/github`)).status).toBe(302);
    const answer = await victim.request(page.stoppedAt!);
    expect(answer.status).toBe(400);
    expect(answer.json.error).toBe('invalid_state');
  });

  it('refuses a forged binding cookie', async () => {
    await invitedGithubUser('forger', 8100005);
    const b = bench.browser();
    const page = await signIn(bench, 'github', 'forger', { browser: b, stopAtCallback: true });
    const callback = page.stoppedAt!.replace(API, bench.svc.baseUrl);
    const answer = await fetch(callback, { headers: { cookie: 'iis_signin=abc.def' }, redirect: 'manual' });
    expect(answer.status).toBe(400);
    expect(((await answer.json()) as { error: string }).error).toBe('invalid_state');
  });
});

describe('provider refusals', () => {
  it('answers 403 access_denied when the person denies access at GitHub or at the OIDC provider', async () => {
    await invitedGithubUser('denier', 8200001);
    const github = await signIn(bench, 'github', 'denier', { deny: true });
    expect(github.status).toBe(403);
    expect(github.json).toEqual({ error: 'access_denied', message: expect.stringContaining('denied') });
    const oidc = await signIn(bench, 'oidc', 'nobody', { deny: true });
    expect(oidc.status).toBe(403);
    expect(oidc.json.error).toBe('access_denied');
  });

  it('sends errors to redirect_to as ?error= when one was given', async () => {
    await invitedGithubUser('denier2', 8200002);
    const page = await signIn(bench, 'github', 'denier2', { deny: true, query: { redirect_to: `${APP_ORIGIN}/back` } });
    expect(page.status).toBe(302);
    const target = new URL(page.stoppedAt!);
    expect(target.origin + target.pathname).toBe(`${APP_ORIGIN}/back`);
    expect(target.searchParams.get('error')).toBe('access_denied');
    expect(target.searchParams.get('error_description')).toMatch(/denied/);
    expect(target.hash).toBe('');
  });

  it('answers 400 invalid_grant for a code used before (GitHub and OIDC)', async () => {
    await invitedGithubUser('twice', 8200003);
    for (const [provider, login] of [
      ['github', 'twice'],
      ['oidc', 'twice-oidc'],
    ] as const) {
      if (provider === 'oidc') {
        const { tenantId } = await bench.svc.newTenant();
        const email = uniqueEmail(login);
        bench.oidc.accounts.set(login, { email, emailVerified: true, name: login });
        await invite(bench.svc, tenantId, email, 'member');
      }
      const first = bench.browser();
      const page = await signIn(bench, provider, login, { browser: first, stopAtCallback: true });
      expect((await first.request(page.stoppedAt!)).status).toBe(200);
      // A fresh sign-in (its own state and cookie) carrying the spent code (and the provider's iss).
      const second = bench.browser();
      const start = await second.request(`${API}/auth/${provider}`);
      const replayed = new URL(page.stoppedAt!);
      replayed.searchParams.set('state', new URL(start.headers.get('location')!).searchParams.get('state')!);
      const replay = await second.request(replayed.toString());
      expect(replay.status, `${provider}: ${replay.text}`).toBe(400);
      expect(replay.json.error).toBe('invalid_grant');
    }
  });

  it('answers 403 email_not_verified when the provider does not vouch for the email', async () => {
    const { svc, github, oidc } = bench;
    const { tenantId } = await svc.newTenant();
    const email = uniqueEmail('unverified');
    await invite(svc, tenantId, email, 'member');
    oidc.accounts.set('unverified', { email, emailVerified: false, name: 'Unverified' });
    const viaOidc = await signIn(bench, 'oidc', 'unverified');
    expect(viaOidc.status).toBe(403);
    expect(viaOidc.json.error).toBe('email_not_verified');
    github.accounts.set('unverified', {
      id: 8300001,
      login: 'unverified',
      name: null,
      email,
      emails: [{ email, primary: true, verified: false, visibility: 'public' }],
    });
    const viaGithub = await signIn(bench, 'github', 'unverified');
    expect(viaGithub.status).toBe(403);
    expect(viaGithub.json.error).toBe('email_not_verified');
    expect(await accountOf(svc, email)).toBeUndefined();
    const [open] = await svc.database.db.select().from(invitations).where(eq(invitations.email, email));
    expect(open!.acceptedAt).toBeNull();
  });
});

describe('providers that send no email_verified (Entra ID)', () => {
  it("takes Entra ID's xms_edov in its place, and refuses an email vouched for by neither", async () => {
    const { svc, oidc } = bench;
    const { tenantId } = await svc.newTenant();
    const email = uniqueEmail('entra');
    await invite(svc, tenantId, email, 'member');
    oidc.accounts.set('entra-bare', { email, name: 'Bare' });
    const bare = await signIn(bench, 'oidc', 'entra-bare');
    expect(bare.status).toBe(403);
    expect(bare.json.error).toBe('email_not_verified');
    oidc.accounts.set('entra-edov', { email, name: 'Edov', xmsEdov: true });
    const edov = await signIn(bench, 'oidc', 'entra-edov');
    expect(edov.status, edov.text).toBe(200);
    expect(edov.json.tenantId).toBe(tenantId);
    // An explicit email_verified false is not overridden by xms_edov.
    oidc.accounts.set('entra-false', {
      email: uniqueEmail('entra-false'),
      emailVerified: false,
      name: 'F',
      xmsEdov: true,
    });
    expect((await signIn(bench, 'oidc', 'entra-false')).json.error).toBe('email_not_verified');
  });
});

describe('membership', () => {
  it('answers 403 no_membership to a person nobody invited, and keeps no account for them', async () => {
    const { svc, google } = bench;
    const email = uniqueEmail('stranger');
    google.accounts.set('stranger', { email, emailVerified: true, name: 'Stranger' });
    const page = await signIn(bench, 'google', 'stranger');
    expect(page.status).toBe(403);
    expect(page.json.error).toBe('no_membership');
    expect(await accountOf(svc, email)).toBeUndefined();
  });

  it('does not accept an expired invitation', async () => {
    const { svc, google } = bench;
    const { tenantId } = await svc.newTenant();
    const email = uniqueEmail('late');
    google.accounts.set('late', { email, emailVerified: true, name: 'Late' });
    await invite(svc, tenantId, email, 'admin', new Date(Date.now() - 1000));
    const page = await signIn(bench, 'google', 'late');
    expect(page.status).toBe(403);
    expect(page.json.error).toBe('no_membership');
  });

  it('answers 403 no_membership for a tenant asked for that the person is not a member of', async () => {
    const { svc } = bench;
    await invitedGithubUser('wanderer', 8400001);
    const other = await svc.newTenant();
    const page = await signIn(bench, 'github', 'wanderer', { query: { tenant: other.tenantId } });
    expect(page.status).toBe(403);
    expect(page.json.error).toBe('no_membership');
  });

  it('answers 403 for a suspended tenant', async () => {
    const { svc } = bench;
    const { tenantId } = await invitedGithubUser('suspended', 8400002);
    await svc.database.db.update(tenants).set({ status: 'suspended' }).where(eq(tenants.id, tenantId));
    const page = await signIn(bench, 'github', 'suspended');
    expect(page.status).toBe(403);
    expect(page.json).toEqual({ error: 'forbidden', message: 'This tenant is suspended' });
  });

  it('refuses a malformed tenant at the start', async () => {
    const page = await bench.browser().request(`${API}/auth/google?tenant=acme`);
    expect(page.status).toBe(400);
    expect(page.json.error).toBe('validation_error');
  });
});

describe('a provider that is off or cannot be reached', () => {
  let svc: TestService;
  const logLines: string[] = [];

  beforeAll(async () => {
    svc = await startTestService({
      withoutWorker: true,
      logLines,
      identity: {
        providers: {
          // Nothing listens on port 9 of this machine (discard): every call is refused.
          github: {
            clientId: 'Iv1.off',
            clientSecret: 'gh-secret-never-shown',
            url: 'http://127.0.0.1:9',
            apiUrl: 'http://127.0.0.1:9/api/v3',
          },
          oidc: { issuer: 'http://127.0.0.1:9/realms/acme', clientId: 'iis', clientSecret: 'oidc-secret-never-shown' },
          // Plain http off this machine: refused before anything is sent.
          google: { issuer: 'http://accounts.example.test', clientId: 'g', clientSecret: 'google-secret-never-shown' },
        },
      },
    });
  }, 60_000);

  afterAll(async () => {
    await svc?.stop();
  });

  it('answers 404 provider_not_configured for a provider without a client id, or when the service issues no tokens', async () => {
    const deps = svc.appDeps;
    const unconfigured = createApp({
      ...deps,
      identity: { ...deps.identity!, settings: { ...deps.identity!.settings, providers: {} } },
    });
    const answer = await unconfigured.request('/auth/google');
    expect(answer.status).toBe(404);
    expect(((await answer.json()) as { error: string }).error).toBe('provider_not_configured');
    // Only an external JWKS: no signing secret, no sessions, so no sign-in either.
    const verifyOnly = createApp({ ...deps, identity: { settings: deps.identity!.settings } });
    const github = await verifyOnly.request('/auth/github');
    expect(github.status).toBe(404);
    expect(((await github.json()) as { error: string }).error).toBe('provider_not_configured');
  });

  it('refuses a plain http provider off this machine (502, nothing sent)', async () => {
    const answer = await svc.api('GET', '/auth/google');
    expect(answer.status).toBe(502);
    expect(answer.body).toEqual({
      error: 'provider_unavailable',
      message: 'google: The OpenID Connect issuer must be an https URL (http only on a loopback host)',
    });
  });

  it('answers 502 provider_unavailable when discovery or the code exchange cannot reach the provider', async () => {
    const discovery = await svc.api('GET', '/auth/oidc');
    expect(discovery.status).toBe(502);
    expect(discovery.body.error).toBe('provider_unavailable');

    const b = new Browser({ [API]: svc.baseUrl }, []);
    const start = await b.request(`${API}/auth/github`);
    expect(start.status).toBe(302);
    const state = new URL(start.headers.get('location')!).searchParams.get('state')!;
    const exchange = await b.request(`${API}/auth/github/callback?code=0123456789abcdef&state=${state}`);
    expect(exchange.status).toBe(502);
    expect(exchange.json.error).toBe('provider_unavailable');
    for (const text of [discovery.body.message, exchange.text, ...logLines]) {
      expect(text).not.toContain('secret-never-shown');
      expect(text).not.toContain('0123456789abcdef');
    }
  });
});
