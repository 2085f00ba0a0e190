/**
 * Which service an alert is about, and how that was read (docs/integrations/attribution.md,
 * ADR 0268). Exporters (kube-state-metrics, node-exporter, the kubelet's cAdvisor, blackbox) put
 * their own `job`/`service` on every alert they feed; the workload is in `deployment`, `pod`,
 * `container`… So workload labels beat exporter labels, and an alert that names no workload gets
 * no service rather than the exporter's.
 */

export interface Attribution {
  service: string | null;
  /** How: `label:deployment`, `pod:<pod>`, `blackbox:target`, `datadog:scope`, `none:node`, … */
  attribution: string;
}

export type AttributionInput =
  /** Prometheus-style labels: Alertmanager, and the labels of a generic alert. */
  | { tool: 'prometheus'; labels: Labels }
  | { tool: 'grafana'; labels: Labels }
  /** A generic alert: its explicit `service` field, else its labels. */
  | { tool: 'generic'; service?: string | undefined; labels: Labels }
  /** Datadog: tags, the title (`[Triggered on {service:checkout,env:prod}] …`), `$ALERT_SCOPE`, `$HOSTNAME`. */
  | { tool: 'datadog'; tags: Labels; title: string; scope?: string | undefined; host?: string | undefined }
  /** Sentry: the project slug(s), else the `service` tag. */
  | { tool: 'sentry'; projects: string[]; tags: Labels };

type Labels = Record<string, string | undefined>;

/** The one entry point: every provider asks it. */
export function attribute(input: AttributionInput): Attribution {
  switch (input.tool) {
    case 'prometheus':
      return fromLabels(input.labels);
    case 'grafana':
      return fromGrafana(input.labels);
    case 'generic': {
      const field = input.service?.trim();
      return field ? { service: field, attribution: 'field:service' } : fromLabels(input.labels);
    }
    case 'datadog':
      return fromDatadog(input.tags, input.title, input.scope, input.host);
    case 'sentry':
      return fromSentry(input.projects, input.tags);
  }
}

const none = (how: string): Attribution => ({ service: null, attribution: `none:${how}` });

function value(labels: Labels, key: string): string | undefined {
  const found = labels[key]?.trim();
  return found ? found : undefined;
}

// ---- exporters -------------------------------------------------------------------------------

/** Monitoring infrastructure: a job or service of these names is the exporter, never the workload. */
const infraNames = new Set([
  'kube-state-metrics',
  'node-exporter',
  'node',
  'windows-exporter',
  'kubelet',
  'cadvisor',
  'blackbox',
  'prometheus',
  'prometheus-k8s',
  'prometheus-operator',
  'alertmanager',
  'alertmanager-main',
  'pushgateway',
  'exporter',
]);
/** A name ending `-<one of these>` is a release of it (`monitoring-kube-state-metrics`). */
const infraSuffixes = ['kube-state-metrics', 'kubelet', 'cadvisor', 'blackbox', 'pushgateway', 'prometheus-operator'];

function isInfraSegment(segment: string): boolean {
  if (infraNames.has(segment)) return true;
  if (/^kube-prometheus-stack(-|$)/.test(segment)) return true;
  if (/[-_]exporter$/.test(segment)) return true;
  // Per-module probe jobs: `blackbox-http`, `blackbox_icmp`.
  if (/(^|[-_])blackbox([-_]|$)/.test(segment)) return true;
  if (/^(prometheus|alertmanager)-/.test(segment)) return true;
  // Prometheus's own discovery jobs (`kubernetes-pods`, `kubernetes-service-endpoints`, …).
  if (/^kubernetes-(pods|service-endpoints|services|nodes|nodes-cadvisor|cadvisor|apiservers|ingresses)$/.test(segment))
    return true;
  return infraSuffixes.some((name) => segment.endsWith(`-${name}`));
}

/** Names an exporter or monitoring job; `serviceMonitor/ns/name/0`-style job names by any segment. */
export function isExporterName(name: string): boolean {
  const lower = name.trim().toLowerCase();
  if (lower.startsWith('probe/')) return true;
  return lower.split('/').some((segment) => segment !== '' && isInfraSegment(segment));
}

type ExporterKind = 'blackbox' | 'node' | 'infra';

const serviceKeys = ['service', 'service_name', 'app', 'application', 'job', 'component'] as const;

