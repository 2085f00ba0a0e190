/**
 * kube-prometheus (kubernetes-mixin, node-exporter mixin) alerts as their rules label and annotate
 * them: `job`/`service` are the exporter's (kube-state-metrics, kubelet, node-exporter, blackbox);
 * the workload is only in namespace/pod/container/deployment/statefulset/instance.
 */
import type { Alert } from './alerts.js';
import { hex } from './time.js';

const runbook = (name: string) =>
  `https://runbooks.prometheus-operator.dev/runbooks/${name.startsWith('Node') ? 'node' : 'kubernetes'}/${name.toLowerCase()}`;
const ksm = {
  endpoint: 'http',
  instance: '10.2.7.41:8080',
  job: 'kube-state-metrics',
  prometheus: 'monitoring/k8s',
  service: 'kube-state-metrics',
};
const kubelet = (node: string) => ({
  endpoint: 'https-metrics',
  instance: `${node}:10250`,
  job: 'kubelet',
  metrics_path: '/metrics/cadvisor',
  node,
  prometheus: 'monitoring/k8s',
  service: 'kubelet',
});
const podOf = (workload: string) =>
  `${workload}-${hex(workload, 9)
    .replace(/[0-9]/g, (d) => 'bcdfghjkm'[Number(d)] ?? 'x')
    .slice(0, 9)}-${hex(workload + 'p', 5).replace(/[0-9]/g, (d) => 'npqrstvwz'[Number(d)] ?? 'x')}`;

export const pod = podOf;

export function crashLooping(ns: string, workload: string, at: number, container = workload): Alert {
  const p = podOf(workload);
  return {
    labels: {
      alertname: 'KubePodCrashLooping',
      container,
      ...ksm,
      namespace: ns,
      pod: p,
      reason: 'CrashLoopBackOff',
      severity: 'warning',
      uid: hex(p, 8),
    },
    annotations: {
      description: `Pod ${ns}/${p} (${container}) is in waiting state (reason: "CrashLoopBackOff").`,
      runbook_url: runbook('KubePodCrashLooping'),
      summary: 'Pod is crash looping.',
    },
    at,
    expr: `max_over_time(kube_pod_container_status_waiting_reason{reason="CrashLoopBackOff", job="kube-state-metrics"}[5m]) >= 1`,
  };
}

export function replicasMismatch(ns: string, deployment: string, at: number): Alert {
  return {
    labels: { alertname: 'KubeDeploymentReplicasMismatch', deployment, ...ksm, namespace: ns, severity: 'warning' },
    annotations: {
      description: `Deployment ${ns}/${deployment} has not matched the expected number of replicas for longer than 15 minutes.`,
      runbook_url: runbook('KubeDeploymentReplicasMismatch'),
      summary: 'Deployment has not matched the expected number of replicas.',
    },
    at,
  };
}

export function statefulSetMismatch(ns: string, statefulset: string, at: number): Alert {
  return {
    labels: { alertname: 'KubeStatefulSetReplicasMismatch', statefulset, ...ksm, namespace: ns, severity: 'warning' },
    annotations: {
      description: `StatefulSet ${ns}/${statefulset} has not matched the expected number of replicas for longer than 15 minutes.`,
      runbook_url: runbook('KubeStatefulSetReplicasMismatch'),
      summary: 'StatefulSet has not matched the expected number of replicas.',
    },
    at,
  };
}

export function podNotReady(ns: string, workload: string, at: number): Alert {
  const p = podOf(workload);
  return {
    labels: { alertname: 'KubePodNotReady', ...ksm, namespace: ns, pod: p, severity: 'warning' },
    annotations: {
      description: `Pod ${ns}/${p} has been in a non-ready state for longer than 15 minutes.`,
      runbook_url: runbook('KubePodNotReady'),
      summary: 'Pod has been in a non-ready state for more than 15 minutes.',
    },
    at,
  };
}

export function hpaMaxedOut(ns: string, hpa: string, at: number): Alert {
  return {
    labels: { alertname: 'KubeHpaMaxedOut', horizontalpodautoscaler: hpa, ...ksm, namespace: ns, severity: 'warning' },
    annotations: {
      description: `HPA ${ns}/${hpa} has been running at max replicas for longer than 15 minutes.`,
      runbook_url: runbook('KubeHpaMaxedOut'),
      summary: 'HPA is running at max replicas',
    },
    at,
  };
}

