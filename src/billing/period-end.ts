import type { Logger } from 'pino';
import type { Db } from '../db/client.js';
import { applyDueChanges } from './subscription.js';

/** How often the worker looks for downgrades whose period has ended. */
export const PERIOD_END_CHECK_MS = 60_000;

/**
 * Applies pending downgrades once their period ends. Durable: the pending change is a row, so a
 * restart (or another worker) applies what one stopped process did not; each change is applied
 * once under its row lock. Reads of the subscription apply a due change too.
 */
export function startPeriodEndApplier(
  deps: { db: Db; logger: Logger; clock?: () => Date },
  options: { intervalMs?: number } = {},
): { stop(): Promise<void> } {
  const clock = deps.clock ?? (() => new Date());
  let running: Promise<void> = Promise.resolve();
  const pass = () => {
    running = applyDueChanges(deps, clock())
      .then((n) => {
        if (n > 0) deps.logger.info({ applied: n }, 'pending plan changes applied at period end');
      })
      .catch((err: unknown) =>
        deps.logger.warn({ reason: (err as Error).message }, 'pending plan changes not applied; next pass retries'),
      );
  };
  pass();
  const timer = setInterval(pass, options.intervalMs ?? PERIOD_END_CHECK_MS);
  timer.unref();
  return {
    async stop() {
      clearInterval(timer);
      await running;
    },
  };
}
