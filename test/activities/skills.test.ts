import { MockActivityEnvironment } from '@temporalio/testing';
import { ApplicationFailure } from '@temporalio/common';
import { eq } from 'drizzle-orm';
import pino from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createSkillActivities } from '../../src/activities/skills.js';
import { connectDatabase, type Database } from '../../src/db/client.js';
import { purgeSkillInvocations, SKILL_INVOCATION_RETENTION_MS } from '../../src/db/repositories/skill-invocations.js';
import { createTenant } from '../../src/db/repositories/tenants.js';
import { incidents } from '../../src/db/schema/incidents.js';
import { ingestedEvents } from '../../src/db/schema/ingestion.js';
import { runbooks } from '../../src/db/schema/investigation.js';
import { skillInvocations, skills } from '../../src/db/schema/skills.js';
import type { TenantSettings } from '../../src/db/schema/tenants.js';
import { serviceEdges, services } from '../../src/db/schema/topology.js';
import type { PlanId } from '../../src/domain/plans.js';
import { newId } from '../../src/ids.js';
import { createSkillCipher } from '../../src/skills/crypto.js';
import type { HttpMethod } from '../../src/skills/http.js';
import { createSkillInvoker, createSkillRuntime, type SkillInvoker } from '../../src/skills/invoke.js';
import { systemResolver, type HostResolver } from '../../src/skills/ssrf.js';
import type { SkillOutcome } from '../../src/skills/types.js';
import { createTestDatabase, TEST_SKILL_KEY } from '../helpers/service.js';
import { startSkillServer, type SkillServer } from '../helpers/skill-server.js';

const SECRET = 'Bearer sk-live-7f3a9c1e-never-shown';
const API_KEY = 'ak_0123456789abcdef-secret';

let database: Database;
let server: SkillServer;
let tenantId: string;
let invoke: SkillInvoker['invoke'];
let invokeStrict: SkillInvoker['invoke'];
const logLines: string[] = [];
const cipher = createSkillCipher(TEST_SKILL_KEY);
let rebindLookups = 0;

/** Test names: fixed answers for invented hosts, the system resolver for the rest (localhost). */
const resolver: HostResolver = async (host) => {
  if (host === 'api.skills.test' || host === 'internal.skills.test') return [{ address: '127.0.0.1', family: 4 }];
  if (host === 'mixed.skills.test')
    return [
      { address: '93.184.216.34', family: 4 },
      { address: '127.0.0.1', family: 4 },
    ];
  if (host === 'metadata.skills.test') return [{ address: '169.254.169.254', family: 4 }];
  if (host === 'rebind.skills.test') {
    // First answer allowed, every later one private: only the first may decide where we connect.
    rebindLookups++;
    return [{ address: rebindLookups === 1 ? '127.0.0.1' : '10.0.0.1', family: 4 }];
  }
  return systemResolver(host);
};
const limits = { timeoutMs: 400, retryBaseDelayMs: 10 };

async function newTenant(plan: PlanId = 'plan_pro', settings: TenantSettings = { allowHttpSkills: true }) {
  return (await createTenant(database.db, { name: `Skills ${newId('ten')}`, plan, settings })).id;
}

async function insertSkill(args: {
  tenant?: string;
  type?: 'http' | 'integration';
  url?: string;
  method?: HttpMethod;
  headers?: Record<string, string>;
  inputSchema?: Record<string, unknown>;
  enabled?: boolean;
}): Promise<string> {
  const id = newId('skl');
  const tenant = args.tenant ?? tenantId;
  const config =
    (args.type ?? 'http') === 'http'
      ? {
          url: args.url ?? `${server.url}/echo`,
          method: args.method ?? 'GET',
          ...(args.headers
            ? {
                headers: Object.fromEntries(
                  Object.entries(args.headers).map(([h, v]) => [
                    h,
                    cipher.encrypt(v, { tenantId: tenant, skillId: id, header: h }),
                  ]),
                ),
              }
            : {}),
        }
      : { action: 'create_ticket', provider: 'jira' };
  await database.db.insert(skills).values({
    id,
    tenantId: tenant,
    name: `skill_${id.slice(-10)}`,
    description: 'test skill',
    type: args.type ?? 'http',
    config,
    inputSchema: args.inputSchema ?? null,
    enabled: args.enabled ?? true,
  });
  return id;
}

