/** Class 5: evidence that cannot name one cause (part C); the truth is `undetermined`. */
import { otherDeploy } from '../noise.js';
import { prom } from '../payloads/alerts.js';
import { node, shop } from '../worlds.js';
import type { CorpusIncident } from '../types.js';

export const calibrationC: CorpusIncident[] = [
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
