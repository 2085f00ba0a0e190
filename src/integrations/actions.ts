/**
 * What an `integration` skill (or a remediation step of one) does with the tenant's connection:
 * a few real actions of the providers' APIs, and `<provider>.api_request`, a call of any method
 * and path confined to the provider's API base. A remediation step's input carries the
 * recommended action, which is the issue title, the message or the note when none is given; the
 * skill's input schema `default`s give the rest (the channel, the repository).
 */
import type { Db } from '../db/client.js';
import type { TenantRow } from '../db/schema/tenants.js';
import { integrationCatalog } from '../domain/catalog.js';
import { storableCopy } from '../domain/json-text.js';
import { SkillFailure } from '../skills/failure.js';
import { httpMethods, type HttpMethod } from '../skills/http.js';
import { reasonOf } from './api-key-providers.js';
import { markRefused, openConnection, type IntegrationRuntime, type OpenConnection } from './connection.js';
import { callProvider, ProviderUnreachable, ProviderUrlRefused } from './http.js';

type Input = Record<string, unknown>;

interface ActionContext {
  db: Db;
  runtime: IntegrationRuntime;
  connection: OpenConnection;
  now: Date;
}

interface Action {
  provider: string | '*';
  run(ctx: ActionContext, input: Input): Promise<unknown>;
}

const text = (input: Input, name: string, max: number, fallback?: string): string => {
  const value = input[name] ?? fallback;
  if (typeof value !== 'string' || value.trim() === '')
    throw new SkillFailure('invalid_input', `${name} is required (a non-empty string)`);
  if (value.length > max) throw new SkillFailure('invalid_input', `${name} must be at most ${max} characters`);
  return value;
};
const optionalText = (input: Input, name: string, max: number): string | undefined =>
  input[name] === undefined || input[name] === null ? undefined : text(input, name, max);
const recommended = (input: Input) =>
  typeof input.recommendedAction === 'string' ? input.recommendedAction : undefined;
/** A path segment the caller names (owner, repo, incident id): one segment, nothing to escape. */
const segment = (input: Input, name: string, value?: string): string => {
  const v = value ?? text(input, name, 200);
  if (!/^[A-Za-z0-9._-]+$/.test(v) || v === '.' || v === '..')
    throw new SkillFailure('invalid_input', `${name} must be letters, digits, '.', '_' or '-'`);
  return v;
};

/** Calls the provider's API at `path` under its base; a non-2xx answer is a failure with its reason. */
async function request(
  ctx: ActionContext,
  method: HttpMethod,
  path: string,
  json?: unknown,
  extraHeaders: Record<string, string> = {},
): Promise<{ status: number; body: unknown }> {
  const { connection } = ctx;
  let answer;
  try {
    answer = await callProvider(ctx.runtime, {
      method,
      url: `${connection.apiBase}${path}`,
      headers: { ...connection.headers, ...extraHeaders },
      ...(json !== undefined ? { json } : {}),
      ...(connection.tenantUrl ? { tenantUrl: connection.tenantUrl } : {}),
    });
  } catch (err) {
    if (err instanceof ProviderUnreachable) throw new SkillFailure('provider_unavailable', err.message);
    if (err instanceof ProviderUrlRefused) throw new SkillFailure('ssrf_blocked', err.message);
    throw err;
  }
  const body = mask(answer.body, connection.secrets);
  if (answer.status === 401) await markRefused(ctx.db, connection.row, ctx.now);
  if (answer.status < 200 || answer.status >= 300) {
    const reason = reasonOf(body);
    throw new SkillFailure(
      'http_error',
      `${connection.row.provider} answered ${answer.status}${reason ? `: ${reason}` : ''}`,
      storableCopy({ status: answer.status, body }),
    );
  }
  return { status: answer.status, body };
}

/** The answer without any stored token or key it may quote. */
function mask(value: unknown, secrets: string[]): unknown {
  const masked = secrets.filter((s) => s.length >= 8);
  if (masked.length === 0) return value;
  const walk = (v: unknown): unknown => {
    if (typeof v === 'string') return masked.reduce((out, s) => out.split(s).join('[redacted]'), v);
    if (Array.isArray(v)) return v.map(walk);
    if (v !== null && typeof v === 'object') return Object.fromEntries(Object.entries(v).map(([k, c]) => [k, walk(c)]));
    return v;
  };
  return walk(value);
}

