import { timingSafeEqual } from 'node:crypto';
import type { OpenAPIHono } from '@hono/zod-openapi';
import type { Registry } from 'prom-client';
import { AppError } from '../../errors.js';
import type { AppEnv } from '../context.js';

function sameToken(given: string, expected: string): boolean {
  const a = Buffer.from(given);
  const b = Buffer.from(expected);
  return a.length === b.length && timingSafeEqual(a, b);
}

/**
 * `GET /metrics` in Prometheus text format. Gated like the probes (no JWT, no tenant window);
 * with `token` (METRICS_TOKEN) set, a scrape must send it as a bearer token.
 */
export function registerMetricsRoute(app: OpenAPIHono<AppEnv>, registry: Registry, token: string | undefined): void {
  app.get('/metrics', async (c) => {
    if (token) {
      const header = c.req.header('authorization') ?? '';
      const given = header.startsWith('Bearer ') ? header.slice('Bearer '.length) : '';
      if (!sameToken(given, token))
        throw new AppError('unauthorized', 'A valid METRICS_TOKEN bearer token is required');
    }
    const body = await registry.metrics();
    return c.body(body, 200, { 'content-type': registry.contentType });
  });
}
