/**
 * `npm run bench:investigate`: automated incidents through triage and investigation with the
 * built-in analyzer, against the service as `npm start` runs it (child process). Each incident is
 * one generic webhook with a distinct alert; per incident, the time from sending its webhook to
 * its investigation's root cause being stored.
 *  1. Sustained: BENCH_INCIDENTS (200) incidents arriving at BENCH_RATE (2) per second, the way
 *     alerts of distinct problems arrive: the p50/p99 the target names. Each alert names a service
 *     of its own: alerts of one service are grouped into one incident (ADR 0264).
 *  2. Burst: BENCH_BURST_INCIDENTS (200) posted at once by BENCH_CONCURRENCY (10) senders: the
 *     stack's capacity in incidents per second (the latency is then the backlog's), the CPU each
 *     process used meanwhile, and what a few of its investigations cost in Temporal history events.
 *  3. On the same Temporal dev server, bare workflows (start → complete, no activity) with a
 *     worker in this process: closed-loop rate (c = BENCH_CONCURRENCY), and 200 started at once,
 *     whose p99 is the floor any burst of 200 pays on this machine before doing any work.
 * Prints figures only. Targets (issues 5 and 37): sustained p99 webhook-to-root-cause ≤ 3 s at 2/s;
 * burst of 200 p99 ≤ 15 s; capacity ≥ 25 % of the bare workflow rate.
 */
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { Client, Connection } from '@temporalio/client';
import { NativeConnection, Worker } from '@temporalio/worker';
import postgres from 'postgres';
import { temporalConnectionOptions } from '../src/temporal/connection.js';
import { devServerPids, percentile, processCpuWindow, runBenchmark, startStack } from './stack.js';

const incidentsWanted = Number(process.env.BENCH_INCIDENTS ?? 200);
const rate = Number(process.env.BENCH_RATE ?? 2);
const burstCount = Number(process.env.BENCH_BURST_INCIDENTS ?? 200);
const concurrency = Number(process.env.BENCH_CONCURRENCY ?? 10);
const here = path.dirname(fileURLToPath(import.meta.url));

async function bareWorkflows(
  address: string,
  count: number,
  devServer: number[],
): Promise<{
  perSecond: number;
  p50: number;
  p99: number;
  burstP99: number;
  burstSeconds: number;
  devServerCoreMs: number;
}> {
  const taskQueue = `bench-bare-${Date.now()}`;
  const nativeConnection = await NativeConnection.connect({ address });
  const worker = await Worker.create({
    connection: nativeConnection,
    taskQueue,
    workflowsPath: path.join(here, 'workflows', 'bare.ts'),
  });
  const running = worker.run();
  const connection = await Connection.connect(temporalConnectionOptions(address));
  const client = new Client({ connection });
  // Warm-up: the first workflow pays for the worker's start.
  await client.workflow.execute('bareWorkflow', { taskQueue, workflowId: `bare-warm-${Date.now()}` });
  const latencies: number[] = [];
  let next = 0;
  const started = performance.now();
  const devServerCpu = processCpuWindow({ 'Temporal dev server': devServer });
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
  // The dev server's CPU for one bare workflow, to weigh an investigation's share against.
  const devServerCoreMs = (1000 * (devServerCpu()['Temporal dev server'] ?? 0) * seconds) / count;
  // All at once: started together, each waited for.
  const burstStarted = performance.now();
  const burst = await Promise.all(
    Array.from({ length: count }, async (_, i) => {
      await client.workflow.execute('bareWorkflow', { taskQueue, workflowId: `bare-burst-${Date.now()}-${i}` });
      return performance.now() - burstStarted;
    }),
  );
  const burstSeconds = (performance.now() - burstStarted) / 1000;
  burst.sort((a, b) => a - b);
  worker.shutdown();
  await running;
  await connection.close();
  await nativeConnection.close();
  latencies.sort((a, b) => a - b);
  return {
    perSecond: count / seconds,
    p50: percentile(latencies, 50),
    p99: percentile(latencies, 99),
    burstP99: percentile(burst, 99),
    burstSeconds,
    devServerCoreMs,
  };
}

const millis = (t: { seconds?: unknown; nanos?: number | null } | null | undefined): number =>
  Number(t?.seconds ?? 0) * 1000 + (t?.nanos ?? 0) / 1e6;

/**
 * What some incidents' workflows cost Temporal so far: history events, workflow tasks, activities,
 * local activities; and how long their tasks waited between scheduled and started (a queue).
 */
