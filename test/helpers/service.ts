import { defaultWidgetApiSettings, type WidgetApiSettings } from '../../src/widget/sessions.js';
import { createWidgetSessionPort } from '../../src/widget/workflow-port.js';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import type { AddressInfo } from 'node:net';
import type { ServerType } from '@hono/node-server';
import { Client, Connection } from '@temporalio/client';
import { NativeConnection, type Worker } from '@temporalio/worker';
import { createLogger } from '../../src/logger.js';
import postgres from 'postgres';
import { inject } from 'vitest';
import { createApp } from '../../src/api/app.js';
import { createDatabaseProbe } from '../../src/db/probe.js';
import type { AppDeps } from '../../src/api/context.js';
import type { ModelProvider } from '../../src/analysis/types.js';
import { createTokenVerifier, signToken, TOKEN_AUDIENCE, TOKEN_ISSUER, type Role } from '../../src/auth/tokens.js';
import { connectDatabase, type Database } from '../../src/db/client.js';
import { createTenant } from '../../src/db/repositories/tenants.js';
import type { TenantSettings } from '../../src/db/schema/tenants.js';
import type { PlanId } from '../../src/domain/plans.js';
import { createSkillCipher } from '../../src/skills/crypto.js';
import { createSkillRuntime, type SkillRuntime } from '../../src/skills/invoke.js';
import type { HttpCallLimits } from '../../src/skills/http.js';
import type { HostResolver } from '../../src/skills/ssrf.js';
import type { StreamSettings } from '../../src/realtime/sse.js';
import { createRealtimeHub, type RealtimeHub } from '../../src/realtime/hub.js';
import type { ActivityDeps } from '../../src/activities/index.js';
import { loadConfig, type HttpSettings, type S3Config } from '../../src/config.js';
import type { IdentitySettings } from '../../src/auth/settings.js';
import { listen } from '../../src/composition.js';
import { createIncidentWorker } from '../../src/temporal/incident-worker.js';
import { tracedClientInterceptors } from '../../src/tracing/temporal.js';
import type { Tracing } from '../../src/tracing/tracing.js';
import { temporalConnectionOptions } from '../../src/temporal/connection.js';
import { createTemporalWorkflowPort, type WorkflowPort } from '../../src/temporal/port.js';
import { startDispatcher, type Dispatcher } from '../../src/temporal/reconciler.js';
import { startNotifier, type NotifierLoop } from '../../src/notifications/notifier.js';
import { startTriggerDispatcher } from '../../src/triggers/dispatcher.js';
import { installTemporalRuntimeLogger } from '../../src/temporal/runtime-logger.js';
import { eventually } from './webhooks.js';

export const TEST_JWT_SECRET = 'test-secret-that-is-long-enough-for-hs256-0123456789';
/** The skill header encryption key of test services (32 bytes). */
export const TEST_SKILL_KEY = Buffer.alloc(32, 7);

function uniqueName(prefix: string): string {
  return `${prefix}_${randomBytes(6).toString('hex')}`;
}

/** A fresh database made from the migrated template. */
export async function createTestDatabase(): Promise<{ url: string; name: string }> {
  const admin = postgres(inject('pgAdminUrl'), { max: 1, onnotice: () => undefined });
  const name = uniqueName('t');
  try {
    await admin.unsafe(`create database ${name} template ${inject('templateDatabase')}`);
  } finally {
    await admin.end();
  }
  const url = new URL(inject('pgAdminUrl'));
  url.pathname = `/${name}`;
  return { url: url.toString(), name };
}

export interface ApiResponse<T = any> {
  status: number;
  headers: Headers;
  body: T;
}

