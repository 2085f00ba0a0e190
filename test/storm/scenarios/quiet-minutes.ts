import {
  alertmanager,
  datadog,
  datadogTest,
  generic,
  grafana,
  grafanaTest,
  ruleAlert,
  sentry,
  watchdog,
} from '../payloads.js';
import { NOISE, TEST, type ScenarioDefinition } from '../types.js';
import { shopEdges, shopServices } from './shop.js';

const byService = { groupBy: ['alertname', 'service'] };

/**
 * No outage: the small, unrelated things of an ordinary afternoon, some of them on neighbouring
 * services (checkout's synthetic blip beside the gateway's certificate warning), and every kind of
 * test and heartbeat. Each alert is its own problem; none of the tests is one.
 */
export const quietMinutes: ScenarioDefinition = {
  name: 'quiet-minutes',
  durationSeconds: 150,
  build: (t) => ({
    name: 'quiet-minutes',
    title: 'an ordinary afternoon',
    description: 'Unrelated small problems and test notifications, no outage.',
    services: shopServices,
    edges: shopEdges,
    outages: {},
    deliveries: [
      watchdog(t, 0),
      alertmanager(
        t,
        10,
        [
          ruleAlert(
            'CertificateExpiringSoon',
            'api-gateway',
            'warning',
            'TLS certificate of api.example-shop.com expires in 13 days',
            -600,
            NOISE,
            {
              labels: { instance: 'https://api.example-shop.com', job: 'blackbox' },
            },
          ),
        ],
        byService,
      ),
      grafanaTest(t, 20),
      generic(t, 30, [
        {
          name: 'CheckoutJourneySlow',
          service: 'checkout-api',
          severity: 'warning',
          summary: 'The checkout journey took 6.1 s from Sydney',
          labels: { check: 'checkout-journey', location: 'sydney' },
          startsAt: 28,
          truth: NOISE,
        },
        {
          name: 'PipelineCheck',
          service: 'checkout-api',
          severity: 'critical',
          summary: 'Checking that alerts reach the incident service',
          labels: { test: 'true' },
          startsAt: 28,
          truth: TEST,
        },
      ]),
      datadogTest(t, 45, {
        monitorId: 99000001,
        name: 'payments-api error rate above 1%',
        service: 'payments-api',
        priority: 'P1',
        metric: 'trace.http.request.errors',
        status: 'trace.http.request.errors over service:payments-api was > 0.01 on average during the last 5m.',
        message: 'Payments are failing.',
      }),
      sentry(t, 60, {
        project: 'profile-api',
        title: "AttributeError: 'NoneType' object has no attribute 'avatar_url'",
        culprit: 'profiles.views in get_profile',
        release: 'profile-api@2.2.0',
        truth: NOISE,
      }),
      sentry(t, 70, {
        project: 'cart-api',
        title: 'Test Issue',
        culprit: 'Test notification',
        release: 'cart-api@8e1d2c3',
        tags: [['sample_event', 'yes']],
        rule: 'cart-api: new issues in production',
        truth: TEST,
      }),
      alertmanager(
        t,
        80,
        [
          ruleAlert(
            'KubeJobFailed',
            'reporting-worker',
            'warning',
            'Job data/reporting-backfill-28571 failed to complete',
            60,
            NOISE,
            {
              labels: { namespace: 'data', job_name: 'reporting-backfill-28571' },
            },
          ),
        ],
        byService,
      ),
      datadog(t, 95, {
        monitorId: 99000417,
        name: 'email-worker bounce rate above 3%',
        service: 'email-worker',
        tags: ['team:platform'],
        priority: 'P4',
        transition: 'Warn',
        metric: 'email.bounce_rate',
        status: 'email.bounce_rate over service:email-worker was > 0.03 during the last 1h.',
        message: 'A partner mailbox provider is rejecting mail.',
        truth: NOISE,
      }),
      grafana(
        t,
        110,
        [ruleAlert('Search zero-result rate', 'search-api', 'medium', '14% of searches return nothing', 80, NOISE)],
        { folder: 'Search', value: 0.14 },
      ),
      alertmanager(
        t,
        125,
        [
          ruleAlert('HighLatencyP99', 'catalog-api', 'warning', 'catalog-api p99 latency above 800 ms', 100, NOISE, {
            labels: { namespace: 'catalog', route: '/v1/products/{id}/images' },
          }),
        ],
        byService,
      ),
      watchdog(t, 150),
    ],
  }),
};