/** Which exporter, if any, the alert's service-ish labels name. */
function exporterOf(labels: Labels): ExporterKind | null {
  let kind: ExporterKind | null = null;
  for (const key of serviceKeys) {
    const found = value(labels, key)?.toLowerCase();
    if (!found || !isExporterName(found)) continue;
    if (found.includes('blackbox') || found.startsWith('probe/')) return 'blackbox';
    if (/(^|[-/])(node|windows)[-_]exporter|^node$/.test(found)) kind = 'node';
    else kind ??= 'infra';
  }
  return kind;
}

// ---- workloads -------------------------------------------------------------------------------

/** Kubernetes' random-suffix alphabet (no vowels, no 0/1/3): what a ReplicaSet hash and a pod suffix use. */
const K = '[bcdfghjklmnpqrstvwxz2456789]';
const replicaSetPod = new RegExp(`^(.+)-${K}{6,10}-${K}{5}$`);
const cronJobPod = new RegExp(`^(.+)-\\d{8,}-${K}{5}$`);
const suffixedPod = new RegExp(`^(.+)-${K}{5}$`);
const ordinalPod = /^(.+)-\d+$/;

/** `checkout-api-7d9f8b6c5-x2x9k` → `checkout-api`; `postgres-0` → `postgres`; `fluentd-x7k2p` → `fluentd`. */
export function workloadOfPod(pod: string): string {
  for (const pattern of [replicaSetPod, cronJobPod, suffixedPod, ordinalPod]) {
    const match = pattern.exec(pod);
    if (match) return match[1]!;
  }
  return pod;
}

/** A CronJob's Job is `<cronjob>-<minutes since the epoch>`. */
const jobOfCronJob = (name: string) => name.replace(/-\d{8,}$/, '');

/** Workload labels, most specific first, each with how its value becomes a service name. */
const workloadKeys: Array<[string, (name: string) => string]> = [
  ['deployment', (name) => name],
  ['statefulset', (name) => name],
  ['daemonset', (name) => name],
  ['cronjob', (name) => name],
  ['job_name', jobOfCronJob],
  ['horizontalpodautoscaler', (name) => name],
  ['container', (name) => name],
  ['pod', workloadOfPod],
  ['app_kubernetes_io_name', (name) => name],
  ['app.kubernetes.io/name', (name) => name],
  ['label_app_kubernetes_io_name', (name) => name],
  ['k8s_app', (name) => name],
];

/** The first workload label that names something other than an exporter (its own pod, its container). */
function workloadOf(labels: Labels): Attribution | null {
  for (const [key, toService] of workloadKeys) {
    // Scraped without honorLabels, the series' own label is renamed `exported_<key>`: it is the workload.
    for (const label of [`exported_${key}`, key]) {
      const found = value(labels, label);
      if (!found || (key === 'container' && found === 'POD')) continue;
      const service = toService(found);
      // An exporter's own pod, whatever its random suffix looks like (`node-exporter-c35c4`).
      if (isExporterName(service) || isExporterName(found.replace(/-[a-z0-9]{5}$/, ''))) continue;
      const how = key === 'pod' ? `pod:${found.slice(0, 200)}` : `label:${label}`;
      return { service, attribution: how };
    }
  }
  return null;
}

/** The first service-ish label that is not an exporter's. */
function serviceLabelOf(labels: Labels): Attribution | null {
  for (const key of serviceKeys) {
    const found = value(labels, key);
    if (found && !isExporterName(found)) return { service: found, attribution: `label:${key}` };
  }
  return null;
}

// ---- Prometheus labels -----------------------------------------------------------------------

