/** Composition: builds the api and the worker from configuration, each with a stop(). */
import { randomBytes } from 'node:crypto';
import type { AddressInfo } from 'node:net';
import { serve, type ServerType } from '@hono/node-server';
import { Client, Connection } from '@temporalio/client';
import { NativeConnection } from '@temporalio/worker';
import type { Logger } from 'pino';
import { createApp } from './api/app.js';
import { createRealtimeHub } from './realtime/hub.js';
import { createTokenVerifier } from './auth/tokens.js';
import type { Config, HttpSettings } from './config.js';
import { connectDatabase } from './db/client.js';
import { createDatabaseProbe } from './db/probe.js';
import type { RuntimeSettings } from './runtime-settings.js';
import { startIntegrationRefresher } from './integrations/refresher.js';
import { createSkillCipher } from './skills/crypto.js';
import { createSkillRuntime, type SkillRuntime } from './skills/invoke.js';
import { createModelProvider } from './analysis/providers.js';
import { createIncidentWorker } from './temporal/incident-worker.js';
import { nativeConnectionOptions, securedConnectionOptions } from './temporal/connection.js';
import { createTemporalWorkflowPort } from './temporal/port.js';
import { defaultWidgetApiSettings } from './widget/sessions.js';
import { createWidgetSessionPort } from './widget/workflow-port.js';
import { closeWidgetStreamWakeups } from './widget/stream-wakeups.js';
import { tracedClientInterceptors } from './tracing/temporal.js';
import { createTracing } from './tracing/tracing.js';
import { startDispatcher } from './temporal/reconciler.js';
import { startNotifier } from './notifications/notifier.js';
import { startTriggerDispatcher } from './triggers/dispatcher.js';
import { installTemporalRuntimeLogger } from './temporal/runtime-logger.js';
import { ensureSearchAttributes } from './temporal/search-attributes.js';
import { downloadUrlKey } from './audit-exports/signed-url.js';
import { billingOf } from './billing/wiring.js';
import { createWorkerMetrics, serveWorkerMetrics } from './metrics/worker-metrics.js';
import { loopbackMetricsAddress } from './metrics/sdk-metrics.js';

export interface Stoppable {
  stop(): Promise<void>;
}

/** How often Node checks open connections against the headers and request bounds. */
const CONNECTIONS_CHECK_MS = 5_000;
/** At most one warning a minute about connections refused at the cap. */
const DROP_WARNING_MS = 60_000;

/**
 * Serves `app` with the bounds of `http`. The app itself answers a body that is
 * late 408 with the error body (bodyDeadline); Node's own request bound, later, is the backstop
 * for what the app does not read, and answers a bare 408.
 */
export function listen(
  app: { fetch: (req: Request) => Response | Promise<Response> },
  options: { host: string; port: number; http: HttpSettings; logger: Logger },
): Promise<ServerType> {
  const { host, port, http, logger } = options;
  const serverOptions = {
    keepAliveTimeout: http.keepAliveTimeoutMs,
    headersTimeout: http.headersTimeoutMs,
    requestTimeout: http.headersTimeoutMs + http.requestTimeoutMs,
    connectionsCheckingInterval: CONNECTIONS_CHECK_MS,
  };
  return new Promise((resolve, reject) => {
    const server = serve({ fetch: app.fetch, hostname: host, port, serverOptions }, () => resolve(server));
    server.maxConnections = http.maxConnections;
    let dropped = 0;
    let warnedAt = -Infinity;
    server.on('drop', () => {
      dropped++;
      if (performance.now() - warnedAt < DROP_WARNING_MS) return;
      warnedAt = performance.now();
      logger.warn(
        { dropped, maxConnections: http.maxConnections },
        'connections refused at the cap (HTTP_MAX_CONNECTIONS)',
      );
    });
    server.once('error', (err: NodeJS.ErrnoException) => {
      reject(
        err.code === 'EADDRINUSE' ? new Error(`Port ${port} is already in use (PORT); set PORT to a free port`) : err,
      );
    });
  });
}

function skillRuntime(config: Config, settings: RuntimeSettings): SkillRuntime {
  return createSkillRuntime({
    cipher: createSkillCipher(settings.skillEncryptionKey),
    allowedNetworks: config.skills.allowedNetworks,
    // Integration skills call providers with the tenant's connection (OAuth clients refresh tokens).
    integrations: { clients: config.identity.integrationClients, publicBaseUrl: config.publicBaseUrl },
  });
}

