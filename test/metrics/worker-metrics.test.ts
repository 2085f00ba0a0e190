import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createWorkerMetrics, serveWorkerMetrics } from '../../src/metrics/worker-metrics.js';
import { startTestService, type TestService } from '../helpers/service.js';
import { createKey, eventually, fixture, postWebhook } from '../helpers/webhooks.js';
import { parseExposition, valueOf } from './scrape.js';

const P = 'incident_service_';
let svc: TestService;
let served: { url: string; stop: () => Promise<void> };

async function scrape() {
  const res = await fetch(served.url);
  expect(res.status).toBe(200);
  return parseExposition(await res.text());
}

beforeAll(async () => {
  svc = await startTestService();
  const { metrics } = createWorkerMetrics(svc.database.sql);
  served = await serveWorkerMetrics({ metrics, host: '127.0.0.1', port: 0, token: undefined });
}, 120_000);
afterAll(async () => {
  await served?.stop();
  await svc?.stop();
});

describe('the worker metrics', () => {
  it('count an incident opened by a webhook, its investigation and the seconds to its root cause', async () => {
    const before = await scrape();
    const { tenantId, admin } = await svc.newTenant();
    const key = await createKey(svc, admin);
    const res = await postWebhook(svc, tenantId, 'alertmanager', fixture('alertmanager-firing.json'), { key: key.key });
    expect(res.status).toBe(202);
    const list = await eventually(async () => {
      const l = await svc.api('GET', '/v1/incidents', { token: admin });
      return l.body.incidents?.length > 0 && l.body.incidents;
    });
    const incidentId = list[0].incidentId as string;
    await eventually(async () => {
      const rows = await svc.database.sql`
        select status from investigations where incident_id = ${incidentId} and tenant_id = ${tenantId}`;
      return rows[0]?.status === 'completed';
    }, 60_000);
    const after = await scrape();
    const delta = (name: string, labels: Record<string, string> = {}) =>
      valueOf(after, name, labels) - valueOf(before, name, labels);
    expect(delta(`${P}incidents_opened_total`, { source: 'automated' })).toBe(list.length);
    expect(delta(`${P}investigations_total`, { status: 'completed' })).toBeGreaterThanOrEqual(1);
    expect(delta(`${P}webhook_to_root_cause_seconds_count`)).toBeGreaterThanOrEqual(1);
    expect(delta(`${P}webhook_to_root_cause_seconds_bucket`, { le: '+Inf' })).toBe(
      delta(`${P}webhook_to_root_cause_seconds_count`),
    );
    expect(valueOf(after, `${P}webhook_to_root_cause_seconds_sum`)).toBeGreaterThan(0);
    for (const status of ['pending', 'expired'])
      expect(after.some((s) => s.name === `${P}approvals` && s.labels.status === status)).toBe(true);
    expect(after.some((s) => s.name === `${P}remediation_steps_total`)).toBe(true);
    // The outbox consumers are listed with their lag, which the running dispatcher brings back down.
    expect(after.some((s) => s.name === `${P}outbox_lag_events`)).toBe(true);
    await eventually(async () => valueOf(await scrape(), `${P}outbox_lag_seconds`) < 30);
  }, 120_000);

  it('asks for METRICS_TOKEN when it is set', async () => {
    const guarded = await serveWorkerMetrics({
      metrics: async () => 'x 1\n',
      host: '127.0.0.1',
      port: 0,
      token: 'worker-metrics-token-0123',
    });
    try {
      expect((await fetch(guarded.url)).status).toBe(401);
      const ok = await fetch(guarded.url, { headers: { authorization: 'Bearer worker-metrics-token-0123' } });
      expect(ok.status).toBe(200);
    } finally {
      await guarded.stop();
    }
  });
});