function failure(outcome: SkillOutcome) {
  expect(outcome.ok).toBe(false);
  if (outcome.ok) throw new Error('expected a failure');
  return outcome.error;
}

function success(outcome: SkillOutcome) {
  if (!outcome.ok) throw new Error(`expected success, got ${JSON.stringify(outcome.error)}`);
  return outcome.output as any;
}

beforeAll(async () => {
  database = connectDatabase((await createTestDatabase()).url, { max: 4 });
  server = await startSkillServer();
  tenantId = await newTenant();
  const logger = pino({ level: 'debug' }, { write: (line: string) => void logLines.push(line) });
  const allowed = createSkillRuntime({ cipher, allowedNetworks: ['127.0.0.1/32'], limits, resolver });
  const strict = createSkillRuntime({ cipher, allowedNetworks: [], limits, resolver });
  invoke = createSkillInvoker({ db: database.db, runtime: allowed, logger }).invoke;
  invokeStrict = createSkillInvoker({ db: database.db, runtime: strict, logger }).invoke;
});
afterAll(async () => {
  await server?.close();
  await database?.close();
});

describe('http skills', () => {
  it('GET: sends the decrypted headers and the input as query parameters, returns JSON, records the invocation', async () => {
    const skillId = await insertSkill({ headers: { Authorization: SECRET, 'X-Api-Key': API_KEY } });
    const before = server.hits('/echo').length;
    const outcome = await invoke({ tenantId, skillId, input: { customer: 'c-42', verbose: true } });
    expect(server.hits('/echo')[before]!.headers).toMatchObject({ authorization: SECRET, 'x-api-key': API_KEY });
    // The echoed header values come back masked (decision 226).
    expect(success(outcome)).toEqual({
      method: 'GET',
      query: { customer: 'c-42', verbose: 'true' },
      body: null,
      authorization: '[redacted]',
      apiKey: '[redacted]',
    });
    const [row] = await database.db
      .select()
      .from(skillInvocations)
      .where(eq(skillInvocations.id, outcome.invocationId));
    expect(row).toMatchObject({
      tenantId,
      skillId,
      status: 'succeeded',
      input: { customer: 'c-42', verbose: true },
      error: null,
    });
    expect(row!.output).toEqual(success(outcome));
    expect(row!.durationMs).toBeGreaterThanOrEqual(0);
  });

  it('POST: sends the input as a JSON body with the headers', async () => {
    const skillId = await insertSkill({ method: 'POST', headers: { Authorization: SECRET } });
    const before = server.hits('/echo').length;
    const output = success(await invoke({ tenantId, skillId, input: { service: 'checkout', lines: [1, 2] } }));
    expect(output).toMatchObject({
      method: 'POST',
      body: { service: 'checkout', lines: [1, 2] },
      authorization: '[redacted]',
    });
    const received = server.hits('/echo')[before]!;
    expect(received.headers.authorization).toBe(SECRET);
    expect(received.headers['content-type']).toBe('application/json');
    expect(received.headers['accept-encoding']).toBe('identity');
  });

  it('returns a text response as a string', async () => {
    const skillId = await insertSkill({ url: `${server.url}/text` });
    expect(success(await invoke({ tenantId, skillId, input: {} }))).toBe('plain words');
  });

  it('times out a server that never answers, once (a timeout is not retried)', async () => {
    const skillId = await insertSkill({ url: `${server.url}/hang` });
    const before = server.hits('/hang').length;
    const started = Date.now();
    const error = failure(await invoke({ tenantId, skillId, input: {} }));
    expect(error.code).toBe('timeout');
    expect(error.message).toMatch(/400 ms/);
    expect(Date.now() - started).toBeLessThan(3000);
    expect(server.hits('/hang').length - before).toBe(1);
  });

  it('aborts a reply over 1 MiB, streamed or declared', async () => {
    for (const path of ['/big', '/big-declared']) {
      const skillId = await insertSkill({ url: `${server.url}${path}` });
      const error = failure(await invoke({ tenantId, skillId, input: {} }));
      expect(error.code).toBe('response_too_large');
      expect(error.message).toMatch(/larger than 1 MiB/);
    }
  });

  it('retries a 5xx with backoff and succeeds; the server sees each attempt', async () => {
    const skillId = await insertSkill({ url: `${server.url}/flaky?key=retry-once&fail=2` });
    const before = server.hits('/flaky').length;
    expect(success(await invoke({ tenantId, skillId, input: {} }))).toEqual({ ok: true, key: 'retry-once' });
    expect(server.hits('/flaky').length - before).toBe(3);
    expect(logLines.filter((l) => l.includes('skill call retried') && l.includes(skillId))).toHaveLength(2);
  });

  it('gives up after 3 attempts of a 5xx', async () => {
    const skillId = await insertSkill({ url: `${server.url}/always-503` });
    const before = server.hits('/always-503').length;
    const error = failure(await invoke({ tenantId, skillId, input: {} }));
    expect(error).toMatchObject({ code: 'http_error', details: { status: 503, attempts: 3 } });
    expect(server.hits('/always-503').length - before).toBe(3);
  });

  it('does not retry a 4xx', async () => {
    const skillId = await insertSkill({ url: `${server.url}/not-found` });
    const before = server.hits('/not-found').length;
    const error = failure(await invoke({ tenantId, skillId, input: {} }));
    expect(error).toMatchObject({
      code: 'http_error',
      message: expect.stringMatching(/answered 404/),
      details: { status: 404, attempts: 1 },
    });
    expect(server.hits('/not-found').length - before).toBe(1);
  });

  it('retries a refused connection (a network error) and reports it', async () => {
    const closed = await startSkillServer();
    const port = closed.port;
    await closed.close();
    const skillId = await insertSkill({ url: `http://127.0.0.1:${port}/echo` });
    const error = failure(await invoke({ tenantId, skillId, input: {} }));
    expect(error).toMatchObject({ code: 'network_error', details: { attempts: 3 } });
  });

  it('refuses a response that says JSON but is not', async () => {
    const skillId = await insertSkill({ url: `${server.url}/bad-json` });
    expect(failure(await invoke({ tenantId, skillId, input: {} })).code).toBe('invalid_response');
  });

  it('follows same-origin redirects, drops the configured headers across origins, and stops after 3', async () => {
    const same = await insertSkill({ url: `${server.url}/redirect?to=/echo`, headers: { Authorization: SECRET } });
    const echoed = server.hits('/echo').length;
    expect(success(await invoke({ tenantId, skillId: same, input: {} })).authorization).toBe('[redacted]');
    expect(server.hits('/echo')[echoed]!.headers.authorization).toBe(SECRET);
    // api.skills.test and 127.0.0.1 are one server but two origins.
    const cross = await insertSkill({
      url: `http://api.skills.test:${server.port}/redirect?to=${encodeURIComponent(`${server.url}/echo`)}`,
      headers: { Authorization: SECRET },
    });
    expect(success(await invoke({ tenantId, skillId: cross, input: {} })).authorization).toBeNull();
    const loop = await insertSkill({ url: `${server.url}/redirect-loop` });
    const before = server.hits('/redirect-loop').length;
    expect(failure(await invoke({ tenantId, skillId: loop, input: {} })).code).toBe('too_many_redirects');
    expect(server.hits('/redirect-loop').length - before).toBe(4);
  });

  it('turns a 303 into a GET without the body', async () => {
    const skillId = await insertSkill({ method: 'POST', url: `${server.url}/redirect?status=303&to=/echo` });
    expect(success(await invoke({ tenantId, skillId, input: { a: 1 } }))).toMatchObject({ method: 'GET', body: null });
  });

  it('refuses plain http unless the tenant allows it', async () => {
    const httpsOnly = await newTenant('plan_pro', {});
    const skillId = await insertSkill({ tenant: httpsOnly });
    const before = server.received.length;
    expect(failure(await invoke({ tenantId: httpsOnly, skillId, input: {} })).code).toBe('http_not_allowed');
    expect(server.received.length).toBe(before);
  });
});

