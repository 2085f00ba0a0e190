import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { attribute, isExporterName, workloadOfPod } from '../../src/ingest/attribution.js';
import { hashFingerprint, serviceFromLabels } from '../../src/ingest/normalize.js';
import { alertmanagerProvider } from '../../src/ingest/providers/alertmanager.js';
import { datadogProvider } from '../../src/ingest/providers/datadog.js';
import { genericProvider } from '../../src/ingest/providers/generic.js';
import { grafanaProvider } from '../../src/ingest/providers/grafana.js';
import { sentryProvider } from '../../src/ingest/providers/sentry.js';
import type { NormalizedAlert, WebhookProvider } from '../../src/ingest/types.js';

/**
 * Label sets as kube-prometheus-stack's rules deliver them: the rule's expression labels plus the
 * scrape target's (`job`, `service`, `endpoint`, `instance`, and the exporter's own `pod` and
 * `container` when the metric carries none of its own), plus `prometheus` and `severity`.
 */
const prometheus = 'monitoring/kube-prometheus-stack-prometheus';
const ksm = {
  endpoint: 'http',
  instance: '10.244.1.17:8080',
  job: 'kube-state-metrics',
  service: 'kube-prometheus-stack-kube-state-metrics',
  prometheus,
};
/** The kube-state-metrics pod's own labels, on every series that has no pod of its own. */
const ksmSelf = {
  ...ksm,
  container: 'kube-state-metrics',
  pod: 'kube-prometheus-stack-kube-state-metrics-6d8c9f7b5-k2m4p',
};
const nodeExporter = {
  container: 'node-exporter',
  endpoint: 'http-metrics',
  instance: '10.0.3.12:9100',
  job: 'node-exporter',
  namespace: 'monitoring',
  pod: 'kube-prometheus-stack-prometheus-node-exporter-x7k2p',
  service: 'kube-prometheus-stack-prometheus-node-exporter',
  prometheus,
};

const labels = (values: Record<string, string>) => attribute({ tool: 'prometheus', labels: values });

function alertsOf(provider: WebhookProvider, body: unknown): NormalizedAlert[] {
  return provider.parse(body, () => undefined).events as NormalizedAlert[];
}

function fixture(name: string): any {
  return JSON.parse(readFileSync(new URL(`../fixtures/webhooks/${name}`, import.meta.url), 'utf8'));
}

