/**
 * `npm run bench:abuse`: what large and forged webhook deliveries cost everyone else (issue 34,
 * item 1). The api is the production one (`node dist/api/server.js`) beside the service as
 * `npm start` runs it (worker at nice 19, as in bench:ingest). For BENCH_SECONDS (30):
 * - 4 senders post 3.1 MB generic alerts of 250,000 labels with made-up `flo_` keys, back to back,
 *   to the legitimate tenant's own webhook path, from the same address as everyone else;
 * - 2 senders post 3.9 MB valid deliveries of a second tenant (50 alerts with 78 KB of text each),
 *   back to back, each with its own X-Delivery-Id;
 * - the legitimate tenant posts normal alerts (4 loops, 50 ms apart) with a valid key;
 * - a probe reads /health every 20 ms.
 * Then every delivery answered 503 is looked up: was it stored all the same? Unless BENCH_FLOOR=0,
 * two more phases put the forged flood alone on the service and on a handler that does nothing
 * but answer (the floor of this machine, where the load generator shares the two cores).
 * Targets (issue 34): /health p99 ≤ 50 ms, the legitimate tenant's webhook p99 ≤ 100 ms,
 * 0 stored deliveries answered 503. Prints figures only.
 */
import { execFileSync } from 'node:child_process';
import { Agent, request } from 'node:http';
import { cpus } from 'node:os';
import postgres from 'postgres';
import { generateApiKey } from '../src/auth/api-keys.js';
import {
  cpuWindow,
  devServerPids,
  lowerWorkerPriority,
  percentile,
  processCpuWindow,
  runBenchmark,
  startApi,
  startFloorServer,
  startStack,
} from './stack.js';

const seconds = Number(process.env.BENCH_SECONDS ?? 30);
const floor = process.env.BENCH_FLOOR !== '0';
const agent = new Agent({ keepAlive: true, maxSockets: 64 });

interface Answer {
  status: number;
  ms: number;
}

function send(url: URL, method: string, headers: Record<string, string>, body?: string | Buffer): Promise<Answer> {
  const started = performance.now();
  return new Promise((resolve) => {
    const req = request(
      url,
      {
        method,
        agent,
        headers: body === undefined ? headers : { ...headers, 'content-length': Buffer.byteLength(body) },
      },
      (res) => {
        res.resume();
        res.on('end', () => resolve({ status: res.statusCode ?? 0, ms: performance.now() - started }));
      },
    );
    // A refused body may be cut off by the server: that is an answer too (status 0).
    req.on('error', () => resolve({ status: 0, ms: performance.now() - started }));
    req.end(body);
  });
}

/** Runs `loops` loops of `call` until the deadline, `pauseMs` apart; returns every answer. */
async function loop(
  loops: number,
  deadline: number,
  pauseMs: number,
  call: (i: number) => Promise<Answer>,
): Promise<Answer[]> {
  const answers: Answer[] = [];
  let next = 0;
  await Promise.all(
    Array.from({ length: loops }, async () => {
      while (performance.now() < deadline) {
        answers.push(await call(next++));
        if (pauseMs > 0) await new Promise((r) => setTimeout(r, pauseMs));
      }
    }),
  );
  return answers;
}

function summary(name: string, answers: Answer[]): { p99: number } {
  const ms = answers.map((a) => a.ms).sort((a, b) => a - b);
  const statuses: Record<number, number> = {};
  for (const a of answers) statuses[a.status] = (statuses[a.status] ?? 0) + 1;
  console.log(
    `${name.padEnd(44)} n=${String(answers.length).padEnd(6)} p50 ${percentile(ms, 50).toFixed(1)} ms  p99 ${percentile(ms, 99).toFixed(1)} ms  ` +
      `max ${(ms.at(-1) ?? 0).toFixed(1)} ms  statuses ${JSON.stringify(statuses)}`,
  );
  return { p99: percentile(ms, 99) };
}

async function createKey(baseUrl: string, token: string): Promise<string> {
  const res = await fetch(`${baseUrl}/v1/api-keys`, {
    method: 'POST',
    headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
    body: JSON.stringify({ name: 'bench' }),
  });
  return ((await res.json()) as { key: string }).key;
}