describe('server-side request forgery', () => {
  const refused = async (url: string, invoker = invokeStrict) => {
    const skillId = await insertSkill({ url });
    const before = server.received.length;
    const error = failure(await invoker({ tenantId, skillId, input: {} }));
    expect(error.code).toBe('ssrf_blocked');
    expect(server.received.length).toBe(before); // nothing reached the server
    return error;
  };

  it('refuses 127.0.0.1 when the allowlist does not contain it', async () => {
    expect((await refused(`${server.url}/echo`)).message).toMatch(/127\.0\.0\.1 is a loopback address/);
  });

  it('refuses the metadata address 169.254.169.254 and private 10.0.0.1 (even when loopback is allowed)', async () => {
    expect((await refused('http://169.254.169.254/latest/meta-data/', invoke)).message).toMatch(/link-local/);
    expect((await refused('http://10.0.0.1/', invoke)).message).toMatch(/private/);
    expect((await refused('http://[::ffff:169.254.169.254]/', invoke)).message).toMatch(/link-local/);
  });

  it('refuses host names that resolve to loopback, private or metadata addresses', async () => {
    expect((await refused(`http://localhost:${server.port}/echo`)).message).toMatch(
      /localhost resolves to (127\.0\.0\.1|::1)/,
    );
    expect((await refused(`http://internal.skills.test:${server.port}/echo`)).message).toMatch(
      /internal\.skills\.test resolves to 127\.0\.0\.1/,
    );
    expect((await refused('http://metadata.skills.test/', invoke)).details).toMatchObject({
      address: '169.254.169.254',
    });
    // One private answer among public ones refuses the name.
    expect((await refused(`http://mixed.skills.test:${server.port}/echo`)).details).toMatchObject({
      address: '127.0.0.1',
    });
  });

  it('refuses IPv6 loopback and IPv4-mapped loopback', async () => {
    await refused(`http://[::1]:${server.port}/echo`);
    await refused(`http://[::ffff:127.0.0.1]:${server.port}/echo`);
  });

  it('re-checks every redirect: a redirect from the allowed server to a private or metadata address is refused', async () => {
    for (const target of [
      'http://10.0.0.1/admin',
      'http://169.254.169.254/latest/meta-data/',
      'http://metadata.skills.test/',
    ]) {
      const skillId = await insertSkill({ url: `${server.url}/redirect?to=${encodeURIComponent(target)}` });
      const error = failure(await invoke({ tenantId, skillId, input: {} }));
      expect(error.code).toBe('ssrf_blocked');
    }
  });

  it('connects to the address it checked: a second DNS answer (rebinding) is never asked for', async () => {
    rebindLookups = 0;
    const skillId = await insertSkill({
      url: `http://rebind.skills.test:${server.port}/echo`,
      headers: { Authorization: SECRET },
    });
    const before = server.hits('/echo').length;
    expect(success(await invoke({ tenantId, skillId, input: {} })).authorization).toBe('[redacted]');
    expect(server.hits('/echo')[before]!.headers.authorization).toBe(SECRET);
    expect(rebindLookups).toBe(1);
  });
});

