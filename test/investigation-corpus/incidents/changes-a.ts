/** Class 1: changes that are not a deployment_status of a repository named like the service (part A). */
import { flappingDisk, harmlessBump, otherDeploy, routineDeploy, throttlingNoise } from '../noise.js';
import { datadog, prom, sentry } from '../payloads/alerts.js';
import { launchDarkly } from '../payloads/changes.js';
import { pullRequestMerged, push, workflowRun } from '../payloads/github.js';
import { oomKilled, replicasMismatch } from '../payloads/kube.js';
import { shop, shopNode } from '../worlds.js';
import type { CorpusIncident } from '../types.js';

const ROLLBACK = /roll(ing)?[ -]?back|revert|redeploy the previous|undo/i;
const FLAG_OFF = /disable|turn(ing)? (it )?off|switch(ing)? off|roll(ing)?[ -]?back|revert|kill switch/i;

export const changesA: CorpusIncident[] = [
  {
    id: 'change-actions-deploy-checkout',
    class: 'change',
    title: 'checkout-api 500s after a GitHub Actions deploy from the checkout repository',
    story:
      'checkout-api ships from example-shop/checkout through the "Deploy production" Actions workflow, which creates no GitHub deployment. ' +
      'Run for 7c41e9d changed the address serializer; every order with a second address line raised KeyError until the deploy was rolled back.',
    world: shop({
      nodes: [shopNode('checkout-api', { repositories: [{ repository: 'example-shop/checkout' }] })],
      runbooks: [
        {
          title: 'checkout-api elevated 5xx',
          service: 'checkout-api',
          tags: ['checkout', '5xx'],
          content:
            '1. Open the checkout-api RED dashboard and Sentry.\n2. If a deploy went out in the last hour, roll it back: re-run the "Deploy production" workflow on the previous commit.\n3. Page payments on-call if 5xx stays above 2%.',
        },
      ],
    }),
    deliveries: [
      routineDeploy('search-api', -300),
      flappingDisk(-95),
      push({
        repo: 'checkout',
        at: -26,
        commits: [
          {
            id: '7c41e9d2a8b34f10c6e5d7a9b1f2c3d4e5f60718',
            message: 'Serialize address lines as a list (CHK-1182)',
            modified: ['checkout/orders/address.py', 'checkout/orders/tests/test_address.py'],
          },
        ],
      }),
      workflowRun(
        {
          repo: 'checkout',
          workflow: 'Deploy production',
          sha: '7c41e9d2a8b34f10c6e5d7a9b1f2c3d4e5f60718',
          message: 'Serialize address lines as a list (CHK-1182)',
          at: -14,
          minutesTaken: 9,
        },
        { note: 'the cause' },
      ),
      otherDeploy('recommendations-api', -9),
      sentry({
        project: 'checkout-api',
        type: 'KeyError',
        value: "'address_line_2'",
        at: -3,
        culprit: 'checkout.orders.address in to_payload',
        release: 'checkout-api@7c41e9d',
        frames: [
          { filename: 'checkout/views/orders.py', lineno: 64, function: 'create_order' },
          { filename: 'checkout/orders/address.py', lineno: 41, function: 'to_payload' },
        ],
      }),
      prom(
        [
          {
            labels: {
              alertname: 'HighErrorRate',
              service: 'checkout-api',
              severity: 'critical',
              namespace: 'shop',
              env: 'production',
            },
            annotations: {
              summary: 'checkout-api 5xx error rate above 5%',
              description: '5xx responses are 9.8% of checkout-api requests over the last 5 minutes.',
            },
            at: 0,
            expr: 'sum(rate(http_requests_total{service="checkout-api",code=~"5.."}[5m])) / sum(rate(http_requests_total{service="checkout-api"}[5m])) > 0.05',
          },
        ],
        { page: true },
      ),
      throttlingNoise(2),
    ],
    truth: {
      subject: ['checkout-api', '7c41e9d', 'CHK-1182'],
      mechanism: [/deploy|release|workflow|commit|rollout|7c41e9d/i],
      oneHopShort: ['orders-db', 'payments-api'],
      action: [ROLLBACK, /checkout|7c41e9d/i],
    },
  },
  {
    id: 'change-launchdarkly-rollout-checkout',
    class: 'change',
    title: 'A LaunchDarkly rollout of new-checkout-flow to everyone breaks checkout',
    story:
      'Product moved the new-checkout-flow flag from 10% to 100% in production. The new flow calls inventory reservations without a warehouse id; ' +
      'checkout-api answered 500 for most carts until the flag was turned off. A routine checkout-api deploy four hours earlier was innocent.',
    world: shop(),
    deliveries: [
      routineDeploy('checkout-api', -250),
      ...harmlessBump('web-frontend', -70),
      launchDarkly(
        {
          flag: 'new-checkout-flow',
          flagName: 'New checkout flow',
          action: 'updateFallthrough',
          description: '- Changed the default variation from a percentage rollout (10% `true`, 90% `false`) to `true`',
          titleVerb: 'changed the default rule of',
          comment: 'Ramp to 100% per launch plan',
          at: -11,
        },
        { note: 'the cause' },
      ),
      otherDeploy('catalog-api', -6),
      sentry({
        project: 'checkout-api',
        type: 'inventory.ReservationError',
        value: 'reserve_items() missing warehouse_id for cart 88213 (flow=v2)',
        at: -4,
        culprit: 'checkout.flows.v2.reserve in reserve_items',
        frames: [{ filename: 'checkout/flows/v2/reserve.py', lineno: 57, function: 'reserve_items' }],
      }),
      datadog(
        {
          title: 'High error rate on checkout-api',
          body: '5xx error rate on checkout-api is 23.4% for the last 5 minutes (threshold 5%).',
          service: 'checkout-api',
          at: 0,
          priority: 'P1',
          metric: 'trace.http.request.errors',
          query:
            'sum(last_5m):sum:trace.http.request.errors{service:checkout-api,env:production}.as_count() / sum:trace.http.request.hits{service:checkout-api,env:production}.as_count() > 0.05',
        },
        { page: true },
      ),
    ],
    truth: {
      subject: ['new-checkout-flow', 'New checkout flow'],
      mechanism: [/flag|feature|launchdarkly|rollout|toggle/i],
      oneHopShort: ['checkout-api', 'inventory-api'],
      action: [FLAG_OFF, /new-checkout-flow|new checkout flow/i],
    },
  },
  {
    id: 'change-gitops-memory-limit-order-worker',
    class: 'change',
    title: 'A GitOps values change halves order-worker memory and it OOMs',
    story:
      'A "right-size resources" PR in example-shop/k8s-manifests set apps/order-worker/values.yaml memory limit from 1Gi to 512Mi. ' +
      'order-worker pods were OOM-killed under the morning batch, orders piled up in orders-queue, and the revert of 3f9a0c1 fixed it.',
    world: shop({
      nodes: [
        shopNode('order-worker', {
          repositories: [{ repository: 'example-shop/k8s-manifests', paths: ['apps/order-worker/**'] }],
        }),
      ],
      runbooks: [
        {
          title: 'order-worker backlog',
          service: 'order-worker',
          tags: ['queue', 'backlog'],
          content:
            '1. Check consumer count and pod restarts in the fulfilment namespace.\n2. If pods are OOMKilled, check the last change to apps/order-worker in k8s-manifests and revert it.\n3. Scale order-worker to 12 replicas to drain orders-queue.',
        },
      ],
    }),
    deliveries: [
      routineDeploy('order-worker', -180),
      pullRequestMerged(
        {
          repo: 'k8s-manifests',
          number: 2291,
          title: 'Right-size fulfilment workloads (FinOps Q4)',
          body: 'Lowers requests/limits for order-worker and label-printer based on 30-day p95 usage.',
          head: 'finops/right-size-fulfilment',
          sha: '3f9a0c1b7e2d4f6a8c0e1b3d5f7a9c2e4b6d8f01',
          at: -34,
          author: 'tobias-k',
          changedFiles: 2,
        },
        { note: 'the cause (merge)' },
      ),
      push({
        repo: 'k8s-manifests',
        at: -34,
        commits: [
          {
            id: '3f9a0c1b7e2d4f6a8c0e1b3d5f7a9c2e4b6d8f01',
            message: 'Right-size fulfilment workloads (FinOps Q4) (#2291)',
            modified: ['apps/order-worker/values.yaml', 'apps/label-printer/values.yaml'],
          },
        ],
      }),
      otherDeploy('search-api', -20),
      prom([oomKilled('fulfilment', 'order-worker', -8)], { groupBy: ['namespace'] }),
      prom([replicasMismatch('fulfilment', 'order-worker', -2)], { groupBy: ['namespace'] }),
      prom(
        [
          {
            labels: {
              alertname: 'RabbitmqQueueBacklog',
              service: 'orders-queue',
              queue: 'orders.created',
              vhost: 'shop',
              severity: 'critical',
            },
            annotations: {
              summary: 'orders.created backlog growing',
              description: 'orders.created has 48,210 ready messages and 2 consumers (normally 12).',
            },
            at: 0,
          },
        ],
        { page: true },
      ),
      flappingDisk(3),
    ],
    truth: {
      subject: ['order-worker', '3f9a0c1', 'k8s-manifests'],
      mechanism: [
        /memory limit|limits? (change|lowered|reduced)|resources|values\.yaml|manifest|config(uration)? change|right-size|3f9a0c1|#?2291/i,
      ],
      oneHopShort: ['orders-queue'],
      action: [/revert|roll(ing)?[ -]?back|restore|raise|increase/i, /order-worker|3f9a0c1|values|memory|limit|2291/i],
    },
  },
];
