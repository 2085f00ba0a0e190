/** More incidents: a Helm chart synced by Argo CD, a deploy workflow in a deployments repo, a node gone NotReady, a Kafka rebalance storm, Redis maxclients. */
import { flappingDisk, otherDeploy, routineDeploy, throttlingNoise } from '../noise.js';
import { prom, sentry } from '../payloads/alerts.js';
import { argocd } from '../payloads/changes.js';
import { workflowRun } from '../payloads/github.js';
import { podNotReady, probeFailed, statefulSetMismatch } from '../payloads/kube.js';
import { node, shop, shopNode } from '../worlds.js';
import type { CorpusIncident } from '../types.js';

const ROLLBACK = /roll(ing)?[ -]?back|revert|redeploy the previous|undo/i;

export const mixedF: CorpusIncident[] = [
  {
    id: 'change-argocd-helm-chart-payments-prod',
    class: 'change',
    title: 'Argo CD app payments-prod syncs chart payments-api 3.1.0 and goes Degraded',
    story:
      'The Argo CD application payments-prod installs the payments-api chart from our chart repository. Chart 3.1.0 renamed the DB secret key; ' +
      'new pods could not read DATABASE_URL and failed readiness, and the app reported Degraded. Syncing back to 3.0.4 fixed it.',
    world: shop(),
    deliveries: [
      routineDeploy('checkout-api', -210),
      argocd(
        {
          app: 'payments-prod',
          project: 'payments',
          namespace: 'payments',
          repoURL: 'https://charts.example-shop.com',
          chart: 'payments-api',
          targetRevision: '3.1.0',
          revision: '3.1.0',
          health: 'Degraded',
          message: 'successfully synced (all tasks run)',
          at: -9,
        },
        { note: 'the cause' },
      ),
      otherDeploy('search-api', -4),
      prom([podNotReady('payments', 'payments-api', -1)], { groupBy: ['namespace'] }),
      sentry(
        {
          project: 'payments-api',
          type: 'KeyError',
          value: "'DATABASE_URL'",
          at: 0,
          level: 'fatal',
          frames: [{ filename: 'payments/settings.py', lineno: 19, function: '<module>' }],
        },
        { page: true },
      ),
      flappingDisk(2),
    ],
    truth: {
      subject: ['payments-prod', 'payments-api', '3.1.0'],
      mechanism: [/sync|chart|helm|argo|deploy|release|upgrade|3\.1\.0|gitops/i],
      oneHopShort: ['payments-db', 'checkout-api'],
      action: [ROLLBACK, /payments|3\.1\.0|3\.0\.4/i],
    },
  },
  {
    id: 'change-deployments-repo-workflow-accounts',
    class: 'change',
    title: 'A deploy workflow in example-shop/deployments ships accounts-api with a bad session key',
    story:
      'Deploys of every service run from example-shop/deployments; the "deploy-accounts-api" workflow shipped v2025.11.27.4, which read the session signing key ' +
      'from a renamed secret and fell back to a random one per pod, so sessions broke across pods. Re-running the workflow for the previous version fixed it.',
    world: shop({
      nodes: [
        shopNode('accounts-api', {
          repositories: [{ repository: 'example-shop/deployments', paths: ['services/accounts-api/**'] }],
        }),
      ],
    }),
    deliveries: [
      routineDeploy('cart-api', -150),
      workflowRun(
        {
          repo: 'deployments',
          workflow: 'deploy-accounts-api',
          path: '.github/workflows/deploy-accounts-api.yml',
          sha: 'b3d5f7a9c1e3b5d7f9a1c3e5b7d9f1a3c5e7b9d4',
          message: 'Deploy accounts-api v2025.11.27.4 to production',
          at: -16,
          event: 'workflow_dispatch',
          actor: 'nsato',
        },
        { note: 'the cause' },
      ),
      otherDeploy('catalog-api', -8),
      sentry(
        {
          project: 'accounts-api',
          type: 'itsdangerous.exc.BadSignature',
          value: "Signature b'Yz3K…' does not match",
          at: 0,
          frames: [{ filename: 'accounts/sessions.py', lineno: 74, function: 'load_session' }],
        },
        { page: true },
      ),
      prom([
        {
          labels: {
            alertname: 'LoginSessionsDropped',
            service: 'accounts-api',
            severity: 'high',
            namespace: 'identity',
          },
          annotations: { description: '41% of authenticated requests are rejected with 401 invalid session.' },
          at: 1,
        },
      ]),
    ],
    truth: {
      subject: ['accounts-api', 'deploy-accounts-api', 'v2025.11.27.4', 'b3d5f7a'],
      mechanism: [/deploy|release|workflow|rollout|v2025\.11\.27\.4|b3d5f7a/i],
      oneHopShort: ['accounts-db', 'api-gateway'],
      action: [ROLLBACK, /accounts-api|v2025\.11\.27\.4|b3d5f7a|deploy-accounts-api/i],
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
  {
    id: 'operational-kafka-rebalance-storm',
    class: 'operational',
    title: 'loyalty-worker consumers keep getting kicked out of their group',
    story:
      'A new enrichment call made each order-events record take ~1 s in loyalty-worker; with max.poll.records 500 a batch took longer than max.poll.interval.ms ' +
      '(300 s), so consumers were kicked out, the group rebalanced, and the same batch started over. Lag grew without any consumer being down.',
    world: shop({
      nodes: [node('loyalty-worker', 'worker', 5, 'growth'), node('order-events', 'queue', 8, 'platform')],
      edges: [
        ['loyalty-worker', 'order-events'],
        ['order-worker', 'order-events'],
      ],
    }),
    deliveries: [
      routineDeploy('loyalty-worker', -95),
      otherDeploy('payments-api', -30),
      sentry({
        project: 'loyalty-worker',
        type: 'org.apache.kafka.clients.consumer.CommitFailedException',
        value:
          'Offset commit cannot be completed since the consumer is not part of an active group for auto partition assignment; it is likely that the consumer was kicked out of the group.',
        at: -5,
        frames: [{ filename: 'com/exampleshop/loyalty/OrderEventsConsumer.java', lineno: 92, function: 'commit' }],
      }),
      prom(
        [
          {
            labels: {
              alertname: 'KafkaConsumerGroupLag',
              consumergroup: 'loyalty-worker',
              topic: 'order-events',
              job: 'kafka-exporter',
              instance: 'kafka-exporter.kafka:9308',
              service: 'kafka-exporter',
              severity: 'warning',
            },
            annotations: {
              summary: 'Consumer group loyalty-worker lagging',
              description:
                'Consumer group loyalty-worker is 412,930 messages behind on order-events; members joined the group 37 times in 30 minutes.',
            },
            at: 0,
          },
        ],
        { page: true },
      ),
      throttlingNoise(2),
    ],
    truth: {
      subject: ['loyalty-worker'],
      mechanism: [/rebalanc|kicked out|max\.poll|poll interval|leaves? the group|rejoin/i],
      oneHopShort: ['order-events'],
      action: [/max\.poll|poll interval|batch|records|processing time/i],
    },
  },
  {
    id: 'operational-redis-maxclients-cart-cleanup',
    class: 'operational',
    title: 'A new cart-cleanup cron job exhausts session-cache maxclients',
    story:
      'cart-cleanup, a CronJob added on Monday, opened a Redis connection per abandoned cart and never closed them. At the top of the hour it held 9,400 ' +
      'of session-cache\'s 10,000 clients; cart-api got "max number of clients reached". Killing the job\'s clients and suspending the CronJob fixed it.',
    world: shop({
      nodes: [node('cart-cleanup', 'worker', 2, 'storefront')],
      edges: [['cart-cleanup', 'session-cache']],
    }),
    deliveries: [
      routineDeploy('cart-api', -160),
      prom([
        {
          labels: {
            alertname: 'RedisTooManyConnections',
            service: 'redis-exporter',
            job: 'redis-exporter',
            instance: 'session-cache-0:9121',
            severity: 'warning',
          },
          annotations: {
            summary: 'Redis too many connections (instance session-cache-0:9121)',
            description:
              'Redis is running out of connections (> 90% used)\n  VALUE = 9,998 of maxclients 10,000; CLIENT LIST by name: cart-cleanup 9,412, cart-api 480',
          },
          at: -2,
        },
      ]),
      sentry(
        {
          project: 'cart-api',
          type: 'ReplyError',
          value: 'ERR max number of clients reached',
          at: 0,
          frames: [{ filename: 'src/redis.ts', lineno: 18, function: 'connect' }],
        },
        { page: true },
      ),
      otherDeploy('search-api', 3),
    ],
    truth: {
      subject: ['cart-cleanup'],
      mechanism: [/max(imum)? (number of )?clients|maxclients|connections?|leak/i],
      oneHopShort: ['session-cache', 'session-cache-0', 'cart-api'],
      action: [/stop|suspend|kill|disable|pause|client kill/i, /cart-cleanup/i],
    },
  },
];