const actions: Record<string, Action> = {
  // POST /repos/{owner}/{repo}/issues (docs.github.com/rest/issues/issues#create-an-issue)
  'github.create_issue': {
    provider: 'github',
    async run(ctx, input) {
      const [owner, repo] = typeof input.repository === 'string' ? input.repository.split('/') : [undefined, undefined];
      const path = `/repos/${segment(input, 'owner', owner)}/${segment(input, 'repo', repo)}/issues`;
      const labels = Array.isArray(input.labels) ? input.labels.filter((l) => typeof l === 'string') : undefined;
      const body = optionalText(input, 'body', 65_536);
      const { body: issue } = await request(ctx, 'POST', path, {
        title: text(input, 'title', 256, recommended(input)),
        ...(body ? { body } : {}),
        ...(labels?.length ? { labels } : {}),
      });
      const i = issue as { number?: number; html_url?: string; id?: number };
      return { number: i.number ?? null, url: i.html_url ?? null, id: i.id ?? null };
    },
  },
  // chat.postMessage (docs.slack.dev/reference/methods/chat.postMessage): errors come as ok: false.
  'slack.post_message': {
    provider: 'slack',
    async run(ctx, input) {
      const { body } = await request(ctx, 'POST', '/chat.postMessage', {
        channel: text(input, 'channel', 200),
        text: text(input, 'text', 40_000, recommended(input)),
      });
      const answer = body as { ok?: boolean; error?: string; channel?: string; ts?: string };
      if (answer.ok !== true)
        throw new SkillFailure('provider_error', `slack refused the message: ${answer.error ?? 'not ok'}`);
      return { channel: answer.channel ?? null, ts: answer.ts ?? null };
    },
  },
  // POST /incidents/{id}/notes (developer.pagerduty.com: Create a note on an incident)
  'pagerduty.add_note': {
    provider: 'pagerduty',
    async run(ctx, input) {
      // `From`: the email of the PagerDuty user the note is written as (required with account tokens).
      const from = optionalText(input, 'from', 320);
      const { body } = await request(
        ctx,
        'POST',
        `/incidents/${segment(input, 'incidentId')}/notes`,
        { note: { content: text(input, 'content', 25_000, recommended(input)) } },
        from ? { from } : {},
      );
      const note = (body as { note?: { id?: string; created_at?: string } }).note;
      return { noteId: note?.id ?? null, createdAt: note?.created_at ?? null };
    },
  },
  // Any call under the provider's API base.
  api_request: {
    provider: '*',
    async run(ctx, input) {
      const method = (typeof input.method === 'string' ? input.method.toUpperCase() : 'GET') as HttpMethod;
      if (!httpMethods.includes(method))
        throw new SkillFailure('invalid_input', `method must be one of ${httpMethods.join(', ')}`);
      const path = confinedPath(ctx.connection.apiBase, text(input, 'path', 2000));
      const body = input.body;
      const answer = await request(ctx, method, path, method === 'GET' || method === 'DELETE' ? undefined : body);
      return { status: answer.status, body: answer.body };
    },
  },
};

/**
 * `path` as a path under the API base: absolute (`/…`), no scheme or authority, no `.` or `..`
 * segment (raw or percent-encoded), so the call cannot leave the provider's API.
 */
export function confinedPath(apiBase: string, path: string): string {
  if (!path.startsWith('/') || path.startsWith('//') || /[\\\s]/.test(path))
    throw new SkillFailure('invalid_input', 'path must be an absolute path under the provider API, such as /user');
  const pathname = path.split(/[?#]/)[0]!;
  const segments = pathname.split('/').map((s) => {
    try {
      return decodeURIComponent(s);
    } catch {
      return s;
    }
  });
  if (segments.some((s) => s === '.' || s === '..' || s.includes('/')))
    throw new SkillFailure('invalid_input', 'path must not contain . or .. segments');
  const base = new URL(apiBase);
  const target = new URL(`${apiBase}${path}`);
  if (target.origin !== base.origin || !target.pathname.startsWith(base.pathname.replace(/\/$/, '')))
    throw new SkillFailure('invalid_input', "path leaves the provider's API");
  return path;
}

/** `{ action: 'github.create_issue' }`, or `{ action: 'create_issue', provider: 'github' }`. */
export function resolveAction(config: Record<string, unknown>): { provider: string; name: string; action: Action } {
  const raw = String(config.action ?? '');
  const dot = raw.indexOf('.');
  const provider = typeof config.provider === 'string' ? config.provider : dot > 0 ? raw.slice(0, dot) : '';
  const name = dot > 0 ? raw.slice(dot + 1) : raw;
  if (!integrationCatalog.some((d) => d.provider === provider))
    throw new SkillFailure('invalid_config', `The skill names no provider of the catalog (action ${raw})`);
  const action = actions[`${provider}.${name}`] ?? (name === 'api_request' ? actions.api_request : undefined);
  if (!action)
    throw new SkillFailure(
      'invalid_config',
      `${provider}.${name} is not an integration action; actions: ${integrationActions.join(', ')}`,
    );
  return { provider, name, action };
}

const integrationActions = [...Object.keys(actions).filter((a) => a.includes('.')), '<provider>.api_request'];

/**
 * The input with the `default`s of the skill's input schema filled in where a property is absent:
 * how a skill fixes what its action always needs (a Slack channel, a repository), since a
 * remediation step's input carries only the recommended action.
 */
function withDefaults(input: Input, inputSchema: Record<string, unknown> | null | undefined): Input {
  const properties = inputSchema?.properties;
  if (!properties || typeof properties !== 'object') return input;
  const filled: Input = { ...input };
  for (const [name, schema] of Object.entries(properties as Record<string, unknown>)) {
    const fallback = (schema as { default?: unknown } | null)?.default;
    if (filled[name] === undefined && fallback !== undefined) filled[name] = fallback;
  }
  return filled;
}

/** Runs an integration skill's action with the tenant's connection. */
export async function runIntegrationAction(
  db: Db,
  runtime: IntegrationRuntime,
  tenant: TenantRow,
  skill: { config: Record<string, unknown>; inputSchema?: Record<string, unknown> | null },
  input: unknown,
  now: Date,
): Promise<unknown> {
  const { provider, action } = resolveAction(skill.config);
  const given = withDefaults(
    input && typeof input === 'object' && !Array.isArray(input) ? (input as Input) : {},
    skill.inputSchema,
  );
  const connection = await openConnection(db, runtime, tenant, provider, now);
  if (connection.credentials.kind === 'api_key' && provider === 'aws')
    throw new SkillFailure('invalid_config', 'aws calls need request signing, which no action here does yet');
  return storableCopy(await action.run({ db, runtime, connection, now }, given));
}