async function main() {
  const stack = await startStack({ WEBHOOK_RATE_LIMIT_PER_MINUTE: '100000000' });
  const admin = postgres(stack.databaseUrl, { max: 1 });
  const noisyTenant = (
    JSON.parse(execCli(['tenant', 'create', '--name', 'Noisy neighbour', '--plan', 'plan_enterprise'], stack)) as {
      tenantId: string;
    }
  ).tenantId;
  await admin`update tenants set plan = 'plan_enterprise', settings = settings || ${admin.json({ quotas: { eventsPerMonth: 1_000_000_000 } })} where id in (${stack.tenantId}, ${noisyTenant})`;
  const api = await startApi(stack);
  lowerWorkerPriority(stack, 19);
  const legitKey = await createKey(api.baseUrl, stack.token);
  const noisyToken = execCli(['token', '--tenant', noisyTenant, '--role', 'admin'], stack);
  const noisyKey = await createKey(api.baseUrl, noisyToken);

  const labels = Object.fromEntries(Array.from({ length: 250_000 }, (_, i) => [String(i), 'v']));
  // Encoded once: the load generator shares the machine's two cores with the service.
  const forgedBody = Buffer.from(JSON.stringify({ name: 'Stall', labels }));
  const bigBody = Buffer.from(
    JSON.stringify({
      alerts: Array.from({ length: 50 }, (_, i) => ({
        name: `BulkExport${i}`,
        severity: 'low',
        service: 'reporting',
        summary: 'nightly export lagging',
        description: 'x'.repeat(78_000),
        fingerprint: `bulk-${i}`,
      })),
    }),
  );
  console.log(
    `machine: ${process.platform} ${process.arch}, node ${process.version}, ${cpus().length} cpus; forged body ${forgedBody.byteLength} bytes, valid large body ${bigBody.byteLength} bytes`,
  );
  const json = { 'content-type': 'application/json' };
  /** One phase: the flood (forged, and large valid deliveries unless `large` is false) beside the legitimate tenant and the probe. */
  const phase = async (
    name: string,
    baseUrl: string,
    options: { large: boolean; forged?: boolean; pids: Record<string, number[]> },
  ) => {
    const legitUrl = new URL(`${baseUrl}/v1/webhooks/${stack.tenantId}/generic`);
    const noisyUrl = new URL(`${baseUrl}/v1/webhooks/${noisyTenant}/generic`);
    const cpu = cpuWindow();
    const cpuByProcess = processCpuWindow({ ...options.pids, 'load generator': [process.pid] });
    const deadline = performance.now() + seconds * 1000;
    const waits = sampleWaits(admin, deadline);
    const prefix = `${name.replace(/\W+/g, '-')}-${Date.now()}`;
    const [forged, big, legit, health] = await Promise.all([
      options.forged === false
        ? Promise.resolve([])
        : loop(4, deadline, 0, () =>
            send(legitUrl, 'POST', { ...json, authorization: `Bearer ${generateApiKey().key}` }, forgedBody),
          ),
      options.large
        ? loop(2, deadline, 0, (i) =>
            send(
              noisyUrl,
              'POST',
              { ...json, authorization: `Bearer ${noisyKey}`, 'x-delivery-id': `${prefix}-large-${i}` },
              bigBody,
            ),
          )
        : Promise.resolve([]),
      loop(4, deadline, 50, (i) =>
        send(
          legitUrl,
          'POST',
          { ...json, authorization: `Bearer ${legitKey}`, 'x-delivery-id': `${prefix}-legit-${i}` },
          JSON.stringify({
            name: `Legit${i % 200}`,
            severity: 'high',
            service: `svc-${i % 20}`,
            summary: 'legitimate alert',
          }),
        ),
      ),
      loop(1, deadline, 20, () => send(new URL(`${baseUrl}/health`), 'GET', {})),
    ]);
    console.log(`\n${name}`);
    console.log(
      `cpu: ${cpu()}; cores used: ${Object.entries(cpuByProcess())
        .map(([n, cores]) => `${n} ${cores.toFixed(2)}`)
        .join(', ')}`,
    );
    if (options.forged !== false) summary('forged keys, 3.1 MB bodies (4 senders)', forged);
    if (options.large) summary('valid key, 3.9 MB bodies (2 senders)', big);
    const legitResult = summary('legitimate tenant, normal alerts', legit);
    const healthResult = summary('/health every 20 ms', health);
    console.log(`database sessions at work, sampled every 50 ms (wait, statement): ${await waits}`);
    // Answered 503 yet stored? (The floor stores nothing.)
    const answered503 = [
      ...big.flatMap((a, i) => (a.status === 503 ? [{ tenantId: noisyTenant, key: `id:${prefix}-large-${i}` }] : [])),
      ...legit.flatMap((a, i) =>
        a.status === 503 ? [{ tenantId: stack.tenantId, key: `id:${prefix}-legit-${i}` }] : [],
      ),
    ];
    const [{ stored }] = answered503.length
      ? await admin<
          { stored: number }[]
        >`select count(*)::int as stored from webhook_deliveries d join unnest(${answered503.map((a) => a.tenantId)}::text[], ${answered503.map((a) => a.key)}::text[]) as x(tenant_id, delivery_key) on d.tenant_id = x.tenant_id and d.delivery_key = x.delivery_key`
      : [{ stored: 0 }];
    return { health: healthResult.p99, legit: legitResult.p99, answered503: answered503.length, stored };
  };
  const servicePids = { api: [api.pid], worker: [stack.pid], 'Temporal dev server': devServerPids(stack) };
  if (floor) {
    // What the legitimate tenant sees with no flood at all: the worker investigating beside it.
    const quiet = await phase('the service: no flood', api.baseUrl, { large: false, forged: false, pids: servicePids });
    console.log(
      `no flood: /health p99 ${quiet.health.toFixed(1)} ms, legitimate webhook p99 ${quiet.legit.toFixed(1)} ms`,
    );
  }
  const all = await phase('the service: forged and large valid deliveries', api.baseUrl, {
    large: true,
    pids: servicePids,
  });
  console.log(
    `result: /health p99 ${all.health.toFixed(1)} ms (target ≤ 50), legitimate webhook p99 ${all.legit.toFixed(1)} ms (target ≤ 100), ` +
      `${all.answered503} deliveries answered 503, of which ${all.stored} stored (target 0)`,
  );
  if (floor) {
    // The same forged flood against the service, then against a handler that does nothing but
    // answer (bench/floor-server.ts: 401 and close to a forged key, 202 to the legitimate one).
    const forgedOnly = await phase('the service: forged deliveries only', api.baseUrl, {
      large: false,
      pids: servicePids,
    });
    const bare = await startFloorServer({ FLOOR_ACCEPTED_KEY: legitKey });
    const atFloor = await phase('the floor (do-nothing handler): forged deliveries only', bare.baseUrl, {
      large: false,
      pids: {},
    });
    bare.stop();
    console.log(
      `forged flood only: /health p99 ${forgedOnly.health.toFixed(1)} ms against the floor's ${atFloor.health.toFixed(1)} ms, ` +
        `legitimate webhook p99 ${forgedOnly.legit.toFixed(1)} ms against the floor's ${atFloor.legit.toFixed(1)} ms`,
    );
  }
  await admin.end();
  agent.destroy();
  api.stop();
  await stack.stop();
}
/** The commonest (wait event, statement start) pairs of the busy client sessions until `deadline`. */
async function sampleWaits(sql: postgres.Sql, deadline: number): Promise<string> {
  const counts = new Map<string, number>();
  let samples = 0;
  while (performance.now() < deadline) {
    const rows = await sql<{ what: string }[]>`
      select coalesce(wait_event_type || ':' || wait_event, 'cpu') || ' ' || left(regexp_replace(query, '[[:space:]]+', ' ', 'g'), 40) as what
      from pg_stat_activity where state = 'active' and backend_type = 'client backend' and pid <> pg_backend_pid()`;
    samples++;
    for (const { what } of rows) counts.set(what, (counts.get(what) ?? 0) + 1);
    await new Promise((r) => setTimeout(r, 50));
  }
  const top = [...counts].sort((a, b) => b[1] - a[1]).slice(0, 6);
  return `${samples} samples; ${top.map(([what, n]) => `${(n / samples).toFixed(2)} × ${what}`).join('; ')}`;
}

function execCli(args: string[], stack: { dataDir: string; databaseUrl: string; temporalAddress: string }): string {
  return execFileSync('npm', ['run', '--silent', 'cli', '--', ...args], {
    env: {
      ...process.env,
      DATA_DIR: stack.dataDir,
      DATABASE_URL: stack.databaseUrl,
      TEMPORAL_ADDRESS: stack.temporalAddress,
      LOG_LEVEL: 'warn',
    },
    encoding: 'utf8',
  }).trim();
}

runBenchmark(main);