async function historyCost(address: string, incidentIds: string[]): Promise<string> {
  const connection = await Connection.connect(temporalConnectionOptions(address));
  const client = new Client({ connection });
  const totals = { events: 0, workflowTasks: 0, activities: 0, localActivities: 0 };
  const waits = { workflowTask: [] as number[], activity: [] as number[] };
  for (const id of incidentIds) {
    const history = await client.workflow.getHandle(id).fetchHistory();
    const scheduledAt = new Map<number, number>();
    for (const event of history.events ?? []) {
      totals.events++;
      const at = millis(event.eventTime);
      if (event.workflowTaskScheduledEventAttributes || event.activityTaskScheduledEventAttributes)
        scheduledAt.set(Number(event.eventId), at);
      const wft = event.workflowTaskStartedEventAttributes;
      if (wft) waits.workflowTask.push(at - (scheduledAt.get(Number(wft.scheduledEventId)) ?? at));
      const act = event.activityTaskStartedEventAttributes;
      if (act) waits.activity.push(at - (scheduledAt.get(Number(act.scheduledEventId)) ?? at));
      if (event.workflowTaskCompletedEventAttributes) totals.workflowTasks++;
      if (event.activityTaskScheduledEventAttributes) totals.activities++;
      if (event.markerRecordedEventAttributes) totals.localActivities++;
    }
  }
  await connection.close();
  const each = (n: number) => (n / Math.max(1, incidentIds.length)).toFixed(1);
  const mean = (list: number[]) => (list.reduce((a, b) => a + b, 0) / Math.max(1, list.length)).toFixed(0);
  return (
    `per investigation (${incidentIds.length} of the burst's workflows): ${each(totals.events)} history events, ` +
    `${each(totals.workflowTasks)} workflow tasks, ${each(totals.activities)} activities, ${each(totals.localActivities)} markers ` +
    `(local activities and patches); mean wait from scheduled to started: workflow tasks ${mean(waits.workflowTask)} ms, ` +
    `activities ${mean(waits.activity)} ms`
  );
}

