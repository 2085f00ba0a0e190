/**
 * `npm run bench:investigate`: automated incidents through triage and investigation with the
 * built-in analyzer, against the service as `npm start` runs it (child process). 200 distinct
 * alerts are posted as webhooks (BENCH_INCIDENTS, BENCH_CONCURRENCY 10); for each incident, the
 * time from sending its webhook to its investigation's root cause being stored. Then, on the
 * same Temporal dev server, the rate of bare workflows (start → complete, no activity) with a
 * worker in this process, and the ratio of the two rates. Prints figures only.
 * Then BENCH_PACED_INCIDENTS (30) arriving at BENCH_PACED_RATE (1) per second, for the latency of
 * the pipeline itself rather than of the burst's backlog.
 * Target (issue 5): p99 webhook-to-root-cause ≤ 3 s.
 */
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { Client, Connection } from '@temporalio/client';
import { NativeConnection, Worker } from '@temporalio/worker';
import postgres from 'postgres';
import { percentile, runBenchmark, startStack } from './stack.js';

const incidentsWanted = Number(process.env.BENCH_INCIDENTS ?? 200);
const concurrency = Number(process.env.BENCH_CONCURRENCY ?? 10);
const here = path.dirname(fileURLToPath(import.meta.url));

async function bareWorkflowRate(address: string, count: number): Promise<{ perSecond: number; p50: number; p99: number }> {
  const taskQueue = `bench-bare-${Date.now()}`;
  const nativeConnection = await NativeConnection.connect({ address });
  const worker = await Worker.create({ connection: nativeConnection, taskQueue, workflowsPath: path.join(here, 'workflows', 'bare.ts') });
  const running = worker.run();
  const connection = await Connection.connect({ address });
  const client = new Client({ connection });
  // Warm-up: the first workflow pays for the worker's start.
  await client.workflow.execute('bareWorkflow', { taskQueue, workflowId: `bare-warm-${Date.now()}` });
  const latencies: number[] = [];
  let next = 0;
  const started = performance.now();
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (next < count) {
        const i = next++;
        const t = performance.now();
        await client.workflow.execute('bareWorkflow', { taskQueue, workflowId: `bare-${Date.now()}-${i}` });
        latencies.push(performance.now() - t);
      }
    }),
  );
  const seconds = (performance.now() - started) / 1000;
  worker.shutdown();
  await running;
  await connection.close();
  await nativeConnection.close();
  latencies.sort((a, b) => a - b);
  return { perSecond: count / seconds, p50: percentile(latencies, 50), p99: percentile(latencies, 99) };
}

