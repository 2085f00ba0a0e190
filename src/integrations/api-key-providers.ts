/**
 * The api_key providers of the catalog: what each required field must look like, where the
 * provider's API is for the fields given, how a call is authorized, and the call that tests the
 * credentials at connect (the providers' own "who am I" or "validate" endpoints).
 */

export type Fields = Record<string, string>;

export interface TestCall {
  method: 'GET' | 'POST';
  path: string;
  body?: unknown;
  /** A 2xx answer that still says no (NerdGraph's `errors`, Cloudflare's `success: false`). */
  refusal?: (body: unknown) => string | undefined;
}

export interface ApiKeyProviderSpec {
  provider: string;
  /** Per field: why its value is refused, or undefined. Every catalog field is here. */
  fields: Record<string, (value: string) => string | undefined>;
  /** The field holding a URL the tenant gives (its host is judged by the SSRF rules). */
  tenantUrlField?: string;
  /** The API base for these fields (an operator's INTEGRATION_<P>_URL replaces its origin). */
  apiBase(fields: Fields): string;
  headers(fields: Fields): Record<string, string>;
  /** None for AWS: assuming a role needs our own AWS credentials (not configured here). */
  test?: TestCall;
  /** Field values that are secrets (never echoed in a reason). */
  secrets: string[];
}

/** Datadog sites (docs.datadoghq.com/getting_started/site); `app.` forms are accepted too. */
const DATADOG_SITES = [
  'datadoghq.com',
  'us3.datadoghq.com',
  'us5.datadoghq.com',
  'datadoghq.eu',
  'ap1.datadoghq.com',
  'ap2.datadoghq.com',
  'uk1.datadoghq.com',
  'ddog-gov.com',
  'us2.ddog-gov.com',
];
const datadogSite = (v: string) => v.toLowerCase().replace(/^app\./, '');

const token = (v: string) => (/^[\x21-\x7e]{8,512}$/.test(v) ? undefined : 'must be 8–512 visible characters');
const oneOf = (allowed: string[]) => (v: string) =>
  allowed.includes(v.toLowerCase()) ? undefined : `must be one of ${allowed.join(', ')}`;
/** A URL the tenant gives: its form here, its host when called (SSRF rules, at the call). */
const httpUrl = (v: string) => {
  if (!URL.canParse(v)) return 'must be an http(s) URL';
  const url = new URL(v);
  if (url.protocol !== 'https:' && url.protocol !== 'http:') return 'must be an http(s) URL';
  if (url.username || url.password) return 'must not carry credentials';
  if (url.search || url.hash) return 'must not have a query or a fragment';
  return undefined;
};
const trimmed = (v: string) => v.replace(/\/+$/, '');

/** "Could not authenticate" and the like, from the answers' documented error shapes. */
export function reasonOf(body: unknown): string | undefined {
  if (typeof body === 'string') return body.slice(0, 200) || undefined;
  if (!body || typeof body !== 'object') return undefined;
  const b = body as Record<string, unknown>;
  if (typeof b.message === 'string') return b.message;
  if (Array.isArray(b.errors) && b.errors.length > 0) {
    const first = b.errors[0] as unknown;
    if (typeof first === 'string') return first;
    if (first && typeof first === 'object' && typeof (first as { message?: unknown }).message === 'string')
      return (first as { message: string }).message;
  }
  if (b.error && typeof b.error === 'object' && typeof (b.error as { message?: unknown }).message === 'string')
    return (b.error as { message: string }).message;
  if (typeof b.error === 'string') return b.error;
  return undefined;
}

