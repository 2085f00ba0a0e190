import type { MiddlewareHandler } from 'hono';
import { matchedRoutes } from 'hono/route';
import type postgres from 'postgres';
import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from 'prom-client';
import { providers } from '../ingest/providers/index.js';
import { gateOf } from '../api/middleware/gates.js';

/** Every metric the service exports starts with this, so dashboards and alerts find only ours. */
export const METRIC_PREFIX = 'incident_service_';

/** Label of a request no route matched: its raw path would make one series per scanner probe. */
const UNMATCHED_ROUTE = 'unmatched';
const knownProviders = new Set(Object.keys(providers));

export interface ApiMetrics {
  registry: Registry;
  /** Times every request but the scrape itself and counts webhook outcomes and 429s. */
  middleware: MiddlewareHandler;
}

/** What a webhook answer means to whoever watches ingestion (bounded: four values). */
export function webhookOutcome(status: number): 'accepted' | 'throttled' | 'rejected' | 'failed' {
  if (status < 400) return 'accepted';
  if (status === 429) return 'throttled';
  return status < 500 ? 'rejected' : 'failed';
}

/**
 * The route template Hono matched (`/v1/incidents/:id`), never the raw path; `app.use`
 * middleware registers as method ALL, so the last other match is the handler that answered.
 */
function routeTemplateOf(c: Parameters<MiddlewareHandler>[0]): string {
  const handlers = matchedRoutes(c).filter((r) => r.method !== 'ALL');
  return handlers.at(-1)?.path ?? UNMATCHED_ROUTE;
}

/**
 * The api's metrics, one registry per app (several apps share a test process). Pool use is read
 * from PostgreSQL at scrape time (postgres.js exposes no pool counters): this database's
 * connections by state, beside the pool bound of this process.
 */
export function createApiMetrics(deps: {
  sql: postgres.Sql;
  poolMax?: number;
  openStreams?: () => number;
}): ApiMetrics {
  const registry = new Registry();
  collectDefaultMetrics({ register: registry, prefix: METRIC_PREFIX });
  const duration = new Histogram({
    name: `${METRIC_PREFIX}http_request_duration_seconds`,
    help: 'Api request duration until the answer starts, by route template and status',
    labelNames: ['method', 'route', 'status'],
    buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10],
    registers: [registry],
  });
  const deliveries = new Counter({
    name: `${METRIC_PREFIX}webhook_deliveries_total`,
    help: 'Webhook deliveries by provider and outcome (accepted, rejected, throttled, failed)',
    labelNames: ['provider', 'outcome'],
    registers: [registry],
  });
  const refusals = new Counter({
    name: `${METRIC_PREFIX}rate_limit_refusals_total`,
    help: 'Requests answered 429, by the gate that counted them (address, webhook-key, principal)',
    labelNames: ['gate'],
    registers: [registry],
  });
  new Gauge({
    name: `${METRIC_PREFIX}sse_connections`,
    help: 'Open event-stream (SSE) connections of this api process',
    registers: [registry],
    collect() {
      this.set(deps.openStreams?.() ?? 0);
    },
  });
  new Gauge({
    name: `${METRIC_PREFIX}db_pool_max_connections`,
    help: 'The connection bound of this process’s main database pool',
    registers: [registry],
    collect() {
      this.set(deps.poolMax ?? 0);
    },
  });
  new Gauge({
    name: `${METRIC_PREFIX}db_connections`,
    help: 'Connections to this database by state (pg_stat_activity, all processes of the service)',
    labelNames: ['state'],
    registers: [registry],
    async collect() {
      this.reset();
      // A scrape during a database outage still shows the rest (this family is left out).
      const rows = await deps.sql<Array<{ state: string; n: number }>>`
        select coalesce(state, 'unknown') as state, count(*)::int as n
        from pg_stat_activity where datname = current_database() and backend_type = 'client backend'
        group by 1`.catch(() => undefined);
      if (!rows) return;
      for (const state of ['active', 'idle', 'idle in transaction']) this.set({ state }, 0);
      for (const row of rows) this.set({ state: row.state }, row.n);
    },
  });

  const middleware: MiddlewareHandler = async (c, next) => {
    if (c.req.path === '/metrics') return next();
    const started = performance.now();
    try {
      await next();
    } finally {
      const status = c.res.status;
      const route = routeTemplateOf(c);
      duration.observe({ method: c.req.method, route, status: String(status) }, (performance.now() - started) / 1000);
      if (status === 429) refusals.inc({ gate: gateOf(c.req.path) });
      if (route === '/v1/webhooks/:tenantId/:provider') {
        const provider = c.req.param('provider') ?? '';
        deliveries.inc({
          provider: knownProviders.has(provider) ? provider : 'unknown',
          outcome: webhookOutcome(status),
        });
      }
    }
  };
  return { registry, middleware };
}
