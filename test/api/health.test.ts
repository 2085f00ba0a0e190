/**
 * The health probes: their X-RateLimit headers come from a window of the api process, not from
 * PostgreSQL (decision 246), and /health/detailed reports a worker that died within 75 s (its
 * last poll, not Temporal's five-minute memory of its pollers).
 */
import type { ChildProcess } from 'node:child_process';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestService, type ApiResponse, type TestService } from '../helpers/service.js';
import { startTcpProxy, type TcpProxy } from '../helpers/tcp-proxy.js';
import { eventually } from '../helpers/webhooks.js';
import { startWorkerProcess } from '../helpers/workers.js';

const LIMIT = 5000;

function window(res: ApiResponse) {
  return {
    limit: res.headers.get('x-ratelimit-limit'),
    remaining: Number(res.headers.get('x-ratelimit-remaining')),
    reset: Number(res.headers.get('x-ratelimit-reset')),
  };
}

describe('health probes', () => {
  let svc: TestService;
  let proxy: TcpProxy | undefined;
  let worker: ChildProcess | undefined;
  beforeAll(async () => {
    svc = await startTestService({
      withoutWorker: true,
      publicRateLimitPerMinute: LIMIT,
      connectVia: async (url) => {
        const target = new URL(url);
        proxy = await startTcpProxy({ host: target.hostname, port: Number(target.port) });
        target.port = String(proxy.port);
        return target.toString();
      },
    });
  });
  afterAll(async () => {
    worker?.kill('SIGKILL');
    await proxy?.restore();
    await svc?.stop();
    await proxy?.close();
  });

  it('reports a worker killed with SIGKILL missing within 75 s, and a live one present across its long polls', async () => {
    const lines: string[] = [];
    worker = await startWorkerProcess(svc, {}, lines);
    const workerCheck = async () =>
      (await svc.api('GET', '/health/detailed')).body.checks.worker as { ok: boolean; pollers: number; error?: string };
    await eventually(async () => (await workerCheck()).ok, 15_000);
    // An idle worker polls once a minute or so: it must not look gone between two polls.
    for (const until = Date.now() + 65_000; Date.now() < until;) {
      expect(await workerCheck()).toMatchObject({ ok: true, pollers: 1 });
      await new Promise((r) => setTimeout(r, 5_000));
    }
    const exited = new Promise((resolve) => worker!.once('exit', resolve));
    worker.kill('SIGKILL');
    await exited;
    const killedAt = Date.now();
    const missing = await eventually(async () => {
      const res = await svc.api('GET', '/health/detailed');
      return res.status === 503 ? res : undefined;
    }, 75_000);
    expect(Date.now() - killedAt).toBeLessThanOrEqual(75_000);
    expect(missing.body.status).toBe('degraded');
    expect(missing.body.checks.worker).toMatchObject({
      ok: false,
      pollers: 0,
      error: expect.stringMatching(/no worker has polled task queue .* in the last 70 s/),
    });
    expect(missing.body.checks.postgres.ok).toBe(true);
  }, 200_000);

  it('gives /health and /health/detailed the X-RateLimit headers, counted in this process and not in PostgreSQL', async () => {
    const answers = [
      await svc.api('GET', '/health'),
      await svc.api('GET', '/health'),
      await svc.api('GET', '/health/detailed'),
    ];
    const now = Math.floor(Date.now() / 1000);
    for (const res of answers) {
      const { limit, remaining, reset } = window(res);
      expect(limit).toBe(String(LIMIT));
      expect(remaining).toBeGreaterThanOrEqual(0);
      expect(remaining).toBeLessThan(LIMIT);
      expect(reset % 60).toBe(0);
      expect(reset).toBeGreaterThan(now - 5);
      expect(reset).toBeLessThanOrEqual(now + 60);
    }
    // Within one window, each probe counts once.
    const [a, b, c] = answers.map(window);
    if (a!.reset === b!.reset) expect(b!.remaining).toBe(a!.remaining - 1);
    if (b!.reset === c!.reset) expect(c!.remaining).toBe(b!.remaining - 1);
    const counted = await svc.database.sql`select count(*)::int as n from rate_limit_windows where bucket like 'ip:%'`;
    expect(counted[0]!.n).toBe(0);
    const doc = (await svc.api('GET', '/openapi.json')).body;
    for (const path of ['/health', '/health/detailed']) {
      expect(Object.keys(doc.paths[path].get.responses['200'].headers)).toEqual([
        'X-RateLimit-Limit',
        'X-RateLimit-Remaining',
        'X-RateLimit-Reset',
      ]);
    }
  });

  it('answers /health with its headers while PostgreSQL is unreachable', async () => {
    await proxy!.cut();
    try {
      const res = await svc.api('GET', '/health');
      expect(res.status).toBe(200);
      expect(window(res).limit).toBe(String(LIMIT));
      expect(res.headers.get('x-ratelimit-remaining')).toMatch(/^\d+$/);
      expect(res.headers.get('x-ratelimit-reset')).toMatch(/^\d+$/);
    } finally {
      await proxy!.restore();
    }
  });
});