const specs: ApiKeyProviderSpec[] = [
  {
    provider: 'datadog',
    fields: {
      apiKey: token,
      applicationKey: token,
      site: (v) => (DATADOG_SITES.includes(datadogSite(v)) ? undefined : `must be one of ${DATADOG_SITES.join(', ')}`),
    },
    apiBase: (f) => `https://api.${datadogSite(f.site!)}`,
    headers: (f) => ({ 'dd-api-key': f.apiKey!, 'dd-application-key': f.applicationKey! }),
    // Validates the API key (a 403 when it is not valid).
    test: { method: 'GET', path: '/api/v1/validate', refusal: (b) => (isTrue(b, 'valid') ? undefined : 'not valid') },
    secrets: ['apiKey', 'applicationKey'],
  },
  {
    provider: 'grafana',
    fields: { baseUrl: httpUrl, serviceAccountToken: token },
    tenantUrlField: 'baseUrl',
    apiBase: (f) => trimmed(f.baseUrl!),
    headers: (f) => ({ authorization: `Bearer ${f.serviceAccountToken!}` }),
    // The token's organization: readable by any service account of it.
    test: { method: 'GET', path: '/api/org' },
    secrets: ['serviceAccountToken'],
  },
  {
    provider: 'new_relic',
    fields: {
      userApiKey: token,
      accountId: (v) => (/^[0-9]{1,12}$/.test(v) ? undefined : 'must be a New Relic account number'),
      region: oneOf(['us', 'eu']),
    },
    apiBase: (f) => (f.region!.toLowerCase() === 'eu' ? 'https://api.eu.newrelic.com' : 'https://api.newrelic.com'),
    headers: (f) => ({ 'api-key': f.userApiKey! }),
    test: {
      method: 'POST',
      path: '/graphql',
      body: { query: '{ actor { user { email name } } }' },
      refusal: (b) => (b && typeof b === 'object' && 'errors' in b ? (reasonOf(b) ?? 'refused') : undefined),
    },
    secrets: ['userApiKey'],
  },
  {
    provider: 'opsgenie',
    fields: { apiKey: token, region: oneOf(['us', 'eu']) },
    apiBase: (f) => (f.region!.toLowerCase() === 'eu' ? 'https://api.eu.opsgenie.com' : 'https://api.opsgenie.com'),
    headers: (f) => ({ authorization: `GenieKey ${f.apiKey!}` }),
    test: { method: 'GET', path: '/v2/account' },
    secrets: ['apiKey'],
  },
  {
    provider: 'servicenow',
    fields: { instanceUrl: httpUrl, apiKey: token },
    tenantUrlField: 'instanceUrl',
    apiBase: (f) => trimmed(f.instanceUrl!),
    headers: (f) => ({ 'x-sn-apikey': f.apiKey! }),
    // One incident record through the Table API: the key's access to what the service uses.
    test: { method: 'GET', path: '/api/now/table/incident?sysparm_limit=1&sysparm_fields=sys_id' },
    secrets: ['apiKey'],
  },
  {
    provider: 'mattermost',
    fields: { serverUrl: httpUrl, botAccessToken: token },
    tenantUrlField: 'serverUrl',
    apiBase: (f) => trimmed(f.serverUrl!),
    headers: (f) => ({ authorization: `Bearer ${f.botAccessToken!}` }),
    test: { method: 'GET', path: '/api/v4/users/me' },
    secrets: ['botAccessToken'],
  },
  {
    provider: 'aws',
    fields: {
      roleArn: (v) =>
        /^arn:aws(?:-[a-z]+)*:iam::[0-9]{12}:role\/[\w+=,.@/-]{1,512}$/.test(v) ? undefined : 'must be an IAM role ARN',
      externalId: (v) => (/^[\w+=,.@:/-]{2,1224}$/.test(v) ? undefined : 'must be 2–1224 characters [\\w+=,.@:/-]'),
      region: (v) => (/^[a-z]{2}(?:-gov|-iso[a-z]*)?-[a-z]+-[0-9]$/.test(v) ? undefined : 'must be an AWS region'),
    },
    apiBase: (f) => `https://sts.${f.region!}.amazonaws.com`,
    headers: () => ({}),
    secrets: ['externalId'],
  },
  {
    provider: 'cloudflare',
    fields: {
      apiToken: token,
      accountId: (v) => (/^[0-9a-f]{32}$/.test(v) ? undefined : 'must be a Cloudflare account id (32 hex digits)'),
    },
    apiBase: () => 'https://api.cloudflare.com/client/v4',
    headers: (f) => ({ authorization: `Bearer ${f.apiToken!}` }),
    test: {
      method: 'GET',
      path: '/user/tokens/verify',
      refusal: (b) => {
        const body = b as { success?: unknown; result?: { status?: unknown } } | null;
        if (body?.success === false) return reasonOf(b) ?? 'refused';
        const status = body?.result?.status;
        return status === undefined || status === 'active' ? undefined : `the token is ${String(status)}`;
      },
    },
    secrets: ['apiToken'],
  },
];

function isTrue(body: unknown, key: string): boolean {
  return !!body && typeof body === 'object' && (body as Record<string, unknown>)[key] === true;
}

const byProvider = new Map(specs.map((s) => [s.provider, s]));

export function apiKeySpecOf(provider: string): ApiKeyProviderSpec | undefined {
  return byProvider.get(provider);
}

/** `text` with every secret field value replaced, for a reason that quotes what it was sent. */
export function withoutSecrets(text: string, spec: ApiKeyProviderSpec, fields: Fields): string {
  return spec.secrets
    .map((name) => fields[name])
    .filter((v): v is string => !!v && v.length >= 4)
    .reduce((out, secret) => out.split(secret).join('[redacted]'), text);
}
