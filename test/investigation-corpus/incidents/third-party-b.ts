/** Class 3: vendor outages seen only in error text or as a quiet topology node (part B). */
import { flappingDisk, otherDeploy, routineDeploy, throttlingNoise } from '../noise.js';
import { datadog, datadogDefault, generic, prom, sentry } from '../payloads/alerts.js';
import { node, shop } from '../worlds.js';
import type { CorpusIncident } from '../types.js';

const VENDOR =
  /outage|unavailable|unreachable|degraded|third[- ]party|vendor|provider|external|5\d\d|down|failing|errors? from/i;

export const thirdPartyB: CorpusIncident[] = [
  {
    id: 'third-party-auth0-token-endpoint',
    class: 'third_party',
    title: 'Auth0 token endpoint 503s; logins fail; accounts-api deployed two hours earlier',
    story:
      "Auth0's EU tenant cluster degraded and /oauth/token answered 503 for 20 minutes. accounts-api could not exchange codes, so logins and token refreshes " +
      'failed. auth0 is a node in our graph and sends no alerts; the accounts-api deploy at 11:00 was suspected and cleared.',
    world: shop({
      nodes: [node('auth0', 'api', 9, 'identity')],
      edges: [['accounts-api', 'auth0']],
      runbooks: [
        {
          title: 'Identity provider degraded',
          service: 'accounts-api',
          tags: ['auth0', 'login'],
          content:
            '1. Check https://status.auth0.com for the EU region.\n2. Extend session lifetimes so signed-in users stay signed in: `accountsctl sessions extend 2h`.\n3. Show the login banner and post in #status.',
        },
      ],
    }),
    deliveries: [
      routineDeploy('accounts-api', -125),
      otherDeploy('cart-api', -21),
      sentry({
        project: 'accounts-api',
        type: 'Auth0Error',
        value:
          'POST https://example-shop.eu.auth0.com/oauth/token failed: 503 Service Unavailable (temporarily_unavailable)',
        at: -2,
        culprit: 'accounts.auth.exchange_code',
        frames: [{ filename: 'accounts/auth/oidc.py', lineno: 118, function: 'exchange_code' }],
      }),
      datadog(
        {
          title: 'Login failures on accounts-api',
          body: 'accounts-api login failure rate is 71% over the last 5 minutes (threshold 10%).',
          service: 'accounts-api',
          at: 0,
          priority: 'P1',
          metric: 'accounts.login.failed',
        },
        { page: true },
      ),
      flappingDisk(1),
    ],
    truth: {
      subject: ['auth0', 'example-shop.eu.auth0.com'],
      mechanism: [VENDOR],
      oneHopShort: ['accounts-api'],
      action: [/auth0|identity provider|sessions extend/i],
    },
  },
  {
    id: 'third-party-okta-backoffice',
    class: 'third_party',
    title: 'Okta E0000009 errors lock staff out of the back office',
    story:
      "Okta had an incident in its US cell; the back office's SSO callbacks got HTTP 503 E0000009 and staff could not sign in to refund orders. " +
      'Customers were unaffected; a backoffice-api config reload 90 minutes earlier was not involved.',
    world: shop({
      nodes: [node('backoffice-api', 'api', 4, 'support-tools')],
      edges: [
        ['backoffice-api', 'orders-db'],
        ['backoffice-api', 'payments-api'],
      ],
    }),
    deliveries: [
      routineDeploy('backoffice-api', -90),
      otherDeploy('catalog-api', -11),
      sentry(
        {
          project: 'backoffice-api',
          type: 'com.okta.sdk.resource.ResourceException',
          value:
            'HTTP 503, Okta E0000009 (Internal Server Error - Internal Server Error), ErrorId oaeWq4c1nQBQ9e-6OjzI9p9VA',
          at: 0,
          culprit: 'com.exampleshop.backoffice.auth.OktaCallbackController.callback',
          frames: [
            {
              filename: 'com/exampleshop/backoffice/auth/OktaCallbackController.java',
              lineno: 64,
              function: 'callback',
            },
          ],
        },
        { page: true },
      ),
      generic({
        name: 'BackofficeLoginFailures',
        service: 'backoffice-api',
        at: 2,
        severity: 'high',
        summary: 'Staff logins failing',
        description: '42 of 44 back-office sign-ins failed in 10 minutes.',
      }),
    ],
    truth: {
      subject: ['okta'],
      mechanism: [VENDOR, /E0000009/],
      oneHopShort: ['backoffice-api'],
      action: [/okta/i],
    },
  },
  {
    id: 'third-party-sendgrid-503',
    class: 'third_party',
    title: 'SendGrid v3 mail/send answers 503; order confirmations pile up',
    story:
      "SendGrid's mail/send API returned 503 for 35 minutes. notifications-worker (sendgrid-python) failed each email and requeued it; nothing of ours broke. " +
      'The incident was the queue alert; the cause was only in the Sentry exception text.',
    world: shop(),
    deliveries: [
      routineDeploy('notifications-worker', -340),
      otherDeploy('inventory-api', -18),
      sentry({
        project: 'notifications-worker',
        type: 'python_http_client.exceptions.ServiceUnavailableError',
        value: 'HTTP Error 503: Service Unavailable (POST https://api.sendgrid.com/v3/mail/send)',
        at: -3,
        culprit: 'notifications.email.send',
        frames: [{ filename: 'notifications/email.py', lineno: 57, function: 'send' }],
      }),
      prom(
        [
          {
            labels: {
              alertname: 'RabbitmqQueueBacklog',
              service: 'notifications-queue',
              queue: 'email.outbound',
              vhost: 'messaging',
              severity: 'warning',
            },
            annotations: {
              summary: 'email.outbound backlog growing',
              description: 'email.outbound has 64,120 ready messages, growing 1,900/min.',
            },
            at: 0,
          },
        ],
        { page: true },
      ),
      throttlingNoise(2),
    ],
    truth: {
      subject: ['sendgrid', 'api.sendgrid.com'],
      mechanism: [VENDOR],
      oneHopShort: ['notifications-worker', 'notifications-queue'],
      action: [/sendgrid/i],
    },
  },
  {
    id: 'third-party-pagerduty-events-502',
    class: 'third_party',
    title: 'PagerDuty Events API 502s: our alert bridge cannot page anyone',
    story:
      "PagerDuty's Events API v2 answered 502 Bad Gateway for 15 minutes. oncall-bridge, which forwards our escalations, failed every enqueue; the only alert " +
      'was its own error rate. An oncall-bridge config deploy the night before was irrelevant.',
    world: shop({ nodes: [node('oncall-bridge', 'worker', 7, 'sre')] }),
    deliveries: [
      routineDeploy('oncall-bridge', -700),
      sentry({
        project: 'oncall-bridge',
        type: 'requests.exceptions.HTTPError',
        value: '502 Server Error: Bad Gateway for url: https://events.pagerduty.com/v2/enqueue',
        at: -1,
        frames: [{ filename: 'bridge/pagerduty.py', lineno: 39, function: 'enqueue' }],
      }),
      prom(
        [
          {
            labels: {
              alertname: 'OncallBridgeDeliveryFailures',
              service: 'oncall-bridge',
              severity: 'critical',
              namespace: 'sre',
            },
            annotations: {
              summary: 'oncall-bridge cannot deliver escalations',
              description: '100% of escalation deliveries failed in the last 5 minutes (58 attempts).',
            },
            at: 0,
          },
        ],
        { page: true },
      ),
      otherDeploy('checkout-api', 3),
    ],
    truth: {
      subject: ['pagerduty', 'events.pagerduty.com'],
      mechanism: [VENDOR, /502|bad gateway/i],
      oneHopShort: ['oncall-bridge'],
      action: [/pagerduty/i],
    },
  },
  {
    id: 'third-party-stripe-ruby-topology-node',
    class: 'third_party',
    title: 'Stripe::APIConnectionError in the subscriptions worker while stripe sits quietly in the graph',
    story:
      'Stripe API connectivity from eu-west-1 degraded. subscriptions-worker (stripe-ruby) raised Stripe::APIConnectionError on renewals and payments-api ' +
      'latency rose on card calls. stripe is a node both depend on; it never alerts. payments-api shipped three hours earlier.',
    world: shop({
      nodes: [node('stripe', 'api', 10, 'payments'), node('subscriptions-worker', 'worker', 6, 'payments')],
      edges: [
        ['payments-api', 'stripe'],
        ['subscriptions-worker', 'stripe'],
        ['subscriptions-worker', 'payments-db'],
      ],
    }),
    deliveries: [
      routineDeploy('payments-api', -175),
      otherDeploy('web-frontend', -26),
      sentry(
        {
          project: 'subscriptions-worker',
          type: 'Stripe::APIConnectionError',
          value:
            'Unexpected error communicating with Stripe. If this problem persists, let us know at support@stripe.com.\n\n(Network error: Net::OpenTimeout: Failed to open TCP connection to api.stripe.com:443 (execution expired))',
          at: 0,
          culprit: 'RenewSubscriptionJob#perform',
          frames: [{ filename: 'app/jobs/renew_subscription_job.rb', lineno: 31, function: 'perform' }],
        },
        { page: true },
      ),
      datadogDefault({
        title: 'High p95 latency on payments-api',
        scope: 'service:payments-api,env:production',
        body: 'payments-api p95 latency is 7.9s (threshold 2s); time is spent in outbound calls to api.stripe.com.',
        at: 2,
      }),
      flappingDisk(4),
    ],
    truth: {
      subject: ['stripe', 'api.stripe.com'],
      mechanism: [VENDOR],
      oneHopShort: ['subscriptions-worker', 'payments-api'],
      action: [/stripe/i],
    },
  },
  {
    id: 'third-party-easypost-shipping-labels',
    class: 'third_party',
    title: 'EasyPost answers 503 and shipping labels cannot be bought',
    story:
      "EasyPost's API returned 503 on shipment purchases for half an hour; shipping-api could not buy labels and order-worker parked fulfilments. " +
      'The shipping-api deploy of the morning was a distractor; the fix was to switch carriers to the direct DHL integration.',
    world: shop({
      nodes: [node('shipping-api', 'api', 7, 'fulfilment')],
      edges: [['order-worker', 'shipping-api']],
    }),
    deliveries: [
      routineDeploy('shipping-api', -230),
      sentry(
        {
          project: 'shipping-api',
          type: 'EasyPost::Errors::ServiceUnavailableError',
          value: 'POST https://api.easypost.com/v2/shipments/shp_9a1c4e/buy: 503 Service Unavailable',
          at: 0,
          culprit: 'LabelPurchaser#buy',
          frames: [{ filename: 'app/services/label_purchaser.rb', lineno: 27, function: 'buy' }],
        },
        { page: true },
      ),
      prom([
        {
          labels: {
            alertname: 'FulfilmentsParked',
            service: 'order-worker',
            severity: 'warning',
            namespace: 'fulfilment',
          },
          annotations: { description: '1,240 fulfilments parked waiting for a shipping label.' },
          at: 3,
        },
      ]),
      otherDeploy('catalog-api', 4),
    ],
    truth: {
      subject: ['easypost', 'api.easypost.com'],
      mechanism: [VENDOR],
      oneHopShort: ['shipping-api', 'order-worker'],
      action: [/easypost|carrier|DHL/i],
    },
  },
];
