import type { MiddlewareHandler } from 'hono';
import { watchCall } from '../../dependency-failures.js';
import type { AppDeps, AppEnv } from '../context.js';

/**
 * Answers 503 a request that waits on a database that does not answer: once it has waited
 * `everyMs`, and every `everyMs` after, PostgreSQL is probed on a fresh connection, and when the
 * probe fails the request is given up (its handler runs on, its outcome dropped). PostgreSQL's
 * statement bound cannot act while the server itself is frozen or cut off, and
 * such requests waited until it answered again, 90 s and more (ADR 0238). A request that is
 * only slow (a model, Temporal, a long verification) is left alone: the probe answers. Webhooks
 * have their batch's bounds (ADR 0156, ADR 0237); a delivery answered here would stay queued.
 * What the handler meets once the database answers (its request body already gone with the
 * answer, say) is logged at debug level only, marked by `givenUp`.
 */
export function watchDatabase(
  watch: NonNullable<AppDeps['databaseWatch']>,
  unavailable: () => Error,
): MiddlewareHandler<AppEnv> {
  return async (c, next) => {
    if (c.req.path.startsWith('/v1/webhooks/')) return next();
    await watchCall(
      watch.answers,
      watch.everyMs,
      () => {
        const answer = unavailable();
        c.set('givenUp', answer);
        return answer;
      },
      next,
    );
  };
}
