/** More incidents across the classes: a harmful Dependabot bump, a Kubernetes-scoped Datadog monitor, FCM, EBS burst credits, two ambiguous ones. */
import { flappingDisk, otherDeploy, routineDeploy, throttlingNoise } from '../noise.js';
import { datadogDefault, prom, sentry } from '../payloads/alerts.js';
import { deploymentStatus, pullRequestMerged } from '../payloads/github.js';
import { node, shop } from '../worlds.js';
import type { CorpusIncident } from '../types.js';

export const mixedE: CorpusIncident[] = [
  {
    id: 'change-dependabot-urllib3-openssl',
    class: 'change',
    title: 'A Dependabot urllib3 2.x bump meets an old OpenSSL in the reporting image',
    story:
      'Dependabot\'s "Bump urllib3 from 1.26.18 to 2.0.7" was merged with green tests (CI uses a newer base image). reporting-worker\'s production image ' +
      'still had OpenSSL 1.0.2, so every job died at import. The deploy went out as usual; the bump was the cause.',
    world: shop(),
    deliveries: [
      otherDeploy('search-api', -70),
      pullRequestMerged(
        {
          repo: 'reporting-worker',
          number: 418,
          title: 'Bump urllib3 from 1.26.18 to 2.0.7',
          body: "Bumps [urllib3](https://github.com/urllib3/urllib3) from 1.26.18 to 2.0.7.\n- [Release notes](https://github.com/urllib3/urllib3/releases)\n- [Changelog](https://github.com/urllib3/urllib3/blob/main/CHANGES.rst)\n\n---\nDependabot will resolve any conflicts with this PR as long as you don't alter it yourself.",
          head: 'dependabot/pip/urllib3-2.0.7',
          sha: '0c2e4a6b8d0f1a3c5e7b9d1f3a5c7e9b0d2f4a68',
          at: -31,
          author: 'dependabot[bot]',
          labels: ['dependencies', 'python'],
          changedFiles: 1,
          additions: 1,
          deletions: 1,
        },
        { note: 'the cause (merge)' },
      ),
      deploymentStatus(
        { repo: 'reporting-worker', id: 90412, sha: '0c2e4a6b8d0f1a3c5e7b9d1f3a5c7e9b0d2f4a68', at: -19 },
        { note: 'the cause (shipped)' },
      ),
      sentry(
        {
          project: 'reporting-worker',
          type: 'ImportError',
          value:
            "urllib3 v2.0 only supports OpenSSL 1.1.1+, currently the 'ssl' module is compiled with 'OpenSSL 1.0.2k-fips  26 Jan 2017'. See: https://github.com/urllib3/urllib3/issues/2168",
          at: 0,
          frames: [{ filename: 'reporting/http.py', lineno: 3, function: '<module>' }],
        },
        { page: true },
      ),
      throttlingNoise(2),
    ],
    truth: {
      subject: ['urllib3', '#418', '0c2e4a6', 'reporting-worker'],
      mechanism: [/urllib3|dependency|bump|upgrade|dependabot|OpenSSL/i],
      oneHopShort: ['orders-db'],
      action: [/roll(ing)?[ -]?back|revert|pin|downgrade/i, /urllib3|reporting-worker|90412|0c2e4a6|418/i],
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
    id: 'third-party-fcm-unavailable',
    class: 'third_party',
    title: 'Firebase Cloud Messaging answers UNAVAILABLE; push notifications stall',
    story:
      "FCM's HTTP v1 API returned 503 UNAVAILABLE for 25 minutes in Europe. notifications-worker (firebase-admin) raised UnavailableError on every push and " +
      'retried; the push queue grew. Nothing of ours changed; the fix was to wait and let the retries drain.',
    world: shop(),
    deliveries: [
      routineDeploy('notifications-worker', -260),
      otherDeploy('accounts-api', -40),
      sentry({
        project: 'notifications-worker',
        type: 'firebase_admin.exceptions.UnavailableError',
        value:
          'The service is currently unavailable. (POST https://fcm.googleapis.com/v1/projects/example-shop/messages:send 503)',
        at: -2,
        frames: [{ filename: 'notifications/push.py', lineno: 47, function: 'send' }],
      }),
      prom(
        [
          {
            labels: {
              alertname: 'RabbitmqQueueBacklog',
              service: 'notifications-queue',
              queue: 'push.outbound',
              vhost: 'messaging',
              severity: 'warning',
            },
            annotations: {
              summary: 'push.outbound backlog growing',
              description: 'push.outbound has 240,512 ready messages, growing 6,000/min.',
            },
            at: 0,
          },
        ],
        { page: true },
      ),
    ],
    truth: {
      subject: ['fcm', 'firebase', 'fcm.googleapis.com', 'Firebase Cloud Messaging', 'google'],
      mechanism: [/outage|unavailable|unreachable|degraded|third[- ]party|vendor|provider|external|down|failing|503/i],
      oneHopShort: ['notifications-worker', 'notifications-queue'],
      action: [/fcm|firebase|google/i],
    },
  },
  {
    id: 'operational-ebs-burst-balance-orders-db',
    class: 'operational',
    title: "orders-db's gp2 volume runs out of burst credits; I/O wait everywhere",
    story:
      "The nightly vacuum and a backfill drained the BurstBalance of orders-db's gp2 data volume. Once at zero, it was held to its 300 IOPS baseline; " +
      'queries waited on I/O, checkout slowed and order-worker backed up. The database had not changed; the fix was a gp3 volume with provisioned IOPS.',
    world: shop(),
    deliveries: [
      routineDeploy('checkout-api', -330),
      datadogDefault({
        title: 'EBS burst balance low on vol-0a1b2c3d4e5f67890',
        scope: 'volumeid:vol-0a1b2c3d4e5f67890,name:orders-db-data',
        body: 'aws.ebs.burst_balance is 0% on vol-0a1b2c3d4e5f67890 (orders-db-data, gp2 1000 GiB) for the last 15 minutes.',
        at: -6,
        priority: 'P3',
      }),
      prom([
        {
          labels: {
            alertname: 'NodeDiskIOSaturation',
            container: 'node-exporter',
            device: 'nvme1n1',
            instance: 'orders-db-0.db.internal:9100',
            job: 'node-exporter',
            service: 'node-exporter',
            severity: 'warning',
          },
          annotations: {
            description:
              'Disk IO queue (aqu-sq) is high on nvme1n1 at orders-db-0.db.internal:9100, has been above 10 for the last 30 minutes, is currently at 47.2.\nThis symptom might indicate disk saturation.',
            summary: 'Disk IO queue is high.',
          },
          at: -3,
        },
      ]),
      prom(
        [
          {
            labels: { alertname: 'HighLatencyP99', service: 'checkout-api', severity: 'critical', namespace: 'shop' },
            annotations: {
              description: 'checkout-api p99 is 3.8s (threshold 1s); time is spent in orders-db queries.',
            },
            at: 0,
          },
        ],
        { page: true },
      ),
    ],
    truth: {
      subject: ['orders-db', 'vol-0a1b2c3d4e5f67890', 'orders-db-data'],
      mechanism: [/burst|IOPS|I\/O (wait|saturation|credits)|disk (I\/O|IO)|IO queue|throughput/i],
      oneHopShort: ['checkout-api', 'order-worker'],
      action: [/gp3|IOPS|provision|volume|burst|throughput/i],
    },
  },
  {
    id: 'calibration-cache-and-caller-both-slow',
    class: 'calibration',
    title: 'session-cache and cart-api slow together: which drove which?',
    story:
      'session-cache latency and cart-api latency rose in the same minute. Was the cache slow and cart-api waiting on it, or was cart-api writing 2 MB sessions ' +
      'that slowed the cache? The post-mortem needed a packet capture; the alerts alone fit both.',
    world: shop(),
    deliveries: [
      otherDeploy('catalog-api', -75),
      prom([
        {
          labels: {
            alertname: 'RedisLatencyHigh',
            service: 'session-cache',
            instance: 'session-cache-0:9121',
            severity: 'warning',
          },
          annotations: { description: 'session-cache p99 command latency is 38ms (normal 1ms).' },
          at: -1,
        },
      ]),
      prom(
        [
          {
            labels: { alertname: 'HighLatencyP99', service: 'cart-api', severity: 'warning', namespace: 'storefront' },
            annotations: { description: 'cart-api p99 is 1.6s (threshold 500ms).' },
            at: 0,
          },
        ],
        { page: true },
      ),
    ],
    truth: {
      subject: ['session-cache', 'cart-api'],
      mechanism: [],
      oneHopShort: ['checkout-api'],
      action: [/session-cache|cart-api/i],
      undetermined: true,
    },
  },
  {
    id: 'calibration-resolved-before-anyone-looked',
    class: 'calibration',
    title: 'A checkout error burst that resolved in four minutes with nothing around it',
    story:
      'checkout-api 5xx crossed 5% for four minutes and recovered before the on-call opened the laptop. No deploy, no dependency alert, no Sentry issue. The ' +
      'post-mortem guessed a client retry burst from one mobile app version; nothing received could show it.',
    world: shop({ nodes: [node('mobile-bff', 'api', 7, 'mobile')], edges: [['mobile-bff', 'checkout-api']] }),
    deliveries: [
      otherDeploy('recommendations-api', -110),
      prom(
        [
          {
            labels: { alertname: 'HighErrorRate', service: 'checkout-api', severity: 'critical', namespace: 'shop' },
            annotations: {
              summary: 'checkout-api 5xx above 5%',
              description: '5xx responses are 6.1% of checkout-api requests over the last 5 minutes.',
            },
            at: 0,
          },
        ],
        { page: true },
      ),
      prom(
        [
          {
            labels: { alertname: 'HighErrorRate', service: 'checkout-api', severity: 'critical', namespace: 'shop' },
            annotations: {
              summary: 'checkout-api 5xx above 5%',
              description: '5xx responses are 6.1% of checkout-api requests over the last 5 minutes.',
            },
            at: 0,
            status: 'resolved',
            endsAt: 4,
          },
        ],
        { minute: 4 },
      ),
    ],
    truth: {
      subject: ['checkout-api', 'mobile-bff'],
      mechanism: [],
      oneHopShort: ['payments-api'],
      action: [/checkout-api/i],
      undetermined: true,
    },
  },
];