/** `https://checkout.example.com/healthz` → `checkout`; an IP address names nothing. */
function hostService(target: string): string | null {
  let host: string;
  try {
    host = new URL(/^[a-z][a-z0-9+.-]*:\/\//i.test(target) ? target : `http://${target}`).hostname;
  } catch {
    return null;
  }
  if (host === '' || /^[\d.]+$/.test(host) || host.includes(':') || host.startsWith('[')) return null;
  const labels = host.split('.').filter((part) => part !== '' && part !== 'www');
  return labels[0] ?? null;
}

function probeTarget(labels: Labels): Attribution | null {
  const named = value(labels, 'target') ?? value(labels, 'probe');
  const service = named ? (/[/:]/.test(named) ? hostService(named) : named) : null;
  const fromInstance = service ?? hostService(value(labels, 'instance') ?? '');
  return fromInstance ? { service: fromInstance, attribution: 'blackbox:target' } : null;
}

/**
 * An application's own rule names its service (`service="checkout"`); an exporter's rule names the
 * exporter, and its workload is in `deployment`, `pod`, …; a node's alert belongs to no service.
 */
function fromLabels(labels: Labels): Attribution {
  const exporter = exporterOf(labels);
  if (exporter === null) {
    const own = serviceLabelOf(labels);
    if (own) return own;
  }
  const workload = workloadOf(labels);
  if (workload) return workload;
  // A rule on an exporter's series that sets its own `service`/`app` label: the author named it
  // (it beats a guess from a probed URL).
  const own = serviceLabelOf(labels);
  if (own) return own;
  if (exporter === 'blackbox') return probeTarget(labels) ?? none('exporter-only');
  if (value(labels, 'node') || (exporter === 'node' && value(labels, 'instance'))) return none('node');
  // A datastore exporter (Elasticsearch, Redis, Kafka, RabbitMQ…) names the cluster it watches.
  const watched = serviceKeys.some((key) => DATASTORE_EXPORTER.test(value(labels, key) ?? ''));
  for (const key of clusterKeys) {
    const found = value(labels, key);
    if (watched && found && !isExporterName(found)) return { service: found, attribution: `label:${key}` };
  }
  return exporter ? none('exporter-only') : none('no-service-label');
}

/** Exporters that watch one datastore: their `cluster` label names it (elsewhere it is the Kubernetes cluster). */
const DATASTORE_EXPORTER =
  /(elasticsearch|opensearch|redis|kafka|rabbitmq|mongodb|postgres|mysql|memcached|cassandra|zookeeper|nats|clickhouse)[-_]?exporter/i;
const clusterKeys = ['cluster', 'cluster_name', 'es_cluster', 'redis_cluster', 'kafka_cluster', 'rabbitmq_cluster'];

/** Grafana's own alerts about a query, not about what it measures. */
const datasourceAlerts = new Set(['DatasourceNoData', 'DatasourceError']);

/** The rule's labels may name the service; the datasource (`datasource_uid`, `ref_id`) never does. */
function fromGrafana(labels: Labels): Attribution {
  if (!datasourceAlerts.has(value(labels, 'alertname') ?? '')) return fromLabels(labels);
  const found = fromLabels(labels);
  return found.service === null ? none('datasource') : { service: found.service, attribution: 'grafana:rule-labels' };
}

// ---- Datadog ---------------------------------------------------------------------------------

/** `service:checkout,env:prod` (or `{…}`) → `{ service: 'checkout', env: 'prod' }`. */
function parseScope(scope: string): Record<string, string> {
  const parsed: Record<string, string> = {};
  for (const part of scope.replace(/[{}]/g, '').split(',')) {
    const colon = part.indexOf(':');
    if (colon <= 0) continue;
    const key = part.slice(0, colon).trim();
    const found = part.slice(colon + 1).trim();
    if (found !== '' && parsed[key] === undefined) parsed[key] = found;
  }
  return parsed;
}

/** The `{…}` of the title's leading `[Triggered on {…}]` (Datadog's default template). */
function titleScope(title: string): string {
  const match = /^\s*(?:\[[^\]]*\]\s*)*?\[[^\]{]*\{([^}\]]*)\}[^\]]*\]/.exec(title);
  return match?.[1] ?? '';
}

/** Unified service tagging first, then the Kubernetes tags the Agent adds, then `app`. */
const datadogKeys = ['service', 'kube_deployment', 'kube_service', 'kube_stateful_set', 'app'] as const;
/** Older tag names the generic label order also read. */
const datadogFallbackKeys = ['service_name', 'application', 'component'] as const;

function fromDatadog(
  tags: Labels,
  title: string,
  scopeField: string | undefined,
  host: string | undefined,
): Attribution {
  const scope = { ...parseScope(scopeField ?? ''), ...parseScope(titleScope(title)) };
  for (const key of datadogKeys) {
    const scoped = scope[key];
    if (scoped) return { service: scoped, attribution: key === 'service' ? 'datadog:scope' : `datadog:scope:${key}` };
    const tagged = value(tags, key);
    if (tagged) return { service: tagged, attribution: `datadog:tag:${key}` };
  }
  for (const key of datadogFallbackKeys) {
    const tagged = value(tags, key);
    if (tagged) return { service: tagged, attribution: `datadog:tag:${key}` };
  }
  return scope.host || value(tags, 'host') || host?.trim() ? none('node') : none('no-service-tag');
}

// ---- Sentry ----------------------------------------------------------------------------------

function fromSentry(projects: string[], tags: Labels): Attribution {
  if (projects.length === 1) return { service: projects[0]!, attribution: 'sentry:project' };
  const tagged = value(tags, 'service');
  if (tagged) return { service: tagged, attribution: 'sentry:tag:service' };
  return none(projects.length > 1 ? 'several-projects' : 'no-project');
}
