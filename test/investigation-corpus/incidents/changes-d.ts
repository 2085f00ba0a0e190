/** Class 1: changes that are not a deployment_status of a repository named like the service (part D). */
import { flappingDisk, otherDeploy, routineDeploy, throttlingNoise } from '../noise.js';
import { prom, sentry } from '../payloads/alerts.js';
import { argocd, flagsmith, launchDarkly, unleash } from '../payloads/changes.js';
import { deploymentStatus, pullRequestMerged, workflowRun } from '../payloads/github.js';
import { podNotReady } from '../payloads/kube.js';
import { node, shop, shopNode } from '../worlds.js';
import type { CorpusIncident } from '../types.js';

const ROLLBACK = /roll(ing)?[ -]?back|revert|redeploy the previous|undo/i;

export const changesD: CorpusIncident[] = [
  {
    id: 'change-launchdarkly-flag-on-tax-service',
    class: 'change',
    title: 'LaunchDarkly turns on use-tax-service-v2 and checkout starts failing on tax',
    story:
      "Finance turned on use-tax-service-v2 in production a week early. checkout-api began calling tax-api's v2 endpoint, which was deployed but not yet " +
      'loaded with EU rates, and every EU checkout failed with 422. Turning the flag off fixed it; tax-api had deployed an hour earlier and was blamed first.',
    world: shop({
      nodes: [node('tax-api', 'api', 8, 'finance')],
      edges: [['checkout-api', 'tax-api']],
    }),
    deliveries: [
      routineDeploy('checkout-api', -240),
      otherDeploy('tax-api', -65),
      launchDarkly(
        {
          flag: 'use-tax-service-v2',
          flagName: 'Use tax service v2',
          action: 'updateOn',
          description: '- Turned on the flag',
          titleVerb: 'turned on the flag',
          at: -7,
          member: { email: 'rachel.ong@example-shop.com', firstName: 'Rachel', lastName: 'Ong' },
        },
        { note: 'the cause' },
      ),
      sentry({
        project: 'checkout-api',
        type: 'TaxServiceError',
        value: 'tax-api v2 POST /v2/quotes answered 422: no rate table for jurisdiction DE-BY',
        at: -3,
        frames: [{ filename: 'checkout/tax/client_v2.py', lineno: 36, function: 'quote' }],
      }),
      prom(
        [
          {
            labels: { alertname: 'HighErrorRate', service: 'checkout-api', severity: 'critical', namespace: 'shop' },
            annotations: {
              summary: 'checkout-api 5xx above 5%',
              description: '5xx responses are 27% of checkout-api requests (EU storefronts).',
            },
            at: 0,
          },
        ],
        { page: true },
      ),
      flappingDisk(2),
    ],
    truth: {
      subject: ['use-tax-service-v2', 'Use tax service v2'],
      mechanism: [/flag|feature|launchdarkly|toggle|turned on/i],
      oneHopShort: ['tax-api', 'checkout-api'],
      action: [
        /disable|turn(ing)? (it )?off|switch(ing)? off|roll(ing)?[ -]?back|revert/i,
        /use-tax-service-v2|tax service v2/i,
      ],
    },
  },
  {
    id: 'change-dependabot-urllib3-openssl',
    class: 'change',
    title: 'A Dependabot urllib3 2.x bump meets an old OpenSSL in the reporting image',
    story:
      'Dependabot\'s "Bump urllib3 from 1.26.18 to 2.0.7" was merged with green tests (CI uses a newer base image). reporting-worker\'s production image ' +
      'still had OpenSSL 1.0.2, so every job died at import. The deploy went out as usual; the bump was the cause.',
    world: shop(),
    deliveries: [
      otherDeploy('search-api', -70),
      pullRequestMerged(
        {
          repo: 'reporting-worker',
          number: 418,
          title: 'Bump urllib3 from 1.26.18 to 2.0.7',
          body: "Bumps [urllib3](https://github.com/urllib3/urllib3) from 1.26.18 to 2.0.7.\n- [Release notes](https://github.com/urllib3/urllib3/releases)\n- [Changelog](https://github.com/urllib3/urllib3/blob/main/CHANGES.rst)\n\n---\nDependabot will resolve any conflicts with this PR as long as you don't alter it yourself.",
          head: 'dependabot/pip/urllib3-2.0.7',
          sha: '0c2e4a6b8d0f1a3c5e7b9d1f3a5c7e9b0d2f4a68',
          at: -31,
          author: 'dependabot[bot]',
          labels: ['dependencies', 'python'],
          changedFiles: 1,
          additions: 1,
          deletions: 1,
        },
        { note: 'the cause (merge)' },
      ),
      deploymentStatus(
        { repo: 'reporting-worker', id: 90412, sha: '0c2e4a6b8d0f1a3c5e7b9d1f3a5c7e9b0d2f4a68', at: -19 },
        { note: 'the cause (shipped)' },
      ),
      sentry(
        {
          project: 'reporting-worker',
          type: 'ImportError',
          value:
            "urllib3 v2.0 only supports OpenSSL 1.1.1+, currently the 'ssl' module is compiled with 'OpenSSL 1.0.2k-fips  26 Jan 2017'. See: https://github.com/urllib3/urllib3/issues/2168",
          at: 0,
          frames: [{ filename: 'reporting/http.py', lineno: 3, function: '<module>' }],
        },
        { page: true },
      ),
      throttlingNoise(2),
    ],
    truth: {
      subject: ['urllib3', '#418', '0c2e4a6', 'reporting-worker'],
      mechanism: [/urllib3|dependency|bump|upgrade|dependabot|OpenSSL/i],
      oneHopShort: ['orders-db'],
      action: [/roll(ing)?[ -]?back|revert|pin|downgrade/i, /urllib3|reporting-worker|90412|0c2e4a6|418/i],
    },
  },
  {
    id: 'change-argocd-helm-chart-payments-prod',
    class: 'change',
    title: 'Argo CD app payments-prod syncs chart payments-api 3.1.0 and goes Degraded',
    story:
      'The Argo CD application payments-prod installs the payments-api chart from our chart repository. Chart 3.1.0 renamed the DB secret key; ' +
      'new pods could not read DATABASE_URL and failed readiness, and the app reported Degraded. Syncing back to 3.0.4 fixed it.',
    world: shop(),
    deliveries: [
      routineDeploy('checkout-api', -210),
      argocd(
        {
          app: 'payments-prod',
          project: 'payments',
          namespace: 'payments',
          repoURL: 'https://charts.example-shop.com',
          chart: 'payments-api',
          targetRevision: '3.1.0',
          revision: '3.1.0',
          health: 'Degraded',
          message: 'successfully synced (all tasks run)',
          at: -9,
        },
        { note: 'the cause' },
      ),
      otherDeploy('search-api', -4),
      prom([podNotReady('payments', 'payments-api', -1)], { groupBy: ['namespace'] }),
      sentry(
        {
          project: 'payments-api',
          type: 'KeyError',
          value: "'DATABASE_URL'",
          at: 0,
          level: 'fatal',
          frames: [{ filename: 'payments/settings.py', lineno: 19, function: '<module>' }],
        },
        { page: true },
      ),
      flappingDisk(2),
    ],
    truth: {
      subject: ['payments-prod', 'payments-api', '3.1.0'],
      mechanism: [/sync|chart|helm|argo|deploy|release|upgrade|3\.1\.0|gitops/i],
      oneHopShort: ['payments-db', 'checkout-api'],
      action: [ROLLBACK, /payments|3\.1\.0|3\.0\.4/i],
    },
  },
  {
    id: 'change-deployments-repo-workflow-accounts',
    class: 'change',
    title: 'A deploy workflow in example-shop/deployments ships accounts-api with a bad session key',
    story:
      'Deploys of every service run from example-shop/deployments; the "deploy-accounts-api" workflow shipped v2025.11.27.4, which read the session signing key ' +
      'from a renamed secret and fell back to a random one per pod, so sessions broke across pods. Re-running the workflow for the previous version fixed it.',
    world: shop({
      nodes: [
        shopNode('accounts-api', {
          repositories: [{ repository: 'example-shop/deployments', paths: ['services/accounts-api/**'] }],
        }),
      ],
    }),
    deliveries: [
      routineDeploy('cart-api', -150),
      workflowRun(
        {
          repo: 'deployments',
          workflow: 'deploy-accounts-api',
          path: '.github/workflows/deploy-accounts-api.yml',
          sha: 'b3d5f7a9c1e3b5d7f9a1c3e5b7d9f1a3c5e7b9d4',
          message: 'Deploy accounts-api v2025.11.27.4 to production',
          at: -16,
          event: 'workflow_dispatch',
          actor: 'nsato',
        },
        { note: 'the cause' },
      ),
      otherDeploy('catalog-api', -8),
      sentry(
        {
          project: 'accounts-api',
          type: 'itsdangerous.exc.BadSignature',
          value: "Signature b'Yz3K…' does not match",
          at: 0,
          frames: [{ filename: 'accounts/sessions.py', lineno: 74, function: 'load_session' }],
        },
        { page: true },
      ),
      prom([
        {
          labels: {
            alertname: 'LoginSessionsDropped',
            service: 'accounts-api',
            severity: 'high',
            namespace: 'identity',
          },
          annotations: { description: '41% of authenticated requests are rejected with 401 invalid session.' },
          at: 1,
        },
      ]),
    ],
    truth: {
      subject: ['accounts-api', 'deploy-accounts-api', 'v2025.11.27.4', 'b3d5f7a'],
      mechanism: [/deploy|release|workflow|rollout|v2025\.11\.27\.4|b3d5f7a/i],
      oneHopShort: ['accounts-db', 'api-gateway'],
      action: [ROLLBACK, /accounts-api|v2025\.11\.27\.4|b3d5f7a|deploy-accounts-api/i],
    },
  },
  {
    id: 'change-unleash-strategy-rollout-cart',
    class: 'change',
    title: 'An Unleash gradual rollout of cart-price-cache goes from 10 % to 100 %',
    story:
      'cart-price-cache had run at 10 % for a week. A strategy update moved the gradual rollout to 100 %; at full load its cache keys collided across ' +
      'currencies and carts showed prices in the wrong currency, which checkout then rejected. Setting the rollout back to 0 % fixed it.',
    world: shop(),
    deliveries: [
      routineDeploy('cart-api', -300),
      otherDeploy('search-api', -40),
      unleash(
        {
          type: 'feature-strategy-update',
          feature: 'cart-price-cache',
          project: 'storefront',
          at: -8,
          data: {
            id: '4b1f2c3d-5e6f-4a7b-8c9d-0e1f2a3b4c5d',
            name: 'flexibleRollout',
            title: null,
            disabled: false,
            parameters: { groupId: 'cart-price-cache', rollout: '100', stickiness: 'default' },
            constraints: [],
            segments: [],
          },
          preData: {
            id: '4b1f2c3d-5e6f-4a7b-8c9d-0e1f2a3b4c5d',
            name: 'flexibleRollout',
            title: null,
            disabled: false,
            parameters: { groupId: 'cart-price-cache', rollout: '10', stickiness: 'default' },
            constraints: [],
            segments: [],
          },
        },
        { note: 'the cause' },
      ),
      sentry(
        {
          project: 'checkout-api',
          type: 'CheckoutValidationError',
          value: 'cart 5512093 currency mismatch: cart total in USD, storefront EUR',
          at: 0,
          frames: [{ filename: 'checkout/validation.py', lineno: 58, function: 'validate_currency' }],
        },
        { page: true },
      ),
      prom([
        {
          labels: { alertname: 'HighErrorRate', service: 'checkout-api', severity: 'high', namespace: 'shop' },
          annotations: { description: '9% of checkout-api requests fail with 422 (currency mismatch).' },
          at: 2,
        },
      ]),
    ],
    truth: {
      subject: ['cart-price-cache'],
      mechanism: [/flag|feature|toggle|unleash|rollout|strategy/i],
      oneHopShort: ['cart-api', 'checkout-api'],
      action: [/disable|turn(ing)? (it )?off|switch(ing)? off|roll(ing)?[ -]?back|revert|0 ?%/i, /cart-price-cache/i],
    },
  },
  {
    id: 'change-flagsmith-kill-switch-disabled',
    class: 'change',
    title: 'Flagsmith: search_bot_protection disabled during a test and never re-enabled',
    story:
      'A developer disabled the search_bot_protection flag in Production (believing it was Staging) to debug a false positive. Without it, crawlers hit ' +
      'search-api directly and search-index saturated. Re-enabling the flag stopped it within a minute.',
    world: shop(),
    deliveries: [
      routineDeploy('search-api', -190),
      flagsmith(
        {
          feature: 'search_bot_protection',
          description: 'Challenge suspected bots on /v1/search',
          enabled: false,
          wasEnabled: true,
          at: -12,
          changedBy: 'Tomasz Wr\u00f3bel',
        },
        { note: 'the cause' },
      ),
      otherDeploy('payments-api', -5),
      prom([
        {
          labels: {
            alertname: 'ElasticsearchHighCPU',
            service: 'search-index',
            cluster: 'search-index',
            severity: 'warning',
          },
          annotations: { description: 'search-index data nodes CPU above 90% for 5 minutes.' },
          at: -2,
        },
      ]),
      prom(
        [
          {
            labels: { alertname: 'HighLatencyP99', service: 'search-api', severity: 'critical', namespace: 'search' },
            annotations: {
              summary: 'search-api p99 above 2s',
              description: 'search-api p99 latency is 4.4s; request rate 7x baseline.',
            },
            at: 0,
          },
        ],
        { page: true },
      ),
    ],
    truth: {
      subject: ['search_bot_protection'],
      mechanism: [/flag|feature|toggle|flagsmith|disabled|protection/i],
      oneHopShort: ['search-index', 'search-api'],
      action: [
        /^(?!.*turn(ing)? (it )?off)(?=.*(re-?enable|enable|turn(ing)? (it )?(back )?on|restore|revert|roll(ing)?[ -]?back))/i,
        /search_bot_protection/i,
      ],
    },
  },
];
