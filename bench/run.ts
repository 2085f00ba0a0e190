/**
 * `npm run bench`: throughput and latency of the hot paths over real HTTP, against the real
 * stack (embedded PostgreSQL, Temporal dev server, worker, api) in one process. Prints figures;
 * asserts nothing. Options: BENCH_INCIDENTS (default 400), BENCH_CONCURRENCY (default 16).
 */
import { chmodSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { signToken } from '../src/auth/tokens.js';
import { loadConfig } from '../src/config.js';
import { connectDatabase, runMigrations } from '../src/db/client.js';
import { startEmbeddedPostgres } from '../src/db/embedded.js';
import { createTenant } from '../src/db/repositories/tenants.js';
import { createLogger } from '../src/logger.js';
import { startApi, startWorker } from '../src/services.js';
import { resolveTemporalCli, startDevServer } from '../src/temporal/dev-server.js';
import { freePort } from '../test/helpers/ports.js';

const total = Number(process.env.BENCH_INCIDENTS ?? 400);
const concurrency = Number(process.env.BENCH_CONCURRENCY ?? 16);
const secret = 'bench-secret-bench-secret-bench-secret-42';

function percentile(sorted: number[], p: number): number {
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))] ?? 0;
}

async function measure(name: string, count: number, parallel: number, call: (i: number) => Promise<Response>) {
  const latencies: number[] = [];
  let next = 0;
  let failures = 0;
  const started = performance.now();
  await Promise.all(
    Array.from({ length: parallel }, async () => {
      while (next < count) {
        const i = next++;
        const t = performance.now();
        const res = await call(i);
        await res.arrayBuffer();
        if (!res.ok) failures++;
        latencies.push(performance.now() - t);
      }
    }),
  );
  const seconds = (performance.now() - started) / 1000;
  latencies.sort((a, b) => a - b);
  console.log(
    `${name.padEnd(34)} n=${String(count).padEnd(5)} c=${String(parallel).padEnd(3)} ` +
      `${(count / seconds).toFixed(1).padStart(7)} req/s  p50 ${percentile(latencies, 50).toFixed(1)} ms  ` +
      `p95 ${percentile(latencies, 95).toFixed(1)} ms  p99 ${percentile(latencies, 99).toFixed(1)} ms  errors ${failures}`,
  );
}

async function main() {
  const root = mkdtempSync(path.join(tmpdir(), 'iis-bench-'));
  chmodSync(root, 0o755);
  const pg = await startEmbeddedPostgres({ dataDir: path.join(root, 'pg'), port: await freePort(), databases: ['bench'], log: () => {} });
  const temporal = await startDevServer({
    cliPath: resolveTemporalCli({ cliPath: process.env.TEMPORAL_CLI_PATH, log: console.log }),
    port: await freePort(),
    namespace: 'default',
    log: () => {},
  });
  const url = pg.url('bench');
  await runMigrations(url);
  const config = loadConfig({ PORT: String(await freePort()), LOG_LEVEL: 'warn', TEMPORAL_TASK_QUEUE: 'bench' });
  const logger = createLogger('warn');
  const settings = { databaseUrl: url, temporalAddress: temporal.address, jwtSecret: secret };
  const worker = await startWorker(config, settings, logger);
  const api = await startApi(config, { ...settings }, logger);

  const database = connectDatabase(url, { max: 1 });
  const tenant = await createTenant(database.db, { name: 'Bench', plan: 'plan_enterprise', settings: { rateLimitPerMinute: 1_000_000 } });
  await database.close();
  const token = signToken({ secret, tenantId: tenant.id, role: 'admin', sub: 'bench', ttlSeconds: 3600 });
  const headers = { authorization: `Bearer ${token}`, 'content-type': 'application/json' };

  console.log(`machine: ${process.platform} ${process.arch}, node ${process.version}, ${(await import('node:os')).cpus().length} cpus`);
  await measure('GET /health', 500, concurrency, () => fetch(`${api.url}/health`));
  await measure('POST /v1/incidents/chat', total, concurrency, (i) =>
    fetch(`${api.url}/v1/incidents/chat`, {
      method: 'POST',
      headers,
      body: JSON.stringify({ title: `Bench incident ${i}`, description: 'latency on checkout rose above the SLO' }),
    }),
  );
  await measure('GET /v1/incidents?limit=20', 500, concurrency, () => fetch(`${api.url}/v1/incidents?limit=20`, { headers }));
  await measure('GET /v1/incidents?status=open&limit=100', 200, concurrency, () =>
    fetch(`${api.url}/v1/incidents?status=open&limit=100`, { headers }),
  );
  const list = (await (await fetch(`${api.url}/v1/incidents?limit=100`, { headers })).json()) as { incidents: Array<{ incidentId: string }> };
  const ids = list.incidents.map((i) => i.incidentId);
  await measure('PATCH status (workflow Update)', ids.length, concurrency, (i) =>
    fetch(`${api.url}/v1/incidents/${ids[i]}`, { method: 'PATCH', headers, body: JSON.stringify({ status: 'triaging' }) }),
  );
  const memory = process.memoryUsage();
  console.log(`process memory after run: rss ${(memory.rss / 2 ** 20).toFixed(0)} MiB, heap used ${(memory.heapUsed / 2 ** 20).toFixed(0)} MiB (api + worker in one process)`);

  await api.stop();
  await worker.stop();
  await temporal.stop();
  await pg.stop();
  rmSync(root, { recursive: true, force: true });
}

main().then(
  () => process.exit(0),
  (err: unknown) => {
    console.error(err);
    process.exit(1);
  },
);
