/**
 * What the sign-in routes ask of a provider: where to send the browser, and, with the callback,
 * who signed in. GitHub (OAuth 2.0 web flow) and OpenID Connect providers (Google, any issuer)
 * answer the same interface; the protocol is openid-client's.
 */

/** Who signed in, as the provider vouches for them. */
export interface ProviderIdentity {
  /** The provider's stable id of the account (`sub`, GitHub's numeric user id). */
  subject: string;
  /** The email the provider says is theirs; null when it gave none. */
  email: string | null;
  /** True only when the provider says it verified that email. */
  emailVerified: boolean;
  name: string | null;
}

export interface AuthorizationRequest {
  redirectUri: string;
  state: string;
  codeChallenge: string;
  /** OpenID Connect only. */
  nonce?: string;
}

export interface CallbackChecks {
  state: string;
  codeVerifier: string;
  nonce?: string;
}

export interface SignInClient {
  /** OpenID Connect providers check an id_token and its nonce; GitHub has none. */
  readonly usesNonce: boolean;
  authorizationUrl(request: AuthorizationRequest): Promise<URL>;
  /** Exchanges the code of `callbackUrl` (the redirect URI with the provider's query) for the identity. */
  identify(callbackUrl: URL, checks: CallbackChecks): Promise<ProviderIdentity>;
}

/**
 * A provider call that failed: `invalid_grant` when the provider refused the code (spent,
 * expired, not ours), `unavailable` when it could not be reached or answered what it should not.
 * The message never carries a code, a token or a secret.
 */
export class ProviderError extends Error {
  constructor(
    readonly kind: 'invalid_grant' | 'unavailable',
    message: string,
  ) {
    super(message);
    this.name = 'ProviderError';
  }
}

/** How long one call to a provider may take. */
export const PROVIDER_TIMEOUT_MS = 10_000;

const LOOPBACK = new Set(['127.0.0.1', 'localhost', '[::1]', '::1']);

/** Production providers are https; plain http only on this machine (a test's local provider). */
export function checkedProviderUrl(value: string, what: string): URL {
  const url = new URL(value);
  if (url.protocol === 'https:') return url;
  if (url.protocol === 'http:' && LOOPBACK.has(url.hostname)) return url;
  throw new ProviderError('unavailable', `The ${what} must be an https URL (http only on a loopback host)`);
}

/** Whether openid-client must be told that plain http is allowed (a loopback provider). */
export const isPlainHttp = (url: URL) => url.protocol === 'http:';

/**
 * Maps what openid-client (or fetch) threw to a ProviderError: a refused code is the caller's
 * `invalid_grant`; anything else is the provider's fault. Only OAuth error codes pass through.
 */
export function providerErrorOf(err: unknown, refusedCodes: string[]): ProviderError {
  if (err instanceof ProviderError) return err;
  const e = err as { name?: string; code?: string; error?: string; cause?: unknown };
  const oauthError = typeof e.error === 'string' && /^[a-z_]{1,64}$/.test(e.error) ? e.error : undefined;
  if (oauthError && refusedCodes.includes(oauthError)) {
    return new ProviderError('invalid_grant', `The provider refused the authorization code (${oauthError})`);
  }
  if (oauthError) return new ProviderError('unavailable', `The provider refused the request (${oauthError})`);
  if (e.name === 'TimeoutError' || e.name === 'AbortError') {
    return new ProviderError('unavailable', 'The provider did not answer in time');
  }
  if (e.name === 'TypeError' && /fetch failed/i.test(String((err as Error).message))) {
    return new ProviderError('unavailable', 'The provider could not be reached');
  }
  const code = typeof e.code === 'string' && /^[A-Z_]{1,64}$/.test(e.code) ? ` (${e.code})` : '';
  return new ProviderError('unavailable', `The provider's answer could not be trusted${code}`);
}
