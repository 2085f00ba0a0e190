import type { IncomingMessage } from 'node:http';
import type { MiddlewareHandler } from 'hono';
import { AppError } from '../../errors.js';
import type { AppEnv } from '../context.js';

/**
 * Answers 408 `request_timeout` a request whose body has not all arrived `ms` after its headers:
 * a sender trickling or stalling a body held the request, its connection and its
 * handler until Node's own bound (300 s by default), which answers a bare 408. The connection is
 * closed with the answer, since the rest of the body is still on its way. A request whose body
 * has arrived is left alone however long its handler takes, and so are GET and HEAD, event
 * streams among them. What the handler meets afterwards is logged at debug level only (`givenUp`).
 */
export function bodyDeadline(ms: number): MiddlewareHandler<AppEnv> {
  return async (c, next) => {
    const incoming = (c.env as { incoming?: IncomingMessage } | undefined)?.incoming;
    if (!incoming || incoming.complete || c.req.method === 'GET' || c.req.method === 'HEAD') return next();
    let timer: NodeJS.Timeout | undefined;
    const late = new Promise<never>((_, reject) => {
      timer = setTimeout(() => {
        if (incoming.complete) return;
        const answer = new AppError(
          'request_timeout',
          `The request body did not arrive within ${ms / 1000} s of its headers`,
        );
        c.set('givenUp', answer);
        c.header('Connection', 'close');
        reject(answer);
      }, ms);
    });
    const handled = next();
    handled.catch(() => undefined); // a handler's failure after the 408 is the app's onError's
    try {
      await Promise.race([handled, late]);
    } finally {
      clearTimeout(timer);
    }
  };
}