describe('refusals before any call', () => {
  it('rejects schema-invalid input with details, and the activity fails non-retryably', async () => {
    const inputSchema = {
      type: 'object',
      properties: { serviceId: { type: 'string' } },
      required: ['serviceId'],
      additionalProperties: false,
    };
    const skillId = await insertSkill({ inputSchema });
    const before = server.received.length;
    const error = failure(await invoke({ tenantId, skillId, input: { service: 1 } }));
    expect(error.code).toBe('invalid_input');
    expect(error.details).toEqual([
      { path: '/', message: "must have required property 'serviceId'" },
      { path: '/', message: 'must NOT have additional properties (service)' },
    ]);

    const env = new MockActivityEnvironment(undefined, {
      logger: { log() {}, trace() {}, debug() {}, info() {}, warn() {}, error() {} },
    });
    const activities = createSkillActivities({
      db: database.db,
      skills: createSkillRuntime({ cipher, allowedNetworks: ['127.0.0.1/32'], limits, resolver }),
    });
    const thrown = await env
      .run(activities.invokeSkill, { tenantId, skillId, input: { serviceId: 7 } })
      .catch((err: unknown) => err);
    expect(thrown).toBeInstanceOf(ApplicationFailure);
    const appFailure = thrown as ApplicationFailure;
    expect(appFailure.nonRetryable).toBe(true);
    expect(appFailure.type).toBe('invalid_input');
    expect((appFailure.details?.[0] as SkillOutcome & { ok: false }).error.details).toEqual([
      { path: '/serviceId', message: 'must be string' },
    ]);
    expect(server.received.length).toBe(before);
    // A valid input passes the same activity.
    expect(await env.run(activities.invokeSkill, { tenantId, skillId, input: { serviceId: 's1' } })).toMatchObject({
      ok: true,
    });
  });

  it('never invokes a disabled skill', async () => {
    const skillId = await insertSkill({ enabled: false });
    const before = server.received.length;
    expect(failure(await invoke({ tenantId, skillId, input: {} }))).toMatchObject({ code: 'skill_disabled' });
    expect(server.received.length).toBe(before);
  });

  it("refuses custom skills of a plan without customSkills, unknown skills, and another tenant's skill", async () => {
    const starter = await newTenant('plan_starter');
    const theirs = await insertSkill({ tenant: starter });
    expect(failure(await invoke({ tenantId: starter, skillId: theirs, input: {} }))).toMatchObject({
      code: 'forbidden',
      message: expect.stringMatching(/Starter plan/),
    });
    expect(failure(await invoke({ tenantId, skillId: 'skl_nope', input: {} })).code).toBe('skill_not_found');
    const mine = await insertSkill({});
    expect(failure(await invoke({ tenantId: starter, skillId: mine, input: {} })).code).toBe('skill_not_found');
  });

  it('answers integration skills with a clear error (no integration can be connected yet)', async () => {
    const skillId = await insertSkill({ type: 'integration' });
    expect(failure(await invoke({ tenantId, skillId, input: {} }))).toMatchObject({
      code: 'integration_unavailable',
      message: expect.stringMatching(/not available yet/),
    });
  });

  it('reports a header value that cannot be decrypted (another key)', async () => {
    const skillId = await insertSkill({ headers: { Authorization: SECRET } });
    const other = createSkillInvoker({
      db: database.db,
      runtime: createSkillRuntime({
        cipher: createSkillCipher(Buffer.alloc(32, 9)),
        allowedNetworks: ['127.0.0.1/32'],
        limits,
        resolver,
      }),
    });
    expect(failure(await other.invoke({ tenantId, skillId, input: {} })).code).toBe('secret_unreadable');
  });
});

