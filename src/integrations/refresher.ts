/**
 * The worker's periodic pass over oauth2 tokens near their expiry (once a minute by default), so
 * a connection unused for a while still holds a live token. Every worker runs it: the row lock and
 * the moved-expiry check make a second refresher a no-op.
 */
import type { Logger } from 'pino';
import type { Db } from '../db/client.js';
import { refreshDueConnections, type IntegrationRuntime } from './connection.js';

export interface IntegrationRefresher {
  stop(): Promise<void>;
}

export function startIntegrationRefresher(
  deps: { db: Db; runtime: IntegrationRuntime; logger: Pick<Logger, 'info' | 'warn'> },
  options: { intervalMs?: number } = {},
): IntegrationRefresher {
  const intervalMs = options.intervalMs ?? 60_000;
  let stopped = false;
  let timer: NodeJS.Timeout | undefined;
  let running: Promise<void> = Promise.resolve();
  const pass = async () => {
    try {
      const { refreshed, failed } = await refreshDueConnections(deps.db, deps.runtime, new Date());
      if (refreshed + failed > 0) deps.logger.info({ refreshed, failed }, 'integration tokens refreshed');
    } catch (err) {
      deps.logger.warn({ err }, 'integration token refresh pass failed');
    }
  };
  const schedule = () => {
    if (stopped) return;
    timer = setTimeout(() => {
      running = pass().finally(schedule);
    }, intervalMs);
    timer.unref();
  };
  schedule();
  return {
    async stop() {
      stopped = true;
      if (timer) clearTimeout(timer);
      await running;
    },
  };
}
