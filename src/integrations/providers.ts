/**
 * Where each oauth2 provider of the catalog authorizes, issues, refreshes and revokes tokens,
 * and where its API is: the providers' documented endpoints. `INTEGRATION_<PROVIDER>_URL`
 * replaces the origin of every one of them (their paths kept), so a test, a proxy or a
 * self-hosted edition (GitHub Enterprise, GitLab self-managed) is one setting.
 */

export interface OAuthProviderSpec {
  provider: string;
  authorizeUrl: string;
  tokenUrl: string;
  /** How a token is revoked at disconnect; none when the provider has no endpoint for it. */
  revoke?: { url: string; style: 'rfc7009' | 'github' | 'slack' };
  /** How the catalog's scopes are joined in the `scope` parameter. */
  scopeSeparator: ' ' | ',';
  /** The provider accepts PKCE (S256). */
  pkce: boolean;
  /** Parameters the provider needs on the authorize URL besides the standard ones. */
  authorizeParams?: Record<string, string>;
  /** How the client authenticates at the token endpoint: form fields, or HTTP Basic. */
  clientAuth: 'post' | 'basic';
  /** The token endpoint's request body. */
  tokenBody: 'form' | 'json';
  /** The API the provider's actions call; `{subdomain}` is the tenant's (Zendesk). */
  apiBase: string;
  /** Headers every API call carries besides `Authorization`. */
  apiHeaders?: Record<string, string>;
  /** The provider's hosts are per tenant: `{subdomain}` in every URL above, given at connect. */
  subdomain?: boolean;
}

const github: OAuthProviderSpec = {
  provider: 'github',
  authorizeUrl: 'https://github.com/login/oauth/authorize',
  tokenUrl: 'https://github.com/login/oauth/access_token',
  revoke: { url: 'https://api.github.com/applications/{clientId}/grant', style: 'github' },
  scopeSeparator: ' ',
  pkce: true,
  clientAuth: 'post',
  tokenBody: 'form',
  apiBase: 'https://api.github.com',
  apiHeaders: { accept: 'application/vnd.github+json', 'x-github-api-version': '2022-11-28' },
};

const microsoft = (provider: string, apiBase: string): OAuthProviderSpec => ({
  provider,
  authorizeUrl: 'https://login.microsoftonline.com/common/oauth2/v2.0/authorize',
  tokenUrl: 'https://login.microsoftonline.com/common/oauth2/v2.0/token',
  scopeSeparator: ' ',
  pkce: true,
  authorizeParams: { response_mode: 'query' },
  clientAuth: 'post',
  tokenBody: 'form',
  apiBase,
});

