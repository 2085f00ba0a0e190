/**
 * `npm run bench:abuse`: what large and forged webhook deliveries cost everyone else (issue 34,
 * item 1). The api is the production one (`node dist/api/server.js`) beside the service as
 * `npm start` runs it (worker at nice 19, as in bench:ingest). For BENCH_SECONDS (30):
 * - 4 senders post 3.9 MB generic alerts of 250,000 labels with made-up `flo_` keys, back to back,
 *   to the legitimate tenant's own webhook path, from the same address as everyone else;
 * - 2 senders post 3.9 MB valid deliveries of a second tenant (50 alerts with 78 KB of text each),
 *   back to back, each with its own X-Delivery-Id;
 * - the legitimate tenant posts normal alerts (4 loops, 50 ms apart) with a valid key;
 * - a probe reads /health every 20 ms.
 * Then every delivery answered 503 is looked up: was it stored all the same?
 * Targets (issue 34): /health p99 ≤ 50 ms, the legitimate tenant's webhook p99 ≤ 100 ms,
 * 0 stored deliveries answered 503. Prints figures only.
 */
import { execFileSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { Agent, request } from 'node:http';
import { cpus } from 'node:os';
import postgres from 'postgres';
import { cpuWindow, devServerPids, lowerWorkerPriority, percentile, processCpuWindow, runBenchmark, startApi, startStack } from './stack.js';

const seconds = Number(process.env.BENCH_SECONDS ?? 30);
const agent = new Agent({ keepAlive: true, maxSockets: 64 });

interface Answer {
  status: number;
  ms: number;
}

function send(url: URL, method: string, headers: Record<string, string>, body?: string | Buffer): Promise<Answer> {
  const started = performance.now();
  return new Promise((resolve) => {
    const req = request(url, { method, agent, headers: body === undefined ? headers : { ...headers, 'content-length': Buffer.byteLength(body) } }, (res) => {
      res.resume();
      res.on('end', () => resolve({ status: res.statusCode ?? 0, ms: performance.now() - started }));
    });
    // A refused body may be cut off by the server: that is an answer too (status 0).
    req.on('error', () => resolve({ status: 0, ms: performance.now() - started }));
    req.end(body);
  });
}

/** Runs `loops` loops of `call` until the deadline, `pauseMs` apart; returns every answer. */
async function loop(loops: number, deadline: number, pauseMs: number, call: (i: number) => Promise<Answer>): Promise<Answer[]> {
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
  const res = await fetch(`${baseUrl}/v1/api-keys`, { method: 'POST', headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' }, body: JSON.stringify({ name: 'bench' }) });
  return ((await res.json()) as { key: string }).key;
}

async function main() {
  const stack = await startStack({ WEBHOOK_RATE_LIMIT_PER_MINUTE: '100000000' });
  const admin = postgres(stack.databaseUrl, { max: 1 });
  const noisyTenant = (JSON.parse(execCli(['tenant', 'create', '--name', 'Noisy neighbour', '--plan', 'plan_enterprise'], stack)) as { tenantId: string }).tenantId;
  await admin`update tenants set plan = 'plan_enterprise', settings = settings || ${admin.json({ quotas: { eventsPerMonth: 1_000_000_000 } })} where id in (${stack.tenantId}, ${noisyTenant})`;
  const api = await startApi(stack);
  lowerWorkerPriority(stack, 19);
  const legitKey = await createKey(api.baseUrl, stack.token);
  const noisyToken = execCli(['token', '--tenant', noisyTenant, '--role', 'admin'], stack);
  const noisyKey = await createKey(api.baseUrl, noisyToken);

  const labels = Object.fromEntries(Array.from({ length: 250_000 }, (_, i) => [String(i), 'v']));
  const forgedBody = JSON.stringify({ name: 'Stall', labels });
  const bigBody = JSON.stringify({
    alerts: Array.from({ length: 50 }, (_, i) => ({ name: `BulkExport${i}`, severity: 'low', service: 'reporting', summary: 'nightly export lagging', description: 'x'.repeat(78_000), fingerprint: `bulk-${i}` })),
  });
  console.log(`machine: ${process.platform} ${process.arch}, node ${process.version}, ${cpus().length} cpus; forged body ${forgedBody.length} bytes, valid large body ${bigBody.length} bytes`);
  const legitUrl = new URL(`${api.baseUrl}/v1/webhooks/${stack.tenantId}/generic`);
  const noisyUrl = new URL(`${api.baseUrl}/v1/webhooks/${noisyTenant}/generic`);
  const json = { 'content-type': 'application/json' };
  const cpu = cpuWindow();
  const cpuByProcess = processCpuWindow({ api: [api.pid], worker: [stack.pid], 'Temporal dev server': devServerPids(stack), 'load generator': [process.pid] });
  const deadline = performance.now() + seconds * 1000;
  const bigIds: string[] = [];
  const [forged, big, legit, health] = await Promise.all([
    loop(4, deadline, 0, () => send(legitUrl, 'POST', { ...json, authorization: `Bearer flo_${randomBytes(32).toString('base64url').slice(0, 43)}` }, forgedBody)),
    loop(2, deadline, 0, (i) => {
      bigIds[i] = `bench-large-${i}`;
      return send(noisyUrl, 'POST', { ...json, authorization: `Bearer ${noisyKey}`, 'x-delivery-id': `bench-large-${i}` }, bigBody);
    }),
    loop(4, deadline, 50, (i) =>
      send(legitUrl, 'POST', { ...json, authorization: `Bearer ${legitKey}`, 'x-delivery-id': `bench-legit-${i}` }, JSON.stringify({ name: `Legit${i % 200}`, severity: 'high', service: `svc-${i % 20}`, summary: 'legitimate alert' })),
    ),
    loop(1, deadline, 20, () => send(new URL(`${api.baseUrl}/health`), 'GET', {})),
  ]);
  console.log(`cpu during the run: ${cpu()}`);
  console.log(`cores used: ${Object.entries(cpuByProcess()).map(([name, cores]) => `${name} ${cores.toFixed(2)}`).join(', ')}`);
  summary('forged keys, 3.9 MB bodies (4 senders)', forged);
  summary('valid key, 3.9 MB bodies (2 senders)', big);
  const legitResult = summary('legitimate tenant, normal alerts', legit);
  const healthResult = summary('/health every 20 ms', health);

  // Was a delivery answered 503 stored all the same?
  const answered503 = [
    ...big.flatMap((a, i) => (a.status === 503 ? [{ tenantId: noisyTenant, key: `id:${bigIds[i]}` }] : [])),
    ...legit.flatMap((a, i) => (a.status === 503 ? [{ tenantId: stack.tenantId, key: `id:bench-legit-${i}` }] : [])),
  ];
  const [{ stored }] = answered503.length
    ? await admin<{ stored: number }[]>`select count(*)::int as stored from webhook_deliveries d join unnest(${answered503.map((a) => a.tenantId)}::text[], ${answered503.map((a) => a.key)}::text[]) as x(tenant_id, delivery_key) on d.tenant_id = x.tenant_id and d.delivery_key = x.delivery_key`
    : [{ stored: 0 }];
  await admin.end();
  console.log(
    `result: /health p99 ${healthResult.p99.toFixed(1)} ms (target ≤ 50), legitimate webhook p99 ${legitResult.p99.toFixed(1)} ms (target ≤ 100), ` +
      `${answered503.length} deliveries answered 503, of which ${stored} stored (target 0)`,
  );
  agent.destroy();
  api.stop();
  await stack.stop();
}

function execCli(args: string[], stack: { dataDir: string; databaseUrl: string; temporalAddress: string }): string {
  return execFileSync('npm', ['run', '--silent', 'cli', '--', ...args], {
    env: { ...process.env, DATA_DIR: stack.dataDir, DATABASE_URL: stack.databaseUrl, TEMPORAL_ADDRESS: stack.temporalAddress, LOG_LEVEL: 'warn' },
    encoding: 'utf8',
  }).trim();
}

runBenchmark(main);
