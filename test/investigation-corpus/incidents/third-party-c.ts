/** Class 3: vendor outages seen only in error text or as a quiet topology node (part C). */
import { otherDeploy, routineDeploy } from '../noise.js';
import { datadog, prom, sentry, sentryMetric } from '../payloads/alerts.js';
import { node, shop } from '../worlds.js';
import type { CorpusIncident } from '../types.js';

export const thirdPartyC: CorpusIncident[] = [
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
    id: 'third-party-fcm-unavailable',
    class: 'third_party',
    title: 'Firebase Cloud Messaging answers UNAVAILABLE; push notifications stall',
    story:
      "FCM's HTTP v1 API returned 503 UNAVAILABLE for 25 minutes in Europe. notifications-worker (firebase-admin) raised UnavailableError on every push and " +
      'retried; the push queue grew. Nothing of ours changed; the fix was to wait and let the retries drain.',
    world: shop(),
    deliveries: [
      routineDeploy('notifications-worker', -260),
      otherDeploy('accounts-api', -40),
      sentry({
        project: 'notifications-worker',
        type: 'firebase_admin.exceptions.UnavailableError',
        value:
          'The service is currently unavailable. (POST https://fcm.googleapis.com/v1/projects/example-shop/messages:send 503)',
        at: -2,
        frames: [{ filename: 'notifications/push.py', lineno: 47, function: 'send' }],
      }),
      prom(
        [
          {
            labels: {
              alertname: 'RabbitmqQueueBacklog',
              service: 'notifications-queue',
              queue: 'push.outbound',
              vhost: 'messaging',
              severity: 'warning',
            },
            annotations: {
              summary: 'push.outbound backlog growing',
              description: 'push.outbound has 240,512 ready messages, growing 6,000/min.',
            },
            at: 0,
          },
        ],
        { page: true },
      ),
    ],
    truth: {
      subject: ['fcm', 'firebase', 'fcm.googleapis.com', 'Firebase Cloud Messaging', 'google'],
      mechanism: [/outage|unavailable|unreachable|degraded|third[- ]party|vendor|provider|external|down|failing|503/i],
      oneHopShort: ['notifications-worker', 'notifications-queue'],
      action: [/fcm|firebase|google/i],
    },
  },
  {
    id: 'third-party-braintree-sentry-metric-alert',
    class: 'third_party',
    title: 'A Sentry metric alert on payments-api errors: Braintree is unavailable',
    story:
      "PayPal payments go through Braintree. Braintree's gateway answered 503 for 15 minutes; braintree-python raised ServiceUnavailableError and the Sentry " +
      'metric alert on payments-api error volume paged. Card payments through Stripe were fine; a payments-api deploy at 08:00 was not involved.',
    world: shop(),
    deliveries: [
      routineDeploy('payments-api', -330),
      otherDeploy('cart-api', -20),
      sentry({
        project: 'payments-api',
        type: 'braintree.exceptions.service_unavailable_error.ServiceUnavailableError',
        value: '',
        at: -3,
        culprit: 'payments.providers.braintree in create_transaction',
        frames: [{ filename: 'payments/providers/braintree.py', lineno: 66, function: 'create_transaction' }],
      }),
      sentryMetric(
        {
          name: 'payments-api error volume',
          project: 'payments-api',
          description: '812 events in the last 10 minutes\nFilter: level:error environment:production',
          at: 0,
        },
        { page: true },
      ),
    ],
    truth: {
      subject: ['braintree'],
      mechanism: [/outage|unavailable|unreachable|degraded|third[- ]party|vendor|provider|external|down|failing|503/i],
      oneHopShort: ['payments-api'],
      action: [/braintree|paypal/i],
    },
  },
];
