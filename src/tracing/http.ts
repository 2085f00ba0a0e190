/** A span per api request, named by its route template, continuing a caller's `traceparent`. */
import { context, propagation, SpanKind, SpanStatusCode, trace } from '@opentelemetry/api';
import type { MiddlewareHandler } from 'hono';
import { routePath } from 'hono/route';
import type { Tracing } from './tracing.js';

export function traceRequests(tracing: Tracing): MiddlewareHandler {
  return async (c, next) => {
    const parent = propagation.extract(context.active(), c.req.raw.headers, {
      get: (headers, key) => headers.get(key) ?? undefined,
      keys: (headers) => [...headers.keys()],
    });
    const span = tracing.tracer.startSpan(
      c.req.method,
      { kind: SpanKind.SERVER, attributes: { 'http.request.method': c.req.method, 'url.path': c.req.path } },
      parent,
    );
    try {
      await context.with(trace.setSpan(parent, span), next);
    } finally {
      // The template of the last route that matched (not the path: ids would make every span unique).
      const route = routePath(c, -1);
      span.updateName(`${c.req.method} ${route}`);
      span.setAttribute('http.route', route);
      span.setAttribute('http.response.status_code', c.res.status);
      if (c.res.status >= 500) span.setStatus({ code: SpanStatusCode.ERROR });
      span.end();
    }
  };
}