describe('idempotency', () => {
  it('a second call with the same key returns the recorded outcome without calling again', async () => {
    const skillId = await insertSkill({ url: `${server.url}/flaky?key=idem&fail=0` });
    const before = server.hits('/flaky').length;
    const first = await invoke({ tenantId, skillId, input: {}, idempotencyKey: 'wf-1:step-3' });
    const second = await invoke({ tenantId, skillId, input: {}, idempotencyKey: 'wf-1:step-3' });
    expect(second).toEqual(first);
    expect(server.hits('/flaky').length - before).toBe(1);
    const rows = await database.db.select().from(skillInvocations).where(eq(skillInvocations.skillId, skillId));
    expect(rows).toHaveLength(1);
    // Keys are per tenant: the same key elsewhere is another invocation.
    const other = await newTenant();
    expect(
      (await invoke({ tenantId: other, skillId, input: {}, idempotencyKey: 'wf-1:step-3' })).invocationId,
    ).not.toBe(first.invocationId);
  });

  it('a recorded failure is returned as well', async () => {
    const skillId = await insertSkill({ url: `${server.url}/not-found` });
    const before = server.hits('/not-found').length;
    const first = await invoke({ tenantId, skillId, input: {}, idempotencyKey: 'fail-once' });
    expect(await invoke({ tenantId, skillId, input: {}, idempotencyKey: 'fail-once' })).toEqual(first);
    expect(server.hits('/not-found').length - before).toBe(1);
  });
});

