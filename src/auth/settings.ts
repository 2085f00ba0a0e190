/**
 * Sign-in and integration-connect settings, from the environment: each sign-in provider is on
 * when its client id is set, each catalog integration's OAuth client when
 * `INTEGRATION_<PROVIDER>_CLIENT_ID` is.
 */
import { z } from 'zod';
import { integrationCatalog } from '../domain/catalog.js';

export interface GithubSignIn {
  clientId: string;
  clientSecret: string;
  /** Where the web flow's pages are (`https://github.com`, or a GitHub Enterprise Server). */
  url: string;
  /** The REST API (`https://api.github.com`, or `https://HOST/api/v3`). */
  apiUrl: string;
}

export interface OidcSignIn {
  issuer: string;
  clientId: string;
  clientSecret: string;
}

export interface SignInProviders {
  github?: GithubSignIn;
  google?: OidcSignIn;
  oidc?: OidcSignIn;
}

/** An integration's OAuth client (oauth2 providers) and the base URL of its API. */
export interface IntegrationClient {
  clientId: string;
  clientSecret: string | undefined;
  url: string | undefined;
}

export interface IdentitySettings {
  providers: SignInProviders;
  /** Origins `redirect_to` may point at (`AUTH_REDIRECT_ORIGINS`); none when empty. */
  redirectOrigins: string[];
  /** How long a refresh token lives unused (`REFRESH_TOKEN_TTL_SECONDS`, default 30 days). */
  refreshTtlSeconds: number;
  /** Integration OAuth clients by catalog provider key. */
  integrationClients: Record<string, IntegrationClient>;
}

const text = z
  .string()
  .trim()
  .transform((v) => (v === '' ? undefined : v))
  .optional();
const url = z
  .string()
  .trim()
  .transform((v) => (v === '' ? undefined : v))
  .pipe(z.url({ protocol: /^https?$/, message: 'must be an http(s) URL' }).optional())
  .optional();
/** A sign-in provider's address: https, plain http only on this machine (a local test provider). */
const providerUrl = url.refine(
  (v) =>
    v === undefined || v.startsWith('https://') || ['localhost', '127.0.0.1', '[::1]'].includes(new URL(v).hostname),
  { message: 'must be an https URL (plain http only on a loopback host)' },
);

const origin = (entry: string) => URL.canParse(entry) && new URL(entry).origin === entry.replace(/\/$/, '');

const identityEnv = z.object({
  AUTH_REDIRECT_ORIGINS: z
    .string()
    .transform((v) =>
      v
        .split(',')
        .map((entry) => entry.trim().replace(/\/$/, ''))
        .filter((entry) => entry !== ''),
    )
    .refine((entries) => entries.every(origin), {
      message: 'must be a comma-separated list of origins (scheme://host[:port]), e.g. https://app.example.com',
    })
    .default([]),
  REFRESH_TOKEN_TTL_SECONDS: z.coerce.number().int().min(300).max(31_536_000).default(2_592_000),
  OAUTH_GITHUB_CLIENT_ID: text,
  OAUTH_GITHUB_CLIENT_SECRET: text,
  OAUTH_GITHUB_URL: providerUrl,
  OAUTH_GITHUB_API_URL: providerUrl,
  OAUTH_GOOGLE_CLIENT_ID: text,
  OAUTH_GOOGLE_CLIENT_SECRET: text,
  OAUTH_GOOGLE_ISSUER: providerUrl,
  OIDC_ISSUER: providerUrl,
  OIDC_CLIENT_ID: text,
  OIDC_CLIENT_SECRET: text,
});

const trimSlash = (v: string) => v.replace(/\/+$/, '');

/** The settings, or the problems (`NAME: message`) that make the environment unusable. */
export function loadIdentitySettings(
  env: Record<string, string | undefined>,
): { settings: IdentitySettings } | { problems: string[] } {
  const parsed = identityEnv.safeParse(env);
  if (!parsed.success) return { problems: parsed.error.issues.map((i) => `${i.path.join('.')}: ${i.message}`) };
  const e = parsed.data;
  const problems: string[] = [];
  const providers: SignInProviders = {};
  const secretOf = (idName: string, secretName: string, secret: string | undefined) => {
    if (secret === undefined) problems.push(`${secretName}: required when ${idName} is set`);
    return secret ?? '';
  };
  if (e.OAUTH_GITHUB_CLIENT_ID) {
    providers.github = {
      clientId: e.OAUTH_GITHUB_CLIENT_ID,
      clientSecret: secretOf('OAUTH_GITHUB_CLIENT_ID', 'OAUTH_GITHUB_CLIENT_SECRET', e.OAUTH_GITHUB_CLIENT_SECRET),
      url: trimSlash(e.OAUTH_GITHUB_URL ?? 'https://github.com'),
      apiUrl: trimSlash(e.OAUTH_GITHUB_API_URL ?? 'https://api.github.com'),
    };
  }
  if (e.OAUTH_GOOGLE_CLIENT_ID) {
    providers.google = {
      clientId: e.OAUTH_GOOGLE_CLIENT_ID,
      clientSecret: secretOf('OAUTH_GOOGLE_CLIENT_ID', 'OAUTH_GOOGLE_CLIENT_SECRET', e.OAUTH_GOOGLE_CLIENT_SECRET),
      issuer: trimSlash(e.OAUTH_GOOGLE_ISSUER ?? 'https://accounts.google.com'),
    };
  }
  if (e.OIDC_CLIENT_ID) {
    if (!e.OIDC_ISSUER) problems.push('OIDC_ISSUER: required when OIDC_CLIENT_ID is set');
    providers.oidc = {
      clientId: e.OIDC_CLIENT_ID,
      clientSecret: secretOf('OIDC_CLIENT_ID', 'OIDC_CLIENT_SECRET', e.OIDC_CLIENT_SECRET),
      issuer: trimSlash(e.OIDC_ISSUER ?? ''),
    };
  }
  const integrationClients: Record<string, IntegrationClient> = {};
  for (const { provider } of integrationCatalog) {
    const prefix = `INTEGRATION_${provider.toUpperCase()}`;
    const clientId = env[`${prefix}_CLIENT_ID`]?.trim();
    const base = env[`${prefix}_URL`]?.trim();
    if (base && !(URL.canParse(base) && /^https?:$/.test(new URL(base).protocol)))
      problems.push(`${prefix}_URL: must be an http(s) URL`);
    if (!clientId && !base) continue;
    integrationClients[provider] = {
      clientId: clientId ?? '',
      clientSecret: env[`${prefix}_CLIENT_SECRET`]?.trim() || undefined,
      url: base ? trimSlash(base) : undefined,
    };
  }
  if (problems.length > 0) return { problems };
  return {
    settings: {
      providers,
      redirectOrigins: e.AUTH_REDIRECT_ORIGINS,
      refreshTtlSeconds: e.REFRESH_TOKEN_TTL_SECONDS,
      integrationClients,
    },
  };
}