export async function startApi(
  config: Config,
  settings: RuntimeSettings,
  logger: Logger,
): Promise<Stoppable & { url: string }> {
  const tracing = createTracing('incident-investigation-api');
  const database = connectDatabase(settings.databaseUrl, {
    max: 20,
    statementTimeoutMs: config.apiStatementTimeoutMs,
    tracer: tracing?.tracer, // database spans (ADR 0282)
  });
  const connection = await Connection.connect(
    securedConnectionOptions(settings.temporalAddress, config.temporal.security),
  );
  const interceptors = tracedClientInterceptors(tracing);
  const client = new Client({ connection, namespace: config.temporal.namespace, interceptors: interceptors ?? {} });
  // The one LISTEN connection of this process for the event streams; closed before the server.
  const hub = createRealtimeHub({ sql: database.sql, logger });
  const app = createApp(
    {
      db: database.db,
      sql: database.sql,
      relaxedSql: database.relaxedSql,
      workflows: createTemporalWorkflowPort(client, config.temporal.taskQueue, {
        answerTimeoutMs: config.temporal.answerTimeoutMs,
        pollStaleMs: config.workerPollStaleMs,
      }),
      tokens: createTokenVerifier({
        jwtSecret: settings.jwtSecret,
        jwksUrl: config.auth.jwksUrl,
        maxLifetimeSeconds: config.auth.maxLifetimeSeconds,
        clockSkewSeconds: config.auth.clockSkewSeconds,
      }),
      clock: () => new Date(),
      logger,
      config,
      skills: skillRuntime(config, settings),
      realtime: { hub },
      widget: {
        sessions: createWidgetSessionPort(client, config.temporal.taskQueue),
        settings: { ...defaultWidgetApiSettings, maxOpenSessionsPerKey: config.widget.maxOpenSessionsPerKey },
      },
      webhookParse: { threads: config.webhookParseThreads },
      model: createModelProvider(config.llm, (reason) =>
        logger.warn({ reason, model: config.llm.model }, 'the model failed; the built-in responder answered'),
      ),
      databaseWatch: { answers: createDatabaseProbe(settings.databaseUrl), everyMs: DATABASE_WATCH_MS },
      billing: billingOf(config),
      identity: {
        settings: config.identity,
        ...(settings.jwtSecret
          ? {
              sessions: {
                signingSecret: settings.jwtSecret,
                accessTtlSeconds: config.auth.tokenTtlSeconds,
                refreshTtlSeconds: config.identity.refreshTtlSeconds,
              },
            }
          : {}),
      },
      exports: {
        dir: config.exports.dir,
        urlKey:
          downloadUrlKey({ urlSecret: config.exports.urlSecret, jwtSecret: settings.jwtSecret }) ??
          (logger.warn(
            'EXPORT_URL_SECRET and JWT_SECRET are unset: export download URLs hold only in this api process',
          ),
          randomBytes(32)),
        ...(config.exports.s3 ? { s3: config.exports.s3 } : {}),
      },
    },
    tracing,
  );
  let server: ServerType;
  try {
    server = drainable(await listen(app, { host: config.host, port: config.port, http: config.http, logger }));
  } catch (err) {
    await connection.close();
    await database.close();
    throw err;
  }
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://${config.host === '0.0.0.0' ? '127.0.0.1' : config.host}:${port}`,
    async stop() {
      // Open streams would keep server.close() waiting: end them first.
      await hub.close();
      await closeWidgetStreamWakeups(database.sql); // ends the widget streams too
      await drain(server, API_DRAIN_MS);
      await connection.close();
      await database.close();
      await tracing?.shutdown(); // sends the spans still batched
    },
  };
}

/** How long an api request waits before PostgreSQL is probed, and between probes. */
export const DATABASE_WATCH_MS = 10_000;

/** How long a stopping api goes on answering the requests it has (then it cuts the rest off). */
export const API_DRAIN_MS = 10_000;

type Answer = {
  headersSent: boolean;
  setHeader(name: string, value: string): unknown;
  once(event: 'close', listener: () => void): unknown;
};

/** Keeps the answers not yet finished of `server`, for `drain`. */
function trackAnswers(server: ServerType): Set<Answer> {
  const open = new Set<Answer>();
  server.on('request', (_req: unknown, res: Answer) => {
    open.add(res);
    res.once('close', () => open.delete(res));
  });
  return open;
}

/**
 * Stops accepting connections and lets the requests in flight finish. Every answer not yet sent,
 * those in flight included, says `Connection: close`, so the server closes each connection right
 * after its answer and clients that keep connections alive (load balancers, most webhook
 * senders) reconnect to another process instead of keeping this one serving; no connection is
 * closed under a request the client is sending. Connections idle at the start are closed at once,
 * the others after their answer. Past `boundMs`, what is left is cut off.
 */
export function drain(server: ServerType, boundMs: number, answers = answersOf.get(server)): Promise<void> {
  const http = server as ServerType & { closeIdleConnections?: () => void; closeAllConnections?: () => void };
  return new Promise<void>((resolve) => {
    const close = (res: Answer) => {
      if (!res.headersSent) res.setHeader('connection', 'close');
    };
    for (const res of answers ?? []) close(res);
    server.prependListener('request', (_req: unknown, res: Answer) => close(res));
    const cut = setTimeout(() => http.closeAllConnections?.(), boundMs);
    server.close(() => {
      clearTimeout(cut);
      resolve();
    });
    http.closeIdleConnections?.();
  });
}

