import path from 'node:path';
import { fileURLToPath } from 'node:url';
import {
  type ActivityInboundCallsInterceptor,
  type NativeConnection,
  Worker,
  type WorkerOptions,
} from '@temporalio/worker';
import type { Logger } from 'pino';
import type postgres from 'postgres';
import { createHousekeepingActivities } from '../activities/housekeeping.js';
import { createActivities, type ActivityDeps } from '../activities/index.js';
import type { Db } from '../db/client.js';
import { withoutQueryParameters } from '../db/query-errors.js';
import type { ModelProvider } from '../analysis/types.js';
import type { SkillRuntime } from '../skills/invoke.js';
import { tracedActivityInterceptors, workflowInterceptorModules, workflowSpanSinks } from '../tracing/temporal.js';
import type { Tracing } from '../tracing/tracing.js';

const here = path.dirname(fileURLToPath(import.meta.url));
/** The workflows entry next to this file (.ts under tsx, .js once compiled). */
export const workflowsPath = path.join(here, '..', 'workflows', `index${path.extname(fileURLToPath(import.meta.url))}`);

export interface IncidentWorkerOptions {
  connection: NativeConnection;
  namespace: string;
  taskQueue: string;
  db: Db;
  logger: Logger;
  /** Encryption key, SSRF allowlist and limits for skill invocations. */
  skills: SkillRuntime;
  /** The model behind triage; the built-in analyzer when absent. */
  model?: ModelProvider;
  /** Audit exports: export directory, object storage, tuning. */
  exports?: ActivityDeps['exports'];
  /** A prebuilt workflow bundle (tests build one per run); otherwise bundled at start. */
  workflowBundlePath?: string;
  /**
   * Workflows kept in memory between their tasks (`WORKER_MAX_CACHED_WORKFLOWS`; 0: none). Every
   * incident not closed has a running workflow, so the SDK's default, sized from the heap limit,
   * would let the worker grow by about 85 KB per open incident up to thousands (ADR 0229).
   */
  maxCachedWorkflows?: number;
  /** OpenTelemetry (OTEL_*): activities continue the workflow's trace; absent when off. */
  tracing?: Tracing;
}

/** The SDK's default of concurrent workflow tasks, which may not exceed a non-zero cache. */
const WORKFLOW_TASK_SLOTS = 40;

/** The cache bound, with the concurrent tasks lowered to a bound below the SDK's default. */
function cacheOptions(
  cache: number | undefined,
): Pick<WorkerOptions, 'maxCachedWorkflows' | 'maxConcurrentWorkflowTaskExecutions'> {
  if (cache === undefined) return {};
  if (cache > 0 && cache < WORKFLOW_TASK_SLOTS)
    return { maxCachedWorkflows: cache, maxConcurrentWorkflowTaskExecutions: cache };
  return { maxCachedWorkflows: cache };
}

/**
 * An activity's failure goes into the workflow's history (its Web UI, `investigation.failed`) and
 * the SDK's log: never with a failed statement's parameters.
 */
const activityFailuresWithoutQueryParameters = (): { inbound: ActivityInboundCallsInterceptor } => ({
  inbound: {
    async execute(input, next) {
      try {
        return await next(input);
      } catch (err) {
        throw withoutQueryParameters(err);
      }
    },
  },
});

/** The worker's interceptors (also given to the workers the tests start). */
export const incidentWorkerInterceptors = {
  activity: [activityFailuresWithoutQueryParameters],
} satisfies WorkerOptions['interceptors'];

/** The pool behind `db`: drizzle keeps it as `$client`, which the Db type does not name. */
const poolOf = (db: Db): postgres.Sql => (db as Db & { $client: postgres.Sql }).$client;

export async function createIncidentWorker(options: IncidentWorkerOptions): Promise<Worker> {
  const workflowSource: Pick<WorkerOptions, 'workflowsPath' | 'workflowBundle'> = options.workflowBundlePath
    ? { workflowBundle: { codePath: options.workflowBundlePath } }
    : { workflowsPath };
  return Worker.create({
    connection: options.connection,
    namespace: options.namespace,
    taskQueue: options.taskQueue,
    ...workflowSource,
    activities: {
      // The purges the housekeeping schedule's runs call (ADR 0279).
      ...createHousekeepingActivities({ sql: poolOf(options.db), db: options.db, logger: options.logger }),
      ...createActivities({
        db: options.db,
        skills: options.skills,
        logger: options.logger,
        ...(options.model ? { model: options.model } : {}),
        ...(options.exports ? { exports: options.exports } : {}),
      }),
    },
    interceptors: {
      // Outermost, so an activity's span covers the other interceptors too.
      activity: [...tracedActivityInterceptors(options.tracing), ...incidentWorkerInterceptors.activity],
      // Only read when bundling here; a prebuilt bundle carries them (bundle-workflows.ts).
      ...(options.workflowBundlePath ? {} : { workflowModules: workflowInterceptorModules }),
    },
    sinks: workflowSpanSinks(options.tracing),
    shutdownGraceTime: '10 seconds',
    ...cacheOptions(options.maxCachedWorkflows),
  });
}