async function main() {
  const stack = await startStack({ WEBHOOK_RATE_LIMIT_PER_MINUTE: '100000000' });
  const db = postgres(stack.databaseUrl, { max: 2 });
  // Enterprise with custom quotas far above any run (decision 251: enterprise quotas are numbers).
  await db`update tenants set plan = 'plan_enterprise', settings = settings || ${db.json({ quotas: { investigationsPerMonth: 1_000_000_000, eventsPerMonth: 1_000_000_000 } })} where id = ${stack.tenantId}`;
  const created = await fetch(`${stack.baseUrl}/v1/api-keys`, {
    method: 'POST',
    headers: { authorization: `Bearer ${stack.token}`, 'content-type': 'application/json' },
    body: JSON.stringify({ name: 'bench' }),
  });
  const { key } = (await created.json()) as { key: string };
  const url = `${stack.baseUrl}/v1/webhooks/${stack.tenantId}/generic`;

  const opened = new Set<string>();
  /** One alert of a service of its own (`service`), which must open an incident of its own. */
  const post = async (name: string, i: number, service: string): Promise<{ incidentId: string; sentAt: number }> => {
    const sentAt = Date.now();
    const res = await fetch(url, {
      method: 'POST',
      headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
      body: JSON.stringify({
        name,
        severity: ['critical', 'high', 'warning'][i % 3],
        service,
        summary: `errors above threshold on shard ${i}`,
      }),
    });
    const body = (await res.json()) as { incidentIds: string[] };
    const incidentId = body.incidentIds?.[0];
    if (res.status !== 202 || !incidentId) throw new Error(`webhook answered ${res.status}`);
    // An alert grouped into an earlier incident would be timed from the wrong webhook.
    if (opened.has(incidentId)) throw new Error(`${name} joined incident ${incidentId}: alerts must not group here`);
    opened.add(incidentId);
    return { incidentId, sentAt };
  };
  /** Waits for every root cause; latencies from the investigations' completion times (same clock). */
  const rootCauses = async (sent: Map<string, number>) => {
    const deadline = Date.now() + 10 * 60_000;
    let done: Array<{ incident_id: string; completed_at: Date }> = [];
    while (Date.now() < deadline) {
      done = await db<{ incident_id: string; completed_at: Date }[]>`
        select incident_id, completed_at from investigations
        where incident_id = any(${[...sent.keys()]}::text[]) and status = 'completed' and root_cause is not null`;
      if (done.length >= sent.size) break;
      await new Promise((r) => setTimeout(r, 100));
    }
    const latencies = done.map((row) => row.completed_at.getTime() - sent.get(row.incident_id)!).sort((a, b) => a - b);
    const first = Math.min(...sent.values());
    const last = Math.max(...done.map((row) => row.completed_at.getTime()));
    return { latencies, perSecond: latencies.length / ((last - first) / 1000) };
  };

  // 1. Sustained arrivals.
  const sustained = new Map<string, number>();
  const startedAt = Date.now();
  const inFlight: Array<Promise<void>> = [];
  for (let i = 0; i < incidentsWanted; i++) {
    const due = startedAt + (i * 1000) / rate;
    await new Promise((r) => setTimeout(r, Math.max(0, due - Date.now())));
    inFlight.push(
      post(`SustainedIncident${i}`, i, `svc-sustained-${i}`).then(
        ({ incidentId, sentAt }) => void sustained.set(incidentId, sentAt),
      ),
    );
  }
  await Promise.all(inFlight);
  const steady = await rootCauses(sustained);
  console.log(
    `sustained at ${rate}/s: ${steady.latencies.length}/${sustained.size} root causes, webhook→root cause ` +
      `p50 ${percentile(steady.latencies, 50).toFixed(0)} ms, p99 ${percentile(steady.latencies, 99).toFixed(0)} ms (target ≤ 3000), max ${steady.latencies.at(-1)?.toFixed(0)} ms`,
  );

  // 2. A burst: all posted as fast as the senders go.
  const burst = new Map<string, number>();
  const cpuByProcess = processCpuWindow({
    'service (api and worker)': [stack.pid],
    'Temporal dev server': devServerPids(stack),
    'load generator': [process.pid],
  });
  let next = 0;
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (next < burstCount) {
        const i = next++;
        const { incidentId, sentAt } = await post(`BurstIncident${i}`, i, `svc-burst-${i}`);
        burst.set(incidentId, sentAt);
      }
    }),
  );
  const drained = await rootCauses(burst);
  const cpu = cpuByProcess();
  console.log(
    `burst of ${burstCount}: ${drained.latencies.length}/${burst.size} root causes, ${drained.perSecond.toFixed(1)} incidents/s, ` +
      `webhook→root cause p50 ${percentile(drained.latencies, 50).toFixed(0)} ms, p99 ${percentile(drained.latencies, 99).toFixed(0)} ms, max ${drained.latencies.at(-1)?.toFixed(0)} ms`,
  );
  console.log(
    `CPU during the burst, in cores: ${Object.entries(cpu)
      .sort(([, a], [, b]) => b - a)
      .map(([name, cores]) => `${name} ${cores.toFixed(2)}`)
      .join(', ')}`,
  );
  // Cores over the burst's duration (burstCount / perSecond), shared out over its investigations.
  const coreMsEach = (cores: number) => ((1000 * cores) / drained.perSecond).toFixed(0);
  console.log(
    `CPU per investigation in the burst: ${coreMsEach(Object.values(cpu).reduce((a, b) => a + b, 0))} core-ms ` +
      `(${Object.entries(cpu)
        .filter(([, cores]) => cores >= 0.01)
        .map(([name, cores]) => `${name} ${coreMsEach(cores)}`)
        .join(', ')})`,
  );
  // Spread over the burst: the first ones waited least, the last ones most.
  const sample = [...burst.keys()].filter((_, i) => i % Math.max(1, Math.floor(burst.size / 10)) === 0);
  console.log(await historyCost(stack.temporalAddress, sample));
  const [failures] = await db<
    { n: number }[]
  >`select count(*)::int as n from investigations where tenant_id = ${stack.tenantId} and status = 'failed'`;
  console.log(`failed investigations: ${failures!.n}`);
  await db.end();

  // 3. The dev server's own rate.
  const bare = await bareWorkflows(stack.temporalAddress, burstCount, devServerPids(stack));
  const devServerPerInvestigation =
    ((cpu['Temporal dev server'] ?? 0) * 1000 * burstCount) / drained.perSecond / burstCount;
  console.log(
    `bare workflows on the same dev server: ${bare.perSecond.toFixed(1)}/s (c=${concurrency}), p50 ${bare.p50.toFixed(0)} ms, p99 ${bare.p99.toFixed(0)} ms, ` +
      `dev server CPU ${bare.devServerCoreMs.toFixed(1)} core-ms each (an investigation: ${devServerPerInvestigation.toFixed(0)}); ` +
      `${burstCount} at once: done in ${bare.burstSeconds.toFixed(1)} s, p99 ${bare.burstP99.toFixed(0)} ms`,
  );
  console.log(
    `result: p99 webhook→root cause ${percentile(steady.latencies, 99).toFixed(0)} ms at ${rate} incidents/s sustained (target ≤ 3000); ` +
      `capacity ${drained.perSecond.toFixed(1)} incidents/s through triage and investigation = ${((100 * drained.perSecond) / bare.perSecond).toFixed(0)} % of the bare workflow rate; ` +
      `a burst of ${burstCount}: p99 ${percentile(drained.latencies, 99).toFixed(0)} ms (bare workflows alone: ${bare.burstP99.toFixed(0)} ms)`,
  );
  await stack.stop();
}

runBenchmark(main);
