/** Class 2: alerts whose service label is the exporter's or the tool's, not the workload's (part C). */
import { flappingDisk, otherDeploy, routineDeploy, throttlingNoise } from '../noise.js';
import { datadogDefault, prom, sentry } from '../payloads/alerts.js';
import { deploymentStatus, push } from '../payloads/github.js';
import {
  containerWaiting,
  helmChartNaming,
  probeFailed,
  replicasMismatch,
  statefulSetMismatch,
} from '../payloads/kube.js';
import { shop, shopNode } from '../worlds.js';
import type { CorpusIncident } from '../types.js';

export const attributionC: CorpusIncident[] = [
  {
    id: 'attribution-helm-image-pull-notifications',
    class: 'attribution',
    title: 'A GitOps image tag typo leaves notifications-worker in ImagePullBackOff',
    story:
      'A hand edit of apps/notifications-worker/values.yaml in k8s-manifests set image.tag to 2025.11.72 instead of 2025.11.27. The new pods could not pull; ' +
      "kube-prometheus-stack's kube-state-metrics reported KubeContainerWaiting and replica mismatch, with the chart's job as the service.",
    world: shop({
      nodes: [
        shopNode('notifications-worker', {
          repositories: [{ repository: 'example-shop/k8s-manifests', paths: ['apps/notifications-worker/**'] }],
        }),
      ],
    }),
    deliveries: [
      routineDeploy('notifications-worker', -420),
      push(
        {
          repo: 'k8s-manifests',
          at: -24,
          commits: [
            {
              id: 'd7f9b1c3e5a7c9e1b3d5f7a9c1e3b5d7f9a1c3e6',
              message: 'notifications-worker: bump image to 2025.11.72',
              modified: ['apps/notifications-worker/values.yaml'],
            },
          ],
        },
        { note: 'the cause' },
      ),
      otherDeploy('cart-api', -12),
      prom([helmChartNaming(containerWaiting('messaging', 'notifications-worker', 'ImagePullBackOff', 0))], {
        groupBy: ['namespace'],
        page: true,
      }),
      prom([helmChartNaming(replicasMismatch('messaging', 'notifications-worker', 1))], { groupBy: ['namespace'] }),
      throttlingNoise(2),
    ],
    truth: {
      subject: ['notifications-worker', 'd7f9b1c', '2025.11.72'],
      mechanism: [/image|tag|pull|values\.yaml|manifest|config(uration)? change|d7f9b1c|gitops/i],
      oneHopShort: ['notifications-queue'],
      action: [
        /revert|roll(ing)?[ -]?back|fix|correct|restore|undo/i,
        /notifications-worker|d7f9b1c|image|tag|values/i,
      ],
    },
  },
  {
    id: 'attribution-datadog-kube-scope-search-deploy',
    class: 'attribution',
    title: 'A Datadog Kubernetes monitor scoped by kube_deployment only, after a search-api deploy',
    story:
      'The "pods restarting" monitor is grouped by kube_deployment and kube_namespace and sent with the default payload; nothing says "service". ' +
      'search-api deployment 30771 added a startup index check that timed out against the big products index, and the liveness probe killed the pods.',
    world: shop(),
    deliveries: [
      routineDeploy('cart-api', -180),
      deploymentStatus(
        { repo: 'search-api', id: 30771, sha: '7e9a1c3d5f7b9d1e3a5c7e9b1d3f5a7c9e1b3d52', at: -14 },
        { note: 'the cause' },
      ),
      otherDeploy('inventory-api', -6),
      datadogDefault(
        {
          title: 'Pods restarting in search/search-api',
          scope: 'kube_deployment:search-api,kube_namespace:search',
          body: 'kubernetes.containers.restarts increased by 23 over the last 10 minutes (threshold 5).\nLast termination reason: liveness probe failed (startup index check exceeded 30s).',
          at: 0,
          priority: 'P2',
        },
        { page: true },
      ),
      flappingDisk(2),
    ],
    truth: {
      subject: ['search-api', '30771', '7e9a1c3'],
      mechanism: [/deploy|release|rollout|30771|7e9a1c3/i],
      oneHopShort: ['search-index'],
      action: [/roll(ing)?[ -]?back|revert|undo/i, /search-api|30771|7e9a1c3/i],
    },
  },
  {
    id: 'attribution-node-not-ready-inventory-db',
    class: 'attribution',
    title: 'A node goes NotReady and takes the inventory-db pod with it',
    story:
      'The kubelet on ip-10-0-3-9 stopped reporting after its root volume went read-only. inventory-db-0 (a single-replica StatefulSet) was on it and stayed ' +
      'Unknown; inventory-api lost its database. Every alert named an exporter: kube-state-metrics, blackbox.',
    world: shop(),
    deliveries: [
      routineDeploy('inventory-api', -200),
      otherDeploy('accounts-api', -28),
      prom([
        {
          labels: {
            alertname: 'KubeNodeNotReady',
            condition: 'Ready',
            container: 'kube-state-metrics',
            endpoint: 'http',
            instance: '10.2.7.41:8080',
            job: 'kube-state-metrics',
            namespace: 'monitoring',
            node: 'ip-10-0-3-9.eu-west-1.compute.internal',
            service: 'kube-state-metrics',
            severity: 'warning',
            status: 'true',
          },
          annotations: {
            description: 'ip-10-0-3-9.eu-west-1.compute.internal has been unready for more than 15 minutes.',
            runbook_url: 'https://runbooks.prometheus-operator.dev/runbooks/kubernetes/kubenodenotready',
            summary: 'Node is not ready.',
          },
          at: -3,
        },
      ]),
      prom([statefulSetMismatch('fulfilment', 'inventory-db', -1)], { groupBy: ['namespace'] }),
      prom([probeFailed('tcp://inventory-db.fulfilment.svc:5432', 0, 'tcp_connect')], {
        groupBy: ['alertname'],
        page: true,
      }),
      sentry({
        project: 'inventory-api',
        type: 'org.postgresql.util.PSQLException',
        value:
          'Connection to inventory-db.fulfilment.svc:5432 refused. Check that the hostname and port are correct and that the postmaster is accepting TCP/IP connections.',
        at: 1,
        frames: [{ filename: 'com/exampleshop/inventory/Db.java', lineno: 33, function: 'connect' }],
      }),
    ],
    truth: {
      subject: ['ip-10-0-3-9', 'inventory-db'],
      mechanism: [/node|NotReady|not ready|kubelet|host/i],
      oneHopShort: ['inventory-api'],
      action: [/cordon|drain|replace|reschedul|recover|restart|terminate|delete/i, /ip-10-0-3-9|node|inventory-db/i],
    },
  },
];
