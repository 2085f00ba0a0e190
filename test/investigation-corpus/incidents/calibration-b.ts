/** Class 5: evidence that cannot name one cause (part B); the truth is `undetermined`. */
import { flappingDisk, otherDeploy, throttlingNoise } from '../noise.js';
import { grafana, prom, sentry } from '../payloads/alerts.js';
import { launchDarkly } from '../payloads/changes.js';
import { deploymentStatus } from '../payloads/github.js';
import { nodeMemoryHigh } from '../payloads/kube.js';
import { shop } from '../worlds.js';
import type { CorpusIncident } from '../types.js';

export const calibrationB: CorpusIncident[] = [
  {
    id: 'calibration-two-deploys-at-once',
    class: 'calibration',
    title: 'cart-api and catalog-api deploy within two minutes; checkout rejects carts',
    story:
      'Two teams shipped in the same window: cart-api 71200 and catalog-api 71201. Checkout rejected carts with "price mismatch". The post-mortem needed both diffs ' +
      'to see that catalog-api changed price rounding and cart-api cached old prices; from the alerts either deploy fits.',
    world: shop(),
    deliveries: [
      deploymentStatus({ repo: 'cart-api', id: 71200, sha: '1c3e5a7b9d0f2a4c6e8b0d2f4a6c8e0b2d4f6a80', at: -13 }),
      deploymentStatus({ repo: 'catalog-api', id: 71201, sha: '3e5a7c9b1d2f4a6c8e0b2d4f6a8c0e1b3d5f7a92', at: -11 }),
      sentry(
        {
          project: 'checkout-api',
          type: 'CheckoutValidationError',
          value: 'price mismatch for 3 line items (cart total 104.97, catalog total 104.96)',
          at: 0,
          frames: [{ filename: 'checkout/validation.py', lineno: 71, function: 'validate_totals' }],
        },
        { page: true },
      ),
      flappingDisk(2),
    ],
    truth: {
      subject: ['cart-api', 'catalog-api', '71200', '71201'],
      mechanism: [],
      oneHopShort: ['checkout-api'],
      action: [/cart-api|catalog-api|71200|71201|checkout/i],
      undetermined: true,
    },
  },
  {
    id: 'calibration-flag-and-node-memory',
    class: 'calibration',
    title: 'A flag flip and a node under memory pressure at the same minute',
    story:
      'cart-api p99 rose as the bulk-pricing flag went to 50% and the node hosting two cart-api pods hit 96% memory. The post-mortem concluded the flag ' +
      'only mattered because of the node, and could not separate them from the alerts.',
    world: shop(),
    deliveries: [
      otherDeploy('search-api', -60),
      launchDarkly({
        flag: 'bulk-pricing',
        action: 'updateFallthrough',
        description: '- Changed the default variation to a percentage rollout (50% `true`, 50% `false`)',
        titleVerb: 'changed the default rule of',
        at: -6,
      }),
      prom([nodeMemoryHigh('ip-10-0-4-58.eu-west-1.compute.internal:9100', -5, 96.1)], {
        groupBy: ['alertname', 'instance'],
      }),
      prom(
        [
          {
            labels: { alertname: 'HighLatencyP99', service: 'cart-api', severity: 'warning', namespace: 'storefront' },
            annotations: { description: 'cart-api p99 is 1.3s (threshold 500ms).' },
            at: 0,
          },
        ],
        { page: true },
      ),
    ],
    truth: {
      subject: ['bulk-pricing', 'ip-10-0-4-58', 'cart-api'],
      mechanism: [],
      oneHopShort: ['session-cache'],
      action: [/cart-api|bulk-pricing|ip-10-0-4-58/i],
      undetermined: true,
    },
  },
  {
    id: 'calibration-intermittent-gateway-502',
    class: 'calibration',
    title: 'Intermittent 502s at the gateway and nothing else',
    story:
      'api-gateway returned 502 on 1.5% of requests for 20 minutes. No deploy, no other alert. The cloud load balancer had a maintenance event we only saw ' +
      "days later in the provider's health dashboard: nothing we received could have shown it.",
    world: shop(),
    deliveries: [
      otherDeploy('notifications-worker', -80),
      throttlingNoise(-30),
      prom(
        [
          {
            labels: {
              alertname: 'GatewayUpstreamErrors',
              service: 'api-gateway',
              severity: 'warning',
              namespace: 'edge',
            },
            annotations: {
              description: '502 responses are 1.5% of api-gateway requests across all routes (threshold 1%).',
            },
            at: 0,
          },
        ],
        { page: true },
      ),
    ],
    truth: {
      subject: ['api-gateway'],
      mechanism: [],
      oneHopShort: ['web-frontend'],
      action: [/api-gateway|502|load balancer/i],
      undetermined: true,
    },
  },
  {
    id: 'calibration-rare-connection-reset',
    class: 'calibration',
    title: 'A handful of ConnectionResetErrors in inventory-api',
    story:
      'Sentry opened an issue for 14 ConnectionResetError events in an hour in inventory-api, nothing else. It stopped on its own; the cause (a NAT gateway ' +
      'idle timeout) was found a week later. The evidence at the time could not name it.',
    world: shop(),
    deliveries: [
      otherDeploy('payments-api', -70),
      sentry(
        {
          project: 'inventory-api',
          type: 'ConnectionResetError',
          value: '[Errno 104] Connection reset by peer',
          at: 0,
          level: 'warning',
          frames: [{ filename: 'inventory/warehouse_client.py', lineno: 52, function: 'sync_stock' }],
        },
        { page: true },
      ),
    ],
    truth: {
      subject: ['inventory-api'],
      mechanism: [],
      oneHopShort: ['inventory-db'],
      action: [/inventory-api|warehouse/i],
      undetermined: true,
    },
  },
  {
    id: 'calibration-single-nodata',
    class: 'calibration',
    title: 'One DatasourceNoData for order-worker: the service or its metrics?',
    story:
      'Grafana said order-worker processed jobs had no data. Was order-worker down, or had its metrics endpoint stopped being scraped? The queue had no alert ' +
      'and no deploy happened; it turned out to be a scrape-config reload, but nothing received said so.',
    world: shop(),
    deliveries: [
      otherDeploy('web-frontend', -55),
      grafana(
        [
          {
            labels: {
              alertname: 'DatasourceNoData',
              datasource_uid: 'P1809F7CD0C75ACF3',
              grafana_folder: 'Fulfilment',
              ref_id: 'A',
              rulename: 'order-worker processed jobs',
              team: 'fulfilment',
            },
            annotations: { summary: 'order-worker processed fewer than 10 jobs per minute' },
            at: 0,
          },
        ],
        { page: true },
      ),
    ],
    truth: {
      subject: ['order-worker', 'prometheus'],
      mechanism: [],
      oneHopShort: ['orders-queue'],
      action: [/order-worker|prometheus|scrape|metrics/i],
      undetermined: true,
    },
  },
  {
    id: 'calibration-many-services-slow-az',
    class: 'calibration',
    title: 'Several unrelated services slow at once with no shared dependency in the graph',
    story:
      'search-api, accounts-api and recommendations-api all crossed their latency thresholds within three minutes. They share no dependency in our graph; the ' +
      'cause was packet loss in one availability zone, which none of our tools reported.',
    world: shop(),
    deliveries: [
      otherDeploy('checkout-api', -90),
      prom([
        {
          labels: { alertname: 'HighLatencyP99', service: 'search-api', severity: 'warning', namespace: 'search' },
          annotations: { description: 'search-api p99 is 1.4s (threshold 1s).' },
          at: -2,
        },
      ]),
      prom([
        {
          labels: {
            alertname: 'HighLatencyP99',
            service: 'recommendations-api',
            severity: 'warning',
            namespace: 'discovery',
          },
          annotations: { description: 'recommendations-api p99 is 2.2s (threshold 1.5s).' },
          at: -1,
        },
      ]),
      prom(
        [
          {
            labels: { alertname: 'HighLatencyP99', service: 'accounts-api', severity: 'high', namespace: 'identity' },
            annotations: { description: 'accounts-api p99 is 1.8s (threshold 800ms).' },
            at: 0,
          },
        ],
        { page: true },
      ),
      flappingDisk(2),
    ],
    truth: {
      subject: ['availability zone', 'network', 'packet loss'],
      mechanism: [],
      oneHopShort: ['api-gateway'],
      action: [/accounts-api|search-api|recommendations-api|network|zone/i],
      undetermined: true,
    },
  },
];
