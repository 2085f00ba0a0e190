/** Four more incidents, one per class but calibration: a flag turned on, an image tag pushed through GitOps, a search vendor, replica lag. */
import { flappingDisk, otherDeploy, routineDeploy, throttlingNoise } from '../noise.js';
import { datadog, prom, sentry } from '../payloads/alerts.js';
import { launchDarkly } from '../payloads/changes.js';
import { push } from '../payloads/github.js';
import { containerWaiting, helmChartNaming, replicasMismatch } from '../payloads/kube.js';
import { node, shop, shopNode } from '../worlds.js';
import type { CorpusIncident } from '../types.js';

export const mixedD: CorpusIncident[] = [
  {
    id: 'change-launchdarkly-flag-on-tax-service',
    class: 'change',
    title: 'LaunchDarkly turns on use-tax-service-v2 and checkout starts failing on tax',
    story:
      "Finance turned on use-tax-service-v2 in production a week early. checkout-api began calling tax-api's v2 endpoint, which was deployed but not yet " +
      'loaded with EU rates, and every EU checkout failed with 422. Turning the flag off fixed it; tax-api had deployed an hour earlier and was blamed first.',
    world: shop({
      nodes: [node('tax-api', 'api', 8, 'finance')],
      edges: [['checkout-api', 'tax-api']],
    }),
    deliveries: [
      routineDeploy('checkout-api', -240),
      otherDeploy('tax-api', -65),
      launchDarkly(
        {
          flag: 'use-tax-service-v2',
          flagName: 'Use tax service v2',
          action: 'updateOn',
          description: '- Turned on the flag',
          titleVerb: 'turned on the flag',
          at: -7,
          member: { email: 'rachel.ong@example-shop.com', firstName: 'Rachel', lastName: 'Ong' },
        },
        { note: 'the cause' },
      ),
      sentry({
        project: 'checkout-api',
        type: 'TaxServiceError',
        value: 'tax-api v2 POST /v2/quotes answered 422: no rate table for jurisdiction DE-BY',
        at: -3,
        frames: [{ filename: 'checkout/tax/client_v2.py', lineno: 36, function: 'quote' }],
      }),
      prom(
        [
          {
            labels: { alertname: 'HighErrorRate', service: 'checkout-api', severity: 'critical', namespace: 'shop' },
            annotations: {
              summary: 'checkout-api 5xx above 5%',
              description: '5xx responses are 27% of checkout-api requests (EU storefronts).',
            },
            at: 0,
          },
        ],
        { page: true },
      ),
      flappingDisk(2),
    ],
    truth: {
      subject: ['use-tax-service-v2', 'Use tax service v2'],
      mechanism: [/flag|feature|launchdarkly|toggle|turned on/i],
      oneHopShort: ['tax-api', 'checkout-api'],
      action: [
        /disable|turn(ing)? (it )?off|switch(ing)? off|roll(ing)?[ -]?back|revert/i,
        /use-tax-service-v2|tax service v2/i,
      ],
    },
  },
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
    id: 'third-party-algolia-unreachable',
    class: 'third_party',
    title: 'Algolia hosts unreachable; autocomplete returns nothing',
    story:
      "Algolia's DSN cluster for our application was unreachable from eu-west-1 for 20 minutes. autocomplete-api (algoliasearch-client-python) raised " +
      'AlgoliaUnreachableHostException on every keystroke. An autocomplete-api deploy two hours earlier was innocent.',
    world: shop({
      nodes: [node('autocomplete-api', 'api', 6, 'search')],
      edges: [['api-gateway', 'autocomplete-api']],
    }),
    deliveries: [
      routineDeploy('autocomplete-api', -118),
      otherDeploy('inventory-api', -25),
      sentry({
        project: 'autocomplete-api',
        type: 'algoliasearch.exceptions.AlgoliaUnreachableHostException',
        value: 'Unreachable hosts',
        at: -2,
        culprit: 'autocomplete.search in suggest',
        frames: [{ filename: 'autocomplete/search.py', lineno: 41, function: 'suggest' }],
      }),
      datadog(
        {
          title: 'Error rate on autocomplete-api',
          body: 'autocomplete-api error rate is 100% for the last 5 minutes.\nAlgoliaUnreachableHostException: Unreachable hosts (EXAMPLEAPP-dsn.algolia.net, EXAMPLEAPP-1.algolianet.com, EXAMPLEAPP-2.algolianet.com)',
          service: 'autocomplete-api',
          at: 0,
          priority: 'P2',
        },
        { page: true },
      ),
    ],
    truth: {
      subject: ['algolia', 'algolia.net', 'algolianet.com'],
      mechanism: [/outage|unavailable|unreachable|degraded|third[- ]party|vendor|provider|external|down|failing/i],
      oneHopShort: ['autocomplete-api'],
      action: [/algolia/i],
    },
  },
  {
    id: 'operational-replica-lag-stale-reads',
    class: 'operational',
    title: 'orders-db read replica lags 14 minutes behind; order-worker reads orders that do not exist yet',
    story:
      'An analyst ran a 40-minute report on the orders-db-ro replica with hot_standby_feedback off; replay paused behind the query and the replica fell 14 minutes ' +
      'behind. order-worker reads new orders from the replica and found none, so fulfilments failed "order not found". Cancelling the report let replay catch up.',
    world: shop({
      nodes: [node('orders-db-ro', 'database', 8, 'payments')],
      edges: [
        ['order-worker', 'orders-db-ro'],
        ['reporting-worker', 'orders-db-ro'],
      ],
    }),
    deliveries: [
      routineDeploy('order-worker', -150),
      otherDeploy('search-api', -31),
      prom([
        {
          labels: {
            alertname: 'PostgresqlReplicationLag',
            service: 'postgres-exporter',
            job: 'postgres-exporter',
            instance: 'orders-db-ro-0:9187',
            severity: 'critical',
          },
          annotations: {
            summary: 'Postgresql replication lag (instance orders-db-ro-0:9187)',
            description:
              'PostgreSQL replication lag is going up (> 30s)\n  VALUE = 846\n  LABELS = map[instance:orders-db-ro-0:9187]; replay paused by a conflicting query (pid 7731, usename analyst_ro, 38 min).',
          },
          at: -4,
        },
      ]),
      sentry(
        {
          project: 'order-worker',
          type: 'fulfilment.errors.OrderNotFound',
          value: 'order 9918274 not found (read from orders-db-ro)',
          at: 0,
          frames: [{ filename: 'fulfilment/orders.py', lineno: 58, function: 'load_order' }],
        },
        { page: true },
      ),
      flappingDisk(1),
    ],
    truth: {
      subject: ['orders-db-ro', 'analyst_ro', '7731'],
      mechanism: [/replication lag|replica lag|lag(ging)? behind|replay/i],
      oneHopShort: ['order-worker', 'orders-db'],
      action: [
        /cancel|terminate|kill|stop|route reads|read from the primary/i,
        /orders-db-ro|7731|analyst|replica|primary/i,
      ],
    },
  },
];
