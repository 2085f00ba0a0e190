/**
 * `npm run bench:stream`: BENCH_CLIENTS (1,000) concurrent Server-Sent Events clients on one api
 * process, then BENCH_EVENTS (200) events appended to the outbox one transaction each, every
 * BENCH_INTERVAL_MS (20). The api process is the production one (`node dist/api/server.js`,
 * compiled by `npm run build` first, api only) beside the service as `npm start` runs it (its
 * PostgreSQL, Temporal and worker). BENCH_API=start measures `npm start`'s own process (api and
 * worker together) instead. Prints the event-to-client latency (commit to parsed message, same
 * clock) p50/p99 over all deliveries and the api process's RSS with all clients connected.
 * Prints figures only.
 * Targets (issue 7): p99 ≤ 100 ms, memory ≤ 300 MiB.
 */
import { randomUUID } from 'node:crypto';
import { readFileSync } from 'node:fs';
import http from 'node:http';
import postgres from 'postgres';
import { percentile, runBenchmark, startApi, startStack } from './stack.js';

const clients = Number(process.env.BENCH_CLIENTS ?? 1000);
const eventCount = Number(process.env.BENCH_EVENTS ?? 200);
const intervalMs = Number(process.env.BENCH_INTERVAL_MS ?? 20);

function rssMiB(pid: number): number {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8');
  const kb = Number(status.match(/VmRSS:\s+(\d+)/)?.[1] ?? 0);
  return kb / 1024;
}

function connect(url: string, token: string, onEvent: (sentAt: number) => void): Promise<http.ClientRequest> {
  return new Promise((resolve, reject) => {
    const req = http.get(url, { headers: { authorization: `Bearer ${token}`, accept: 'text/event-stream' } }, (res) => {
      if (res.statusCode !== 200) return reject(new Error(`stream answered ${res.statusCode}`));
      res.setEncoding('utf8');
      let buffer = '';
      res.on('data', (chunk: string) => {
        buffer += chunk;
        let index: number;
        while ((index = buffer.indexOf('\n\n')) >= 0) {
          const block = buffer.slice(0, index);
          buffer = buffer.slice(index + 2);
          const data = block.split('\n').find((line) => line.startsWith('data: '));
          if (data) onEvent((JSON.parse(data.slice(6)) as { payload: { sentAt: number } }).payload.sentAt);
        }
      });
      resolve(req);
    });
    req.on('error', reject);
  });
}

async function main() {
  const stack = await startStack();
  const sql = postgres(stack.databaseUrl, { max: 2, onnotice: () => undefined });
  const api =
    process.env.BENCH_API === 'start'
      ? { pid: stack.pid, baseUrl: stack.baseUrl, stop: () => undefined }
      : await startApi(stack);
  console.log(
    process.env.BENCH_API === 'start'
      ? 'api: the npm start process (api and worker)'
      : 'api: node dist/api/server.js (api only)',
  );
  try {
    await sql`update tenants set plan = 'plan_enterprise' where id = ${stack.tenantId}`;
    const rssBefore = rssMiB(api.pid);
    const latencies: number[] = [];
    const requests: http.ClientRequest[] = [];
    for (let i = 0; i < clients; i += 100) {
      const batch = Array.from({ length: Math.min(100, clients - i) }, () =>
        connect(`${api.baseUrl}/v1/notifications/stream`, stack.token, (sentAt) => latencies.push(Date.now() - sentAt)),
      );
      requests.push(...(await Promise.all(batch)));
    }
    await new Promise((r) => setTimeout(r, 1000));
    let rssPeak = rssMiB(api.pid);
    for (let i = 0; i < eventCount; i++) {
      await sql.begin(async (tx) => {
        const payload = { sentAt: Date.now(), n: i };
        // The sealing trigger numbers it in the tenant's stream and notifies at commit.
        await tx`
          insert into events (id, tenant_id, type, payload, idempotency_key)
          values (${`oev_bench_${randomUUID()}`}, ${stack.tenantId}, 'incident.status_changed', ${sql.json(payload)}, ${randomUUID()})`;
      });
      if (i % 20 === 0) rssPeak = Math.max(rssPeak, rssMiB(api.pid));
      await new Promise((r) => setTimeout(r, intervalMs));
    }
    const expected = clients * eventCount;
    const deadline = Date.now() + 10_000;
    while (latencies.length < expected && Date.now() < deadline) await new Promise((r) => setTimeout(r, 100));
    rssPeak = Math.max(rssPeak, rssMiB(api.pid));
    latencies.sort((a, b) => a - b);
    console.log(`clients ${clients}  events ${eventCount}  deliveries ${latencies.length}/${expected}`);
    console.log(
      `event-to-client latency  p50 ${percentile(latencies, 50).toFixed(1)} ms  p99 ${percentile(latencies, 99).toFixed(1)} ms  max ${(latencies.at(-1) ?? 0).toFixed(1)} ms`,
    );
    console.log(
      `api process RSS  before clients ${rssBefore.toFixed(0)} MiB  peak with clients ${rssPeak.toFixed(0)} MiB`,
    );
    for (const req of requests) req.destroy();
  } finally {
    api.stop();
    await sql.end();
    await stack.stop();
  }
}

runBenchmark(main);
