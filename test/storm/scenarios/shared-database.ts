import { alertmanager, datadog, generic, grafana, grafanaTest, ruleAlert, sentry, watchdog } from '../payloads.js';
import { NOISE, type ScenarioDefinition } from '../types.js';
import { shopEdges, shopServices } from './shop.js';

const DB = 'orders-db';
const byService = { groupBy: ['alertname', 'service'] };

/**
 * orders-db runs out of connections (a batch job leaks them): every service that reads orders
 * fails within three minutes, through every tool. Meanwhile the marketing site's Lighthouse score
 * drops, the gateway's certificate is 13 days from expiry (a service that depends on everything),
 * and a disk fills on the email worker.
 */
export const sharedDatabase: ScenarioDefinition = {
  name: 'shared-database',
  durationSeconds: 235,
  build: (t) => ({
    name: 'shared-database',
    title: 'orders-db out of connections',
    description:
      'A leaking batch job exhausts orders-db connections; orders-api, invoice-worker, checkout, fulfillment and the storefront fail behind it.',
    services: shopServices,
    edges: shopEdges,
    outages: { [DB]: { root: 'orders-db', summary: 'orders-db out of connections' } },
    deliveries: [
      watchdog(t, 0),
      alertmanager(
        t,
        5,
        [
          ruleAlert(
            'PostgresTooManyConnections',
            'orders-db',
            'critical',
            'orders-db uses 98% of max_connections',
            -25,
            DB,
            {
              labels: { instance: 'orders-db-0:9187', namespace: 'orders' },
              description: 'orders-db-0 has 490 of 500 connections in use for 2 minutes.',
            },
          ),
        ],
        byService,
      ),
      datadog(t, 20, {
        monitorId: 40112233,
        name: 'orders-api Postgres query errors',
        service: 'orders-api',
        priority: 'P2',
        metric: 'trace.postgres.query.errors',
        status: 'trace.postgres.query.errors over service:orders-api was > 25 on average during the last 5m.',
        message: 'orders-api cannot run its queries against orders-db.',
        truth: DB,
      }),
      sentry(t, 35, {
        project: 'orders-api',
        title:
          'OperationalError: FATAL: remaining connection slots are reserved for non-replication superuser connections',
        culprit: 'orders.repository in fetch_order',
        release: 'orders-api@2024.05.14-3',
        truth: DB,
      }),
      alertmanager(
        t,
        40,
        [
          ruleAlert('HighErrorRate', 'orders-api', 'critical', 'orders-api 5xx error rate above 5%', 10, DB, {
            labels: { namespace: 'orders', job: 'orders-api' },
          }),
        ],
        byService,
      ),
      datadog(t, 50, {
        monitorId: 40119876,
        name: 'Marketing site Lighthouse performance below 70',
        service: 'marketing-site',
        priority: 'P4',
        transition: 'Warn',
        metric: 'synthetics.browser.lighthouse.performance',
        status: 'Lighthouse performance of www.example-shop.com was < 70 at the last check.',
        message: 'The landing page hero image grew to 4 MB.',
        truth: NOISE,
      }),
      sentry(t, 60, {
        project: 'invoice-worker',
        title: 'OperationalError: could not connect to server: Connection refused',
        culprit: 'invoices.tasks in render_invoice',
        release: 'invoice-worker@1.18.0',
        truth: DB,
      }),
      alertmanager(
        t,
        75,
        [
          ruleAlert(
            'KafkaConsumerGroupLag',
            'invoice-worker',
            'warning',
            'invoice-worker lags 12k messages behind',
            45,
            DB,
            {
              labels: { consumergroup: 'invoice-worker', topic: 'orders.created' },
            },
          ),
        ],
        byService,
      ),
      grafana(
        t,
        90,
        [ruleAlert('Checkout p99 latency', 'checkout-api', 'high', 'checkout p99 latency above 2 s', 60, DB)],
        { folder: 'Checkout', value: 2.7 },
      ),
      grafanaTest(t, 100),
      alertmanager(
        t,
        110,
        [
          ruleAlert('HighErrorRate', 'checkout-api', 'critical', 'checkout-api 5xx error rate above 5%', 80, DB, {
            labels: { namespace: 'checkout', job: 'checkout-api' },
          }),
        ],
        byService,
      ),
      generic(t, 120, [
        {
          name: 'CheckoutJourneyFailing',
          service: 'web-frontend',
          severity: 'critical',
          summary: 'The checkout journey failed from 3 of 3 locations',
          labels: { check: 'checkout-journey' },
          startsAt: 115,
          truth: DB,
        },
      ]),
      alertmanager(
        t,
        130,
        [
          ruleAlert(
            'CertificateExpiringSoon',
            'api-gateway',
            'warning',
            'TLS certificate of api.example-shop.com expires in 13 days',
            100,
            NOISE,
            {
              labels: { instance: 'https://api.example-shop.com', job: 'blackbox' },
            },
          ),
        ],
        byService,
      ),
      datadog(t, 140, {
        monitorId: 40113344,
        name: 'Fulfillment order events lag',
        service: 'fulfillment-worker',
        priority: 'P3',
        metric: 'kafka.consumer_lag',
        status: 'kafka.consumer_lag over consumer_group:fulfillment was > 5000 on average during the last 5m.',
        message: 'fulfillment-worker is behind on order events.',
        truth: DB,
      }),
      alertmanager(
        t,
        160,
        [
          ruleAlert(
            'NodeFilesystemSpaceFillingUp',
            'email-worker',
            'warning',
            'Filesystem on email-worker-2 is predicted to run out of space within 24 hours',
            100,
            NOISE,
            {
              labels: { instance: 'email-worker-2', mountpoint: '/var/spool' },
            },
          ),
        ],
        byService,
      ),
      sentry(t, 180, {
        project: 'admin-portal',
        title: 'ReadTimeout: orders-api did not answer within 30s',
        culprit: 'backoffice.orders in search_orders',
        release: 'admin-portal@3.1.0',
        truth: DB,
      }),
      watchdog(t, 200),
      alertmanager(
        t,
        235,
        [
          ruleAlert(
            'PostgresTooManyConnections',
            'orders-db',
            'critical',
            'orders-db uses 98% of max_connections',
            -25,
            DB,
            {
              labels: { instance: 'orders-db-0:9187', namespace: 'orders' },
              description: 'orders-db-0 has 490 of 500 connections in use for 2 minutes.',
              endsAt: 225,
            },
          ),
        ],
        byService,
      ),
    ],
  }),
};
