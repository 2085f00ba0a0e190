import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import type postgres from 'postgres';
import { Gauge, Registry, collectDefaultMetrics } from 'prom-client';
import { METRIC_PREFIX } from './api-metrics.js';
import { sdkMetricsReader } from './sdk-metrics.js';

/** Buckets of the webhook→root-cause histogram, in seconds: from a fast built-in analysis to an hour. */
export const ROOT_CAUSE_BUCKETS = [5, 15, 30, 60, 120, 300, 600, 1800, 3600] as const;
const ROOT_CAUSE = `${METRIC_PREFIX}webhook_to_root_cause_seconds`;

/**
 * The service's own worker metrics, read from PostgreSQL at scrape time across every tenant (no
 * tenant label: bounded series). Being read from the rows the activities write idempotently,
 * they are right however often an activity is retried, and after a worker restarts; counts that
 * only grow are exported as counters' `_total` names although a purge can lower them. With
 * `sdkMetricsUrl` (core's loopback exporter), the Temporal SDK's own metrics follow them.
 */
export function createWorkerMetrics(
  sql: postgres.Sql,
  options: { sdkMetricsUrl?: string | undefined; sdkMetricsTimeoutMs?: number } = {},
): { registry: Registry; metrics: () => Promise<string> } {
  const registry = new Registry();
  collectDefaultMetrics({ register: registry, prefix: `${METRIC_PREFIX}worker_` });
  const gauge = (name: string, help: string, labelNames: string[], read: (g: Gauge) => Promise<void>) =>
    new Gauge({
      name: `${METRIC_PREFIX}${name}`,
      help,
      labelNames,
      registers: [registry],
      async collect() {
        await read(this);
      },
    });
  gauge(
    'incidents_opened_total',
    'Incidents opened, by source (automated from webhooks, manual)',
    ['source'],
    async (g) => {
      const rows = await sql<Array<{ source: string; n: number }>>`
      select source, count(*)::int as n from incidents group by source`;
      g.reset();
      for (const source of ['automated', 'manual']) g.set({ source }, 0);
      for (const r of rows) g.set({ source: r.source }, r.n);
    },
  );
  gauge('investigations_total', 'Investigations by status (running, completed, failed)', ['status'], async (g) => {
    const rows = await sql<Array<{ status: string; n: number }>>`
      select status, count(*)::int as n from investigations group by status`;
    g.reset();
    for (const status of ['running', 'completed', 'failed']) g.set({ status }, 0);
    for (const r of rows) g.set({ status: r.status }, r.n);
  });
  gauge('approvals', 'Approvals by status (pending, approved, rejected, expired)', ['status'], async (g) => {
    const rows = await sql<Array<{ status: string; n: number }>>`
      select status, count(*)::int as n from approvals group by status`;
    g.reset();
    for (const status of ['pending', 'approved', 'rejected', 'expired']) g.set({ status }, 0);
    for (const r of rows) g.set({ status: r.status }, r.n);
  });
  gauge('remediation_steps_total', 'Remediation steps by outcome (status)', ['outcome'], async (g) => {
    const rows = await sql<Array<{ status: string; n: number }>>`
      select status, count(*)::int as n from remediation_steps group by status`;
    g.reset();
    for (const outcome of ['pending', 'running', 'succeeded', 'failed', 'skipped']) g.set({ outcome }, 0);
    for (const r of rows) g.set({ outcome: r.status }, r.n);
  });
  const lagSeconds = new Gauge({
    name: `${METRIC_PREFIX}outbox_lag_seconds`,
    help: 'Age of the oldest outbox event a consumer has not yet processed (0: caught up)',
    labelNames: ['consumer'],
    registers: [registry],
  });
  gauge('outbox_lag_events', 'Outbox events a consumer has not yet processed', ['consumer'], async (g) => {
    const rows = await sql<Array<{ name: string; events: number; seconds: number }>>`
      select c.name,
        greatest(coalesce((select max(seq) from events), 0) - c.last_seq, 0)::float8 as events,
        coalesce(extract(epoch from now() - (
          select occurred_at from events e where e.seq > c.last_seq order by e.seq limit 1)), 0)::float8 as seconds
      from event_consumers c`;
    g.reset();
    lagSeconds.reset();
    for (const r of rows) {
      g.set({ consumer: r.name }, r.events);
      lagSeconds.set({ consumer: r.name }, r.seconds);
    }
  });

  // A histogram read from the rows: prom-client's Histogram only observes, so its text is written here.
  async function rootCauseHistogram(): Promise<string> {
    const [row] = await sql<Array<{ buckets: number[]; total: number; sum: number }>>`
      with d as (
        select extract(epoch from v.completed_at - i.created_at)::float8 as secs
        from investigations v join incidents i on i.id = v.incident_id
        where v.status = 'completed' and v.completed_at is not null and i.source = 'automated')
      select array(select count(*) filter (where secs <= b)::int from d, unnest(${sql.array([...ROOT_CAUSE_BUCKETS])}::float8[]) b
                   group by b order by b) as buckets,
             (select count(*)::int from d) as total, (select coalesce(sum(secs), 0)::float8 from d) as sum`;
    const lines = [
      `# HELP ${ROOT_CAUSE} Seconds from the webhook that opened an incident to its root cause (completed investigation)`,
      `# TYPE ${ROOT_CAUSE} histogram`,
      ...ROOT_CAUSE_BUCKETS.map((b, i) => `${ROOT_CAUSE}_bucket{le="${b}"} ${row?.buckets[i] ?? 0}`),
      `${ROOT_CAUSE}_bucket{le="+Inf"} ${row?.total ?? 0}`,
      `${ROOT_CAUSE}_sum ${row?.sum ?? 0}`,
      `${ROOT_CAUSE}_count ${row?.total ?? 0}`,
    ];
    return `${lines.join('\n')}\n`;
  }
  // The SDK's text first: a failure to read it is counted in this very scrape.
  const sdk = options.sdkMetricsUrl
    ? sdkMetricsReader(options.sdkMetricsUrl, registry, options.sdkMetricsTimeoutMs)
    : async () => '';
  return {
    registry,
    metrics: async () => {
      const sdkText = await sdk();
      return `${await registry.metrics()}${await rootCauseHistogram()}${sdkText}`;
    },
  };
}

