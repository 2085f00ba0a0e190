/** Class 2: alerts whose service label is the exporter's or the tool's, not the workload's (part A). */
import { flappingDisk, otherDeploy, routineDeploy, throttlingNoise } from '../noise.js';
import { datadogDefault, grafana, prom, sentry } from '../payloads/alerts.js';
import { deploymentStatus } from '../payloads/github.js';
import { crashLooping, probeFailed, replicasMismatch, sslExpired, sslExpiringSoon } from '../payloads/kube.js';
import { shop } from '../worlds.js';
import type { CorpusIncident } from '../types.js';

const ROLLBACK = /roll(ing)?[ -]?back|revert|redeploy the previous|undo/i;

export const attributionA: CorpusIncident[] = [
  {
    id: 'attribution-ksm-crashloop-inventory-deploy',
    class: 'attribution',
    title: 'inventory-api crash-loops after its deploy; kube-state-metrics reports it',
    story:
      'inventory-api 2025.11.27-2 read a new INVENTORY_DB_POOL variable that was never set, and every pod exited at start. ' +
      'The only pages were kube-state-metrics alerts (service kube-state-metrics, pod inventory-api-…); rolling back deployment 88120 fixed it.',
    world: shop({
      runbooks: [
        {
          title: 'Pod crash looping',
          tags: ['kubernetes', 'crashloop'],
          content:
            '1. `kubectl -n <namespace> logs <pod> --previous` for the exit reason.\n2. If the pod started crashing after a rollout, `kubectl rollout undo deployment/<name>`.\n3. Otherwise check config maps and secrets mounted by the pod.',
        },
      ],
    }),
    deliveries: [
      routineDeploy('catalog-api', -200),
      flappingDisk(-40),
      deploymentStatus(
        { repo: 'inventory-api', id: 88120, sha: 'b5e81f04c2d9a7e3f1b0c8d6a4e2f9b7c5d3a1e0', at: -17 },
        { note: 'the cause' },
      ),
      otherDeploy('notifications-worker', -12),
      prom([crashLooping('fulfilment', 'inventory-api', 0)], { groupBy: ['namespace'], page: true }),
      prom([replicasMismatch('fulfilment', 'inventory-api', 2)], { groupBy: ['namespace'] }),
      sentry({
        project: 'checkout-api',
        type: 'requests.exceptions.ConnectionError',
        value:
          "HTTPConnectionPool(host='inventory-api.fulfilment.svc.cluster.local', port=80): Max retries exceeded with url: /v1/reservations (Caused by NewConnectionError('Failed to establish a new connection: [Errno 111] Connection refused'))",
        at: 3,
        frames: [{ filename: 'checkout/inventory/client.py', lineno: 73, function: 'reserve' }],
      }),
    ],
    truth: {
      subject: ['inventory-api', 'b5e81f0', '88120'],
      mechanism: [/deploy|release|rollout|b5e81f0|88120/i],
      oneHopShort: ['checkout-api', 'inventory-db'],
      action: [ROLLBACK, /inventory-api|88120|b5e81f0/i],
    },
  },
  {
    id: 'attribution-blackbox-cert-expired-accounts',
    class: 'attribution',
    title: 'The public accounts endpoint serves an expired certificate; only blackbox knows',
    story:
      'The certificate of accounts.example-shop.com was issued manually two years ago and left out of cert-manager. It expired at 09:00; ' +
      'browsers and mobile clients refused the login endpoint. blackbox_exporter warned three days earlier, and the page was its probe failing.',
    world: shop({
      runbooks: [
        {
          title: 'TLS certificate expiry',
          tags: ['tls', 'certificate'],
          content:
            '1. `openssl s_client -connect <host>:443 -servername <host>` to confirm the expiry date.\n2. Renew the certificate (cert-manager: `cmctl renew`; manual certs: reissue with the CA and update the secret).\n3. Restart the ingress controller if it does not pick up the new secret.',
        },
      ],
    }),
    deliveries: [
      prom([sslExpiringSoon('https://accounts.example-shop.com/healthz', -4320, 2.9)], {
        groupBy: ['alertname'],
        note: 'the warning three days earlier',
      }),
      routineDeploy('accounts-api', -150),
      otherDeploy('cart-api', -25),
      throttlingNoise(-15),
      prom(
        [
          probeFailed('https://accounts.example-shop.com/healthz', 0),
          sslExpired('https://accounts.example-shop.com/healthz', 0),
        ],
        {
          groupBy: ['alertname'],
          page: true,
        },
      ),
      datadogDefault({
        title: 'Login success rate dropped on web-frontend',
        scope: 'service:web-frontend,env:production',
        body: 'Successful logins are 11% of attempts over the last 10 minutes (normal: 94%). Browser errors: net::ERR_CERT_DATE_INVALID on accounts.example-shop.com.',
        at: 2,
      }),
    ],
    truth: {
      subject: ['accounts.example-shop.com', 'accounts-api'],
      mechanism: [/certificate|TLS|SSL|x509|expir/i],
      oneHopShort: ['web-frontend', 'api-gateway'],
      action: [/renew|rotate|reissue|replace|re-issue/i, /certificate|cert|TLS|accounts/i],
    },
  },
  {
    id: 'attribution-grafana-datasource-error-prometheus',
    class: 'attribution',
    title: 'Grafana rules go DatasourceError and NoData together: Prometheus is down, not the services',
    story:
      'prometheus-k8s-0 was evicted from a full node and its replacement waited on its volume for twenty minutes. Every Grafana-managed rule ' +
      'over it went DatasourceError or DatasourceNoData at once; no customer-facing service was affected.',
    world: shop(),
    deliveries: [
      routineDeploy('cart-api', -210),
      otherDeploy('search-api', -18),
      grafana(
        [
          {
            labels: {
              alertname: 'DatasourceError',
              datasource_uid: 'P1809F7CD0C75ACF3',
              grafana_folder: 'Checkout',
              ref_id: 'A',
              rulename: 'checkout-api 5xx ratio',
              team: 'payments',
            },
            annotations: {
              Error:
                '[sse.dataQueryError] failed to execute query [A]: Post "http://prometheus-k8s.monitoring.svc:9090/api/v1/query_range": dial tcp 10.96.14.2:9090: connect: connection refused',
              summary: 'checkout-api 5xx error rate above 5%',
            },
            at: 0,
          },
          {
            labels: {
              alertname: 'DatasourceError',
              datasource_uid: 'P1809F7CD0C75ACF3',
              grafana_folder: 'Checkout',
              ref_id: 'A',
              rulename: 'checkout-api p99 latency',
              team: 'payments',
            },
            annotations: {
              Error:
                '[sse.dataQueryError] failed to execute query [A]: Post "http://prometheus-k8s.monitoring.svc:9090/api/v1/query_range": dial tcp 10.96.14.2:9090: connect: connection refused',
              summary: 'checkout-api p99 above 800ms',
            },
            at: 0,
          },
        ],
        { page: true },
      ),
      grafana([
        {
          labels: {
            alertname: 'DatasourceNoData',
            datasource_uid: 'P1809F7CD0C75ACF3',
            grafana_folder: 'Search',
            ref_id: 'A',
            rulename: 'search-api availability',
            team: 'search',
          },
          annotations: { summary: 'search-api availability below 99.5%' },
          at: 1,
        },
      ]),
      grafana([
        {
          labels: {
            alertname: 'DatasourceNoData',
            datasource_uid: 'P1809F7CD0C75ACF3',
            grafana_folder: 'Fulfilment',
            ref_id: 'B',
            rulename: 'order-worker processed jobs',
            team: 'fulfilment',
          },
          annotations: { summary: 'order-worker processed no jobs for 10 minutes' },
          at: 1,
        },
      ]),
      flappingDisk(2),
    ],
    truth: {
      subject: ['prometheus', 'prometheus-k8s', 'monitoring'],
      mechanism: [/datasource|data source|prometheus|monitoring|no data|scrap|query/i],
      oneHopShort: ['Grafana'],
      action: [/prometheus/i],
    },
  },
  {
    id: 'attribution-datadog-default-payments-deploy',
    class: 'attribution',
    title: 'Datadog default payload: payments-api named only in the title scope, after its deploy',
    story:
      'The Datadog webhook still uses the integration\'s default payload, so the service is only inside "{service:payments-api,env:production}" in the title. ' +
      'payments-api deployment 51907 changed the idempotency-key header name and the card processor refused retries; rollback fixed it.',
    world: shop(),
    deliveries: [
      routineDeploy('checkout-api', -320),
      deploymentStatus(
        { repo: 'payments-api', id: 51907, sha: 'e0d4c7a19b3f5e2d8c6a0f9b7e5d3c1a2b4f6e80', at: -16 },
        { note: 'the cause' },
      ),
      otherDeploy('web-frontend', -8),
      datadogDefault(
        {
          title: 'Payment authorisation failures on payments-api',
          scope: 'service:payments-api,env:production',
          body: 'payments.authorisation.failed is 312 over the last 5 minutes (threshold 50).\nTop error: 409 duplicate_request: Idempotency-Key header missing on retried authorisation.',
          at: 0,
          priority: 'P1',
        },
        { page: true },
      ),
      datadogDefault({
        title: 'Checkout conversion below baseline',
        scope: 'service:checkout-api,env:production',
        body: 'Orders completed per minute are 41% below the weekly baseline.',
        at: 3,
        priority: 'P3',
      }),
      throttlingNoise(4),
    ],
    truth: {
      subject: ['payments-api', 'e0d4c7a', '51907'],
      mechanism: [/deploy|release|rollout|e0d4c7a|51907/i],
      oneHopShort: ['checkout-api', 'payments-db'],
      action: [ROLLBACK, /payments-api|51907|e0d4c7a/i],
    },
  },
];
