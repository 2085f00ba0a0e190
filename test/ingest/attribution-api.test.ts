import { and, eq } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { alerts } from '../../src/db/schema/correlation.js';
import { ingestedEvents } from '../../src/db/schema/ingestion.js';
import { startTestService, type TestService } from '../helpers/service.js';
import { createKey, postWebhook } from '../helpers/webhooks.js';

let svc: TestService;
beforeAll(async () => {
  svc = await startTestService();
}, 120_000);
afterAll(async () => {
  await svc?.stop();
});

/** kube-prometheus-stack's KubePodCrashLooping as Alertmanager delivers it: fed by kube-state-metrics. */
const crashLooping = {
  version: '4',
  groupKey: '{}:{alertname="KubePodCrashLooping"}',
  truncatedAlerts: 0,
  status: 'firing',
  receiver: 'oncall',
  groupLabels: { alertname: 'KubePodCrashLooping' },
  commonLabels: { alertname: 'KubePodCrashLooping', severity: 'warning' },
  commonAnnotations: {},
  externalURL: 'http://kube-prometheus-stack-alertmanager.monitoring:9093',
  alerts: [
    {
      status: 'firing',
      labels: {
        alertname: 'KubePodCrashLooping',
        container: 'checkout-api',
        endpoint: 'http',
        instance: '10.244.1.17:8080',
        job: 'kube-state-metrics',
        namespace: 'shop',
        pod: 'checkout-api-7d9f8b6c5-x2x9k',
        prometheus: 'monitoring/kube-prometheus-stack-prometheus',
        reason: 'CrashLoopBackOff',
        service: 'kube-prometheus-stack-kube-state-metrics',
        severity: 'warning',
        uid: '4f1c2a9e-8b7d-4c1e-9a2b-3c4d5e6f7a8b',
      },
      annotations: {
        description:
          'Pod shop/checkout-api-7d9f8b6c5-x2x9k (checkout-api) is in waiting state (reason: "CrashLoopBackOff").',
        runbook_url: 'https://runbooks.prometheus-operator.dev/runbooks/kubernetes/kubepodcrashlooping',
        summary: 'Pod is crash looping.',
      },
      startsAt: '2026-11-27T09:12:30.000Z',
      endsAt: '0001-01-01T00:00:00Z',
      generatorURL: 'http://kube-prometheus-stack-prometheus.monitoring:9090/graph?g0.expr=max_over_time',
      fingerprint: '5a3c1e9f7b2d4c68',
    },
  ],
};

/** Datadog's default webhook payload (no tags): the service is only in the event title's scope. */
const datadogDefault = {
  body: '%%%\n5xx error rate on checkout is above 5% for the last 5 minutes.\n%%%',
  last_updated: '1764234750000',
  event_type: 'query_alert_monitor',
  title: '[Triggered on {service:checkout,env:prod}] High error rate on checkout',
  date: '1764234750000',
  org: { id: '123456', name: 'Example Shop' },
  id: '7574651212382451718',
};

describe('attribution over the webhook', () => {
  it('stores the workload as service and how it was read, for Alertmanager and Datadog', async () => {
    const tenant = await svc.newTenant();
    const { key } = await createKey(svc, tenant.admin);
    const fromAlertmanager = await postWebhook(svc, tenant.tenantId, 'alertmanager', crashLooping, { key });
    expect(fromAlertmanager.status).toBe(202);
    const fromDatadog = await postWebhook(svc, tenant.tenantId, 'datadog', datadogDefault, { key });
    expect(fromDatadog.status).toBe(202);

    const rows = await svc.database.db
      .select({
        provider: ingestedEvents.provider,
        service: ingestedEvents.service,
        attribution: ingestedEvents.attribution,
        alertId: ingestedEvents.alertId,
      })
      .from(ingestedEvents)
      .where(eq(ingestedEvents.tenantId, tenant.tenantId))
      .orderBy(ingestedEvents.provider);
    expect(rows.map(({ alertId: _, ...row }) => row)).toEqual([
      { provider: 'alertmanager', service: 'checkout-api', attribution: 'label:container' },
      { provider: 'datadog', service: 'checkout', attribution: 'datadog:scope' },
    ]);
    // The alert record carries the same service, not kube-state-metrics'.
    const [record] = await svc.database.db
      .select({ service: alerts.service })
      .from(alerts)
      .where(and(eq(alerts.tenantId, tenant.tenantId), eq(alerts.id, rows[0]!.alertId!)));
    expect(record).toEqual({ service: 'checkout-api' });
  });

  it('stores no service for a node-exporter alert, and keeps its host in the labels', async () => {
    const tenant = await svc.newTenant();
    const { key } = await createKey(svc, tenant.admin);
    const nodeLabels = {
      alertname: 'NodeFilesystemSpaceFillingUp',
      container: 'node-exporter',
      device: '/dev/nvme0n1p1',
      endpoint: 'http-metrics',
      fstype: 'ext4',
      instance: '10.0.3.12:9100',
      job: 'node-exporter',
      mountpoint: '/',
      namespace: 'monitoring',
      pod: 'kube-prometheus-stack-prometheus-node-exporter-x7k2p',
      prometheus: 'monitoring/kube-prometheus-stack-prometheus',
      service: 'kube-prometheus-stack-prometheus-node-exporter',
      severity: 'warning',
    };
    const nodeAlert = {
      ...crashLooping,
      alerts: [{ ...crashLooping.alerts[0]!, fingerprint: '9e8d7c6b5a4f3e2d', labels: nodeLabels }],
    };
    const res = await postWebhook(svc, tenant.tenantId, 'alertmanager', nodeAlert, { key });
    expect(res.status).toBe(202);
    const rows = await svc.database.db
      .select({
        service: ingestedEvents.service,
        attribution: ingestedEvents.attribution,
        labels: ingestedEvents.labels,
      })
      .from(ingestedEvents)
      .where(eq(ingestedEvents.tenantId, tenant.tenantId));
    expect(rows).toHaveLength(1);
    expect(rows[0]).toMatchObject({ service: null, attribution: 'none:node' });
    expect(rows[0]!.labels.instance).toBe('10.0.3.12:9100');
  });
});
