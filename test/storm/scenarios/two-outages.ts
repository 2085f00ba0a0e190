import { alertmanager, datadog, generic, grafana, grafanaTest, ruleAlert, sentry } from '../payloads.js';
import { NOISE, type ScenarioDefinition } from '../types.js';
import { shopEdges, shopServices } from './shop.js';

const DISK = 'orders-db-disk-full';
const SEARCH = 'search-cluster-red';
const byService = { groupBy: ['alertname', 'service'] };

/**
 * Two unrelated outages in the same minutes: orders-db's data volume fills (orders, invoices and
 * checkout fail) while the search cluster goes red after a node loss (search and recommendations
 * fail). Both raise alerts of the same rules (HighErrorRate, Grafana's "High 5xx rate", which
 * Grafana's default policy puts in one notification), interleaved. Plus the usual noise.
 */
export const twoOutages: ScenarioDefinition = {
  name: 'two-outages',
  durationSeconds: 120,
  build: (t) => ({
    name: 'two-outages',
    title: 'orders-db disk full and search cluster red, at once',
    description:
      'orders-db runs out of disk while the search cluster loses a node and goes red; each takes its dependents down.',
    services: shopServices,
    edges: shopEdges,
    outages: {
      [DISK]: { root: 'orders-db', summary: 'orders-db data volume full' },
      [SEARCH]: { root: 'search-index', summary: 'search cluster red after a node loss' },
    },
    deliveries: [
      alertmanager(
        t,
        0,
        [
          ruleAlert(
            'NodeFilesystemAlmostOutOfSpace',
            'orders-db',
            'critical',
            'orders-db-0 /var/lib/postgresql has 0.4% space left',
            -20,
            DISK,
            {
              labels: { instance: 'orders-db-0', mountpoint: '/var/lib/postgresql' },
            },
          ),
        ],
        byService,
      ),
      alertmanager(
        t,
        10,
        [
          ruleAlert(
            'ElasticsearchClusterRed',
            'search-index',
            'critical',
            'search-index cluster health is RED',
            -10,
            SEARCH,
            {
              labels: { cluster: 'search-prod', instance: 'search-index-0:9114' },
            },
          ),
        ],
        byService,
      ),
      alertmanager(
        t,
        20,
        [
          ruleAlert('HighErrorRate', 'orders-api', 'critical', 'orders-api 5xx error rate above 5%', 0, DISK, {
            labels: { job: 'orders-api' },
          }),
        ],
        byService,
      ),
      alertmanager(
        t,
        30,
        [
          ruleAlert('HighErrorRate', 'search-api', 'critical', 'search-api 5xx error rate above 5%', 5, SEARCH, {
            labels: { job: 'search-api' },
          }),
        ],
        byService,
      ),
      grafanaTest(t, 40),
      sentry(t, 45, {
        project: 'invoice-worker',
        title: 'DiskFull: could not extend file "base/16384/24576": No space left on device',
        culprit: 'invoices.tasks in store_invoice',
        release: 'invoice-worker@1.18.0',
        truth: DISK,
      }),
      datadog(t, 50, {
        monitorId: 81000231,
        name: 'recommendations-api error rate above 5%',
        service: 'recommendations-api',
        tags: ['team:search'],
        priority: 'P3',
        metric: 'trace.http.request.errors',
        status:
          'trace.http.request.errors over env:production,service:recommendations-api was > 0.05 on average during the last 5m.',
        message: 'Recommendations fail to query the search cluster.',
        truth: SEARCH,
      }),
      alertmanager(
        t,
        60,
        [
          ruleAlert(
            'CertificateExpiringSoon',
            'api-gateway',
            'warning',
            'TLS certificate of api.example-shop.com expires in 13 days',
            30,
            NOISE,
            {
              labels: { instance: 'https://api.example-shop.com', job: 'blackbox' },
            },
          ),
        ],
        byService,
      ),
      datadog(t, 70, {
        monitorId: 81000117,
        name: 'checkout-api error rate above 2%',
        service: 'checkout-api',
        tags: ['team:checkout'],
        priority: 'P1',
        metric: 'trace.http.request.errors',
        status:
          'trace.http.request.errors over env:production,service:checkout-api was > 0.02 on average during the last 5m.',
        message: 'Orders cannot be placed.',
        truth: DISK,
      }),
      sentry(t, 80, {
        project: 'search-api',
        title:
          'ConnectionError: ConnectionError(<urllib3.connection.HTTPConnection>: Failed to establish a new connection) caused by: search-index:9200',
        culprit: 'search.query in run_query',
        release: 'search-api@2.9.4',
        truth: SEARCH,
      }),
      generic(
        t,
        90,
        [
          {
            name: 'LandingPageSlow',
            service: 'marketing-site',
            severity: 'low',
            summary: 'The landing page took 4.2 s to load',
            labels: { check: 'landing-page' },
            startsAt: 88,
            truth: NOISE,
          },
        ],
        'pingdom',
      ),
      grafana(
        t,
        100,
        [
          ruleAlert('High 5xx rate', 'orders-api', 'critical', 'orders-api answers 5xx to 9% of requests', 40, DISK),
          ruleAlert('High 5xx rate', 'search-api', 'critical', 'search-api answers 5xx to 31% of requests', 45, SEARCH),
        ],
        { folder: 'Services', value: 0.09 },
      ),
      generic(t, 120, [
        {
          name: 'SearchJourneyFailing',
          service: 'web-frontend',
          severity: 'high',
          summary: 'Product search returned errors from 3 of 3 locations',
          labels: { check: 'search-journey' },
          startsAt: 115,
          truth: SEARCH,
        },
      ]),
    ],
  }),
};
