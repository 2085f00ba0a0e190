/**
 * The Temporal SDK's own metrics on the worker's metrics endpoint: core serves them on a loopback
 * port, the worker's /metrics appends them (ADR 0282). The worker is the service's own
 * (`startWorker`, as `npm start` and `npm run worker` run it) on the test service's task queue;
 * this file's process installs the runtime with the SDK's metrics first, as `startWorker` does
 * (the test service installs it without them otherwise).
 */
import { randomBytes } from 'node:crypto';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { startWorker, type Stoppable } from '../../src/composition.js';
import { loadConfig, projectRoot } from '../../src/config.js';
import { createLogger } from '../../src/logger.js';
import { loopbackMetricsAddress } from '../../src/metrics/sdk-metrics.js';
import { createWorkerMetrics } from '../../src/metrics/worker-metrics.js';
import { installTemporalRuntimeLogger } from '../../src/temporal/runtime-logger.js';
import { freePort } from '../helpers/ports.js';
import { startTestService, type TestService } from '../helpers/service.js';
import { eventually } from '../helpers/webhooks.js';
import { familiesOf, parseExposition, valueOf, type Sample } from './scrape.js';

const TOKEN = 'worker-metrics-token-sdk-0123';
const FAILURES = 'incident_service_worker_sdk_metrics_failures_total';
let svc: TestService;
let sdkMetricsUrl: string | undefined;
let worker: Stoppable;
let metricsUrl: string;

async function scrape(): Promise<{ text: string; samples: Sample[] }> {
  const res = await fetch(metricsUrl, { headers: { authorization: `Bearer ${TOKEN}` } });
  expect(res.status).toBe(200);
  const text = await res.text();
  return { text, samples: parseExposition(text) };
}

beforeAll(async () => {
  const logger = createLogger('silent');
  sdkMetricsUrl = installTemporalRuntimeLogger(logger, 'WARN', await loopbackMetricsAddress());
  svc = await startTestService({ withoutWorker: true });
  const port = await freePort();
  const config = loadConfig({
    TEMPORAL_TASK_QUEUE: svc.taskQueue,
    WORKER_METRICS_PORT: String(port),
    METRICS_TOKEN: TOKEN,
    WORKFLOW_BUNDLE_PATH: inject('workflowBundlePath'),
  });
  worker = await startWorker(
    config,
    {
      databaseUrl: svc.databaseUrl,
      temporalAddress: inject('temporalAddress'),
      jwtSecret: undefined,
      skillEncryptionKey: randomBytes(32),
    },
    logger,
  );
  metricsUrl = `http://127.0.0.1:${port}/metrics`;
}, 120_000);
afterAll(async () => {
  await worker?.stop();
  await svc?.stop();
});

describe("the Temporal SDK's metrics on the worker's endpoint", () => {
  it('are served with the service metrics, behind the same token, and move as a workflow runs', async () => {
    expect(sdkMetricsUrl).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/metrics$/);
    expect((await fetch(metricsUrl)).status).toBe(401);
    const mine = { task_queue: svc.taskQueue };
    // Core registers a family when it first records it: the worker's slots are there at once.
    const before = await eventually(async () => {
      const s = await scrape();
      return s.samples.some((x) => x.name === 'temporal_worker_task_slots_available' && x.labels.task_queue)
        ? s
        : undefined;
    });

    const t = await svc.newTenant();
    const created = await svc.api('POST', '/v1/incidents/chat', {
      token: t.member,
      body: { title: 'Checkout latency', description: 'p99 of checkout above 2 s since the deploy' },
    });
    expect(created.status).toBe(201);
    const incidentId = created.body.incidentId as string;
    // The investigation's agents are activities (counted by core as they end); closing the
    // incident completes its workflow.
    const started = await svc.api('POST', '/v1/investigation/', { token: t.member, body: { incidentId } });
    expect(started.status).toBe(202);
    await eventually(
      async () => valueOf((await scrape()).samples, 'temporal_activity_execution_latency_count', mine) >= 2,
    );
    const closed = await svc.api('PATCH', `/v1/incidents/${incidentId}`, {
      token: t.admin,
      body: { status: 'closed' },
    });
    expect(closed.status).toBe(200);
    await svc.client.workflow.getHandle(incidentId).result();

    const after = await eventually(async () => {
      const s = await scrape();
      return valueOf(s.samples, 'temporal_workflow_completed', { ...mine, workflow_type: 'incidentWorkflow' }) >= 1
        ? s
        : undefined;
    });
    const families = familiesOf(after.text);
    for (const family of [
      'incident_service_incidents_opened_total',
      'temporal_workflow_completed',
      'temporal_workflow_task_schedule_to_start_latency',
      'temporal_activity_execution_latency',
      'temporal_worker_task_slots_available',
    ])
      expect(families.has(family), `${family} in\n${[...families].join('\n')}`).toBe(true);
    const delta = (name: string, labels: Record<string, string>) =>
      valueOf(after.samples, name, labels) - valueOf(before.samples, name, labels);
    expect(delta('temporal_workflow_completed', { ...mine, workflow_type: 'incidentWorkflow' })).toBe(1);
    expect(delta('temporal_activity_execution_latency_count', mine)).toBeGreaterThanOrEqual(2);
    expect(delta('temporal_workflow_task_execution_latency_count', mine)).toBeGreaterThanOrEqual(2);
    expect(valueOf(after.samples, FAILURES)).toBe(0);
    // One exposition: no family is declared twice.
    const declared = [...after.text.matchAll(/^# TYPE (\S+) /gm)].map((m) => m[1]);
    expect(new Set(declared).size).toBe(declared.length);

    // The dashboard's SDK panels read families this scrape has.
    const dashboard = readFileSync(path.join(projectRoot, 'deploy/grafana/incident-service-dashboard.json'), 'utf8');
    const names = new Set(after.samples.map((s) => s.name));
    const sdkNames = [...dashboard.matchAll(/\btemporal_[a-zA-Z0-9_]+/g)].map((m) => m[0]);
    expect(sdkNames.length).toBeGreaterThan(3);
    for (const name of sdkNames) expect(names.has(name), name).toBe(true);
  }, 120_000);

  it("serve the service's metrics alone, counting the failure, when core's exporter does not answer", async () => {
    // A server that takes the connection and never answers, as a wedged exporter would.
    const silent: Server = createServer(() => undefined);
    await new Promise<void>((resolve) => silent.listen(0, '127.0.0.1', resolve));
    const { port } = silent.address() as AddressInfo;
    const { metrics } = createWorkerMetrics(svc.database.sql, {
      sdkMetricsUrl: `http://127.0.0.1:${port}/metrics`,
      sdkMetricsTimeoutMs: 200,
    });
    try {
      const first = parseExposition(await metrics());
      expect(valueOf(first, FAILURES)).toBe(1);
      expect(first.some((s) => s.name === 'incident_service_investigations_total')).toBe(true);
      expect(first.some((s) => s.name.startsWith('temporal_'))).toBe(false);
      expect(valueOf(parseExposition(await metrics()), FAILURES)).toBe(2);
    } finally {
      silent.closeAllConnections();
      await new Promise<void>((resolve) => silent.close(() => resolve()));
    }
  });
});