export interface TestService {
  baseUrl: string;
  database: Database;
  /** The test database's own URL (not the relay of `connectVia`), for pools of other sizes. */
  databaseUrl: string;
  client: Client;
  workflows: WorkflowPort;
  /** The api's event stream hub (closed at stop), for its subscriber count. */
  realtimeHub: RealtimeHub;
  /** The app's dependencies, for a second app with some of them replaced (a failing port, say). */
  appDeps: AppDeps;
  taskQueue: string;
  worker: Worker | undefined;
  dispatcher: Dispatcher | undefined;
  /** The notifications consumer of the outbox; runs wherever the dispatcher does. */
  notifier: NotifierLoop | undefined;
  /** The trigger dispatcher (consumer 'triggers'); runs wherever the dispatcher does. */
  triggers: NotifierLoop | undefined;
  /** What the app and the worker use for skills and webhook triggers. */
  skills: SkillRuntime;
  /** The audit export directory the worker writes and the api serves (removed at stop). */
  exportDir: string;
  /** The download URL key of the api. */
  exportUrlKey: Buffer;
  /** The worker's export settings (for test workers started beside it). */
  exportSettings: NonNullable<ActivityDeps['exports']>;
  /**
   * A tenant whose alerts open one incident per fingerprint (`correlationWindowMinutes: 0`)
   * unless `grouping` is set: tests of one incident's life send unrelated alerts of one service.
   * Grouping has its own tests (test/ingest/correlation.test.ts, test/storm/).
   */
  newTenant(options?: {
    plan?: PlanId;
    settings?: TenantSettings;
    name?: string;
    grouping?: boolean;
  }): Promise<{ tenantId: string; admin: string; member: string }>;
  token(tenantId: string, role: Role, overrides?: { sub?: string; ttlSeconds?: number }): string;
  api<T = any>(
    method: string,
    path: string,
    options?: { token?: string; body?: unknown; rawBody?: string; headers?: Record<string, string> },
  ): Promise<ApiResponse<T>>;
  stop(): Promise<void>;
}

/** The test dispatcher purges once at start only: tests that age rows drive purges themselves. */
const HOUSEKEEPING_ONCE = 24 * 60 * 60 * 1000;

export interface TestServiceOptions {
  /** Override parts of the app's dependencies (a second app over the same database). */
  jwksUrl?: string;
  publicRateLimitPerMinute?: number;
  /** How long a request waits for a workflow's answer (`TEMPORAL_ANSWER_TIMEOUT_MS`; default 120 s). */
  answerTimeoutMs?: number;
  /** Another Temporal server than the suite's (host:port). */
  temporalAddress?: string;
  /** Webhook requests with a refused key per address and minute before 429 (default 600). */
  webhookKeyFailuresPerMinute?: number;
  /** `TRUST_PROXY`: the client address from `X-Forwarded-For` (default false). */
  trustProxy?: boolean;
  webhookRateLimitPerMinute?: number;
  /** The worker's workflow cache (`WORKER_MAX_CACHED_WORKFLOWS`; the SDK's default when absent). */
  maxCachedWorkflows?: number;
  /** Run without a worker on the task queue (health checks). */
  withoutWorker?: boolean;
  /** Traces api, client and worker into this tracing (its exporter); the bundle must carry its interceptors. */
  tracing?: { tracing: Tracing; workflowBundlePath: string };
  /** Run without the background dispatcher (tests that drive passes themselves). */
  withoutDispatcher?: boolean;
  /** Skill invocation: SSRF allowlist (none by default), limits (shorter timeouts), DNS resolver. */
  skills?: { allowedNetworks?: string[]; limits?: Partial<HttpCallLimits>; resolver?: HostResolver };
  /** Receives every log line (JSON) of the api and the worker, at debug level. */
  logLines?: string[];
  /** Event stream heartbeat and slow-client bounds (short ones for tests). */
  stream?: Partial<StreamSettings>;
  /** Audit exports: object storage, and the writer's tuning. */
  exports?: { s3?: S3Config; heartbeatTimeoutMs?: number; batchRows?: number };
  /** The api's model provider (the assistant chat); built-in when absent. */
  model?: ModelProvider;
  /**
   * The address the service's pools connect to, given the test database's own (a relay that a
   * test cuts, for outages).
   */
  connectVia?: (databaseUrl: string) => Promise<string>;
  /** Webhook ingestion's batch bounds. */
  ingest?: AppDeps['ingest'];
  /** The pools' statement bound (`API_STATEMENT_TIMEOUT_MS`'s default when absent). */
  statementTimeoutMs?: number;
  /** Probes PostgreSQL for a request that has waited this long, as the api does (no watch when absent). */
  databaseWatchMs?: number;
  /** The HTTP server's bounds (`HTTP_*`; their defaults when absent), served as `npm start` serves them. */
  http?: Partial<HttpSettings>;
  /** Sign-in providers, redirect origins and integration clients (none by default); access/refresh lifetimes. */
  identity?: Partial<IdentitySettings> & { accessTtlSeconds?: number };
  /** The api's public base URL (redirect URIs are made from it); `http://api.test` by default. */
  publicBaseUrl?: string;
  /** Widget sessions: the shortest inactivity a tenant may set, push retries, stream heartbeat. */
  widget?: Partial<WidgetApiSettings>;
}

