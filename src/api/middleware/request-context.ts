import type { MiddlewareHandler } from 'hono';
import { newId } from '../../ids.js';
import type { AppDeps, AppEnv } from '../context.js';
import { gateOf } from './gates.js';

const acceptableRequestId = /^[A-Za-z0-9._:-]{1,128}$/;

/**
 * Gives every request an id of the service's own (in X-Request-Id, the logs and the audit log)
 * and one structured log line (health probes at debug). A caller's X-Request-Id is logged beside
 * it as `clientRequestId`, never used as it: the audit log's request ids must be ours, not chosen
 * by a client (ADR 0248).
 */
export function requestContext(deps: AppDeps): MiddlewareHandler<AppEnv> {
  return async (c, next) => {
    const incoming = c.req.header('x-request-id');
    const clientRequestId = incoming && acceptableRequestId.test(incoming) ? incoming : undefined;
    const requestId = newId('req');
    const logger = deps.logger.child(clientRequestId ? { requestId, clientRequestId } : { requestId });
    c.set('requestId', requestId);
    c.set('logger', logger);
    c.header('X-Request-Id', requestId);
    const started = performance.now();
    await next();
    const auth = c.get('auth');
    // Probes come every few seconds from each orchestrator: at debug unless one fails (ADR 0281).
    const level = gateOf(c.req.path) === 'probe' && c.res.status < 500 ? 'debug' : 'info';
    // The path only, never a header: query strings may carry short-lived stream tokens.
    logger[level](
      {
        method: c.req.method,
        path: c.req.path,
        status: c.res.status,
        durationMs: Math.round((performance.now() - started) * 10) / 10,
        ...(auth ? { tenantId: auth.tenantId, userId: auth.userId } : {}),
      },
      'request',
    );
  };
}
