/**
 * `npm run bench`: throughput and latency of the api's hot paths over real HTTP. The service runs
 * as `npm start` runs it (child process: embedded PostgreSQL, Temporal dev server, worker, api);
 * this process only generates load. Prints figures; asserts nothing.
 * Options: BENCH_INCIDENTS (default 400), BENCH_CONCURRENCY (default 16).
 */
import { cpus } from 'node:os';
import postgres from 'postgres';
import { measure, runBenchmark, startStack } from './stack.js';

const total = Number(process.env.BENCH_INCIDENTS ?? 400);
const concurrency = Number(process.env.BENCH_CONCURRENCY ?? 16);

async function main() {
  const stack = await startStack();
  // Lift the demo tenant's limits so the benchmark measures the service, not its rate limiter.
  const sql = postgres(stack.databaseUrl, { max: 1 });
  await sql`update tenants set plan = 'plan_enterprise', settings = settings || ${sql.json({ rateLimitPerMinute: 10_000_000 })} where id = ${stack.tenantId}`;
  await sql.end();
  const headers = { authorization: `Bearer ${stack.token}`, 'content-type': 'application/json' };
  const call = async (url: string, init?: RequestInit) => {
    const res = await fetch(url, init);
    await res.arrayBuffer();
    return res;
  };

  console.log(
    `machine: ${process.platform} ${process.arch}, node ${process.version}, ${cpus().length} cpus; service in a child process`,
  );
  await measure('GET /health', { count: 2000, parallel: concurrency }, () => call(`${stack.baseUrl}/health`));
  await measure('POST /v1/incidents/chat (+ workflow start)', { count: total, parallel: concurrency }, (i) =>
    call(`${stack.baseUrl}/v1/incidents/chat`, {
      method: 'POST',
      headers,
      body: JSON.stringify({ title: `Bench incident ${i}`, description: 'latency on checkout rose above the SLO' }),
    }),
  );
  await measure('GET /v1/incidents?limit=20', { count: 2000, parallel: concurrency }, () =>
    call(`${stack.baseUrl}/v1/incidents?limit=20`, { headers }),
  );
  await measure('GET /v1/incidents?status=open&limit=100', { count: 500, parallel: concurrency }, () =>
    call(`${stack.baseUrl}/v1/incidents?status=open&limit=100`, { headers }),
  );
  const list = (await (await fetch(`${stack.baseUrl}/v1/incidents?limit=100`, { headers })).json()) as {
    incidents: Array<{ incidentId: string }>;
  };
  const ids = list.incidents.map((i) => i.incidentId);
  await measure('PATCH status (workflow Update)', { count: ids.length, parallel: concurrency }, (i) =>
    call(`${stack.baseUrl}/v1/incidents/${ids[i]}`, {
      method: 'PATCH',
      headers,
      body: JSON.stringify({ status: 'triaging' }),
    }),
  );
  await stack.stop();
}

runBenchmark(main);
