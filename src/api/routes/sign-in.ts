import { createHash, createHmac, randomBytes, timingSafeEqual } from 'node:crypto';
import { createRoute, type OpenAPIHono } from '@hono/zod-openapi';
import type { Context } from 'hono';
import { deleteCookie, getSignedCookie, setCookie, setSignedCookie } from 'hono/cookie';
import * as oauth from 'openid-client';
import { ProviderError, type ProviderIdentity, type SignInClient } from '../../auth/oauth/common.js';
import { createSignInClients } from '../../auth/oauth/providers.js';
import { completeSignIn } from '../../auth/oauth/sign-in.js';
import type { SessionSettings, TokenPair } from '../../auth/sessions.js';
import { consumeOAuthState, createOAuthState } from '../../db/repositories/oauth-states.js';
import { signInProviders, type SignInProvider } from '../../db/schema/identity.js';
import { AppError } from '../../errors.js';
import type { AppDeps, AppEnv } from '../context.js';
import { SESSION_COOKIE, SESSION_COOKIE_PATH } from '../middleware/bearer-auth.js';
import { errorResponses } from '../schemas/common.js';
import { ProviderParam, SignInCallbackQuery, SignInStartQuery } from '../schemas/sign-in.js';
import { TokenPairSchema } from './auth-tokens.js';

/** Binds a sign-in to the browser that started it: a random value whose hash the state keeps. */
const BINDING_COOKIE = 'iis_signin';
const BINDING_MAX_AGE_SECONDS = 600;

const startRoute = createRoute({
  method: 'get',
  path: '/auth/{provider}',
  tags: ['sign-in'],
  summary: 'Start signing in with GitHub, Google or the OpenID Connect provider: a redirect to the provider',
  request: { params: ProviderParam, query: SignInStartQuery },
  responses: {
    302: {
      description:
        "To the provider's authorization page (state, PKCE S256 and, for OpenID Connect, a nonce); sets the short-lived cookie that binds the sign-in to this browser",
      headers: { Location: { schema: { type: 'string' } }, 'Set-Cookie': { schema: { type: 'string' } } },
    },
    ...errorResponses(400, 404, 429, 502),
  },
});

const callbackRoute = createRoute({
  method: 'get',
  path: '/auth/{provider}/callback',
  tags: ['sign-in'],
  summary: 'Where the provider sends the browser back: verifies the state, exchanges the code, issues the tokens',
  request: { params: ProviderParam, query: SignInCallbackQuery },
  responses: {
    200: {
      description: 'Signed in (no redirect_to): the token pair; also sets the session cookie',
      content: { 'application/json': { schema: TokenPairSchema } },
    },
    302: {
      description:
        'With redirect_to: to it with the tokens in the fragment (#access_token=…&refresh_token=…&token_type=Bearer&expires_in=…&tenant_id=…), or with ?error=<code>&error_description=… when signing in failed',
      headers: { Location: { schema: { type: 'string' } } },
    },
    ...errorResponses(400, 403, 404, 429, 502),
  },
});

const sha256 = (value: string) => createHash('sha256').update(value, 'utf8').digest();

/** The sign-in state as the start route stores it. */
interface StoredSignIn {
  codeVerifier: string;
  nonce?: string;
  redirectTo?: string;
  bindingHash: string;
}

