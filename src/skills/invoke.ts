/**
 * Runs a skill once for a tenant and records the outcome in `skill_invocations`: builtins (and
 * tenant skills of type builtin, which run a builtin's action) in process, http skills through
 * the SSRF-checked client, integration skills with the tenant's connection to the provider
 * (src/integrations/actions.ts). Refuses disabled skills, custom skills of plans without
 * `customSkills`, and input that does not match the skill's input schema, before any call.
 */
import { and, eq } from 'drizzle-orm';
import type { Logger } from 'pino';
import type { IntegrationClient } from '../auth/settings.js';
import type { Db } from '../db/client.js';
import { findTenant } from '../db/repositories/tenants.js';
import { skillInvocations, skills, type SkillRow } from '../db/schema/skills.js';
import type { TenantRow } from '../db/schema/tenants.js';
import { getPlan } from '../domain/plans.js';
import { newId } from '../ids.js';
import { runIntegrationAction } from '../integrations/actions.js';
import { builtinAction, declaredInput, findBuiltinSkill, type BuiltinSkill, type SkillDb } from './builtins.js';
import type { SkillCipher } from './crypto.js';
import { SkillFailure } from './failure.js';
import { callHttpSkill, type HttpCallLimits, type HttpMethod } from './http.js';
import { checkInput, describeProblems } from './json-schema.js';
import { storableCopy } from '../domain/json-text.js';
import { NetworkAllowlist } from './networks.js';
import { systemResolver, type HostResolver } from './ssrf.js';
import type { InvokeSkillRequest, SkillErrorInfo, SkillOutcome } from './types.js';

/** What invoking skills needs besides the database; shared by the api (encryption, checks) and the worker. */
export interface SkillRuntime {
  cipher: SkillCipher;
  allowlist: NetworkAllowlist;
  limits: HttpCallLimits;
  resolver: HostResolver;
  /** Integration OAuth clients and base URLs, and the public base URL (connect links); none when absent. */
  integrations?: IntegrationSettings;
}

export interface IntegrationSettings {
  clients: Record<string, IntegrationClient>;
  publicBaseUrl: string;
}

export const defaultSkillLimits: HttpCallLimits = {
  timeoutMs: 10_000,
  maxResponseBytes: 1024 * 1024,
  maxRedirects: 3,
  maxAttempts: 3,
  retryBaseDelayMs: 500,
};

export function createSkillRuntime(options: {
  cipher: SkillCipher;
  allowedNetworks: readonly string[];
  limits?: Partial<HttpCallLimits>;
  resolver?: HostResolver;
  integrations?: IntegrationSettings;
}): SkillRuntime {
  return {
    cipher: options.cipher,
    allowlist: new NetworkAllowlist(options.allowedNetworks),
    limits: { ...defaultSkillLimits, ...options.limits },
    resolver: options.resolver ?? systemResolver,
    ...(options.integrations ? { integrations: options.integrations } : {}),
  };
}

/** The stored form of an http skill's config: header values sealed by the cipher. */
export interface StoredHttpConfig {
  url: string;
  method: HttpMethod;
  headers?: Record<string, string>;
}

/** Idempotency keys are scoped to the tenant: one tenant's key never answers another's call. */
function scopedKey(tenantId: string, key: string): string {
  return `${tenantId}:${key}`;
}

function toOutcome(row: typeof skillInvocations.$inferSelect): SkillOutcome {
  const base = { invocationId: row.id, skillId: row.skillId, durationMs: row.durationMs };
  return row.status === 'succeeded'
    ? { ...base, ok: true, output: row.output }
    : { ...base, ok: false, error: row.error ?? { code: 'failed', message: 'The skill failed' } };
}

type Resolved = { kind: 'builtin'; skill: BuiltinSkill } | { kind: 'custom'; skill: SkillRow };

export interface SkillInvoker {
  /**
   * Runs the skill once per idempotency key. `on` is where its reads and its record go: the pool
   * by default, or the transaction of a caller that holds a connection while the skill runs (a
   * remediation step), which must not wait for a second one from the same pool (ADR 0166).
   */
  invoke(request: InvokeSkillRequest, on?: SkillDb): Promise<SkillOutcome>;
}

/** Shorter header values ("json", "1") are not secrets, and masking them would garble answers. */
const MASKED_MIN_LENGTH = 8;

