/**
 * GitHub's OAuth 2.0 web flow (github.com or a GitHub Enterprise Server): openid-client drives it
 * from the endpoints GitHub documents (no discovery, no id_token), with PKCE (S256); the identity
 * comes from the REST API's `/user` and `/user/emails` (the primary verified email, else any
 * verified one).
 */
import * as client from 'openid-client';
import type { GithubSignIn } from '../settings.js';
import {
  checkedProviderUrl,
  isPlainHttp,
  ProviderError,
  providerErrorOf,
  type AuthorizationRequest,
  type CallbackChecks,
  type ProviderIdentity,
  type SignInClient,
} from './common.js';

const SCOPES = 'read:user user:email';
/** GitHub's REST API needs a User-Agent and names its version in a header. */
const API_HEADERS = {
  accept: 'application/vnd.github+json',
  'x-github-api-version': '2022-11-28',
  'user-agent': 'incident-investigation-service',
};

interface GithubUser {
  id: number;
  login: string;
  name: string | null;
  email: string | null;
}

interface GithubEmail {
  email: string;
  primary: boolean;
  verified: boolean;
  visibility: string | null;
}

/**
 * GitHub answers a refused token request with 200 and an `error` member; the OAuth 2.0 answer is
 * a 400, which is what openid-client expects to read an error from.
 */
const githubFetch: client.CustomFetch = async (url, options) => {
  const response = await fetch(url, options);
  if (response.status !== 200 || !response.headers.get('content-type')?.includes('json')) return response;
  const text = await response.text();
  let refused = false;
  try {
    refused = typeof (JSON.parse(text) as { error?: unknown }).error === 'string';
  } catch {
    // Not JSON after all: openid-client will say so.
  }
  return new Response(text, { status: refused ? 400 : 200, headers: response.headers });
};

/** The verified email GitHub would show first: the primary one if verified, else any verified. */
function verifiedEmailOf(emails: GithubEmail[]): string | null {
  const verified = emails.filter((e) => e.verified === true && typeof e.email === 'string');
  return (verified.find((e) => e.primary) ?? verified[0])?.email ?? null;
}

export function githubClient(settings: GithubSignIn, timeoutMs: number): SignInClient {
  let configuration: client.Configuration | undefined;
  const configured = () => {
    if (configuration) return configuration;
    const web = checkedProviderUrl(settings.url, 'GitHub URL');
    checkedProviderUrl(settings.apiUrl, 'GitHub API URL');
    const config = new client.Configuration(
      {
        issuer: web.origin,
        authorization_endpoint: `${settings.url}/login/oauth/authorize`,
        token_endpoint: `${settings.url}/login/oauth/access_token`,
      },
      settings.clientId,
      settings.clientSecret,
      client.ClientSecretPost(),
    );
    config[client.customFetch] = githubFetch;
    config.timeout = Math.ceil(timeoutMs / 1000);
    if (isPlainHttp(web)) client.allowInsecureRequests(config);
    return (configuration = config);
  };

  const api = async <T>(path: string, accessToken: string): Promise<T> => {
    const response = await fetch(`${settings.apiUrl}${path}`, {
      headers: { ...API_HEADERS, authorization: `Bearer ${accessToken}` },
      redirect: 'error',
      signal: AbortSignal.timeout(timeoutMs),
    });
    if (!response.ok) {
      await response.body?.cancel();
      throw new ProviderError('unavailable', `GitHub's ${path} answered ${response.status}`);
    }
    return (await response.json()) as T;
  };

  return {
    usesNonce: false,
    async authorizationUrl(request: AuthorizationRequest): Promise<URL> {
      return client.buildAuthorizationUrl(configured(), {
        redirect_uri: request.redirectUri,
        scope: SCOPES,
        state: request.state,
        code_challenge: request.codeChallenge,
        code_challenge_method: 'S256',
      });
    },
    async identify(callbackUrl: URL, checks: CallbackChecks): Promise<ProviderIdentity> {
      try {
        const tokens = await client.authorizationCodeGrant(configured(), callbackUrl, {
          pkceCodeVerifier: checks.codeVerifier,
          expectedState: checks.state,
        });
        const user = await api<GithubUser>('/user', tokens.access_token);
        const emails = await api<GithubEmail[]>('/user/emails', tokens.access_token);
        if (typeof user?.id !== 'number' || !Array.isArray(emails)) {
          throw new ProviderError('unavailable', "GitHub's user API answered an unexpected shape");
        }
        const verified = verifiedEmailOf(emails);
        return {
          subject: String(user.id),
          email: verified ?? user.email ?? null,
          emailVerified: verified !== null,
          name: typeof user.name === 'string' && user.name.trim() !== '' ? user.name.trim() : user.login,
        };
      } catch (err) {
        throw providerErrorOf(err, ['bad_verification_code', 'invalid_grant']);
      }
    },
  };
}