export function registerSignInRoutes(app: OpenAPIHono<AppEnv>, deps: AppDeps): void {
  const clientOf = createSignInClients(deps.identity?.settings.providers ?? {});
  const sessions = deps.identity?.sessions;
  const cookieKey = sessions
    ? createHmac('sha256', sessions.signingSecret).update('sign-in browser binding cookie').digest()
    : randomBytes(32);
  const base = deps.config.publicBaseUrl.replace(/\/+$/, '');
  const secure = base.startsWith('https://');
  const redirectUriOf = (provider: string) => `${base}/auth/${provider}/callback`;

  /** The configured client of a provider named in a path; 404 for any other name. */
  const providerOf = (name: string): { provider: SignInProvider; client: SignInClient; sessions: SessionSettings } => {
    if (!(signInProviders as readonly string[]).includes(name)) {
      throw new AppError('not_found', `No sign-in provider is named ${name}; use github, google or oidc`);
    }
    const provider = name as SignInProvider;
    const client = clientOf(provider);
    if (!client || !sessions) {
      throw new AppError('provider_not_configured', `Sign-in with ${provider} is not configured on this service`);
    }
    return { provider, client, sessions };
  };

  app.openapi(startRoute, async (c) => {
    const { provider, client } = providerOf(c.req.valid('param').provider);
    const query = c.req.valid('query');
    const redirectTo = query.redirect_to === undefined ? undefined : allowedRedirect(deps, query.redirect_to);
    const binding = randomBytes(32).toString('base64url');
    const codeVerifier = oauth.randomPKCECodeVerifier();
    const nonce = client.usesNonce ? oauth.randomNonce() : undefined;
    const data: StoredSignIn = {
      codeVerifier,
      ...(nonce ? { nonce } : {}),
      ...(redirectTo ? { redirectTo } : {}),
      bindingHash: sha256(binding).toString('hex'),
    };
    const codeChallenge = await oauth.calculatePKCECodeChallenge(codeVerifier);
    const state = await createOAuthState(
      deps.db,
      'sign_in',
      { provider, tenantId: query.tenant ?? null, userId: null, data: { ...data } },
      deps.clock(),
    );
    // An OpenID Connect provider is discovered here (once per process): unreachable → 502.
    const location = await asProviderCall(c, provider, () =>
      client.authorizationUrl({ redirectUri: redirectUriOf(provider), state, codeChallenge, nonce }),
    );
    await setSignedCookie(c, BINDING_COOKIE, binding, cookieKey, {
      path: `/auth/${provider}/callback`,
      httpOnly: true,
      sameSite: 'Lax',
      secure,
      maxAge: BINDING_MAX_AGE_SECONDS,
    });
    c.header('Cache-Control', 'no-store');
    return c.redirect(location.toString(), 302);
  });

  app.openapi(callbackRoute, async (c) => {
    const { provider, client, sessions } = providerOf(c.req.valid('param').provider);
    const query = c.req.valid('query');
    c.header('Cache-Control', 'no-store');
    const binding = await getSignedCookie(c, cookieKey, BINDING_COOKIE);
    deleteCookie(c, BINDING_COOKIE, { path: `/auth/${provider}/callback`, secure, httpOnly: true, sameSite: 'Lax' });
    if (!query.state) throw new AppError('invalid_state', 'The callback carries no state; start signing in again');
    const record = await consumeOAuthState(deps.db, 'sign_in', provider, query.state, deps.clock());
    if (!record) {
      throw new AppError('invalid_state', 'The sign-in state is unknown, expired or already used; start again');
    }
    const stored = record.data as unknown as StoredSignIn;
    if (typeof binding !== 'string' || !sameHash(sha256(binding), stored.bindingHash)) {
      throw new AppError(
        'invalid_state',
        'This sign-in was started in another browser, or its cookie is missing or expired; start again',
      );
    }
    try {
      // The redirect URI as registered (the public base URL), with the provider's parameters.
      const callbackUrl = new URL(redirectUriOf(provider));
      callbackUrl.search = new URL(c.req.url).search;
      const identity = await identityOf(c, provider, client, query, callbackUrl, {
        state: query.state,
        codeVerifier: stored.codeVerifier,
        ...(stored.nonce ? { nonce: stored.nonce } : {}),
      });
      const { userId, pair } = await completeSignIn(
        deps.db,
        sessions,
        { provider, subject: identity.subject, email: identity.email, name: identity.name },
        record.tenantId,
        deps.clock(),
        c.get('requestId'),
      );
      c.var.logger.info({ provider, userId, tenantId: pair.tenantId }, 'signed in');
      setCookie(c, SESSION_COOKIE, pair.accessToken, {
        path: SESSION_COOKIE_PATH,
        httpOnly: true,
        sameSite: 'Lax',
        secure,
        maxAge: pair.expiresIn,
      });
      if (stored.redirectTo) return c.redirect(withTokens(stored.redirectTo, pair), 302);
      return c.json(pair, 200);
    } catch (err) {
      if (!stored.redirectTo || !(err instanceof AppError)) throw err;
      c.var.logger.info({ provider, error: err.code }, 'sign-in refused');
      return c.redirect(withError(stored.redirectTo, err), 302);
    }
  });
}

