/** Class 1: changes that are not a deployment_status of a repository named like the service (part B). */
import { flappingDisk, harmlessBump, otherDeploy, routineDeploy, throttlingNoise } from '../noise.js';
import { datadog, grafana, prom, sentry } from '../payloads/alerts.js';
import { argocd, flagsmith, flux, unleash } from '../payloads/changes.js';
import { probeFailed, replicasMismatch } from '../payloads/kube.js';
import { shop, shopNode } from '../worlds.js';
import type { CorpusIncident } from '../types.js';

const ROLLBACK = /roll(ing)?[ -]?back|revert|redeploy the previous|undo/i;
const FLAG_OFF = /disable|turn(ing)? (it )?off|switch(ing)? off|roll(ing)?[ -]?back|revert|kill switch/i;

export const changesB: CorpusIncident[] = [
  {
    id: 'change-argocd-sync-inventory',
    class: 'change',
    title: 'An Argo CD sync of the "inventory" app ships a bad image to inventory-api',
    story:
      'Argo CD application "inventory" (platform-config, apps/inventory) synced image 2025.11.27-1, whose ORM mapping expected a column the migration job had not added. ' +
      'inventory-api answered 500 on every reservation; `argocd app rollback inventory` restored it. The Argo CD app is not named like the service.',
    world: shop({
      nodes: [
        shopNode('inventory-api', {
          repositories: [{ repository: 'example-shop/platform-config', paths: ['apps/inventory/**'] }],
        }),
      ],
    }),
    deliveries: [
      routineDeploy('checkout-api', -260),
      argocd(
        {
          app: 'search',
          project: 'shop',
          namespace: 'search',
          repoURL: 'https://github.com/example-shop/platform-config.git',
          path: 'apps/search',
          targetRevision: 'main',
          revision: '0b7d3f2e9a1c4b6d8e0f2a4c6e8b0d2f4a6c8e01',
          at: -48,
        },
        { note: 'distractor: another app synced earlier' },
      ),
      argocd(
        {
          app: 'inventory',
          project: 'shop',
          namespace: 'fulfilment',
          repoURL: 'https://github.com/example-shop/platform-config.git',
          path: 'apps/inventory',
          targetRevision: 'main',
          revision: '4d2e8a1f6b3c9d0e7a5b2c8f1d4e6a9b3c7d0e52',
          at: -12,
        },
        { note: 'the cause' },
      ),
      flappingDisk(-5),
      grafana(
        [
          {
            labels: {
              alertname: 'InventoryReservationErrors',
              grafana_folder: 'Fulfilment',
              service: 'inventory-api',
              severity: 'critical',
              team: 'fulfilment',
            },
            annotations: {
              summary: 'inventory-api reservation errors above 5%',
              description: '38% of POST /v1/reservations fail with 500 over the last 5 minutes.',
            },
            at: 0,
            values: { B: 0.38, C: 1 },
            dashboard: 'inventory-red',
          },
        ],
        { page: true },
      ),
      sentry({
        project: 'inventory-api',
        type: 'org.hibernate.exception.SQLGrammarException',
        value:
          'could not execute statement; SQL [n/a]; nested exception: org.postgresql.util.PSQLException: ERROR: column "reserved_until" of relation "reservations" does not exist',
        at: 1,
        frames: [{ filename: 'com/exampleshop/inventory/ReservationService.java', lineno: 141, function: 'reserve' }],
      }),
    ],
    truth: {
      subject: ['inventory-api', 'inventory', '4d2e8a1'],
      mechanism: [/sync|deploy|argo|rollout|release|gitops|image|4d2e8a1/i],
      oneHopShort: ['inventory-db', 'checkout-api'],
      action: [ROLLBACK, /inventory|4d2e8a1/i],
    },
  },
  {
    id: 'change-flux-helm-upgrade-payments',
    class: 'change',
    title: 'A Flux HelmRelease upgrade of payments-api changes the readiness probe path',
    story:
      'Chart payments-api 2.4.0 moved the health endpoint to /healthz but left the readiness probe on /health. Flux upgraded the release; ' +
      'new pods never became ready, the rollout stalled with half the replicas and checkout saw 503s until the release was rolled back.',
    world: shop(),
    deliveries: [
      routineDeploy('cart-api', -190),
      ...harmlessBump('accounts-api', -60),
      flux(
        {
          kind: 'HelmRelease',
          name: 'payments-api',
          namespace: 'payments',
          reason: 'UpgradeSucceeded',
          message: 'Helm upgrade succeeded for release payments/payments-api.v58 with chart payments-api@2.4.0',
          revision: '2.4.0',
          at: -15,
        },
        { note: 'the cause' },
      ),
      prom([replicasMismatch('payments', 'payments-api', -1)], { groupBy: ['namespace'] }),
      prom([probeFailed('http://payments-api.payments.svc.cluster.local:8080/healthz', 0)], {
        groupBy: ['alertname'],
        page: true,
      }),
      prom([
        {
          labels: { alertname: 'HighErrorRate', service: 'checkout-api', severity: 'high', namespace: 'shop' },
          annotations: {
            description: '6% of checkout-api requests fail: 503 from payments-api (no healthy upstream).',
          },
          at: 2,
        },
      ]),
    ],
    truth: {
      subject: ['payments-api', '2.4.0', 'v58'],
      mechanism: [/helm|upgrade|chart|release|deploy|rollout|readiness|probe/i],
      oneHopShort: ['checkout-api', 'payments-db'],
      action: [ROLLBACK, /payments-api/i],
    },
  },
  {
    id: 'change-flux-kustomization-search-config',
    class: 'change',
    title: 'A Flux-applied ConfigMap change makes every search query hit all fields',
    story:
      'A commit to the search kustomization changed search-api-config so queries ran against `*` instead of the title and brand fields. Flux applied it; ' +
      'search-index CPU went to 100% and search-api timed out. The search-api deploy the day before had nothing to do with it.',
    world: shop(),
    deliveries: [
      routineDeploy('search-api', -1400),
      otherDeploy('payments-api', -35),
      flux(
        {
          kind: 'Kustomization',
          name: 'search',
          namespace: 'flux-system',
          reason: 'Progressing',
          message: 'ConfigMap/search/search-api-config configured\nDeployment/search/search-api configured',
          revision: 'main@sha1:9e1f2a3b4c5d6e7f8a9b0c1d2e3f4a5b6c7d8e9f',
          at: -13,
        },
        { note: 'the cause' },
      ),
      prom([
        {
          labels: {
            alertname: 'ElasticsearchHighCPU',
            service: 'search-index',
            cluster: 'search-index',
            severity: 'warning',
          },
          annotations: {
            description: 'search-index data nodes CPU above 95% for 5 minutes; search thread pool queue 1,800.',
          },
          at: -4,
        },
      ]),
      prom(
        [
          {
            labels: { alertname: 'HighLatencyP99', service: 'search-api', severity: 'critical', namespace: 'search' },
            annotations: {
              summary: 'search-api p99 above 2s',
              description: 'search-api p99 latency is 6.8s; 12% of queries time out.',
            },
            at: 0,
          },
        ],
        { page: true },
      ),
      throttlingNoise(3),
    ],
    truth: {
      subject: ['search-api-config', '9e1f2a3', 'search'],
      mechanism: [/config|configmap|kustomiz|flux|change|9e1f2a3/i],
      oneHopShort: ['search-index', 'search-api'],
      action: [ROLLBACK, /search|9e1f2a3/i],
    },
  },
  {
    id: 'change-unleash-search-ranking',
    class: 'change',
    title: 'Unleash enables search-v2-ranking in production and search slows down',
    story:
      'The search team enabled the search-v2-ranking toggle in production for everyone. Its rescoring query is ten times heavier; search-index saturated and ' +
      'search-api p99 went past 3 s. Disabling the toggle recovered it in two minutes.',
    world: shop(),
    deliveries: [
      routineDeploy('search-api', -330),
      otherDeploy('inventory-api', -24),
      unleash(
        {
          type: 'feature-environment-enabled',
          feature: 'search-v2-ranking',
          project: 'search',
          at: -9,
          createdBy: 'ana.silva@example-shop.com',
        },
        { note: 'the cause' },
      ),
      prom([
        {
          labels: {
            alertname: 'ElasticsearchHighCPU',
            service: 'search-index',
            cluster: 'search-index',
            severity: 'warning',
          },
          annotations: { description: 'search-index data nodes CPU above 90% for 5 minutes.' },
          at: -3,
        },
      ]),
      datadog(
        {
          title: 'High p99 latency on search-api',
          body: 'search-api p99 latency is 3.4s over the last 5 minutes (threshold 1s).',
          service: 'search-api',
          at: 0,
          metric: 'trace.http.request.duration',
        },
        { page: true },
      ),
    ],
    truth: {
      subject: ['search-v2-ranking'],
      mechanism: [/flag|feature|toggle|unleash|enabled/i],
      oneHopShort: ['search-index', 'search-api'],
      action: [FLAG_OFF, /search-v2-ranking/i],
    },
  },
  {
    id: 'change-flagsmith-batch-size',
    class: 'change',
    title: 'A Flagsmith remote-config value raises the recommendations batch size tenfold',
    story:
      'recommendations_batch_size is remote config in Flagsmith; someone changed it from 50 to 500 while testing in what they thought was staging. ' +
      'recommendations-api asked catalog-api for 500 products per request, catalog-api and its database slowed, and the homepage carousel timed out.',
    world: shop(),
    deliveries: [
      routineDeploy('recommendations-api', -210),
      flagsmith(
        {
          feature: 'recommendations_batch_size',
          description: 'How many products the recommender fetches per call',
          enabled: true,
          wasEnabled: true,
          value: 500,
          previousValue: 50,
          at: -10,
        },
        { note: 'the cause' },
      ),
      otherDeploy('notifications-worker', -6),
      prom([
        {
          labels: { alertname: 'HighLatencyP99', service: 'catalog-api', severity: 'warning', namespace: 'catalog' },
          annotations: {
            description: 'catalog-api p99 latency is 2.9s (threshold 800ms); GET /v1/products?ids= dominates.',
          },
          at: -2,
        },
      ]),
      sentry(
        {
          project: 'recommendations-api',
          type: 'httpx.ReadTimeout',
          value: 'timed out reading GET http://catalog-api.catalog.svc/v1/products?ids=… (500 ids)',
          at: 0,
          frames: [{ filename: 'recs/catalog_client.py', lineno: 52, function: 'fetch_products' }],
        },
        { page: true },
      ),
    ],
    truth: {
      subject: ['recommendations_batch_size'],
      mechanism: [/flag|config|feature|batch size|flagsmith|value/i],
      oneHopShort: ['catalog-api', 'recommendations-api', 'catalog-db'],
      action: [/revert|restore|set .*back|roll(ing)?[ -]?back|disable|50\b/i, /recommendations_batch_size/i],
    },
  },
];
