/**
 * Class 5: incidents whose evidence cannot name one cause. The truth is `undetermined`: correct is
 * saying Undetermined, or leaning on one of the plausible causes with a hedged confidence (ADR 0271).
 */
import { flappingDisk, otherDeploy, throttlingNoise } from '../noise.js';
import { prom, sentry } from '../payloads/alerts.js';
import { deploymentStatus } from '../payloads/github.js';
import { shop } from '../worlds.js';
import type { CorpusIncident } from '../types.js';

export const calibrationA: CorpusIncident[] = [
  {
    id: 'calibration-deploy-and-vendor-at-once',
    class: 'calibration',
    title: 'A payments-api deploy and Stripe timeouts in the same five minutes',
    story:
      'payments-api 2025.11.27-1 went out while Stripe latency rose; charges failed with timeouts. Post-mortem: the deploy had lowered the Stripe client ' +
      'timeout from 30 s to 5 s, which only mattered because Stripe was slow. From the alerts alone either could be blamed.',
    world: shop(),
    deliveries: [
      otherDeploy('search-api', -45),
      deploymentStatus({ repo: 'payments-api', id: 51990, sha: 'a9c3e5f7b1d2c4e6f8a0b2c4d6e8f0a1b3c5d7e9', at: -7 }),
      sentry({
        project: 'payments-api',
        type: 'stripe.error.APIConnectionError',
        value:
          "Request to Stripe timed out: HTTPSConnectionPool(host='api.stripe.com', port=443): Read timed out. (read timeout=5)",
        at: -2,
        frames: [{ filename: 'payments/providers/stripe.py', lineno: 77, function: 'create_intent' }],
      }),
      prom(
        [
          {
            labels: {
              alertname: 'HighErrorRate',
              service: 'payments-api',
              severity: 'critical',
              namespace: 'payments',
            },
            annotations: {
              summary: 'payments-api 5xx above 5%',
              description: '5xx responses are 14% of payments-api requests (charge timeouts).',
            },
            at: 0,
          },
        ],
        { page: true },
      ),
      flappingDisk(2),
    ],
    truth: {
      subject: ['payments-api', 'stripe', '51990', 'a9c3e5f'],
      mechanism: [],
      oneHopShort: ['checkout-api'],
      action: [/payments-api|stripe|51990|a9c3e5f/i],
      undetermined: true,
    },
  },
  {
    id: 'calibration-single-latency-alert',
    class: 'calibration',
    title: 'One p99 latency alert on search-api and nothing else',
    story:
      'search-api p99 crossed 1.2 s for eight minutes and recovered on its own. No deploy, no other alert; the post-mortem never found the cause ' +
      '(probably a JVM safepoint pause on one pod, unprovable after the pod was recycled).',
    world: shop(),
    deliveries: [
      otherDeploy('accounts-api', -95),
      throttlingNoise(-20),
      prom(
        [
          {
            labels: { alertname: 'HighLatencyP99', service: 'search-api', severity: 'warning', namespace: 'search' },
            annotations: {
              summary: 'search-api p99 above 1s',
              description: 'search-api p99 latency is 1.24s over the last 5 minutes (threshold 1s).',
            },
            at: 0,
            expr: 'histogram_quantile(0.99, sum(rate(http_request_duration_seconds_bucket{service="search-api"}[5m])) by (le)) > 1',
          },
        ],
        { page: true },
      ),
    ],
    truth: {
      subject: ['search-api'],
      mechanism: [],
      oneHopShort: ['search-index'],
      action: [/search-api/i],
      undetermined: true,
    },
  },
];