const specs: OAuthProviderSpec[] = [
  {
    provider: 'pagerduty',
    authorizeUrl: 'https://identity.pagerduty.com/oauth/authorize',
    tokenUrl: 'https://identity.pagerduty.com/oauth/token',
    revoke: { url: 'https://identity.pagerduty.com/oauth/revoke', style: 'rfc7009' },
    scopeSeparator: ' ',
    pkce: true,
    clientAuth: 'post',
    tokenBody: 'form',
    apiBase: 'https://api.pagerduty.com',
    apiHeaders: { accept: 'application/vnd.pagerduty+json;version=2' },
  },
  {
    provider: 'sentry',
    authorizeUrl: 'https://sentry.io/oauth/authorize/',
    tokenUrl: 'https://sentry.io/oauth/token/',
    scopeSeparator: ' ',
    pkce: true,
    clientAuth: 'post',
    tokenBody: 'form',
    apiBase: 'https://sentry.io/api/0',
  },
  {
    provider: 'bitbucket',
    authorizeUrl: 'https://bitbucket.org/site/oauth2/authorize',
    tokenUrl: 'https://bitbucket.org/site/oauth2/access_token',
    scopeSeparator: ' ',
    pkce: false,
    clientAuth: 'basic',
    tokenBody: 'form',
    apiBase: 'https://api.bitbucket.org/2.0',
  },
  github,
  {
    provider: 'gitlab',
    authorizeUrl: 'https://gitlab.com/oauth/authorize',
    tokenUrl: 'https://gitlab.com/oauth/token',
    revoke: { url: 'https://gitlab.com/oauth/revoke', style: 'rfc7009' },
    scopeSeparator: ' ',
    pkce: true,
    clientAuth: 'post',
    tokenBody: 'form',
    apiBase: 'https://gitlab.com/api/v4',
  },
  {
    provider: 'jira',
    authorizeUrl: 'https://auth.atlassian.com/authorize',
    tokenUrl: 'https://auth.atlassian.com/oauth/token',
    scopeSeparator: ' ',
    pkce: false,
    authorizeParams: { audience: 'api.atlassian.com', prompt: 'consent' },
    clientAuth: 'post',
    tokenBody: 'json',
    apiBase: 'https://api.atlassian.com',
  },
  {
    provider: 'linear',
    authorizeUrl: 'https://linear.app/oauth/authorize',
    tokenUrl: 'https://api.linear.app/oauth/token',
    revoke: { url: 'https://api.linear.app/oauth/revoke', style: 'rfc7009' },
    scopeSeparator: ',',
    pkce: true,
    clientAuth: 'post',
    tokenBody: 'form',
    apiBase: 'https://api.linear.app',
  },
  {
    provider: 'zendesk',
    authorizeUrl: 'https://{subdomain}.zendesk.com/oauth/authorizations/new',
    tokenUrl: 'https://{subdomain}.zendesk.com/oauth/tokens',
    scopeSeparator: ' ',
    pkce: true,
    clientAuth: 'post',
    tokenBody: 'form',
    apiBase: 'https://{subdomain}.zendesk.com/api/v2',
    subdomain: true,
  },
  {
    provider: 'discord',
    authorizeUrl: 'https://discord.com/oauth2/authorize',
    tokenUrl: 'https://discord.com/api/oauth2/token',
    revoke: { url: 'https://discord.com/api/oauth2/token/revoke', style: 'rfc7009' },
    scopeSeparator: ' ',
    pkce: false,
    clientAuth: 'post',
    tokenBody: 'form',
    apiBase: 'https://discord.com/api/v10',
  },
  microsoft('microsoft_teams', 'https://graph.microsoft.com/v1.0'),
  {
    provider: 'slack',
    authorizeUrl: 'https://slack.com/oauth/v2/authorize',
    tokenUrl: 'https://slack.com/api/oauth.v2.access',
    revoke: { url: 'https://slack.com/api/auth.revoke', style: 'slack' },
    scopeSeparator: ',',
    pkce: false,
    clientAuth: 'post',
    tokenBody: 'form',
    apiBase: 'https://slack.com/api',
  },
  microsoft('azure', 'https://management.azure.com'),
  {
    provider: 'gcp',
    authorizeUrl: 'https://accounts.google.com/o/oauth2/v2/auth',
    tokenUrl: 'https://oauth2.googleapis.com/token',
    revoke: { url: 'https://oauth2.googleapis.com/revoke', style: 'rfc7009' },
    scopeSeparator: ' ',
    pkce: true,
    // A refresh token is only issued for offline access, and again only with consent.
    authorizeParams: { access_type: 'offline', prompt: 'consent', include_granted_scopes: 'true' },
    clientAuth: 'post',
    tokenBody: 'form',
    apiBase: 'https://logging.googleapis.com',
  },
];

const byProvider = new Map(specs.map((s) => [s.provider, s]));

export function oauthSpecOf(provider: string): OAuthProviderSpec | undefined {
  return byProvider.get(provider);
}

/**
 * `url` with its origin replaced by `override` (the override's own path prefixed to the URL's),
 * and `{subdomain}`/`{clientId}` filled in.
 */
export function endpoint(
  url: string,
  options: { override?: string | undefined; subdomain?: string | undefined; clientId?: string },
): string {
  const filled = url
    .replace('{subdomain}', options.subdomain ?? '')
    .replace('{clientId}', encodeURIComponent(options.clientId ?? ''));
  if (!options.override) return filled;
  const parsed = new URL(filled);
  const path = parsed.pathname === '/' ? '' : parsed.pathname;
  return `${options.override.replace(/\/+$/, '')}${path}${parsed.search}`;
}

/** A Zendesk subdomain: what a host label may be. */
export const SUBDOMAIN = /^[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?$/;