describe('kube-state-metrics alerts: the workload, not the exporter', () => {
  it('KubePodCrashLooping: the container (the pod label is the workload pod, honorLabels)', () => {
    expect(
      labels({
        alertname: 'KubePodCrashLooping',
        ...ksm,
        container: 'checkout-api',
        namespace: 'shop',
        pod: 'checkout-api-7d9f8b6c5-x2x9k',
        reason: 'CrashLoopBackOff',
        severity: 'warning',
        uid: '4f1c2a9e-8b7d-4c1e-9a2b-3c4d5e6f7a8b',
      }),
    ).toEqual({ service: 'checkout-api', attribution: 'label:container' });
  });

  it('KubePodNotReady: only namespace and pod survive its aggregation; the ReplicaSet hash is stripped', () => {
    expect(
      labels({
        alertname: 'KubePodNotReady',
        namespace: 'shop',
        pod: 'cart-5c7d8f9b4-q8w2z',
        prometheus,
        severity: 'warning',
      }),
    ).toEqual({ service: 'cart', attribution: 'pod:cart-5c7d8f9b4-q8w2z' });
  });

  it('KubeDeploymentReplicasMismatch: the deployment beats kube-state-metrics own container and pod', () => {
    expect(
      labels({
        alertname: 'KubeDeploymentReplicasMismatch',
        ...ksmSelf,
        deployment: 'checkout-api',
        namespace: 'shop',
        severity: 'warning',
      }),
    ).toEqual({ service: 'checkout-api', attribution: 'label:deployment' });
  });

  it('KubeStatefulSetReplicasMismatch: the statefulset', () => {
    expect(
      labels({
        alertname: 'KubeStatefulSetReplicasMismatch',
        ...ksmSelf,
        statefulset: 'orders-db',
        namespace: 'shop',
        severity: 'warning',
      }),
    ).toEqual({ service: 'orders-db', attribution: 'label:statefulset' });
  });

  it('KubeDaemonSetRolloutStuck: the daemonset', () => {
    expect(
      labels({
        alertname: 'KubeDaemonSetRolloutStuck',
        ...ksmSelf,
        daemonset: 'fluent-bit',
        namespace: 'logging',
        severity: 'warning',
      }),
    ).toEqual({ service: 'fluent-bit', attribution: 'label:daemonset' });
  });

  it("KubeJobFailed: job_name without the CronJob's schedule suffix (job is kube-state-metrics)", () => {
    expect(
      labels({
        alertname: 'KubeJobFailed',
        ...ksmSelf,
        condition: 'true',
        job_name: 'nightly-report-28391040',
        namespace: 'reports',
        severity: 'warning',
      }),
    ).toEqual({ service: 'nightly-report', attribution: 'label:job_name' });
  });

  it('KubeHpaMaxedOut: the horizontalpodautoscaler', () => {
    expect(
      labels({
        alertname: 'KubeHpaMaxedOut',
        ...ksmSelf,
        horizontalpodautoscaler: 'search-api',
        namespace: 'shop',
        severity: 'warning',
      }),
    ).toEqual({ service: 'search-api', attribution: 'label:horizontalpodautoscaler' });
  });

  it('KubeContainerWaiting: the container', () => {
    expect(
      labels({
        alertname: 'KubeContainerWaiting',
        container: 'payments',
        namespace: 'shop',
        pod: 'payments-6b9c7d5f8-m4n7r',
        reason: 'ContainerCreating',
        prometheus,
        severity: 'warning',
      }),
    ).toEqual({ service: 'payments', attribution: 'label:container' });
  });

  it('scraped without honorLabels: the exported_ labels are the workload, pod/container the exporter', () => {
    expect(
      labels({
        alertname: 'KubePodCrashLooping',
        ...ksmSelf,
        exported_container: 'checkout-api',
        exported_pod: 'checkout-api-7d9f8b6c5-x2x9k',
        exported_namespace: 'shop',
      }),
    ).toEqual({ service: 'checkout-api', attribution: 'label:exported_container' });
  });

  it('KubeNodeNotReady: a node, no service', () => {
    expect(labels({ alertname: 'KubeNodeNotReady', ...ksmSelf, node: 'ip-10-0-3-12', severity: 'warning' })).toEqual({
      service: null,
      attribution: 'none:node',
    });
  });
});

describe('cAdvisor / kubelet alerts', () => {
  it("CPUThrottlingHigh: the container; its `service` is the kubelet's (job dropped by `without`)", () => {
    expect(
      labels({
        alertname: 'CPUThrottlingHigh',
        container: 'checkout-api',
        instance: '10.0.3.12:10250',
        namespace: 'shop',
        pod: 'checkout-api-7d9f8b6c5-x2x9k',
        prometheus,
        service: 'kube-prometheus-stack-kubelet',
        severity: 'info',
      }),
    ).toEqual({ service: 'checkout-api', attribution: 'label:container' });
  });

  it("the pause container (`POD`) is no workload: the pod's is", () => {
    expect(
      labels({ container: 'POD', pod: 'orders-db-2', service: 'kube-prometheus-stack-kubelet', job: 'kubelet' }),
    ).toEqual({ service: 'orders-db', attribution: 'pod:orders-db-2' });
  });
});

describe('TargetDown: the scraped target is the service, unless it is monitoring infrastructure', () => {
  it("an application's target", () => {
    expect(
      labels({
        alertname: 'TargetDown',
        job: 'checkout-api',
        namespace: 'shop',
        service: 'checkout-api',
        prometheus,
        severity: 'warning',
      }),
    ).toEqual({ service: 'checkout-api', attribution: 'label:service' });
  });

  it('kube-state-metrics itself: no service', () => {
    expect(
      labels({
        alertname: 'TargetDown',
        job: 'kube-state-metrics',
        namespace: 'monitoring',
        service: 'kube-prometheus-stack-kube-state-metrics',
        prometheus,
        severity: 'warning',
      }),
    ).toEqual({ service: null, attribution: 'none:exporter-only' });
  });
});

