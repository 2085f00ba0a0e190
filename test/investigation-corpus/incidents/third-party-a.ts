/** Class 3: vendor outages seen only in error text or as a quiet topology node (part A). */
import { flappingDisk, otherDeploy, routineDeploy, throttlingNoise } from '../noise.js';
import { datadog, prom, sentry } from '../payloads/alerts.js';
import { node, shop } from '../worlds.js';
import type { CorpusIncident } from '../types.js';

const VENDOR =
  /outage|unavailable|unreachable|degraded|third[- ]party|vendor|provider|external|connection (error|failure)|5\d\d|down/i;

export const thirdPartyA: CorpusIncident[] = [
  {
    id: 'third-party-stripe-connection-python',
    class: 'third_party',
    title: 'Stripe API connection errors, with a payments-api deploy three hours old',
    story:
      'Stripe had a partial API outage in eu-west; payments-api (stripe-python) raised APIConnectionError on a third of charges for 25 minutes. ' +
      'The payments-api deploy that morning was the first suspect and was not the cause; the team switched card payments to the queued-retry mode.',
    world: shop({
      runbooks: [
        {
          title: 'Payment provider degraded',
          service: 'payments-api',
          tags: ['stripe', 'payments', 'vendor'],
          content:
            '1. Check https://status.stripe.com and the Stripe dashboard for API errors.\n2. Switch card payments to queued retries: `paymentsctl mode queued-retry`.\n3. Post in #status and open a ticket with Stripe support.',
        },
      ],
    }),
    deliveries: [
      routineDeploy('payments-api', -185),
      otherDeploy('catalog-api', -22),
      flappingDisk(-15),
      sentry({
        project: 'payments-api',
        type: 'stripe.error.APIConnectionError',
        value:
          "Unexpected error communicating with Stripe. If this problem persists, let us know at support@stripe.com.\n\n(Network error: ConnectionError: HTTPSConnectionPool(host='api.stripe.com', port=443): Max retries exceeded with url: /v1/payment_intents (Caused by NewConnectionError('<urllib3.connection.HTTPSConnection object at 0x7f3c2a1b9e50>: Failed to establish a new connection: [Errno 110] Connection timed out')))",
        at: -2,
        culprit: 'payments.providers.stripe in create_intent',
        frames: [{ filename: 'payments/providers/stripe.py', lineno: 77, function: 'create_intent' }],
      }),
      datadog(
        {
          title: 'Charge failures on payments-api',
          body: 'payments-api failed 34% of charges over the last 5 minutes (threshold 5%).',
          service: 'payments-api',
          at: 0,
          priority: 'P1',
          metric: 'payments.charge.failed',
        },
        { page: true },
      ),
      prom([
        {
          labels: {
            alertname: 'CheckoutPaymentsFailing',
            service: 'checkout-api',
            severity: 'high',
            namespace: 'shop',
          },
          annotations: {
            summary: 'Checkout payment step failing',
            description: '29% of checkout payment steps fail with 502 from payments-api.',
          },
          at: 2,
        },
      ]),
    ],
    truth: {
      subject: ['stripe', 'api.stripe.com'],
      mechanism: [VENDOR],
      oneHopShort: ['payments-api'],
      action: [/stripe|queued-retry|payment provider/i],
    },
  },
  {
    id: 'third-party-twilio-503-ruby',
    class: 'third_party',
    title: 'Twilio answers 503 and SMS notifications back up',
    story:
      "Twilio's Messaging API returned 503 for 40 minutes. notifications-worker (twilio-ruby) failed every SMS and retried, notifications-queue grew " +
      'to 180k messages; a notifications-worker deploy an hour earlier was suspected first. Email kept working.',
    world: shop({
      nodes: [node('twilio', 'api', 6, 'messaging')],
      edges: [['notifications-worker', 'twilio']],
    }),
    deliveries: [
      routineDeploy('notifications-worker', -65),
      otherDeploy('accounts-api', -30),
      sentry({
        project: 'notifications-worker',
        type: 'Twilio::REST::RestError',
        value:
          '[HTTP 503] 20503 : Unable to create record\nService Unavailable\nhttps://www.twilio.com/docs/errors/20503',
        at: -3,
        culprit: 'SmsDeliveryJob#perform',
        frames: [{ filename: 'app/jobs/sms_delivery_job.rb', lineno: 22, function: 'perform' }],
      }),
      prom(
        [
          {
            labels: {
              alertname: 'RabbitmqQueueBacklog',
              service: 'notifications-queue',
              queue: 'sms.outbound',
              vhost: 'messaging',
              severity: 'warning',
            },
            annotations: {
              summary: 'sms.outbound backlog growing',
              description:
                'sms.outbound has 182,344 ready messages, growing 4,100/min; consumers 8 (all busy retrying).',
            },
            at: 0,
          },
        ],
        { page: true },
      ),
      throttlingNoise(3),
    ],
    truth: {
      subject: ['twilio', 'api.twilio.com'],
      mechanism: [VENDOR],
      oneHopShort: ['notifications-worker', 'notifications-queue'],
      action: [/twilio/i],
    },
  },
  {
    id: 'third-party-s3-service-unavailable',
    class: 'third_party',
    title: 'S3 PutObject ServiceUnavailable breaks invoice uploads',
    story:
      'S3 in eu-west-1 returned 503 ServiceUnavailable on PutObject for about 30 minutes. order-worker could not store invoice PDFs and nacked ' +
      'its messages, so orders-queue backed up; nothing of ours had changed except a catalog deploy.',
    world: shop(),
    deliveries: [
      routineDeploy('order-worker', -260),
      otherDeploy('catalog-api', -14),
      sentry({
        project: 'order-worker',
        type: 'botocore.exceptions.ClientError',
        value:
          'An error occurred (ServiceUnavailable) when calling the PutObject operation (reached max retries: 4): Service Unavailable',
        at: -4,
        culprit: 'fulfilment.invoices.store in upload_pdf',
        frames: [{ filename: 'fulfilment/invoices/store.py', lineno: 48, function: 'upload_pdf' }],
      }),
      prom(
        [
          {
            labels: {
              alertname: 'RabbitmqQueueBacklog',
              service: 'orders-queue',
              queue: 'orders.invoice',
              vhost: 'shop',
              severity: 'critical',
            },
            annotations: {
              summary: 'orders.invoice backlog growing',
              description: 'orders.invoice has 12,904 ready messages; 96% of deliveries are redelivered (nacked).',
            },
            at: 0,
          },
        ],
        { page: true },
      ),
      flappingDisk(1),
    ],
    truth: {
      subject: ['s3', 'aws'],
      mechanism: [VENDOR, /ServiceUnavailable/i],
      oneHopShort: ['order-worker', 'orders-queue'],
      action: [/s3|aws|bucket|region/i],
    },
  },
];
