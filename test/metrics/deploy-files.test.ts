import { readFileSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { projectRoot } from '../../src/config.js';
import { createWorkerMetrics, serveWorkerMetrics } from '../../src/metrics/worker-metrics.js';
import { startTestService, type TestService } from '../helpers/service.js';
import { familiesOf, parseExposition } from './scrape.js';

let svc: TestService;
/** Every sample name a real scrape of the api and the worker shows (`_bucket`, `_count`… included). */
let exported: Set<string>;

beforeAll(async () => {
  svc = await startTestService({ withoutWorker: true });
  const served = await serveWorkerMetrics({
    metrics: createWorkerMetrics(svc.database.sql).metrics,
    host: '127.0.0.1',
    port: 0,
    token: undefined,
  });
  try {
    const texts = [await (await fetch(`${svc.baseUrl}/metrics`)).text(), await (await fetch(served.url)).text()];
    exported = new Set();
    for (const text of texts) {
      for (const family of familiesOf(text)) {
        exported.add(family);
        for (const suffix of ['_bucket', '_sum', '_count']) exported.add(`${family}${suffix}`);
      }
      for (const s of parseExposition(text)) exported.add(s.name);
    }
  } finally {
    await served.stop();
  }
}, 120_000);
afterAll(async () => svc?.stop());

/** The service's metric names an expression reads. */
const metricNamesOf = (expr: string) => [...expr.matchAll(/\bincident_service_[a-zA-Z0-9_]+/g)].map((m) => m[0]);
/**
 * The Temporal SDK's metric names an expression reads: a worker's scrape has them once core has
 * recorded them, so sdk-metrics.test.ts checks them against one after a workflow ran.
 */
const sdkNamesOf = (expr: string) => [...expr.matchAll(/\btemporal_[a-zA-Z0-9_]+/g)].map((m) => m[0]);

describe('deploy/ monitoring files', () => {
  it('the Grafana dashboard is a dashboard whose queries read only exported metrics', () => {
    const dashboard = JSON.parse(
      readFileSync(path.join(projectRoot, 'deploy/grafana/incident-service-dashboard.json'), 'utf8'),
    );
    expect(dashboard).toMatchObject({ uid: expect.any(String), title: expect.any(String) });
    expect(typeof dashboard.schemaVersion).toBe('number');
    expect(dashboard.panels.length).toBeGreaterThan(5);
    const ids = new Set<number>();
    for (const panel of dashboard.panels) {
      expect(panel).toMatchObject({ type: expect.any(String), title: expect.any(String) });
      expect(Object.keys(panel.gridPos).sort()).toEqual(['h', 'w', 'x', 'y']);
      ids.add(panel.id);
      expect(panel.targets.length).toBeGreaterThan(0);
      for (const target of panel.targets) {
        const names = metricNamesOf(target.expr);
        expect(names.length + sdkNamesOf(target.expr).length, target.expr).toBeGreaterThan(0);
        for (const name of names) expect(exported.has(name), `${name} in ${target.expr}`).toBe(true);
      }
    }
    expect(ids.size).toBe(dashboard.panels.length);
  });

  it('the Prometheus alert rules read only exported metrics', () => {
    const rules = parse(readFileSync(path.join(projectRoot, 'deploy/prometheus/alerts.yml'), 'utf8'));
    const all = rules.groups.flatMap((g: { rules: unknown[] }) => g.rules) as Array<{ alert: string; expr: string }>;
    expect(all.map((r) => r.alert).sort()).toEqual([
      'IncidentServiceApprovalExpiries',
      'IncidentServiceIngestionRefusals',
      'IncidentServiceOutboxLag',
      'IncidentServiceWorkerMissing',
    ]);
    for (const rule of all) {
      const names = metricNamesOf(rule.expr);
      expect(names.length, rule.expr).toBeGreaterThan(0);
      for (const name of names) expect(exported.has(name), `${name} in ${rule.alert}`).toBe(true);
    }
  });

  it('a name the service does not export is caught', () => {
    expect(exported.has('incident_service_no_such_metric_total')).toBe(false);
    expect(exported.has('incident_service_outbox_lag_seconds')).toBe(true);
  });
});