describe('node-exporter alerts belong to no service', () => {
  it('NodeFilesystemSpaceFillingUp: its container and pod are node-exporter own', () => {
    const found = labels({
      alertname: 'NodeFilesystemSpaceFillingUp',
      ...nodeExporter,
      device: '/dev/nvme0n1p1',
      fstype: 'ext4',
      mountpoint: '/',
      severity: 'warning',
    });
    expect(found).toEqual({ service: null, attribution: 'none:node' });
  });

  it('NodeMemoryHighUtilization', () => {
    expect(labels({ alertname: 'NodeMemoryHighUtilization', ...nodeExporter, severity: 'warning' })).toEqual({
      service: null,
      attribution: 'none:node',
    });
  });

  it('whatever its pod suffix looks like (`node-exporter-c35c4`, outside the Kubernetes alphabet)', () => {
    const found = labels({
      alertname: 'NodeFilesystemSpaceFillingUp',
      container: 'node-exporter',
      job: 'node-exporter',
      pod: 'node-exporter-c35c4',
      service: 'node-exporter',
      instance: 'ip-10-0-12-87.eu-west-1.compute.internal',
      mountpoint: '/var/lib/docker',
    });
    expect(found).toEqual({ service: null, attribution: 'none:node' });
  });

  it('a plain node-exporter scrape (`job="node"`) too', () => {
    expect(labels({ alertname: 'NodeMemoryHighUtilization', job: 'node', instance: 'db-01:9100' })).toEqual({
      service: null,
      attribution: 'none:node',
    });
  });
});

describe('blackbox probes: the probed target', () => {
  it("ProbeFailed: the first label of the instance URL's host", () => {
    expect(
      labels({
        alertname: 'ProbeFailed',
        instance: 'https://checkout.example.com/healthz',
        job: 'blackbox',
        severity: 'critical',
      }),
    ).toEqual({ service: 'checkout', attribution: 'blackbox:target' });
  });

  it('BlackboxProbeFailed from a Probe resource (`job="probe/<ns>/<name>"`), a cluster DNS name', () => {
    expect(
      labels({
        alertname: 'BlackboxProbeFailed',
        instance: 'http://checkout-api.shop.svc:8080/health',
        job: 'probe/monitoring/checkout-api',
        namespace: 'monitoring',
        severity: 'critical',
      }),
    ).toEqual({ service: 'checkout-api', attribution: 'blackbox:target' });
  });

  it("a probe whose rule names its service: the rule's label, not a guess from the URL", () => {
    expect(
      labels({
        alertname: 'SSLCertExpired',
        instance: 'https://api.example.com',
        job: 'blackbox',
        service: 'public-api',
        severity: 'critical',
      }),
    ).toEqual({ service: 'public-api', attribution: 'label:service' });
    expect(
      labels({ alertname: 'ProbeDNSFailed', instance: 'payments.internal.example.com', job: 'blackbox-dns' }),
    ).toEqual({
      service: 'payments',
      attribution: 'blackbox:target',
    });
  });

  it('a `target` label beats the instance; an IP address names nothing', () => {
    expect(labels({ job: 'blackbox-exporter', target: 'payments', instance: '10.0.0.5:443' })).toEqual({
      service: 'payments',
      attribution: 'blackbox:target',
    });
    expect(labels({ job: 'blackbox', instance: 'https://10.0.0.5/healthz' })).toEqual({
      service: null,
      attribution: 'none:exporter-only',
    });
  });
});

describe("an application's own rule", () => {
  it('its `service` label wins, even over the container of its scraped series', () => {
    expect(
      labels({
        alertname: 'CheckoutHighErrorRate',
        container: 'app',
        job: 'checkout',
        namespace: 'shop',
        pod: 'checkout-7d9f8b6c5-x2x9k',
        service: 'checkout',
        severity: 'critical',
      }),
    ).toEqual({ service: 'checkout', attribution: 'label:service' });
  });

  it('an `app` label when there is no service label; app.kubernetes.io/name; none at all', () => {
    expect(labels({ alertname: 'QueueBacklog', app: 'billing-worker' })).toEqual({
      service: 'billing-worker',
      attribution: 'label:app',
    });
    expect(labels({ alertname: 'X', app_kubernetes_io_name: 'ledger' })).toEqual({
      service: 'ledger',
      attribution: 'label:app_kubernetes_io_name',
    });
    expect(labels({ alertname: 'X', team: 'payments' })).toEqual({
      service: null,
      attribution: 'none:no-service-label',
    });
  });

  it('a rule on kube-state-metrics metrics that sets its own service label, with no workload label', () => {
    expect(labels({ alertname: 'ShopQuotaLow', ...ksm, app: 'shop-platform' })).toEqual({
      service: 'shop-platform',
      attribution: 'label:app',
    });
  });
});