/** The real api over real HTTP, a real worker on its own task queue, a database of its own. */
export async function startTestService(options: TestServiceOptions = {}): Promise<TestService> {
  const { url } = await createTestDatabase();
  const poolUrl = options.connectVia ? await options.connectVia(url) : url;
  const database = connectDatabase(poolUrl, {
    max: 10,
    statementTimeoutMs: options.statementTimeoutMs ?? loadConfig({}).apiStatementTimeoutMs,
    tracer: options.tracing?.tracing.tracer,
  });
  const address = options.temporalAddress ?? inject('temporalAddress');
  const taskQueue = uniqueName('tq');
  const logLines = options.logLines;
  // The service's own logger (its redaction and its hook on errors), into `logLines`.
  const logger = logLines
    ? createLogger('debug', {}, { write: (line: string) => void logLines.push(line) })
    : createLogger(process.env.TEST_VERBOSE ? 'debug' : 'silent');
  const skills: SkillRuntime = createSkillRuntime({
    cipher: createSkillCipher(TEST_SKILL_KEY),
    allowedNetworks: options.skills?.allowedNetworks ?? [],
    ...(options.skills?.limits ? { limits: options.skills.limits } : {}),
    ...(options.skills?.resolver ? { resolver: options.skills.resolver } : {}),
    integrations: {
      clients: options.identity?.integrationClients ?? {},
      publicBaseUrl: options.publicBaseUrl ?? 'http://api.test',
    },
  });
  installTemporalRuntimeLogger(logger);
  const exportDir = mkdtempSync(path.join(tmpdir(), 'iis-exports-'));
  const exportUrlKey = randomBytes(32);
  const exportSettings: NonNullable<ActivityDeps['exports']> = {
    exportDir,
    ...(options.exports?.s3 ? { s3: options.exports.s3 } : {}),
    ...(options.exports?.heartbeatTimeoutMs ? { heartbeatTimeoutMs: options.exports.heartbeatTimeoutMs } : {}),
    ...(options.exports?.batchRows ? { batchRows: options.exports.batchRows } : {}),
  };

  const nativeConnection = await NativeConnection.connect({ address });
  const worker = options.withoutWorker
    ? undefined
    : await createIncidentWorker({
        connection: nativeConnection,
        namespace: 'default',
        taskQueue,
        db: database.db,
        logger,
        skills,
        exports: exportSettings,
        workflowBundlePath: options.tracing?.workflowBundlePath ?? inject('workflowBundlePath'),
        ...(options.tracing ? { tracing: options.tracing.tracing } : {}),
        ...(options.maxCachedWorkflows !== undefined ? { maxCachedWorkflows: options.maxCachedWorkflows } : {}),
      });
  const running = worker ? worker.run() : Promise.resolve();

  const connection = await Connection.connect(temporalConnectionOptions(address));
  const client = new Client({
    connection,
    namespace: 'default',
    interceptors: tracedClientInterceptors(options.tracing?.tracing) ?? {},
  });
  const workflows = createTemporalWorkflowPort(
    client,
    taskQueue,
    options.answerTimeoutMs ? { answerTimeoutMs: options.answerTimeoutMs } : {},
  );
  const http: HttpSettings = { ...loadConfig({}).http, ...options.http };
  const realtimeHub = createRealtimeHub({ sql: database.sql, logger });
  const deps: AppDeps = {
    db: database.db,
    sql: database.sql,
    relaxedSql: database.relaxedSql,
    workflows,
    tokens: createTokenVerifier({ jwtSecret: TEST_JWT_SECRET, jwksUrl: options.jwksUrl }),
    clock: () => new Date(),
    logger,
    config: {
      publicBaseUrl: options.publicBaseUrl ?? 'http://api.test',
      trustProxy: options.trustProxy ?? false,
      publicRateLimitPerMinute: options.publicRateLimitPerMinute ?? 10_000,
      webhookRateLimitPerMinute: options.webhookRateLimitPerMinute ?? 1_000_000,
      ...(options.webhookKeyFailuresPerMinute
        ? { webhookKeyFailuresPerMinute: options.webhookKeyFailuresPerMinute }
        : {}),
      http,
    },
    skills,
    realtime: { hub: realtimeHub, ...(options.stream ? { settings: options.stream } : {}) },
    ...(options.model ? { model: options.model } : {}),
    ...(options.ingest ? { ingest: options.ingest } : {}),
    ...(options.databaseWatchMs
      ? { databaseWatch: { answers: createDatabaseProbe(poolUrl), everyMs: options.databaseWatchMs } }
      : {}),
    exports: { dir: exportDir, urlKey: exportUrlKey, ...(options.exports?.s3 ? { s3: options.exports.s3 } : {}) },
    identity: {
      settings: {
        providers: options.identity?.providers ?? {},
        redirectOrigins: options.identity?.redirectOrigins ?? [],
        refreshTtlSeconds: options.identity?.refreshTtlSeconds ?? 2_592_000,
        integrationClients: options.identity?.integrationClients ?? {},
      },
      sessions: {
        signingSecret: TEST_JWT_SECRET,
        accessTtlSeconds: options.identity?.accessTtlSeconds ?? 3600,
        refreshTtlSeconds: options.identity?.refreshTtlSeconds ?? 2_592_000,
      },
    },
  };
  const dispatcher =
    worker && !options.withoutDispatcher
      ? startDispatcher(
          { db: database.db, sql: database.sql, workflows, logger },
          { intervalMs: 1000, repeatIntervalMs: 500, housekeepingIntervalMs: HOUSEKEEPING_ONCE },
        )
      : undefined;
  const notifier =
    worker && !options.withoutDispatcher
      ? startNotifier({ db: database.db, sql: database.sql, logger }, { intervalMs: 1000 })
      : undefined;
  const triggers =
    worker && !options.withoutDispatcher
      ? startTriggerDispatcher({ db: database.db, sql: database.sql, logger, skills, workflows }, { intervalMs: 1000 })
      : undefined;
  const widget = {
    sessions: createWidgetSessionPort(client, taskQueue),
    settings: { ...defaultWidgetApiSettings, ...options.widget },
  };
  const app = createApp({ ...deps, widget }, options.tracing?.tracing);
  const server: ServerType = await listen(app, { host: '127.0.0.1', port: 0, http, logger });
  const baseUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;

  const token: TestService['token'] = (tenantId, role, overrides = {}) =>
    signToken({
      secret: TEST_JWT_SECRET,
      tenantId,
      role,
      sub: overrides.sub ?? `user-${role}`,
      email: `${role}@example.test`,
      ttlSeconds: overrides.ttlSeconds ?? 600,
    });

  return {
    baseUrl,
    database,
    databaseUrl: url,
    client,
    workflows,
    realtimeHub,
    appDeps: deps,
    taskQueue,
    worker,
    dispatcher,
    notifier,
    triggers,
    skills,
    exportDir,
    exportUrlKey,
    exportSettings,
    token,
    async newTenant(opts = {}) {
      const tenant = await createTenant(database.db, {
        name: opts.name ?? uniqueName('Tenant'),
        plan: opts.plan ?? 'plan_business',
        settings: { ...(opts.grouping ? {} : { correlationWindowMinutes: 0 }), ...opts.settings },
      });
      return { tenantId: tenant.id, admin: token(tenant.id, 'admin'), member: token(tenant.id, 'member') };
    },
    async api(method, path, opts = {}) {
      const headers: Record<string, string> = { ...opts.headers };
      if (opts.token) headers.authorization = `Bearer ${opts.token}`;
      let body: string | undefined = opts.rawBody;
      if (opts.body !== undefined) {
        body = JSON.stringify(opts.body);
        headers['content-type'] ??= 'application/json';
      }
      const response = await fetch(`${baseUrl}${path}`, { method, headers, ...(body !== undefined ? { body } : {}) });
      const text = await response.text();
      let parsed: unknown = text;
      if (response.headers.get('content-type')?.includes('json') && text) parsed = JSON.parse(text);
      return { status: response.status, headers: response.headers, body: parsed as any };
    },
    async stop() {
      await new Promise<void>((resolve) => {
        server.close(() => resolve());
        (server as { closeAllConnections?: () => void }).closeAllConnections?.();
      });
      await realtimeHub.close();
      await triggers?.stop();
      await notifier?.stop();
      await dispatcher?.stop();
      if (worker) {
        worker.shutdown();
        await running;
      }
      await nativeConnection.close();
      await connection.close();
      await database.close();
      rmSync(exportDir, { recursive: true, force: true });
    },
  };
}

export { TOKEN_AUDIENCE, TOKEN_ISSUER };

/**
 * Runs a dispatcher of the service's own whose housekeeping (its purges) runs at its start,
 * until `done` holds (at most 5 s), then stops it: a test of a purge's wiring.
 */
export async function housekeepUntil(svc: TestService, done: () => Promise<boolean>): Promise<void> {
  const dispatcher = startDispatcher(
    { db: svc.database.db, sql: svc.database.sql, workflows: svc.workflows, logger: createLogger('silent') },
    { listen: false, intervalMs: 60_000, housekeepingIntervalMs: 60_000 },
  );
  try {
    await eventually(done, 5_000);
  } finally {
    await dispatcher.stop();
  }
}
