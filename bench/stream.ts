/**
 * `npm run bench:stream`: BENCH_CLIENTS (1,000) concurrent Server-Sent Events clients on one api
 * process (the service as `npm start` runs it), then BENCH_EVENTS (200) events appended to the
 * outbox one transaction each, every BENCH_INTERVAL_MS (20). Prints the event-to-client latency
 * (commit to parsed message, same clock) p50/p99 over all deliveries and the service process's
 * RSS with all clients connected. Prints figures only.
 * Targets (issue 7): p99 ≤ 100 ms, memory ≤ 300 MiB.
 */
import { randomUUID } from 'node:crypto';
import { readFileSync } from 'node:fs';
import http from 'node:http';
import postgres from 'postgres';
import { percentile, runBenchmark, startStack } from './stack.js';

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
  try {
    await sql`update tenants set plan = 'plan_enterprise' where id = ${stack.tenantId}`;
    const rssBefore = rssMiB(stack.pid);
    const latencies: number[] = [];
    const requests: http.ClientRequest[] = [];
    for (let i = 0; i < clients; i += 100) {
      const batch = Array.from({ length: Math.min(100, clients - i) }, () =>
        connect(`${stack.baseUrl}/v1/notifications/stream`, stack.token, (sentAt) => latencies.push(Date.now() - sentAt)),
      );
      requests.push(...(await Promise.all(batch)));
    }
    await new Promise((r) => setTimeout(r, 1000));
    let rssPeak = rssMiB(stack.pid);
    for (let i = 0; i < eventCount; i++) {
      await sql.begin(async (tx) => {
        const payload = { sentAt: Date.now(), n: i };
        const [row] = await tx<Array<{ seq: string }>>`
          insert into events (id, tenant_id, type, payload, idempotency_key)
          values (${`oev_bench_${randomUUID()}`}, ${stack.tenantId}, 'incident.status_changed', ${sql.json(payload)}, ${randomUUID()})
          returning seq`;
        await tx`select pg_notify('incident_events', ${`${stack.tenantId}:${row!.seq}`})`;
      });
      if (i % 20 === 0) rssPeak = Math.max(rssPeak, rssMiB(stack.pid));
      await new Promise((r) => setTimeout(r, intervalMs));
    }
    const expected = clients * eventCount;
    const deadline = Date.now() + 10_000;
    while (latencies.length < expected && Date.now() < deadline) await new Promise((r) => setTimeout(r, 100));
    rssPeak = Math.max(rssPeak, rssMiB(stack.pid));
    latencies.sort((a, b) => a - b);
    console.log(`clients ${clients}  events ${eventCount}  deliveries ${latencies.length}/${expected}`);
    console.log(`event-to-client latency  p50 ${percentile(latencies, 50).toFixed(1)} ms  p99 ${percentile(latencies, 99).toFixed(1)} ms  max ${(latencies.at(-1) ?? 0).toFixed(1)} ms`);
    console.log(`service process RSS  before clients ${rssBefore.toFixed(0)} MiB  peak with clients ${rssPeak.toFixed(0)} MiB`);
    for (const req of requests) req.destroy();
  } finally {
    await sql.end();
    await stack.stop();
  }
}

runBenchmark(main);