/** Who the provider says signed in, with a verified email; the provider's refusals as our errors. */
async function identityOf(
  c: Context<AppEnv>,
  provider: SignInProvider,
  client: SignInClient,
  query: ReturnType<typeof SignInCallbackQuery.parse>,
  callbackUrl: URL,
  checks: { state: string; codeVerifier: string; nonce?: string },
): Promise<ProviderIdentity & { email: string }> {
  if (query.error !== undefined) {
    const code = /^[a-z_]{1,64}$/.test(query.error) ? query.error : 'error';
    throw new AppError(
      'access_denied',
      code === 'access_denied'
        ? `Access was denied at ${provider}: signing in needs your consent`
        : `${provider} refused the sign-in (${code})`,
    );
  }
  if (!query.code) throw new AppError('validation_error', 'The callback carries no authorization code');
  const identity = await asProviderCall(c, provider, () => client.identify(callbackUrl, checks));
  if (!identity.emailVerified || identity.email === null) {
    throw new AppError(
      'email_not_verified',
      `${provider} does not vouch for a verified email of this account; verify one there and sign in again`,
    );
  }
  return { ...identity, email: identity.email };
}

/** Runs a provider call; its failures become invalid_grant (400) or provider_unavailable (502). */
async function asProviderCall<T>(c: Context<AppEnv>, provider: SignInProvider, call: () => Promise<T>): Promise<T> {
  try {
    return await call();
  } catch (err) {
    if (!(err instanceof ProviderError)) throw err;
    c.var.logger.warn({ provider, kind: err.kind, reason: err.message }, 'sign-in provider call failed');
    if (err.kind === 'invalid_grant') {
      throw new AppError('invalid_grant', `${err.message}: it was already used or has expired; start again`);
    }
    throw new AppError('provider_unavailable', `${provider}: ${err.message}`);
  }
}

/** `redirect_to` must be an absolute http(s) URL on an allowed origin: never an open redirect. */
function allowedRedirect(deps: AppDeps, value: string): string {
  const url = URL.canParse(value) ? new URL(value) : undefined;
  const allowed = deps.identity?.settings.redirectOrigins ?? [];
  if (!url || !/^https?:$/.test(url.protocol) || url.username || url.password || !allowed.includes(url.origin)) {
    throw new AppError(
      'validation_error',
      'redirect_to must be an absolute URL on an origin in AUTH_REDIRECT_ORIGINS',
      [{ path: 'redirect_to', message: 'not an allowed redirect target' }],
    );
  }
  url.hash = '';
  return url.toString();
}

function sameHash(actual: Buffer, expectedHex: string): boolean {
  const expected = Buffer.from(typeof expectedHex === 'string' ? expectedHex : '', 'hex');
  return expected.length === actual.length && timingSafeEqual(actual, expected);
}

/** The tokens go in the fragment: a browser never sends it to a server, nor in a Referer. */
function withTokens(target: string, pair: TokenPair): string {
  const url = new URL(target);
  url.hash = new URLSearchParams({
    access_token: pair.accessToken,
    refresh_token: pair.refreshToken,
    token_type: pair.tokenType,
    expires_in: String(pair.expiresIn),
    tenant_id: pair.tenantId,
  }).toString();
  return url.toString();
}

function withError(target: string, err: AppError): string {
  const url = new URL(target);
  url.searchParams.set('error', err.code);
  url.searchParams.set('error_description', err.message);
  if (err.code === 'tenant_choice_required') {
    const tenants = (err.details as { tenants: Array<{ tenantId: string }> }).tenants;
    url.searchParams.set('tenants', tenants.map((t) => t.tenantId).join(','));
  }
  return url.toString();
}
