import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { checkoutIncident } from '../helpers/remediation.js';
import { startTestService, type TestService } from '../helpers/service.js';
import { startTcpProxy, type TcpProxy } from '../helpers/tcp-proxy.js';

let proxy: TcpProxy;
let svc: TestService;

// The api and the worker reach the suite's Temporal server through a relay the test stalls: the
// connections stay open and nothing comes back, as with a frozen server or a partition.
beforeAll(async () => {
  const [host, port] = inject('temporalAddress').split(':');
  proxy = await startTcpProxy({ host: host!, port: Number(port) });
  svc = await startTestService({ temporalAddress: `127.0.0.1:${proxy.port}`, answerTimeoutMs: 90_000 });
});
afterAll(async () => {
  await svc?.stop();
  await proxy?.close();
});

async function timed(request: Promise<{ status: number; body: any }>): Promise<{ status: number; body: any; ms: number }> {
  const started = performance.now();
  const res = await request;
  return { ...res, ms: performance.now() - started };
}

describe('a Temporal server that stops answering (connections open, nothing comes back)', () => {
  it('answers a status change 503 once a probe finds the server silent, the next ones at once, and works again when it answers', async () => {
    const tenant = await svc.newTenant({ plan: 'plan_business' });
    const id = await checkoutIncident(svc, tenant.member);
    proxy.stall();
    // Before, the request outlived its 90 s answer deadline: the client's retry of the call the
    // keepalive dropped (after 45 s) was a new call that the deadline's cancellation missed.
    const first = await timed(svc.api('PATCH', `/v1/incidents/${id}`, { token: tenant.member, body: { status: 'investigating' } }));
    expect(first.status).toBe(503);
    expect(first.body).toEqual({ error: 'service_unavailable', message: 'The service cannot reach its workflow engine (Temporal); retry shortly' });
    expect(first.ms).toBeGreaterThanOrEqual(9_000); // the watch probes after 10 s
    expect(first.ms).toBeLessThan(25_000); // and a 5 s probe
    const next = await timed(svc.api('PATCH', `/v1/incidents/${id}`, { token: tenant.member, body: { status: 'resolved' } }));
    expect(next.status).toBe(503);
    expect(next.ms).toBeLessThan(5_000); // the gate's probe (2 s), not another watch
    await proxy.restore();
    const back = await svc.api('PATCH', `/v1/incidents/${id}`, { token: tenant.member, body: { status: 'resolved' } });
    expect(back.status).toBe(200);
    expect(back.body.status).toBe('resolved');
  }, 120_000);
});