describe('pod names and exporter names', () => {
  it('strips a ReplicaSet hash, a CronJob run, a DaemonSet suffix, a StatefulSet ordinal', () => {
    expect(workloadOfPod('checkout-api-7d9f8b6c5-x2x9k')).toBe('checkout-api');
    expect(workloadOfPod('nightly-report-28391040-5t7vw')).toBe('nightly-report');
    expect(workloadOfPod('fluent-bit-x7k2p')).toBe('fluent-bit');
    expect(workloadOfPod('orders-db-12')).toBe('orders-db');
    expect(workloadOfPod('standalone')).toBe('standalone');
  });

  it('knows exporters by name, release prefix and suffix, and only them', () => {
    for (const name of [
      'kube-state-metrics',
      'kube-prometheus-stack-kube-state-metrics',
      'monitoring-kube-state-metrics',
      'prometheus-node-exporter',
      'kubelet',
      'windows-exporter',
      'redis_exporter',
      'serviceMonitor/monitoring/kube-prometheus-stack-kubelet/0',
      'kubernetes-pods',
      'alertmanager-main',
      'pushgateway',
    ])
      expect(isExporterName(name), name).toBe(true);
    for (const name of ['checkout', 'checkout-api', 'node-api', 'coredns', 'statistics'])
      expect(isExporterName(name), name).toBe(false);
  });
});

describe('Grafana', () => {
  const grafana = (values: Record<string, string>) => attribute({ tool: 'grafana', labels: values });

  it("DatasourceNoData: the rule's own labels when they name a service", () => {
    expect(
      grafana({
        alertname: 'DatasourceNoData',
        datasource_uid: 'P1809F7CD0C75ACF3',
        grafana_folder: 'Checkout',
        ref_id: 'A',
        rulename: 'Checkout p99 latency',
        service: 'checkout',
        team: 'payments',
      }),
    ).toEqual({ service: 'checkout', attribution: 'grafana:rule-labels' });
  });

  it('DatasourceError without a service label: none, never the datasource', () => {
    expect(
      grafana({
        alertname: 'DatasourceError',
        datasource_uid: 'P1809F7CD0C75ACF3',
        grafana_folder: 'Checkout',
        ref_id: 'A',
        rulename: 'Checkout p99 latency',
        team: 'payments',
      }),
    ).toEqual({ service: null, attribution: 'none:datasource' });
  });

  it("a rule's alert through the webhook: its labels, and the attribution stored on the alert", () => {
    const [alert] = alertsOf(grafanaProvider, fixture('grafana-firing.json'));
    expect(alert).toMatchObject({ service: 'checkout', attribution: 'label:service' });
  });
});

describe('Datadog', () => {
  /** Datadog's default webhook payload: no tags, the scope only in the event title. */
  const defaultTemplate = {
    body: '%%%\n5xx error rate on checkout is above 5% for the last 5 minutes.\n%%%',
    last_updated: '1715679000000',
    event_type: 'query_alert_monitor',
    title: '[Triggered on {service:checkout,env:prod}] High error rate on checkout',
    date: '1715679000000',
    org: { id: '123456', name: 'Example Shop' },
    id: '7574651212382451718',
  };

  it("the default template: the title's scope", () => {
    expect(alertsOf(datadogProvider, defaultTemplate)[0]).toMatchObject({
      service: 'checkout',
      attribution: 'datadog:scope',
      alertName: 'High error rate on checkout',
    });
  });

  it('our template: the scope beats the tags, and says so', () => {
    expect(alertsOf(datadogProvider, fixture('datadog-triggered.json'))[0]).toMatchObject({
      service: 'checkout',
      attribution: 'datadog:scope',
    });
  });

  it('a simple monitor: the service tag, then the Kubernetes tags, then app', () => {
    const title = '[Triggered] High latency';
    const tags = (value: string) =>
      attribute({ tool: 'datadog', tags: Object.fromEntries(value.split(',').map((t) => t.split(':'))), title });
    expect(tags('env:prod,service:cart,kube_deployment:cart-api')).toEqual({
      service: 'cart',
      attribution: 'datadog:tag:service',
    });
    expect(tags('env:prod,kube_service:cart-svc,kube_deployment:cart-api')).toEqual({
      service: 'cart-api',
      attribution: 'datadog:tag:kube_deployment',
    });
    expect(tags('env:prod,kube_stateful_set:orders-db')).toEqual({
      service: 'orders-db',
      attribution: 'datadog:tag:kube_stateful_set',
    });
    expect(tags('env:prod,app:billing')).toEqual({ service: 'billing', attribution: 'datadog:tag:app' });
  });

  it('a host monitor: no service', () => {
    expect(
      attribute({
        tool: 'datadog',
        tags: {},
        title: '[Triggered on {host:ip-10-0-3-12}] Disk space is low',
        host: 'ip-10-0-3-12',
      }),
    ).toEqual({ service: null, attribution: 'none:node' });
    expect(attribute({ tool: 'datadog', tags: { env: 'prod' }, title: 'Error budget burn' })).toEqual({
      service: null,
      attribution: 'none:no-service-tag',
    });
  });

  it('a fingerprint Datadog gives no key for still hashes the tag-order service', () => {
    const body = { title: '[Triggered on {service:checkout}] High error rate', tags: 'env:prod,app:web' };
    const [alert] = alertsOf(datadogProvider, body);
    expect(alert!.service).toBe('checkout');
    expect(alert!.fingerprint).toBe(hashFingerprint('datadog', 'High error rate', 'web', { env: 'prod', app: 'web' }));
  });
});