export function jobFailed(ns: string, jobName: string, at: number): Alert {
  return {
    labels: { alertname: 'KubeJobFailed', ...ksm, job_name: jobName, namespace: ns, severity: 'warning' },
    annotations: {
      description: `Job ${ns}/${jobName} failed to complete. Removing failed job after investigation should clear this alert.`,
      runbook_url: runbook('KubeJobFailed'),
      summary: 'Job failed to complete.',
    },
    at,
  };
}

export function cpuThrottling(ns: string, workload: string, node: string, at: number, percent = 62): Alert {
  const p = podOf(workload);
  return {
    labels: {
      alertname: 'CPUThrottlingHigh',
      container: workload,
      ...kubelet(node),
      namespace: ns,
      pod: p,
      severity: 'info',
    },
    annotations: {
      description: `${percent}% throttling of CPU in namespace ${ns} for container ${workload} in pod ${p}.`,
      runbook_url: runbook('CPUThrottlingHigh'),
      summary: 'Processes experience elevated CPU throttling.',
    },
    at,
  };
}

/** The OOM kill as kube-state-metrics reports it (last terminated reason), the awesome-prometheus-alerts rule. */
export function oomKilled(ns: string, workload: string, at: number): Alert {
  const p = podOf(workload);
  return {
    labels: {
      alertname: 'KubernetesContainerOomKiller',
      container: workload,
      ...ksm,
      namespace: ns,
      pod: p,
      reason: 'OOMKilled',
      severity: 'warning',
    },
    annotations: {
      description: `Container ${workload} in pod ${ns}/${p} has been OOMKilled 3 times in the last 10 minutes.\n  VALUE = 3\n  LABELS = map[container:${workload} namespace:${ns} pod:${p}]`,
      summary: `Kubernetes container oom killer (${ns}/${p}:${workload})`,
    },
    at,
  };
}

export function pvcFillingUp(ns: string, claim: string, node: string, at: number, freePercent = 2.7): Alert {
  return {
    labels: {
      alertname: 'KubePersistentVolumeFillingUp',
      ...kubelet(node),
      metrics_path: '/metrics',
      namespace: ns,
      persistentvolumeclaim: claim,
      severity: 'critical',
    },
    annotations: {
      description: `The PersistentVolume claimed by ${claim} in Namespace ${ns} is only ${freePercent}% free.`,
      runbook_url: runbook('KubePersistentVolumeFillingUp'),
      summary: 'PersistentVolume is filling up.',
    },
    at,
  };
}

const nodeExporter = (instance: string) => ({
  container: 'node-exporter',
  endpoint: 'https',
  instance,
  job: 'node-exporter',
  namespace: 'monitoring',
  pod: `node-exporter-${hex(instance, 5)}`,
  prometheus: 'monitoring/k8s',
  service: 'node-exporter',
});

export function filesystemAlmostFull(
  instance: string,
  mountpoint: string,
  at: number,
  available = 3.12,
  device = '/dev/nvme1n1',
): Alert {
  return {
    labels: {
      alertname: 'NodeFilesystemAlmostOutOfSpace',
      device,
      fstype: 'ext4',
      ...nodeExporter(instance),
      mountpoint,
      severity: 'critical',
    },
    annotations: {
      description: `Filesystem on ${device}, mounted on ${mountpoint}, at ${instance} has only ${available.toFixed(2)}% available space left.`,
      runbook_url: runbook('NodeFilesystemAlmostOutOfSpace'),
      summary: 'Filesystem has less than 5% space left.',
    },
    at,
  };
}

export function filesystemFillingUp(
  instance: string,
  mountpoint: string,
  at: number,
  available = 14.5,
  device = '/dev/nvme0n1p1',
): Alert {
  return {
    labels: {
      alertname: 'NodeFilesystemSpaceFillingUp',
      device,
      fstype: 'ext4',
      ...nodeExporter(instance),
      mountpoint,
      severity: 'warning',
    },
    annotations: {
      description: `Filesystem on ${device}, mounted on ${mountpoint}, at ${instance} has only ${available.toFixed(2)}% available space left and is filling up.`,
      runbook_url: runbook('NodeFilesystemSpaceFillingUp'),
      summary: 'Filesystem is predicted to run out of space within the next 24 hours.',
    },
    at,
  };
}

