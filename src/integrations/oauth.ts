/**
 * The OAuth 2.0 authorization code flow with an integration's provider: the authorize URL,
 * the code exchange, refresh and revocation, in the shapes the providers answer (GitHub's and
 * Slack's errors come in a 200, Slack says `ok: false`, Atlassian takes JSON). PKCE values come
 * from openid-client; its client is not used because these providers are not all RFC 6749 to
 * the letter.
 */
import { calculatePKCECodeChallenge, randomPKCECodeVerifier } from 'openid-client';
import type { IntegrationClient } from '../auth/settings.js';
import { callProvider, type OutboundRuntime, type ProviderAnswer } from './http.js';
import { endpoint, type OAuthProviderSpec } from './providers.js';

/** The provider refused the code, the refresh token or the client: its reason, never a secret. */
export class TokenRefused extends Error {
  constructor(
    readonly providerError: string,
    message: string,
  ) {
    super(message);
    this.name = 'TokenRefused';
  }
}

export interface TokenSet {
  accessToken: string;
  refreshToken: string | undefined;
  tokenType: string | undefined;
  expiresAt: Date | null;
  /** What the provider says it granted; undefined when it does not say. */
  scopes: string[] | undefined;
  extra: Record<string, string>;
}

export async function newPkce(): Promise<{ verifier: string; challenge: string }> {
  const verifier = randomPKCECodeVerifier();
  return { verifier, challenge: await calculatePKCECodeChallenge(verifier) };
}

export function authorizationUrl(
  spec: OAuthProviderSpec,
  client: IntegrationClient,
  request: { state: string; redirectUri: string; scopes: string[]; codeChallenge?: string; subdomain?: string },
): string {
  const url = new URL(endpoint(spec.authorizeUrl, { override: client.url, subdomain: request.subdomain }));
  url.searchParams.set('response_type', 'code');
  url.searchParams.set('client_id', client.clientId);
  url.searchParams.set('redirect_uri', request.redirectUri);
  url.searchParams.set('scope', request.scopes.join(spec.scopeSeparator));
  url.searchParams.set('state', request.state);
  if (request.codeChallenge) {
    url.searchParams.set('code_challenge', request.codeChallenge);
    url.searchParams.set('code_challenge_method', 'S256');
  }
  for (const [name, value] of Object.entries(spec.authorizeParams ?? {})) url.searchParams.set(name, value);
  return url.toString();
}

const str = (v: unknown): string | undefined => (typeof v === 'string' && v !== '' ? v : undefined);

/** What beside the tokens an action needs later (Slack's team and bot, Discord's webhook). */
function extraOf(body: Record<string, unknown>): Record<string, string> {
  const extra: Record<string, string> = {};
  const team = body.team as Record<string, unknown> | undefined;
  if (str(team?.id)) extra.teamId = String(team!.id);
  if (str(team?.name)) extra.teamName = String(team!.name);
  if (str(body.bot_user_id)) extra.botUserId = String(body.bot_user_id);
  const webhook = body.webhook as Record<string, unknown> | undefined;
  if (str(webhook?.url)) extra.webhookUrl = String(webhook!.url);
  return extra;
}

function tokenSetOf(answer: ProviderAnswer, now: Date, what: string): TokenSet {
  const body = (answer.body && typeof answer.body === 'object' ? answer.body : {}) as Record<string, unknown>;
  const error = str(body.error) ?? (body.ok === false ? 'error' : undefined);
  if (answer.status >= 500) throw new TokenRefused('server_error', `the provider answered ${answer.status} to ${what}`);
  if (error || answer.status >= 400 || !str(body.access_token)) {
    const code = error ?? (answer.status >= 400 ? `http_${answer.status}` : 'no_access_token');
    const description = str(body.error_description) ?? str(body.message);
    throw new TokenRefused(code, `the provider refused ${what}: ${code}${description ? ` (${description})` : ''}`);
  }
  const expiresIn = Number(body.expires_in);
  const scope = str(body.scope);
  return {
    accessToken: String(body.access_token),
    refreshToken: str(body.refresh_token),
    tokenType: str(body.token_type),
    expiresAt: Number.isFinite(expiresIn) && expiresIn > 0 ? new Date(now.getTime() + expiresIn * 1000) : null,
    scopes: scope ? scope.split(/[\s,]+/).filter((s) => s !== '') : undefined,
    extra: extraOf(body),
  };
}

