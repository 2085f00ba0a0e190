import { createRoute, z, type OpenAPIHono } from '@hono/zod-openapi';
import type { DependencyHealth } from '../../temporal/port.js';
import type { AppDeps, AppEnv } from '../context.js';

const Check = z.object({ ok: z.boolean(), latencyMs: z.number(), error: z.string().optional() });
const DetailedHealth = z
  .object({
    status: z.enum(['ok', 'degraded']),
    checks: z.object({
      postgres: Check,
      temporal: Check,
      worker: Check.extend({
        pollers: z
          .number()
          .int()
          .openapi({ description: 'Workers that polled the task queue within WORKER_POLL_STALE_MS (70 s)' }),
      }),
    }),
  })
  .openapi('DetailedHealth');

async function checkPostgres(deps: AppDeps): Promise<DependencyHealth> {
  const started = performance.now();
  try {
    await Promise.race([
      deps.sql`select 1`,
      new Promise((_, reject) => setTimeout(() => reject(new Error('timed out after 3000 ms')), 3000).unref()),
    ]);
    return { ok: true, latencyMs: Math.round(performance.now() - started) };
  } catch (err) {
    return { ok: false, latencyMs: Math.round(performance.now() - started), error: (err as Error).message };
  }
}

export function registerHealthRoutes(app: OpenAPIHono<AppEnv>, deps: AppDeps): void {
  const startedAt = Date.now();
  app.openapi(
    createRoute({
      method: 'get',
      path: '/health',
      tags: ['health'],
      summary: 'Liveness (public)',
      responses: {
        200: {
          description: 'The process serves requests',
          content: { 'application/json': { schema: z.object({ status: z.literal('ok'), uptimeSeconds: z.number() }) } },
        },
      },
    }),
    (c) => c.json({ status: 'ok' as const, uptimeSeconds: Math.round((Date.now() - startedAt) / 1000) }, 200),
  );

  app.openapi(
    createRoute({
      method: 'get',
      path: '/health/detailed',
      tags: ['health'],
      summary: 'Readiness of PostgreSQL, Temporal and the workers, with latencies (public)',
      responses: {
        200: {
          description: 'Every dependency is reachable',
          content: { 'application/json': { schema: DetailedHealth } },
        },
        503: { description: 'A dependency is down', content: { 'application/json': { schema: DetailedHealth } } },
      },
    }),
    async (c) => {
      const [postgres, temporal, worker] = await Promise.all([
        checkPostgres(deps),
        deps.workflows.checkServer(),
        deps.workflows.checkWorkers(),
      ]);
      const ok = postgres.ok && temporal.ok && worker.ok;
      return c.json(
        { status: ok ? ('ok' as const) : ('degraded' as const), checks: { postgres, temporal, worker } },
        ok ? 200 : 503,
      );
    },
  );
}
