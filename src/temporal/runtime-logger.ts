import { DefaultLogger, Runtime, type LogLevel, type LogMetadata } from '@temporalio/worker';
import type { Logger } from 'pino';
import { failureReason, isDependencyUnavailable, isWorkflowEngineUnavailable } from '../dependency-failures.js';

let installed = false;
/** Where core serves the SDK's metrics, when the runtime was installed with them. */
let sdkMetricsUrl: string | undefined;

/**
 * What of an SDK log entry's metadata is logged. Never the activity's task token, with which the
 * activity can be completed or failed through Temporal's API. An activity that failed because a
 * dependency cannot be reached (the SDK's "Activity failed", one per attempt of every running
 * activity during a database outage) as its reason in one line, without the stack, as the api
 * logs its 503s; any other failure with its error and stack.
 */
export function sdkLogFields(meta: LogMetadata = {}): LogMetadata {
  const { taskToken: _taskToken, error, ...rest } = meta;
  if (error === undefined) return rest;
  return isDependencyUnavailable(error) || isWorkflowEngineUnavailable(error)
    ? { ...rest, reason: failureReason(error) }
    : { ...rest, error };
}

/**
 * Sends the Temporal SDK's own logs (worker state, bundling) through our structured logger at
 * warn level and above, and, given `sdkMetricsAddress` (a loopback host:port), has core serve the
 * SDK's own metrics there (ADR 0282). Installs once per process, before the first native
 * connection; returns the URL of the SDK's metrics when the installed runtime serves them.
 */
export function installTemporalRuntimeLogger(
  logger: Logger,
  level: LogLevel = 'WARN',
  sdkMetricsAddress?: string,
): string | undefined {
  if (installed) return sdkMetricsUrl;
  installed = true;
  const sdkLogger = logger.child({ component: 'temporal-sdk' });
  const options = {
    // Not the SDK's own SIGINT/SIGTERM hook, which shuts the worker down the moment the signal
    // comes: the launchers stop their parts in order (the api first, so requests waiting on a
    // workflow are answered, then the worker; ADR 0210).
    shutdownSignals: [],
    logger: new DefaultLogger(level, (entry) => {
      const method =
        entry.level === 'ERROR' ? 'error' : entry.level === 'WARN' ? 'warn' : entry.level === 'INFO' ? 'info' : 'debug';
      sdkLogger[method](sdkLogFields(entry.meta), entry.message);
    }),
  };
  if (sdkMetricsAddress) {
    try {
      Runtime.install({
        ...options,
        telemetryOptions: { metrics: { prometheus: { bindAddress: sdkMetricsAddress } } },
      });
      sdkMetricsUrl = `http://${sdkMetricsAddress}/metrics`;
      return sdkMetricsUrl;
    } catch (err) {
      // The port was taken between its choice and core's bind: the worker runs without them.
      logger.warn({ reason: (err as Error).message }, "the Temporal SDK's metrics are not served");
    }
  }
  Runtime.install(options);
  return undefined;
}