async function main() {
  const stack = await startStack({ WEBHOOK_RATE_LIMIT_PER_MINUTE: '100000000' });
  const db = postgres(stack.databaseUrl, { max: 2 });
  await db`update tenants set plan = 'plan_enterprise' where id = ${stack.tenantId}`; // unlimited investigations
  const created = await fetch(`${stack.baseUrl}/v1/api-keys`, {
    method: 'POST',
    headers: { authorization: `Bearer ${stack.token}`, 'content-type': 'application/json' },
    body: JSON.stringify({ name: 'bench' }),
  });
  const { key } = (await created.json()) as { key: string };
  const url = `${stack.baseUrl}/v1/webhooks/${stack.tenantId}/generic`;

  const sentAt = new Map<string, number>();
  let next = 0;
  const firstSent = performance.now();
  const epochOffset = Date.now() - performance.now(); // performance time → wall clock
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (next < incidentsWanted) {
        const i = next++;
        const t = performance.now();
        const res = await fetch(url, {
          method: 'POST',
          headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
          body: JSON.stringify({ name: `BenchIncident${i}`, severity: ['critical', 'high', 'warning'][i % 3], service: `svc-${i % 20}`, summary: `errors above threshold on shard ${i}` }),
        });
        const body = (await res.json()) as { incidentIds: string[] };
        if (res.status !== 202 || !body.incidentIds[0]) throw new Error(`webhook answered ${res.status}`);
        sentAt.set(body.incidentIds[0], t);
      }
    }),
  );

  // Wait for every root cause; read completion times from the investigations table.
  const deadline = Date.now() + 10 * 60_000;
  let done: Array<{ incident_id: string; completed_at: string }> = [];
  while (Date.now() < deadline) {
    done = await db<{ incident_id: string; completed_at: string }[]>`
      select incident_id, completed_at from investigations
      where tenant_id = ${stack.tenantId} and status = 'completed' and root_cause is not null`;
    if (done.length >= sentAt.size) break;
    await new Promise((r) => setTimeout(r, 100));
  }
  const latencies = done
    .filter((row) => sentAt.has(row.incident_id))
    .map((row) => new Date(row.completed_at).getTime() - (sentAt.get(row.incident_id)! + epochOffset))
    .sort((a, b) => a - b);
  const lastDone = Math.max(...done.map((row) => new Date(row.completed_at).getTime()));
  const seconds = (lastDone - (firstSent + epochOffset)) / 1000;
  const perSecond = latencies.length / seconds;
  const [failed] = await db<{ n: number }[]>`select count(*)::int as n from investigations where tenant_id = ${stack.tenantId} and status = 'failed'`;
  console.log(
    `investigations: ${latencies.length}/${sentAt.size} completed (${failed!.n} failed), ${perSecond.toFixed(1)} incidents/s, ` +
      `webhook→root cause p50 ${percentile(latencies, 50).toFixed(0)} ms, p99 ${percentile(latencies, 99).toFixed(0)} ms (target ≤ 3000), max ${latencies.at(-1)?.toFixed(0)} ms`,
  );

  // Paced: incidents arriving one at a time at a rate the stack sustains, so the latency is the
  // pipeline's own and not the backlog's.
  const pacedCount = Number(process.env.BENCH_PACED_INCIDENTS ?? 30);
  const pacedRate = Number(process.env.BENCH_PACED_RATE ?? 1);
  const pacedSent = new Map<string, number>();
  for (let i = 0; i < pacedCount; i++) {
    const t = Date.now();
    const res = await fetch(url, {
      method: 'POST',
      headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
      body: JSON.stringify({ name: `PacedIncident${i}`, severity: 'high', service: `svc-${i % 20}`, summary: `paced errors ${i}` }),
    });
    const body = (await res.json()) as { incidentIds: string[] };
    pacedSent.set(body.incidentIds[0]!, t);
    await new Promise((r) => setTimeout(r, Math.max(0, 1000 / pacedRate - (Date.now() - t))));
  }
  const pacedDeadline = Date.now() + 5 * 60_000;
  let pacedDone: Array<{ incident_id: string; completed_at: string }> = [];
  while (Date.now() < pacedDeadline) {
    pacedDone = await db<{ incident_id: string; completed_at: string }[]>`
      select incident_id, completed_at from investigations
      where incident_id = any(${[...pacedSent.keys()]}::text[]) and status = 'completed' and root_cause is not null`;
    if (pacedDone.length >= pacedSent.size) break;
    await new Promise((r) => setTimeout(r, 100));
  }
  const paced = pacedDone.map((row) => new Date(row.completed_at).getTime() - pacedSent.get(row.incident_id)!).sort((a, b) => a - b);
  console.log(
    `paced at ${pacedRate}/s: ${paced.length}/${pacedSent.size} completed, webhook→root cause p50 ${percentile(paced, 50).toFixed(0)} ms, p99 ${percentile(paced, 99).toFixed(0)} ms (target ≤ 3000)`,
  );
  await db.end();

  const bare = await bareWorkflowRate(stack.temporalAddress, incidentsWanted);
  console.log(`bare workflows on the same dev server: ${bare.perSecond.toFixed(1)}/s (c=${concurrency}), p50 ${bare.p50.toFixed(0)} ms, p99 ${bare.p99.toFixed(0)} ms`);
  console.log(
    `result: ${perSecond.toFixed(1)} incidents/s through triage and investigation = ${((100 * perSecond) / bare.perSecond).toFixed(0)} % of the bare workflow rate; ` +
      `p99 webhook→root cause ${percentile(latencies, 99).toFixed(0)} ms in the burst, ${percentile(paced, 99).toFixed(0)} ms paced at ${pacedRate}/s (target ≤ 3000)`,
  );
  await stack.stop();
}

runBenchmark(main);