export function nodeCpuHigh(instance: string, at: number, percent = 97): Alert {
  return {
    labels: { alertname: 'NodeCPUHighUsage', ...nodeExporter(instance), severity: 'info' },
    annotations: {
      description: `CPU usage at ${instance} has been above 90% for the last 15 minutes, is currently at ${percent}%.`,
      runbook_url: runbook('NodeCPUHighUsage'),
      summary: 'High CPU usage.',
    },
    at,
  };
}

export function nodeMemoryHigh(instance: string, at: number, percent = 96.4): Alert {
  return {
    labels: { alertname: 'NodeMemoryHighUtilization', ...nodeExporter(instance), severity: 'warning' },
    annotations: {
      description: `Memory is filling up at ${instance}, has been above 90% for the last 15 minutes, is currently at ${percent}%.`,
      runbook_url: runbook('NodeMemoryHighUtilization'),
      summary: 'Host is running out of memory.',
    },
    at,
  };
}

/** blackbox_exporter probes (awesome-prometheus-alerts rules): the target is the `instance` URL. */
export function probeFailed(target: string, at: number, module = 'http_2xx'): Alert {
  return {
    labels: { alertname: 'BlackboxProbeFailed', instance: target, job: 'blackbox', module, severity: 'critical' },
    annotations: {
      description: `Probe failed\n  VALUE = 0\n  LABELS = map[instance:${target} job:blackbox module:${module}]`,
      summary: `Blackbox probe failed (instance ${target})`,
    },
    at,
  };
}

export function sslExpiringSoon(target: string, at: number, days = 2.4): Alert {
  return {
    labels: {
      alertname: 'BlackboxSslCertificateWillExpireSoon',
      instance: target,
      job: 'blackbox',
      module: 'http_2xx',
      severity: 'warning',
    },
    annotations: {
      description: `SSL certificate expires in less than 3 days\n  VALUE = ${(days * 86400).toFixed(0)}\n  LABELS = map[instance:${target} job:blackbox]`,
      summary: `Blackbox SSL certificate will expire soon (instance ${target})`,
    },
    at,
  };
}

export function sslExpired(target: string, at: number): Alert {
  return {
    labels: {
      alertname: 'BlackboxSslCertificateExpired',
      instance: target,
      job: 'blackbox',
      module: 'http_2xx',
      severity: 'critical',
    },
    annotations: {
      description: `SSL certificate has expired already\n  VALUE = -412\n  LABELS = map[instance:${target} job:blackbox]`,
      summary: `Blackbox SSL certificate expired (instance ${target})`,
    },
    at,
  };
}

export function probeSlow(target: string, at: number, seconds = 2.7): Alert {
  return {
    labels: {
      alertname: 'BlackboxProbeSlowHttp',
      instance: target,
      job: 'blackbox',
      module: 'http_2xx',
      severity: 'warning',
    },
    annotations: {
      description: `HTTP request took more than 1s\n  VALUE = ${seconds}\n  LABELS = map[instance:${target} job:blackbox]`,
      summary: `Blackbox probe slow HTTP (instance ${target})`,
    },
    at,
  };
}

/** The waiting reason kube-state-metrics reports for a container that cannot start (image, config). */
export function containerWaiting(ns: string, workload: string, reason: string, at: number): Alert {
  const p = podOf(workload);
  return {
    labels: {
      alertname: 'KubeContainerWaiting',
      container: workload,
      ...ksm,
      namespace: ns,
      pod: p,
      reason,
      severity: 'warning',
    },
    annotations: {
      description: `pod/${p} in namespace ${ns} on container ${workload} has been in waiting state for longer than 1 hour. (reason: "${reason}")`,
      runbook_url: runbook('KubeContainerWaiting'),
      summary: 'Pod container waiting longer than 1 hour',
    },
    at,
  };
}

/**
 * The same alert as the kube-prometheus-stack Helm chart labels it: the exporters' jobs and
 * services carry the release name (`kube-prometheus-stack-kube-state-metrics`…).
 */
export function helmChartNaming(alert: Alert, release = 'kube-prometheus-stack'): Alert {
  const rename: Record<string, string> = {
    'kube-state-metrics': `${release}-kube-state-metrics`,
    kubelet: `${release}-kubelet`,
    'node-exporter': `${release}-prometheus-node-exporter`,
  };
  const labels = { ...alert.labels };
  for (const key of ['job', 'service'] as const)
    if (labels[key] && rename[labels[key]!]) labels[key] = rename[labels[key]!]!;
  if (labels.prometheus) labels.prometheus = `monitoring/${release}-prometheus`;
  return { ...alert, labels };
}