describe('retention', () => {
  it('purges records past the retention, oldest first in chunks; a kept key still replays, a purged one calls again', async () => {
    const skillId = await insertSkill({ url: `${server.url}/flaky?key=retention&fail=0` });
    for (const key of ['old-1', 'old-2', 'kept']) await invoke({ tenantId, skillId, input: {}, idempotencyKey: key });
    const day = 24 * 60 * 60 * 1000;
    await database.sql`
      update skill_invocations set created_at = now() - make_interval(secs => ${(SKILL_INVOCATION_RETENTION_MS + day) / 1000})
      where idempotency_key in (${`${tenantId}:old-1`}, ${`${tenantId}:old-2`})`;
    expect(await purgeSkillInvocations(database.sql, SKILL_INVOCATION_RETENTION_MS, { chunkSize: 1 })).toBe(2);
    expect(await purgeSkillInvocations(database.sql)).toBe(0);
    const left = await database.db
      .select({ key: skillInvocations.idempotencyKey })
      .from(skillInvocations)
      .where(eq(skillInvocations.skillId, skillId));
    expect(left.map((r) => r.key)).toEqual([`${tenantId}:kept`]);
    const before = server.hits('/flaky').length;
    await invoke({ tenantId, skillId, input: {}, idempotencyKey: 'kept' });
    expect(server.hits('/flaky').length).toBe(before);
    await invoke({ tenantId, skillId, input: {}, idempotencyKey: 'old-1' });
    expect(server.hits('/flaky').length).toBe(before + 1);
  });
});

