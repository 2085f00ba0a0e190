import { alertmanager, datadog, generic, grafana, ruleAlert, sentry, watchdog } from '../payloads.js';
import { NOISE, type ScenarioDefinition } from '../types.js';
import { shopEdges, shopServices } from './shop.js';

const INV = 'inventory-db-pool';
const byService = { groupBy: ['alertname', 'service'] };

/**
 * inventory-db's connection pooler wedges. Its own alert has `for: 5m`, so it arrives last: first
 * the storefront's product page check, inventory-api latency, a fulfillment timeout, pricing
 * errors and the pricing sync job (which reads inventory-db directly and shares no dependency path
 * with the others but the database). Unrelated: payments latency.
 */
export const rootLast: ScenarioDefinition = {
  name: 'root-last',
  durationSeconds: 110,
  build: (t) => ({
    name: 'root-last',
    title: 'inventory-db pooler wedged, its alert last',
    description:
      "inventory-db's pooler stops handing out connections; its dependents alert first and the database's own alert, with a 5 minute for, arrives last.",
    services: shopServices,
    edges: shopEdges,
    outages: { [INV]: { root: 'inventory-db', summary: 'inventory-db connection pooler wedged' } },
    deliveries: [
      generic(t, 0, [
        {
          name: 'ProductPageAvailability',
          service: 'web-frontend',
          severity: 'high',
          summary: 'Product pages answered 503 from 2 of 3 locations',
          labels: { check: 'product-page' },
          startsAt: -5,
          truth: INV,
        },
      ]),
      datadog(t, 15, {
        monitorId: 90100010,
        name: 'inventory-api p99 latency above 2 s',
        service: 'inventory-api',
        tags: ['team:inventory'],
        priority: 'P2',
        metric: 'trace.http.request.duration.by.service.99p',
        status: 'p99 latency of inventory-api was > 2 on average during the last 5m.',
        message: 'Stock lookups are slow.',
        truth: INV,
      }),
      sentry(t, 30, {
        project: 'fulfillment-worker',
        title: 'TimeoutError: reserve_stock timed out after 10s',
        culprit: 'fulfillment.reservations in reserve',
        release: 'fulfillment-worker@4.0.2',
        truth: INV,
      }),
      grafana(
        t,
        45,
        [
          ruleAlert(
            'Price calculation errors',
            'pricing-api',
            'high',
            'pricing-api fails 12% of price calculations',
            20,
            INV,
          ),
        ],
        { folder: 'Pricing', value: 0.12 },
      ),
      alertmanager(
        t,
        60,
        [
          ruleAlert(
            'CronJobFailing',
            'pricing-sync-worker',
            'warning',
            'pricing-sync failed 3 runs in a row',
            30,
            INV,
            {
              labels: { namespace: 'pricing', cronjob: 'pricing-sync' },
            },
          ),
        ],
        byService,
      ),
      alertmanager(
        t,
        75,
        [
          ruleAlert('HighLatencyP99', 'payments-api', 'warning', 'payments-api p99 latency above 1 s', 50, NOISE, {
            labels: { namespace: 'payments', route: '/v1/refunds' },
          }),
        ],
        byService,
      ),
      alertmanager(
        t,
        100,
        [
          ruleAlert(
            'PgBouncerNoFreeConnections',
            'inventory-db',
            'critical',
            'inventory-db pgbouncer has had no free server connections for 5 minutes',
            -5,
            INV,
            {
              labels: { namespace: 'inventory', instance: 'inventory-db-pgbouncer-0:9127' },
            },
          ),
        ],
        byService,
      ),
      watchdog(t, 110),
    ],
  }),
};
