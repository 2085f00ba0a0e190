import { alertmanager, datadog, datadogTest, generic, grafana, ruleAlert, sentry } from '../payloads.js';
import { NOISE, type ScenarioDefinition } from '../types.js';
import { shopEdges, shopServices } from './shop.js';

const DEPLOY = 'cart-deploy';
const RELEASE = 'cart-api@9f3e1c2';

/**
 * cart-api commit 9f3e1c2 ships a discount refactor that breaks carts with a coupon: new Sentry
 * issues from the release, the error-rate monitor (tagged with the version), checkout conversion
 * and the storefront's add-to-cart check. Meanwhile recommendations are slow, a reporting job
 * crash-loops, the admin portal logs a validation error, and someone tests a new cart latency monitor.
 */
export const badDeploy: ScenarioDefinition = {
  name: 'bad-deploy',
  durationSeconds: 150,
  build: (t) => ({
    name: 'bad-deploy',
    title: 'cart-api deploy 9f3e1c2 breaks coupons',
    description:
      'A cart-api deploy raises exceptions for every cart with a coupon; checkout conversion and the add-to-cart journey fail behind it.',
    services: shopServices,
    edges: shopEdges,
    outages: { [DEPLOY]: { root: 'cart-api', summary: 'cart-api release 9f3e1c2' } },
    deliveries: [
      sentry(t, 10, {
        project: 'cart-api',
        title: "TypeError: 'NoneType' object is not subscriptable",
        culprit: 'cart.pricing in apply_discounts',
        release: RELEASE,
        rule: 'cart-api: new issues in production',
        truth: DEPLOY,
      }),
      sentry(t, 15, {
        project: 'cart-api',
        title: "KeyError: 'coupon_code'",
        culprit: 'cart.serializers in to_dict',
        release: RELEASE,
        rule: 'cart-api: new issues in production',
        truth: DEPLOY,
      }),
      datadog(t, 30, {
        monitorId: 51200017,
        name: 'cart-api error rate above 2%',
        service: 'cart-api',
        tags: ['team:checkout', 'version:9f3e1c2'],
        priority: 'P2',
        metric: 'trace.http.request.errors',
        status:
          'trace.http.request.errors over env:production,service:cart-api was > 0.02 on average during the last 5m.',
        message: 'cart-api answers 5xx to more than 2% of requests.',
        truth: DEPLOY,
      }),
      grafana(
        t,
        60,
        [
          ruleAlert(
            'Checkout conversion drop',
            'checkout-api',
            'high',
            'Checkout conversion fell 35% below its weekly baseline',
            30,
            DEPLOY,
          ),
        ],
        { folder: 'Business KPIs', value: 0.65 },
      ),
      datadog(t, 75, {
        monitorId: 51207788,
        name: 'recommendations-api p95 latency above 800 ms',
        service: 'recommendations-api',
        tags: ['team:search'],
        priority: 'P3',
        transition: 'Warn',
        metric: 'trace.http.request.duration.by.service.95p',
        status: 'p95 latency of recommendations-api was > 0.8 on average during the last 10m.',
        message: 'Recommendations are slow; the model server is warming a new model.',
        truth: NOISE,
      }),
      alertmanager(
        t,
        90,
        [
          ruleAlert(
            'KubePodCrashLooping',
            'reporting-worker',
            'warning',
            'Pod data/reporting-worker-7c9d5 is crash looping',
            40,
            NOISE,
            {
              labels: { namespace: 'data', pod: 'reporting-worker-7c9d5', container: 'reporting-worker' },
            },
          ),
        ],
        { groupBy: ['namespace'] },
      ),
      sentry(t, 100, {
        project: 'cart-api',
        title: "TypeError: 'NoneType' object is not subscriptable",
        culprit: 'cart.pricing in apply_discounts',
        release: RELEASE,
        rule: 'cart-api: issue seen more than 100 times in 1h',
        truth: DEPLOY,
      }),
      generic(t, 110, [
        {
          name: 'AddToCartJourneyFailing',
          service: 'web-frontend',
          severity: 'high',
          summary: 'Adding a discounted item to the cart failed from 2 of 3 locations',
          labels: { check: 'add-to-cart-journey' },
          startsAt: 105,
          truth: DEPLOY,
        },
      ]),
      datadogTest(t, 120, {
        monitorId: 51200018,
        name: 'cart-api p99 latency above 1.5 s',
        service: 'cart-api',
        tags: ['team:checkout'],
        priority: 'P3',
        metric: 'trace.http.request.duration.by.service.99p',
        status: 'p99 latency of cart-api was > 1.5 on average during the last 5m.',
        message: 'cart-api is slow to answer.',
      }),
      sentry(t, 150, {
        project: 'admin-portal',
        title: 'ValidationError: SKU must be 12 characters',
        culprit: 'backoffice.catalog in import_skus',
        release: 'admin-portal@3.1.0',
        truth: NOISE,
      }),
    ],
  }),
};