/**
 * Serves the worker's metrics on `port` (WORKER_METRICS_PORT; 0 picks a free one), with the
 * optional METRICS_TOKEN as for the api. Any path answers, as Prometheus scrapes `/metrics`.
 */
export function serveWorkerMetrics(options: {
  metrics: () => Promise<string>;
  host: string;
  port: number;
  token: string | undefined;
}): Promise<{ url: string; stop: () => Promise<void> }> {
  const server: Server = createServer((req, res) => {
    if (options.token && req.headers.authorization !== `Bearer ${options.token}`) {
      res.writeHead(401, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ error: 'unauthorized', message: 'A valid METRICS_TOKEN bearer token is required' }));
      return;
    }
    options.metrics().then(
      (text) => {
        res.writeHead(200, { 'content-type': 'text/plain; version=0.0.4; charset=utf-8' });
        res.end(text);
      },
      () => {
        res.writeHead(503, { 'content-type': 'application/json' });
        res.end(JSON.stringify({ error: 'service_unavailable', message: 'The metrics could not be read' }));
      },
    );
  });
  return new Promise((resolve, reject) => {
    server.once('error', (err: NodeJS.ErrnoException) =>
      reject(err.code === 'EADDRINUSE' ? new Error(`WORKER_METRICS_PORT ${options.port} is already in use`) : err),
    );
    server.listen(options.port, options.host, () => {
      const { port } = server.address() as AddressInfo;
      const host = options.host === '0.0.0.0' ? '127.0.0.1' : options.host;
      resolve({
        url: `http://${host}:${port}/metrics`,
        stop: () => new Promise<void>((done) => server.close(() => done())),
      });
    });
  });
}
