import { DefaultLogger, Runtime, type LogLevel } from '@temporalio/worker';
import type { Logger } from 'pino';

let installed = false;

/**
 * Sends the Temporal SDK's own logs (worker state, bundling) through our structured logger at
 * warn level and above. Installs once per process, before the first native connection.
 */
export function installTemporalRuntimeLogger(logger: Logger, level: LogLevel = 'WARN'): void {
  if (installed) return;
  installed = true;
  const sdkLogger = logger.child({ component: 'temporal-sdk' });
  Runtime.install({
    // Not the SDK's own SIGINT/SIGTERM hook, which shuts the worker down the moment the signal
    // comes: the launchers stop their parts in order (the api first, so requests waiting on a
    // workflow are answered, then the worker; decision 210).
    shutdownSignals: [],
    logger: new DefaultLogger(level, (entry) => {
      const method = entry.level === 'ERROR' ? 'error' : entry.level === 'WARN' ? 'warn' : entry.level === 'INFO' ? 'info' : 'debug';
      sdkLogger[method](entry.meta ?? {}, entry.message);
    }),
  });
}