/** `value` with every occurrence of the `secrets` in its strings (keys included) masked. */
function withoutValues(value: unknown, secrets: string[]): unknown {
  // "Bearer <token>" is also echoed as the token alone.
  const masked = secrets
    .flatMap((secret) => [secret, /^[A-Za-z-]+ +(\S.*)$/.exec(secret)?.[1] ?? ''])
    .filter((secret) => secret.length >= MASKED_MIN_LENGTH)
    .sort((a, b) => b.length - a.length);
  if (masked.length === 0) return value;
  const mask = (text: string) => masked.reduce((out, secret) => out.split(secret).join('[redacted]'), text);
  const walk = (v: unknown): unknown => {
    if (typeof v === 'string') return mask(v);
    if (Array.isArray(v)) return v.map(walk);
    if (v !== null && typeof v === 'object')
      return Object.fromEntries(Object.entries(v).map(([k, child]) => [mask(k), walk(child)]));
    return v;
  };
  return walk(value);
}

/** A tenant skill of type `builtin`: its action, run in process on the tenant's data. */
async function runBuiltinAction(db: SkillDb, skill: SkillRow, tenantId: string, input: unknown): Promise<unknown> {
  const action = builtinAction(String(skill.config.action));
  if (!action)
    throw new SkillFailure('invalid_config', `The skill ${skill.name} names no builtin action of this service`);
  const given = declaredInput(action, input);
  const problems = checkInput(action.inputSchema, given);
  if (problems.length > 0)
    throw new SkillFailure(
      'invalid_input',
      `The input does not match the action's input schema: ${describeProblems(problems)}`,
      problems,
    );
  return action.run(db, tenantId, given as Record<string, unknown>);
}

/** A platform builtin by its id, else the tenant's own skill of that id. */
async function resolveSkill(db: SkillDb, tenantId: string, skillId: string): Promise<Resolved | undefined> {
  const builtin = findBuiltinSkill(skillId);
  if (builtin) return { kind: 'builtin', skill: builtin };
  const [row] = await db
    .select()
    .from(skills)
    .where(and(eq(skills.tenantId, tenantId), eq(skills.id, skillId)))
    .limit(1);
  return row ? { kind: 'custom', skill: row } : undefined;
}

type InvocationLog = (msg: string, extra?: object) => void;

/** An http skill: its sealed header values opened, then the SSRF-checked call. */
async function runHttpSkill(
  runtime: SkillRuntime,
  skill: SkillRow,
  tenant: TenantRow,
  input: unknown,
  log: InvocationLog,
): Promise<unknown> {
  const config = skill.config as unknown as StoredHttpConfig;
  const headers: Record<string, string> = {};
  for (const [name, sealed] of Object.entries(config.headers ?? {})) {
    try {
      headers[name] = runtime.cipher.decrypt(sealed, { tenantId: tenant.id, skillId: skill.id, header: name });
    } catch (err) {
      throw new SkillFailure('secret_unreadable', (err as Error).message);
    }
  }
  // What the endpoint answers is kept, returned and may reach a workflow's history: never with
  // a header value it echoes (a key in an error page), and never with text PostgreSQL refuses.
  const secrets = Object.values(headers);
  try {
    const result = await callHttpSkill({
      url: config.url,
      method: config.method,
      headers,
      input,
      allowPlainHttp: tenant.settings.allowHttpSkills === true,
      allowlist: runtime.allowlist,
      resolver: runtime.resolver,
      limits: runtime.limits,
      onRetry: (attempt, error) => log('skill call retried', { attempt, code: error.code, message: error.message }),
    });
    return storableCopy(withoutValues(result.body, secrets));
  } catch (err) {
    if (!(err instanceof SkillFailure) || err.details === undefined) throw err;
    throw new SkillFailure(
      err.code,
      withoutValues(err.message, secrets) as string,
      storableCopy(withoutValues(err.details, secrets)),
    );
  }
}