describe('builtin skills', () => {
  it('blast_radius walks the topology graph; unknown services are not found', async () => {
    const [api, db, web] = ['svc_br_api', 'svc_br_db', 'svc_br_web'];
    await database.db.insert(services).values([
      { id: db, tenantId, name: 'db', type: 'database', criticality: 9 },
      { id: api, tenantId, name: 'api', type: 'api' },
      { id: web, tenantId, name: 'web', type: 'api', criticality: 3 },
    ]);
    await database.db.insert(serviceEdges).values([
      { id: newId('edg'), tenantId, sourceServiceId: api, targetServiceId: db },
      { id: newId('edg'), tenantId, sourceServiceId: web, targetServiceId: api },
    ]);
    expect(success(await invoke({ tenantId, skillId: 'skl_builtin_blast_radius', input: { serviceId: db } }))).toEqual({
      serviceId: db,
      affectedServices: [
        { serviceId: api, name: 'api', hops: 1, impact: 'high' },
        { serviceId: web, name: 'web', hops: 2, impact: 'medium' },
      ],
      totalAffected: 2,
    });
    expect(
      failure(await invoke({ tenantId, skillId: 'skl_builtin_blast_radius', input: { serviceId: 'svc_none' } })).code,
    ).toBe('not_found');
    expect(failure(await invoke({ tenantId, skillId: 'skl_builtin_blast_radius', input: {} })).code).toBe(
      'invalid_input',
    );
  });

  it('recent_deployments lists deployment and code-change events in the window, newest first, by service', async () => {
    const other = await newTenant();
    const at = (minutesAgo: number) => new Date(Date.now() - minutesAgo * 60_000);
    const event = (t: string, kind: 'alert' | 'deployment' | 'code_change', service: string, minutesAgo: number) => ({
      id: newId('evt'),
      tenantId: t,
      provider: 'github',
      kind,
      service,
      title: `${kind} ${service} ${minutesAgo}`,
      description: 'd',
      raw: {},
      occurredAt: at(minutesAgo),
    });
    await database.db
      .insert(ingestedEvents)
      .values([
        event(tenantId, 'deployment', 'checkout', 5),
        event(tenantId, 'code_change', 'checkout', 30),
        event(tenantId, 'deployment', 'search', 10),
        event(tenantId, 'alert', 'checkout', 1),
        event(tenantId, 'deployment', 'checkout', 60 * 30),
        event(other, 'deployment', 'checkout', 2),
      ]);
    const output = success(
      await invoke({
        tenantId,
        skillId: 'skl_builtin_recent_deployments',
        input: { service: 'checkout', sinceMinutes: 120 },
      }),
    );
    expect(output.deployments.map((d: { title: string }) => d.title)).toEqual([
      'deployment checkout 5',
      'code_change checkout 30',
    ]);
    const all = success(await invoke({ tenantId, skillId: 'skl_builtin_recent_deployments', input: {} }));
    expect(all.deployments.map((d: { title: string }) => d.title)).toEqual([
      'deployment checkout 5',
      'deployment search 10',
      'code_change checkout 30',
    ]);
  });

  it('search_incidents finds the tenant’s incidents by text, status and service', async () => {
    const other = await newTenant();
    const incident = (t: string, title: string, status: 'open' | 'resolved', service: string) => ({
      id: newId('inc'),
      tenantId: t,
      title,
      description: 'described at length',
      severity: 'high' as const,
      status,
      source: 'manual' as const,
      service,
    });
    await database.db
      .insert(incidents)
      .values([
        incident(tenantId, 'Checkout 100% errors', 'resolved', 'checkout'),
        incident(tenantId, 'Checkout latency', 'open', 'checkout'),
        incident(tenantId, 'Search down', 'open', 'search'),
        incident(other, 'Checkout elsewhere', 'open', 'checkout'),
      ]);
    const find = async (input: Record<string, unknown>) =>
      success(await invoke({ tenantId, skillId: 'skl_builtin_search_incidents', input })).incidents.map(
        (i: { title: string }) => i.title,
      );
    expect((await find({ query: 'checkout' })).sort()).toEqual(['Checkout 100% errors', 'Checkout latency']);
    expect(await find({ query: 'checkout', status: 'resolved' })).toEqual(['Checkout 100% errors']);
    expect(await find({ query: '100%' })).toEqual(['Checkout 100% errors']);
    expect(await find({ query: '_' })).toEqual([]); // wildcards match themselves
    expect(await find({ service: 'search' })).toEqual(['Search down']);
  });

  it('runbook_lookup finds runbooks by text in title, content or tags, for the service or for any', async () => {
    await database.db.insert(runbooks).values([
      {
        id: newId('rbk'),
        tenantId,
        title: 'Restart checkout pods',
        service: 'checkout',
        tags: ['kubernetes'],
        content: 'kubectl rollout restart',
      },
      {
        id: newId('rbk'),
        tenantId,
        title: 'Generic disk full',
        service: null,
        tags: ['disk'],
        content: 'Free space on the volume',
      },
      { id: newId('rbk'), tenantId, title: 'Search reindex', service: 'search', tags: ['disk'], content: 'Reindex' },
    ]);
    const find = async (input: Record<string, unknown>) =>
      success(await invoke({ tenantId, skillId: 'skl_builtin_runbook_lookup', input }))
        .runbooks.map((r: { title: string }) => r.title)
        .sort();
    expect(await find({ query: 'restart' })).toEqual(['Restart checkout pods']);
    expect(await find({ query: 'disk' })).toEqual(['Generic disk full', 'Search reindex']);
    expect(await find({ query: 'disk', service: 'checkout' })).toEqual(['Generic disk full']);
    expect(await find({ query: 'KUBERNETES' })).toEqual(['Restart checkout pods']);
  });
});

describe('secrets', () => {
  it('keeps header values out of the logs and the invocation rows', async () => {
    const text = logLines.join('\n');
    expect(text).toContain('skill call succeeded');
    expect(text).not.toContain(SECRET);
    expect(text).not.toContain(API_KEY);
    const rows = await database.db.select().from(skillInvocations);
    const stored = JSON.stringify(rows.map((r) => ({ ...r, output: null })));
    expect(stored).not.toContain(SECRET);
    const skillRows = JSON.stringify(await database.db.select().from(skills));
    expect(skillRows).not.toContain(SECRET);
    expect(skillRows).not.toContain(API_KEY);
  });
});
