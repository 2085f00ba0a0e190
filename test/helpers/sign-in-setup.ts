/**
 * The sign-in test setup: the service with GitHub (a local GitHub-compatible server), Google and
 * a generic OIDC provider (two real `oidc-provider` instances), and browsers that sign in.
 */
import { and, eq } from 'drizzle-orm';
import { Browser, type Page } from './browser.js';
import { githubDecisionForm, startGithubOAuthServer, type GithubOAuthServer } from './github-oauth-server.js';
import { formAction, startOidcServer, type OidcServer } from './oidc-server.js';
import { startTestService, type TestService } from './service.js';
import { invitations, memberships, userAccounts } from '../../src/db/schema/identity.js';
import { newId } from '../../src/ids.js';

export const API = 'http://api.test';
export const APP_ORIGIN = 'https://app.example.test';

export interface Bench {
  svc: TestService;
  github: GithubOAuthServer;
  google: OidcServer;
  oidc: OidcServer;
  logLines: string[];
  /** Every answer of the service the browsers saw (bodies and Location headers), for the secret checks. */
  seen: string[];
  /** Every Location header any server sent the browsers (the providers' carry codes to the callback). */
  locations: string[];
  browser(): Browser;
  stop(): Promise<void>;
}

export async function startBench(): Promise<Bench> {
  const github = await startGithubOAuthServer({ callbackUrl: `${API}/auth/github/callback` });
  const google = await startOidcServer({ redirectUri: `${API}/auth/google/callback`, idTokenClaims: true });
  const oidc = await startOidcServer({ redirectUri: `${API}/auth/oidc/callback`, idTokenClaims: false });
  const logLines: string[] = [];
  const svc = await startTestService({
    withoutWorker: true,
    logLines,
    identity: {
      providers: {
        github: {
          clientId: github.clientId,
          clientSecret: github.clientSecret,
          url: github.url,
          apiUrl: github.apiUrl,
        },
        google: { issuer: google.issuer, clientId: google.clientId, clientSecret: google.clientSecret },
        oidc: { issuer: oidc.issuer, clientId: oidc.clientId, clientSecret: oidc.clientSecret },
      },
      redirectOrigins: [APP_ORIGIN],
    },
  });
  const seen: string[] = [];
  const locations: string[] = [];
  return {
    svc,
    github,
    google,
    oidc,
    logLines,
    seen,
    locations,
    browser: () => {
      const b = new Browser({ [API]: svc.baseUrl }, [github.url, google.issuer, oidc.issuer]);
      const request = b.request.bind(b);
      b.request = async (target, init) => {
        const page = await request(target, init);
        const location = page.headers.get('location') ?? '';
        locations.push(location);
        if (page.url.startsWith(API)) seen.push(page.text, location);
        return page;
      };
      return b;
    },
    async stop() {
      await svc.stop();
      await Promise.all([github.close(), google.close(), oidc.close()]);
    },
  };
}

export type ProviderName = 'github' | 'google' | 'oidc';

export interface SignInOptions {
  query?: Record<string, string>;
  deny?: boolean;
  browser?: Browser;
  /** Stop at the service's callback instead of calling it (the Page's stoppedAt is its URL). */
  stopAtCallback?: boolean;
}

/** The whole browser flow: start at the service, sign in and consent at the provider, back to the callback. */
export async function signIn(
  bench: Bench,
  provider: ProviderName,
  login: string,
  options: SignInOptions = {},
): Promise<Page> {
  const b = options.browser ?? bench.browser();
  const query = new URLSearchParams(options.query ?? {}).toString();
  const stopAt = options.stopAtCallback ? (url: URL) => url.pathname === `/auth/${provider}/callback` : undefined;
  const start = await b.navigate(`${API}/auth/${provider}${query ? `?${query}` : ''}`);
  if (start.status !== 200) return start;
  if (provider === 'github') {
    return b.navigate(githubDecisionForm(start), {
      form: { login, decision: options.deny ? 'deny' : 'allow' },
      ...(stopAt ? { stopAt } : {}),
    });
  }
  if (options.deny) return b.navigate(formAction(start, 'abort'), { form: {}, ...(stopAt ? { stopAt } : {}) });
  const consent = await b.navigate(formAction(start, 'login'), { form: { login, password: 'correct horse' } });
  return b.navigate(formAction(consent, 'confirm'), { form: {}, ...(stopAt ? { stopAt } : {}) });
}

/** An open invitation, as `POST /v1/members` leaves one (7 days). */
export async function invite(
  svc: TestService,
  tenantId: string,
  email: string,
  role: 'admin' | 'member',
  expiresAt = new Date(Date.now() + 7 * 86_400_000),
): Promise<string> {
  const id = newId('inv');
  await svc.database.db.insert(invitations).values({ id, tenantId, email, role, invitedBy: 'operator', expiresAt });
  return id;
}

export async function accountOf(svc: TestService, email: string) {
  const [row] = await svc.database.db.select().from(userAccounts).where(eq(userAccounts.email, email));
  return row;
}

export async function membershipRow(svc: TestService, tenantId: string, userId: string) {
  const [row] = await svc.database.db
    .select()
    .from(memberships)
    .where(and(eq(memberships.tenantId, tenantId), eq(memberships.userId, userId)));
  return row;
}

/** The claims of a JWT (not verified: the service's own api verifies it). */
export function claimsOf(jwt: string): Record<string, any> {
  return JSON.parse(Buffer.from(jwt.split('.')[1]!, 'base64url').toString('utf8'));
}

let counter = 0;
/** A fresh email per test (tests share one database). */
export const uniqueEmail = (who: string) => `${who}.${Date.now().toString(36)}${(counter++).toString(36)}@example.com`;
