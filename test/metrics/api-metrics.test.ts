import http from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import postgres from 'postgres';
import { createApp } from '../../src/api/app.js';
import { createApiMetrics } from '../../src/metrics/api-metrics.js';
import { startTestService, type TestService } from '../helpers/service.js';
import { createKey, eventually, fixture, postWebhook } from '../helpers/webhooks.js';
import { parseExposition, valueOf } from './scrape.js';

const P = 'incident_service_';
let svc: TestService;

async function scrape() {
  const res = await fetch(`${svc.baseUrl}/metrics`);
  expect(res.status).toBe(200);
  expect(res.headers.get('content-type')).toContain('text/plain');
  return parseExposition(await res.text());
}

/** Opens the event stream and keeps it open until `close` (the server counts it open meanwhile). */
function openStream(token: string): Promise<{ status: number; close: () => void }> {
  return new Promise((resolve, reject) => {
    const req = http.get(
      `${svc.baseUrl}/v1/notifications/stream`,
      { headers: { accept: 'text/event-stream', authorization: `Bearer ${token}` } },
      (res) => resolve({ status: res.statusCode ?? 0, close: () => req.destroy() }),
    );
    req.on('error', reject);
  });
}

beforeAll(async () => {
  svc = await startTestService({ publicRateLimitPerMinute: 3 });
}, 120_000);
afterAll(async () => svc?.stop());

describe('GET /metrics on the api', () => {
  it('answers without a JWT, is never refused by the probe window and does not time itself', async () => {
    for (let i = 0; i < 6; i++) expect((await fetch(`${svc.baseUrl}/metrics`)).status).toBe(200);
    const samples = await scrape();
    expect(samples.filter((s) => s.labels.route === '/metrics')).toEqual([]);
    expect(valueOf(samples, `${P}db_pool_max_connections`)).toBeGreaterThan(0);
    // The scrape's own query runs on an active connection of this database.
    expect(valueOf(samples, `${P}db_connections`, { state: 'active' })).toBeGreaterThanOrEqual(1);
  });

  it('times requests by route template and status, never by raw path', async () => {
    const { tenantId, member } = await svc.newTenant();
    const missing = await svc.api('GET', '/v1/incidents/inc_doesnotexist', { token: member });
    expect(missing.status).toBe(404);
    expect((await svc.api('GET', `/no-such-path-${tenantId}`)).status).toBe(404);
    const samples = await scrape();
    const count = `${P}http_request_duration_seconds_count`;
    expect(valueOf(samples, count, { route: '/v1/incidents/:incidentId', status: '404', method: 'GET' })).toBe(1);
    expect(valueOf(samples, count, { route: 'unmatched', status: '404' })).toBeGreaterThanOrEqual(1);
    expect(samples.some((s) => Object.values(s.labels).some((v) => v.includes(tenantId)))).toBe(false);
  });

  it('counts webhook deliveries by provider and outcome as an incident opens', async () => {
    const { tenantId, admin } = await svc.newTenant();
    const key = await createKey(svc, admin);
    const name = `${P}webhook_deliveries_total`;
    const before = await scrape();
    const accepted = await postWebhook(svc, tenantId, 'alertmanager', fixture('alertmanager-firing.json'), {
      key: key.key,
    });
    expect(accepted.status).toBe(202);
    const refused = await postWebhook(svc, tenantId, 'alertmanager', fixture('alertmanager-firing.json'), {
      key: 'flo_not_a_real_key_0000000000000000',
    });
    expect(refused.status).toBe(401);
    expect((await postWebhook(svc, tenantId, 'no-such-tool', '{}', { key: key.key })).status).toBe(404);
    await eventually(async () => {
      const list = await svc.api('GET', '/v1/incidents', { token: admin });
      return list.status === 200 && list.body.incidents?.length > 0;
    });
    const after = await scrape();
    const delta = (labels: Record<string, string>) => valueOf(after, name, labels) - valueOf(before, name, labels);
    expect(delta({ provider: 'alertmanager', outcome: 'accepted' })).toBe(1);
    expect(delta({ provider: 'alertmanager', outcome: 'rejected' })).toBe(1);
    // An unknown provider's name is not a label value: one series, whatever callers send.
    expect(delta({ provider: 'unknown', outcome: 'rejected' })).toBe(1);
    expect(after.some((s) => s.labels.provider === 'no-such-tool')).toBe(false);
  });

  it('counts 429 refusals by gate', async () => {
    const name = `${P}rate_limit_refusals_total`;
    const before = valueOf(await scrape(), name, { gate: 'address' });
    const statuses: number[] = [];
    for (let i = 0; i < 5; i++) statuses.push((await svc.api('GET', '/v1/billing/plans')).status);
    const refused = statuses.filter((s) => s === 429).length;
    expect(refused).toBeGreaterThan(0);
    expect(valueOf(await scrape(), name, { gate: 'address' }) - before).toBe(refused);
  });

  it('shows open SSE connections, and their closing', async () => {
    const { member } = await svc.newTenant();
    const name = `${P}sse_connections`;
    expect(valueOf(await scrape(), name)).toBe(0);
    const stream = await openStream(member);
    expect(stream.status).toBe(200);
    await eventually(async () => valueOf(await scrape(), name) === 1);
    stream.close();
    await eventually(async () => valueOf(await scrape(), name) === 0);
  });

  it('asks for METRICS_TOKEN when it is set', async () => {
    const token = 'metrics-token-of-this-test-0123';
    const app = createApp({
      ...svc.appDeps,
      config: { ...svc.appDeps.config, metrics: { token, workerPort: 0 } } as never,
    });
    const without = await app.request('/metrics');
    expect(without.status).toBe(401);
    expect(await without.json()).toMatchObject({ error: 'unauthorized' });
    expect(
      (await app.request('/metrics', { headers: { authorization: 'Bearer wrong-token-0000000000000' } })).status,
    ).toBe(401);
    const withToken = await app.request('/metrics', { headers: { authorization: `Bearer ${token}` } });
    expect(withToken.status).toBe(200);
    expect(await withToken.text()).toContain(`# TYPE ${P}http_request_duration_seconds histogram`);
  });

  it('still answers when the database does not: without the connections family', async () => {
    // A port nothing listens on: every query fails to connect.
    const down = postgres('postgres://nobody@127.0.0.1:1/none', { connect_timeout: 1, max: 1 });
    try {
      const text = await createApiMetrics({ sql: down, poolMax: 1 }).registry.metrics();
      const samples = parseExposition(text);
      expect(valueOf(samples, `${P}db_pool_max_connections`)).toBe(1);
      expect(samples.some((s) => s.name === `${P}db_connections`)).toBe(false);
    } finally {
      await down.end({ timeout: 0 });
    }
  });
});
