import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { checkoutIncident } from '../helpers/remediation.js';
import { startTestService, type TestService } from '../helpers/service.js';
import { startTcpProxy, type TcpProxy } from '../helpers/tcp-proxy.js';
import { eventually } from '../helpers/webhooks.js';

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

async function timed(
  request: Promise<{ status: number; body: any }>,
): Promise<{ status: number; body: any; ms: number }> {
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
    const first = await timed(
      svc.api('PATCH', `/v1/incidents/${id}`, { token: tenant.member, body: { status: 'investigating' } }),
    );
    expect(first.status).toBe(503);
    expect(first.body).toEqual({
      error: 'service_unavailable',
      message: 'The service cannot reach its workflow engine (Temporal); retry shortly',
    });
    expect(first.ms).toBeGreaterThanOrEqual(9_000); // the watch probes after 10 s
    expect(first.ms).toBeLessThan(25_000); // and a 5 s probe
    const next = await timed(
      svc.api('PATCH', `/v1/incidents/${id}`, { token: tenant.member, body: { status: 'resolved' } }),
    );
    expect(next.status).toBe(503);
    expect(next.ms).toBeLessThan(5_000); // the gate's probe (2 s), not another watch
    await proxy.restore();
    const back = await svc.api('PATCH', `/v1/incidents/${id}`, { token: tenant.member, body: { status: 'resolved' } });
    expect(back.status).toBe(200);
    expect(back.body.status).toBe('resolved');
  }, 120_000);

  it('answers a manual incident 201 within the watch, not at the start deadline, and its workflow runs once the server answers', async () => {
    const tenant = await svc.newTenant({ plan: 'plan_business' });
    proxy.stall();
    // The start of its workflow is watched as the calls that wait for an answer are: before, the
    // request waited for the start's 30 s deadline.
    const created = await timed(
      svc.api('POST', '/v1/incidents/chat', {
        token: tenant.member,
        body: { title: 'Opened in the dark', description: 'Temporal answers nothing' },
      }),
    );
    expect(created.status).toBe(201);
    expect(created.ms).toBeGreaterThanOrEqual(9_000);
    expect(created.ms).toBeLessThan(25_000);
    const [row] = await svc.database.sql<
      { workflow_started_at: Date | null }[]
    >`select workflow_started_at from incidents where id = ${created.body.incidentId}`;
    expect(row!.workflow_started_at).toBeNull(); // the dispatcher starts it once Temporal answers
    await proxy.restore();
    const moved = await eventually(async () => {
      const res = await svc.api('PATCH', `/v1/incidents/${created.body.incidentId}`, {
        token: tenant.member,
        body: { status: 'investigating' },
      });
      return res.status === 200 ? res : undefined;
    }, 60_000);
    expect(moved.body.status).toBe('investigating');
  }, 120_000);
});
