/** Class 1: changes that are not a deployment_status of a repository named like the service (part C). */
import { flappingDisk, harmlessBump, otherDeploy, routineDeploy, throttlingNoise } from '../noise.js';
import { prom, sentry } from '../payloads/alerts.js';
import { genericChange } from '../payloads/changes.js';
import { deploymentCreated, pullRequestMerged, push, release, workflowRun } from '../payloads/github.js';
import { crashLooping } from '../payloads/kube.js';
import { shop, shopNode } from '../worlds.js';
import type { CorpusIncident } from '../types.js';

const ROLLBACK = /roll(ing)?[ -]?back|revert|redeploy the previous|undo/i;

export const changesC: CorpusIncident[] = [
  {
    id: 'change-release-catalog-orm-upgrade',
    class: 'change',
    title: 'Release v4.2.0 of the catalog repository breaks catalog-api',
    story:
      'catalog-api deploys when a release is published in example-shop/catalog. v4.2.0 moved to SQLAlchemy 2.0 and one legacy query still passed a raw string; ' +
      'product pages with variants answered 500 until v4.1.3 was redeployed.',
    world: shop({ nodes: [shopNode('catalog-api', { repositories: [{ repository: 'example-shop/catalog' }] })] }),
    deliveries: [
      routineDeploy('search-api', -280),
      otherDeploy('cart-api', -41),
      release(
        {
          repo: 'catalog',
          tag: 'v4.2.0',
          name: 'v4.2.0 — SQLAlchemy 2.0',
          body: "## What's changed\n* Upgrade to SQLAlchemy 2.0 by @hwang in #912\n* Variant price cache by @lpark in #915\n\n**Full Changelog**: https://github.com/example-shop/catalog/compare/v4.1.3...v4.2.0",
          sha: 'c8a2f4e6b0d1c3e5f7a9b1d3e5f7a9c0b2d4f6a8',
          at: -18,
        },
        { note: 'the cause' },
      ),
      sentry({
        project: 'catalog-api',
        type: 'sqlalchemy.exc.ArgumentError',
        value:
          "Textual SQL expression 'SELECT * FROM variants WHERE product_id = :pid' should be explicitly declared as text('SELECT * FROM variants WHERE product_id = :pid')",
        at: -4,
        release: 'catalog-api@4.2.0',
        frames: [{ filename: 'catalog/variants/queries.py', lineno: 27, function: 'variants_for' }],
      }),
      prom(
        [
          {
            labels: { alertname: 'HighErrorRate', service: 'catalog-api', severity: 'critical', namespace: 'catalog' },
            annotations: {
              summary: 'catalog-api 5xx above 5%',
              description: '5xx responses are 17% of catalog-api requests (GET /v1/products/{id}).',
            },
            at: 0,
          },
        ],
        { page: true },
      ),
      flappingDisk(2),
    ],
    truth: {
      subject: ['catalog-api', 'v4.2.0', 'c8a2f4e', 'SQLAlchemy'],
      mechanism: [/release|deploy|upgrade|v4\.2\.0|SQLAlchemy|c8a2f4e/i],
      oneHopShort: ['catalog-db', 'recommendations-api'],
      action: [ROLLBACK, /catalog|v4\.2\.0|v4\.1\.3/i],
    },
  },
  {
    id: 'change-github-deployment-monorepo-cart',
    class: 'change',
    title: 'A Spinnaker-created GitHub deployment from the platform monorepo breaks cart sessions',
    story:
      'cart-api lives in services/cart of example-shop/platform; Spinnaker records its rollouts as GitHub deployments (no statuses). ' +
      'The rollout of 6e0b9d4 stored carts as Redis hashes where the old code wrote strings, and every existing cart failed with WRONGTYPE.',
    world: shop({
      nodes: [
        shopNode('cart-api', { repositories: [{ repository: 'example-shop/platform', paths: ['services/cart/**'] }] }),
      ],
    }),
    deliveries: [
      routineDeploy('checkout-api', -300),
      push({
        repo: 'platform',
        at: -31,
        commits: [
          {
            id: '6e0b9d4c2a8f1e3b5d7c9a0e2f4b6d8a1c3e5f70',
            message: 'cart: store carts as hashes for partial updates',
            modified: ['services/cart/src/store.ts', 'services/cart/src/store.test.ts'],
          },
        ],
      }),
      push({
        repo: 'platform',
        at: -27,
        commits: [
          {
            id: 'a1d3f5b7c9e0a2c4e6f8b0d2f4a6c8e0b1d3f5a7',
            message: 'docs: search runbook links',
            modified: ['services/search/README.md'],
          },
        ],
      }),
      deploymentCreated(
        {
          repo: 'platform',
          id: 771024,
          sha: '6e0b9d4c2a8f1e3b5d7c9a0e2f4b6d8a1c3e5f70',
          at: -11,
          environment: 'production',
          description: 'Spinnaker pipeline cart-prod #1288: cart-api 6e0b9d4',
          payload: { service: 'cart-api', pipeline: 'cart-prod', execution: '01JDZ3R7M2' },
          creator: 'spinnaker-bot',
        },
        { note: 'the cause' },
      ),
      sentry(
        {
          project: 'cart-api',
          type: 'ReplyError',
          value: 'WRONGTYPE Operation against a key holding the wrong kind of value',
          at: 0,
          culprit: 'services/cart/src/store.ts in loadCart',
          frames: [{ filename: 'services/cart/src/store.ts', lineno: 61, function: 'loadCart' }],
        },
        { page: true },
      ),
      prom([
        {
          labels: { alertname: 'HighErrorRate', service: 'cart-api', severity: 'critical', namespace: 'storefront' },
          annotations: { description: '5xx responses are 44% of cart-api requests.' },
          at: 1,
        },
      ]),
      throttlingNoise(2),
    ],
    truth: {
      subject: ['cart-api', '6e0b9d4', '771024'],
      mechanism: [/deploy|release|rollout|change|commit|6e0b9d4|771024/i],
      oneHopShort: ['session-cache', 'checkout-api'],
      action: [ROLLBACK, /cart|6e0b9d4|771024/i],
    },
  },
  {
    id: 'change-renovate-ioredis-major',
    class: 'change',
    title: 'A Renovate major bump of ioredis ships with the next deploy and cart-api crash-loops',
    story:
      'Renovate\'s "Update dependency ioredis to v5" was merged with green CI (the tests mock Redis). The deploy workflow shipped it; ioredis 5 no longer ' +
      'has a default export, so cart-api threw at start and crash-looped. A harmless Dependabot bump in accounts-api went out the same hour.',
    world: shop({ nodes: [shopNode('cart-api', { repositories: [{ repository: 'example-shop/cart' }] })] }),
    deliveries: [
      ...harmlessBump('accounts-api', -58),
      pullRequestMerged(
        {
          repo: 'cart',
          number: 3121,
          title: 'Update dependency ioredis to v5',
          body: 'This PR contains the following updates:\n\n| Package | Change | Age | Adoption |\n|---|---|---|---|\n| [ioredis](https://github.com/luin/ioredis) | [`^4.28.5` -> `^5.4.1`](https://renovatebot.com/diffs/npm/ioredis/4.28.5/5.4.1) | ... | ... |\n\n---\n\n### Release Notes\n\n<details>\n<summary>luin/ioredis (ioredis)</summary>\n\n### [`v5.0.0`](https://github.com/luin/ioredis/releases/tag/v5.0.0)\n\n**BREAKING CHANGES**: the package now exports `Redis` as a named export …',
          head: 'renovate/ioredis-5.x',
          sha: 'f2b4d6e8a0c1e3f5a7b9d1c3e5a7b9d0f2e4c6a8',
          at: -24,
          author: 'renovate[bot]',
          labels: ['dependencies', 'major'],
          changedFiles: 2,
          additions: 31,
          deletions: 27,
        },
        { note: 'the cause (merge)' },
      ),
      workflowRun(
        {
          repo: 'cart',
          workflow: 'Deploy production',
          sha: 'f2b4d6e8a0c1e3f5a7b9d1c3e5a7b9d0f2e4c6a8',
          message: 'Update dependency ioredis to v5 (#3121)',
          at: -13,
          actor: 'renovate[bot]',
        },
        { note: 'the cause (shipped)' },
      ),
      prom([crashLooping('storefront', 'cart-api', 0)], { groupBy: ['namespace'], page: true }),
      sentry({
        project: 'cart-api',
        type: 'TypeError',
        value: 'Redis is not a constructor',
        at: 1,
        culprit: 'src/redis.ts in <module>',
        frames: [{ filename: 'src/redis.ts', lineno: 4, function: '<module>' }],
      }),
    ],
    truth: {
      subject: ['ioredis', '#3121', 'f2b4d6e', 'cart-api'],
      mechanism: [/ioredis|dependency|upgrade|bump|renovate|v5/i],
      oneHopShort: ['session-cache', 'checkout-api'],
      action: [ROLLBACK, /cart|ioredis|3121|f2b4d6e/i],
    },
  },
  {
    id: 'change-terraform-max-connections-orders-db',
    class: 'change',
    title: 'A Terraform apply lowers max_connections on orders-db',
    story:
      "A cost PR moved orders-db to a smaller instance class and hard-coded max_connections = 100 in the rds-orders module's parameter group. " +
      'The "Terraform apply" workflow applied it at 13:05; at the lunch peak checkout and order-worker were refused connections. The revert restored 400.',
    world: shop({
      nodes: [
        shopNode('orders-db', {
          repositories: [
            {
              repository: 'example-shop/infrastructure',
              paths: ['terraform/modules/rds-orders/**', 'terraform/prod/orders-db.tf'],
            },
          ],
        }),
      ],
    }),
    deliveries: [
      routineDeploy('order-worker', -220),
      push({
        repo: 'infrastructure',
        at: -52,
        commits: [
          {
            id: '5a7c9e1b3d5f7a9c1e3b5d7f9a1c3e5b7d9f1a3c',
            message: 'rds-orders: db.r6g.xlarge and explicit max_connections (COST-311)',
            modified: ['terraform/modules/rds-orders/parameters.tf', 'terraform/prod/orders-db.tf'],
          },
        ],
      }),
      workflowRun(
        {
          repo: 'infrastructure',
          workflow: 'Terraform apply',
          path: '.github/workflows/terraform-apply.yml',
          sha: '5a7c9e1b3d5f7a9c1e3b5d7f9a1c3e5b7d9f1a3c',
          message: 'rds-orders: db.r6g.xlarge and explicit max_connections (COST-311)',
          at: -40,
          minutesTaken: 11,
        },
        { note: 'the cause (applied)' },
      ),
      otherDeploy('search-api', -16),
      prom([
        {
          labels: {
            alertname: 'PostgresTooManyConnections',
            service: 'orders-db',
            instance: 'orders-db-0:9187',
            severity: 'warning',
          },
          annotations: {
            summary: 'orders-db connections near max_connections',
            description: 'orders-db uses 98% of max_connections (98/100).',
          },
          at: -3,
        },
      ]),
      sentry(
        {
          project: 'checkout-api',
          type: 'psycopg2.OperationalError',
          value:
            'connection to server at "orders-db.internal" (10.0.3.17), port 5432 failed: FATAL:  remaining connection slots are reserved for non-replication superuser connections',
          at: 0,
          frames: [{ filename: 'checkout/db.py', lineno: 31, function: 'connect' }],
        },
        { page: true },
      ),
    ],
    truth: {
      subject: ['orders-db', '5a7c9e1', 'rds-orders', 'COST-311', 'max_connections'],
      mechanism: [
        /max_connections|parameter group|terraform|infrastructure|config(uration)? change|instance class|5a7c9e1/i,
      ],
      oneHopShort: ['checkout-api', 'order-worker'],
      action: [
        /revert|roll(ing)?[ -]?back|restore|raise|increase/i,
        /max_connections|orders-db|rds-orders|terraform|5a7c9e1/i,
      ],
    },
  },
  {
    id: 'change-generic-consul-timeout-checkout',
    class: 'change',
    title: "A Consul config push cuts checkout's payment timeout to 3 s",
    story:
      'The config pipeline (consul-template) posts our generic change webhook. Someone set config/checkout-api/payment_timeout to 3s meaning 30s; ' +
      'card payments that take 3-8 s at the issuer started failing in checkout-api while payments-api itself was healthy.',
    world: shop(),
    deliveries: [
      routineDeploy('payments-api', -160),
      otherDeploy('catalog-api', -29),
      genericChange(
        {
          kind: 'config',
          service: 'checkout-api',
          title: 'Set checkout-api payment_timeout to 3s in Consul',
          description: 'consul kv put config/checkout-api/payment_timeout 3s',
          author: 'dkim',
          paths: ['config/checkout-api/payment_timeout'],
          url: 'https://consul.example-shop.com/ui/eu1/kv/config/checkout-api/payment_timeout/edit',
          at: -8,
        },
        { note: 'the cause' },
      ),
      sentry(
        {
          project: 'checkout-api',
          type: 'PaymentGatewayTimeout',
          value: 'Timed out calling payments-api after 3s',
          at: 0,
          culprit: '/api/v1/orders',
          frames: [{ filename: 'checkout/payments/client.py', lineno: 142, function: 'charge' }],
        },
        { page: true },
      ),
      prom([
        {
          labels: { alertname: 'HighErrorRate', service: 'checkout-api', severity: 'critical', namespace: 'shop' },
          annotations: { description: '11% of checkout-api requests fail with 504 on POST /api/v1/orders.' },
          at: 1,
        },
      ]),
      throttlingNoise(2),
    ],
    truth: {
      subject: ['payment_timeout', 'consul', 'checkout-api'],
      mechanism: [/config|consul|payment_timeout/i],
      oneHopShort: ['payments-api'],
      action: [
        /revert|restore|set .*back|roll(ing)?[ -]?back|raise|increase|30 ?s/i,
        /payment_timeout|consul|timeout/i,
      ],
    },
  },
];
