import { describe, expect, it } from 'vitest';
import { checkoutIncident } from '../helpers/remediation.js';
import { startTestWorker, useWorkerlessService } from '../helpers/workers.js';

// No worker polls this service's task queue until the test starts one.
const env = useWorkerlessService({ answerTimeoutMs: 2000 });

describe('a request that waits for a workflow while no worker runs', () => {
  it('is answered 503 at its deadline instead of hanging, and the workflow answers once a worker runs', async () => {
    const { svc, connection } = env;
    const tenant = await svc.newTenant({ plan: 'plan_business' });
    const id = await checkoutIncident(svc, tenant.member);
    for (const [method, path, body] of [
      ['PATCH', `/v1/incidents/${id}`, { status: 'resolved' }],
      ['POST', `/v1/triage/${id}`, {}],
      ['POST', '/v1/investigation/', { incidentId: id }],
    ] as const) {
      const started = performance.now();
      const res = await svc.api(method, path, { token: tenant.member, body });
      const waited = performance.now() - started;
      expect(res.status, path).toBe(503);
      expect(res.body).toEqual({
        error: 'service_unavailable',
        message: expect.stringMatching(/did not answer within 2 s \(are its workers running\?\)/),
      });
      expect(res.headers.get('retry-after')).toBe('5');
      expect(waited).toBeGreaterThanOrEqual(1900);
      expect(waited).toBeLessThan(15_000);
    }
    const worker = await startTestWorker(svc, connection);
    try {
      const res = await svc.api('PATCH', `/v1/incidents/${id}`, { token: tenant.member, body: { status: 'closed' } });
      expect(res.status).toBe(200);
      expect(res.body.status).toBe('closed');
    } finally {
      await worker.stop();
    }
  }, 90_000);
});