const answersOf = new WeakMap<ServerType, Set<Answer>>();

/** Tracks `server`'s answers in flight, so that `drain` can mark them too. */
export function drainable(server: ServerType): ServerType {
  answersOf.set(server, trackAnswers(server));
  return server;
}

export async function startWorker(config: Config, settings: RuntimeSettings, logger: Logger): Promise<Stoppable> {
  // The SDK's own metrics on a loopback port, joined to the worker's metrics endpoint (ADR 0282).
  const sdkMetricsUrl = installTemporalRuntimeLogger(
    logger,
    'WARN',
    config.metrics.workerPort ? await loopbackMetricsAddress() : undefined,
  );
  const tracing = createTracing('incident-investigation-worker');
  const database = connectDatabase(settings.databaseUrl, {
    max: 10,
    statementTimeoutMs: config.workerStatementTimeoutMs,
    tracer: tracing?.tracer,
  });
  const clientConnection = await Connection.connect(
    securedConnectionOptions(settings.temporalAddress, config.temporal.security),
  );
  await ensureSearchAttributes(clientConnection, config.temporal.namespace);
  const connection = await NativeConnection.connect(
    nativeConnectionOptions(settings.temporalAddress, config.temporal.security),
  );
  const model = createModelProvider(config.llm, (reason) =>
    logger.warn({ reason, model: config.llm.model }, 'the model failed; the built-in analyzer answered'),
  );
  const skills = skillRuntime(config, settings);
  const worker = await createIncidentWorker({
    ...(tracing ? { tracing } : {}),
    model,
    connection,
    namespace: config.temporal.namespace,
    taskQueue: config.temporal.taskQueue,
    db: database.db,
    logger,
    skills,
    exports: { exportDir: config.exports.dir, ...(config.exports.s3 ? { s3: config.exports.s3 } : {}) },
    maxCachedWorkflows: config.workerMaxCachedWorkflows,
    ...(config.temporal.workflowBundlePath ? { workflowBundlePath: config.temporal.workflowBundlePath } : {}),
  });
  const running = worker.run();
  running.catch((err: unknown) => logger.fatal({ err }, 'worker stopped with an error'));
  const client = new Client({
    connection: clientConnection,
    namespace: config.temporal.namespace,
    // Starts from the outbox (webhook alerts) begin their trace here.
    interceptors: tracedClientInterceptors(tracing) ?? {},
  });
  const workflows = createTemporalWorkflowPort(client, config.temporal.taskQueue, {
    answerTimeoutMs: config.temporal.answerTimeoutMs,
  });
  const dispatcher = startDispatcher(
    { db: database.db, sql: database.sql, workflows, logger },
    { housekeepingSchedule: { client, taskQueue: config.temporal.taskQueue } },
  );
  const notifier = startNotifier({ db: database.db, sql: database.sql, logger });
  const triggerDispatcher = startTriggerDispatcher({ db: database.db, sql: database.sql, logger, skills, workflows });
  const refresher = startIntegrationRefresher({
    db: database.db,
    runtime: { ...skills, ...skills.integrations! },
    logger,
  });
  // The service's worker metrics (read from PostgreSQL at scrape) on their own port, beside the api's;
  // a port taken (a second worker on one machine) costs the metrics, not the worker.
  const metricsServer = config.metrics.workerPort
    ? await serveWorkerMetrics({
        metrics: createWorkerMetrics(database.sql, { sdkMetricsUrl }).metrics,
        host: config.host,
        port: config.metrics.workerPort,
        token: config.metrics.token,
      }).catch((err: unknown) => {
        logger.warn({ reason: (err as Error).message }, 'worker metrics are not served (WORKER_METRICS_PORT)');
        return undefined;
      })
    : undefined;
  return {
    async stop() {
      await metricsServer?.stop();
      await refresher.stop();
      await triggerDispatcher.stop();
      await notifier.stop();
      await dispatcher.stop();
      if (worker.getState() === 'RUNNING') worker.shutdown();
      await running.catch(() => undefined);
      await connection.close();
      await clientConnection.close();
      await database.close();
      await tracing?.shutdown();
    },
  };
}

/**
 * Stops the parts in reverse order of start on SIGINT/SIGTERM, then exits. The function it returns
 * tells whether that has begun (supervisions must not restart what the signal stopped).
 */
export function stopOnSignals(parts: Stoppable[], logger: Logger): () => boolean {
  let stopping = false;
  const stopAll = async (signal: string) => {
    if (stopping) return;
    stopping = true;
    logger.info({ signal }, 'shutting down');
    for (const part of [...parts].reverse()) {
      try {
        await part.stop();
      } catch (err) {
        logger.error({ err }, 'error while stopping');
      }
    }
    process.exit(0);
  };
  process.once('SIGINT', () => void stopAll('SIGINT'));
  process.once('SIGTERM', () => void stopAll('SIGTERM'));
  return () => stopping;
}