describe('Sentry and the generic webhook', () => {
  it("Sentry: the project slug (from the event's API URL)", () => {
    expect(alertsOf(sentryProvider, fixture('sentry-event-alert.json'))[0]).toMatchObject({
      service: 'checkout',
      attribution: 'sentry:project',
    });
    expect(attribute({ tool: 'sentry', projects: ['checkout-web'], tags: { service: 'x' } })).toEqual({
      service: 'checkout-web',
      attribution: 'sentry:project',
    });
    expect(attribute({ tool: 'sentry', projects: ['a', 'b'], tags: {} })).toEqual({
      service: null,
      attribution: 'none:several-projects',
    });
  });

  it("generic: the explicit service field, else the labels' rules", () => {
    const [explicit] = alertsOf(genericProvider, {
      name: 'HighErrorRate',
      service: 'checkout',
      labels: { job: 'kube-state-metrics' },
    });
    expect(explicit).toMatchObject({ service: 'checkout', attribution: 'field:service' });
    const [fromLabels] = alertsOf(genericProvider, {
      name: 'PodRestarts',
      labels: { job: 'kube-state-metrics', deployment: 'cart' },
    });
    expect(fromLabels).toMatchObject({ service: 'cart', attribution: 'label:deployment' });
  });
});

describe('fingerprints stay what they were', () => {
  it("an Alertmanager alert without the tool's fingerprint hashes the label-order service, not the attributed one", () => {
    const alertLabels = {
      alertname: 'KubeDeploymentReplicasMismatch',
      ...ksmSelf,
      deployment: 'checkout-api',
      namespace: 'shop',
    };
    const [alert] = alertsOf(alertmanagerProvider, {
      version: '4',
      receiver: 'oncall',
      status: 'firing',
      alerts: [{ status: 'firing', labels: alertLabels, annotations: {}, startsAt: '2026-11-27T09:00:00Z' }],
    });
    expect(alert).toMatchObject({ service: 'checkout-api', attribution: 'label:deployment' });
    expect(serviceFromLabels(alertLabels)).toBe('kube-prometheus-stack-kube-state-metrics');
    expect(alert!.fingerprint).toBe(
      hashFingerprint(
        'alertmanager',
        'KubeDeploymentReplicasMismatch',
        'kube-prometheus-stack-kube-state-metrics',
        alertLabels,
      ),
    );
  });
});

describe('datastore exporters', () => {
  it('an elasticsearch_exporter alert belongs to the cluster it watches', () => {
    expect(
      labels({
        alertname: 'ElasticsearchClusterRed',
        cluster: 'search-index',
        job: 'elasticsearch-exporter',
        instance: '10.2.9.14:9114',
        service: 'elasticsearch-exporter',
        namespace: 'search',
      }),
    ).toEqual({ service: 'search-index', attribution: 'label:cluster' });
  });

  it('a cluster label on another exporter (the Kubernetes cluster name) names nothing', () => {
    expect(
      labels({ alertname: 'KubeAPIErrorBudgetBurn', cluster: 'prod-eu-1', job: 'apiserver', service: 'kubernetes' })
        .service,
    ).not.toBe('prod-eu-1');
  });
});