/** Checks the plan, the skill and the input, then runs it; a refusal or failure is a SkillFailure. */
async function runSkill(
  runtime: SkillRuntime,
  db: SkillDb,
  resolved: Resolved,
  tenant: TenantRow,
  input: unknown,
  log: InvocationLog,
): Promise<unknown> {
  if (resolved.kind === 'builtin') {
    const problems = checkInput(resolved.skill.inputSchema, input);
    if (problems.length > 0)
      throw new SkillFailure(
        'invalid_input',
        `The input does not match the skill's input schema: ${describeProblems(problems)}`,
        problems,
      );
    return resolved.skill.run(db, tenant.id, input as Record<string, unknown>);
  }
  const skill = resolved.skill;
  if (!getPlan(tenant.plan).features.customSkills) {
    throw new SkillFailure('forbidden', `The ${getPlan(tenant.plan).name} plan does not include custom skills`);
  }
  if (!skill.enabled) throw new SkillFailure('skill_disabled', `The skill ${skill.name} is disabled`);
  const problems = checkInput(skill.inputSchema ?? null, input);
  if (problems.length > 0)
    throw new SkillFailure(
      'invalid_input',
      `The input does not match the skill's input schema: ${describeProblems(problems)}`,
      problems,
    );
  if (skill.type === 'builtin') return runBuiltinAction(db, skill, tenant.id, input);
  if (skill.type === 'integration') {
    if (!runtime.integrations)
      throw new SkillFailure(
        'integration_unavailable',
        'Integration skills are not available yet in this process: it was started without integration settings',
      );
    // `db` is the pool or the caller's transaction (a remediation step's): both are a Db.
    return runIntegrationAction(db as Db, { ...runtime, ...runtime.integrations }, tenant, skill, input, new Date());
  }
  if (skill.type !== 'http') throw new SkillFailure('invalid_config', `Skills of type ${skill.type} cannot be stored`);
  return runHttpSkill(runtime, skill, tenant, input, log);
}

interface InvokerDeps {
  db: Db;
  runtime: SkillRuntime;
  logger?: Pick<Logger, 'info' | 'warn'>;
}

/** The recorded invocation a repeated call (same idempotency key or invocation id) answers with. */
async function findRecorded(
  db: SkillDb,
  tenantId: string,
  idempotencyKey: string | null,
  invocationId: string | undefined,
): Promise<SkillOutcome | undefined> {
  if (!idempotencyKey && !invocationId) return undefined;
  const [stored] = await db
    .select()
    .from(skillInvocations)
    .where(
      and(
        eq(skillInvocations.tenantId, tenantId),
        idempotencyKey ? eq(skillInvocations.idempotencyKey, idempotencyKey) : eq(skillInvocations.id, invocationId!),
      ),
    )
    .limit(1);
  return stored ? toOutcome(stored) : undefined;
}

async function invokeSkill(deps: InvokerDeps, request: InvokeSkillRequest, db: SkillDb): Promise<SkillOutcome> {
  const { tenantId, skillId } = request;
  const idempotencyKey = request.idempotencyKey ? scopedKey(tenantId, request.idempotencyKey) : null;
  const recorded = await findRecorded(db, tenantId, idempotencyKey, request.invocationId);
  if (recorded) return recorded;
  const invocationId = request.invocationId ?? newId('ski');
  const log = (msg: string, extra: object = {}) =>
    deps.logger?.info({ tenantId, skillId, invocationId, ...extra }, msg);
  const started = performance.now();
  const tenant = await findTenant(db, tenantId);
  const resolved = tenant ? await resolveSkill(db, tenantId, skillId) : undefined;
  let output: unknown = null;
  let error: SkillErrorInfo | undefined;
  if (!tenant || !resolved) {
    error = { code: 'skill_not_found', message: `No skill ${skillId} in this tenant` };
  } else {
    try {
      output = await runSkill(deps.runtime, db, resolved, tenant, request.input, log);
    } catch (err) {
      if (!(err instanceof SkillFailure)) throw err;
      error = {
        code: err.code,
        message: err.message,
        ...(err.details !== undefined ? { details: err.details } : {}),
      };
    }
  }
  const durationMs = Math.round(performance.now() - started);
  // Header values never reach the log: only ids, the outcome code and the duration.
  log(error ? 'skill call failed' : 'skill call succeeded', { code: error?.code, durationMs });
  const row = {
    id: invocationId,
    tenantId,
    skillId,
    skillName: resolved?.skill.name ?? '',
    idempotencyKey,
    status: error ? ('failed' as const) : ('succeeded' as const),
    input: request.input ?? {},
    output: error ? null : (output ?? null),
    error: error ?? null,
    durationMs,
  };
  const inserted = await db
    .insert(skillInvocations)
    .values(row)
    .onConflictDoNothing()
    .returning({ id: skillInvocations.id });
  if (inserted.length === 0) {
    // A concurrent call with the same key or invocation id recorded first: its outcome stands.
    const [stored] = await db
      .select()
      .from(skillInvocations)
      .where(
        idempotencyKey ? eq(skillInvocations.idempotencyKey, idempotencyKey) : eq(skillInvocations.id, invocationId),
      )
      .limit(1);
    if (stored) return toOutcome(stored);
  }
  return toOutcome({ ...row, createdAt: new Date() });
}

export function createSkillInvoker(deps: InvokerDeps): SkillInvoker {
  return {
    invoke: (request, db = deps.db) => invokeSkill(deps, request, db),
  };
}