async function tokenRequest(
  runtime: OutboundRuntime,
  spec: OAuthProviderSpec,
  client: IntegrationClient,
  params: Record<string, string>,
  subdomain: string | undefined,
): Promise<ProviderAnswer> {
  const url = endpoint(spec.tokenUrl, { override: client.url, subdomain });
  const body: Record<string, string> = { ...params };
  const headers: Record<string, string> = {};
  if (spec.clientAuth === 'basic') {
    const pair = `${encodeURIComponent(client.clientId)}:${encodeURIComponent(client.clientSecret ?? '')}`;
    headers.authorization = `Basic ${Buffer.from(pair).toString('base64')}`;
  } else {
    body.client_id = client.clientId;
    if (client.clientSecret) body.client_secret = client.clientSecret;
  }
  return callProvider(runtime, {
    method: 'POST',
    url,
    headers,
    ...(spec.tokenBody === 'json' ? { json: body } : { form: body }),
  });
}

export async function exchangeCode(
  runtime: OutboundRuntime,
  spec: OAuthProviderSpec,
  client: IntegrationClient,
  request: { code: string; redirectUri: string; codeVerifier?: string; subdomain?: string },
  now: Date,
): Promise<TokenSet> {
  const params: Record<string, string> = {
    grant_type: 'authorization_code',
    code: request.code,
    redirect_uri: request.redirectUri,
  };
  if (request.codeVerifier) params.code_verifier = request.codeVerifier;
  const answer = await tokenRequest(runtime, spec, client, params, request.subdomain);
  return tokenSetOf(answer, now, 'the authorization code');
}

export async function refreshTokens(
  runtime: OutboundRuntime,
  spec: OAuthProviderSpec,
  client: IntegrationClient,
  request: { refreshToken: string; subdomain?: string },
  now: Date,
): Promise<TokenSet> {
  const answer = await tokenRequest(
    runtime,
    spec,
    client,
    { grant_type: 'refresh_token', refresh_token: request.refreshToken },
    request.subdomain,
  );
  return tokenSetOf(answer, now, 'the refresh token');
}

/**
 * Revokes the grant at the provider where it has an endpoint for it; whether the provider
 * confirmed. Best effort: disconnecting does not wait on a provider that does not answer.
 */
export async function revokeGrant(
  runtime: OutboundRuntime,
  spec: OAuthProviderSpec,
  client: IntegrationClient,
  tokens: { accessToken: string; refreshToken?: string | undefined; subdomain?: string | undefined },
): Promise<boolean> {
  if (!spec.revoke) return false;
  const url = endpoint(spec.revoke.url, {
    override: client.url,
    subdomain: tokens.subdomain,
    clientId: client.clientId,
  });
  let answer: ProviderAnswer;
  if (spec.revoke.style === 'github') {
    // DELETE /applications/{client_id}/grant, the OAuth app's own credentials as Basic.
    const pair = Buffer.from(`${client.clientId}:${client.clientSecret ?? ''}`).toString('base64');
    answer = await callProvider(runtime, {
      method: 'DELETE',
      url,
      headers: { authorization: `Basic ${pair}`, ...spec.apiHeaders },
      json: { access_token: tokens.accessToken },
    });
  } else if (spec.revoke.style === 'slack') {
    answer = await callProvider(runtime, {
      method: 'POST',
      url,
      headers: { authorization: `Bearer ${tokens.accessToken}` },
      form: {},
    });
    return answer.status === 200 && (answer.body as { ok?: unknown } | null)?.ok === true;
  } else {
    // RFC 7009: revoking the refresh token ends the grant; the access token where there is none.
    const token = tokens.refreshToken ?? tokens.accessToken;
    answer = await callProvider(runtime, {
      method: 'POST',
      url,
      form: {
        token,
        token_type_hint: tokens.refreshToken ? 'refresh_token' : 'access_token',
        client_id: client.clientId,
        ...(client.clientSecret ? { client_secret: client.clientSecret } : {}),
      },
    });
  }
  return answer.status >= 200 && answer.status < 300;
}
