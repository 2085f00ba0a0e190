/** Class 4: operational mechanisms, each with its own fix (part C). */
import { flappingDisk, otherDeploy, routineDeploy, throttlingNoise } from '../noise.js';
import { datadog, generic, prom, sentry } from '../payloads/alerts.js';
import { push, workflowRun } from '../payloads/github.js';
import { crashLooping } from '../payloads/kube.js';
import { node, shop, shopNode } from '../worlds.js';
import type { CorpusIncident } from '../types.js';

export const operationalC: CorpusIncident[] = [
  {
    id: 'operational-bad-config-push-gateway-rate-limit',
    class: 'operational',
    title: 'A routes.yaml push sets the gateway rate limit to 10 rps per client',
    story:
      'api-gateway reads its routes from example-shop/service-config. A commit meant for a partner route changed the default limit from 1000 to 10 requests per ' +
      'second per client; the gateway hot-reloaded it and answered 429 to most browsers. Reverting 8d0f2b4 restored traffic.',
    world: shop({
      nodes: [
        shopNode('api-gateway', {
          repositories: [{ repository: 'example-shop/service-config', paths: ['gateway/**'] }],
        }),
      ],
    }),
    deliveries: [
      routineDeploy('api-gateway', -400),
      otherDeploy('cart-api', -20),
      push(
        {
          repo: 'service-config',
          at: -6,
          commits: [
            {
              id: '8d0f2b4a6c8e0a2c4e6b8d0f2a4c6e8b0d2f4a61',
              message: 'gateway: rate limit for partner-feeds route',
              modified: ['gateway/routes.yaml'],
            },
          ],
        },
        { note: 'the cause' },
      ),
      prom(
        [
          {
            labels: {
              alertname: 'GatewayTooManyRequests',
              service: 'api-gateway',
              severity: 'critical',
              namespace: 'edge',
            },
            annotations: {
              summary: 'api-gateway answers 429 to 64% of requests',
              description: 'ratelimit.exceeded on route default: 64% of requests (normal < 0.1%).',
            },
            at: 0,
          },
        ],
        { page: true },
      ),
      datadog({
        title: 'Storefront availability below SLO',
        body: 'web-frontend synthetic checkout journey failing: 429 Too Many Requests from https://api.example-shop.com/v1/cart.',
        service: 'web-frontend',
        at: 2,
      }),
    ],
    truth: {
      subject: ['api-gateway', '8d0f2b4', 'routes.yaml', 'service-config'],
      mechanism: [/config|rate limit|routes|8d0f2b4|change/i],
      oneHopShort: ['web-frontend'],
      action: [/revert|roll(ing)?[ -]?back|restore|undo/i, /8d0f2b4|routes|api-gateway|rate limit|service-config/i],
    },
  },
  {
    id: 'operational-vendor-rate-limit-mapbox',
    class: 'operational',
    title: 'A geocoding backfill exhausts the Mapbox rate limit; checkout address checks get 429',
    story:
      'The data team started a backfill that geocodes two years of addresses through address-api, sharing the production Mapbox token. Mapbox answered 429 ' +
      'Too Many Requests and live checkouts could not validate addresses. Pausing the backfill cleared it; Mapbox was healthy.',
    world: shop({
      nodes: [node('address-api', 'api', 8, 'payments'), node('geocode-backfill', 'worker', 2, 'data')],
      edges: [
        ['checkout-api', 'address-api'],
        ['geocode-backfill', 'address-api'],
      ],
    }),
    deliveries: [
      routineDeploy('address-api', -300),
      generic({
        name: 'BatchJobStarted',
        service: 'geocode-backfill',
        at: -22,
        severity: 'info',
        summary: 'geocode-backfill started: 4.1M addresses, 60 workers',
      }),
      otherDeploy('search-api', -9),
      sentry(
        {
          project: 'address-api',
          type: 'MapboxRateLimitError',
          value:
            '429 Too Many Requests from https://api.mapbox.com/search/geocode/v6/forward (X-Rate-Limit-Limit: 1000, X-Rate-Limit-Reset: 1732712460)',
          at: 0,
          frames: [{ filename: 'address/geocode.py', lineno: 61, function: 'forward' }],
        },
        { page: true },
      ),
      prom([
        {
          labels: { alertname: 'HighErrorRate', service: 'checkout-api', severity: 'high', namespace: 'shop' },
          annotations: { description: '8% of checkouts fail at address validation (address-api 503).' },
          at: 2,
        },
      ]),
    ],
    truth: {
      subject: ['mapbox', 'geocode-backfill', 'api.mapbox.com'],
      mechanism: [/rate[- ]?limit|429|quota|too many requests/i],
      oneHopShort: ['address-api', 'checkout-api'],
      action: [
        /throttle|backoff|pause|stop|reduce|quota|rate|separate token/i,
        /geocode-backfill|backfill|mapbox|address-api/i,
      ],
    },
  },
  {
    id: 'operational-migration-lock-orders',
    class: 'operational',
    title: 'A schema migration takes an ACCESS EXCLUSIVE lock on orders at peak',
    story:
      'The "db-migrate" workflow ran ALTER TABLE orders ADD COLUMN gift_note text NOT NULL DEFAULT \'\' with a CHECK constraint, which rewrote the table under an ' +
      "ACCESS EXCLUSIVE lock. Every query on orders queued behind it; cancelling the migration's backend released them.",
    world: shop(),
    deliveries: [
      routineDeploy('order-worker', -190),
      workflowRun(
        {
          repo: 'checkout',
          workflow: 'db-migrate',
          path: '.github/workflows/db-migrate.yml',
          sha: 'e4a6c8e0b2d4f6a8c0e2b4d6f8a0c2e4b6d8f0a2',
          message: 'orders: gift_note column (CHK-1201)',
          at: -9,
          minutesTaken: 1,
          conclusion: 'success',
        },
        { note: 'the migration run started (reported completed by the runner before the lock wait)' },
      ),
      prom([
        {
          labels: {
            alertname: 'PostgresqlLocksHigh',
            service: 'orders-db',
            instance: 'orders-db-0:9187',
            datname: 'orders',
            severity: 'warning',
          },
          annotations: {
            description:
              "412 backends waiting on locks on relation orders; blocker pid 50122 (application_name=alembic) holds AccessExclusiveLock for 7m: ALTER TABLE orders ADD COLUMN gift_note text NOT NULL DEFAULT ''",
          },
          at: -2,
        },
      ]),
      prom(
        [
          {
            labels: { alertname: 'HighErrorRate', service: 'checkout-api', severity: 'critical', namespace: 'shop' },
            annotations: {
              description: '5xx responses are 35% of checkout-api requests: statement timeout on INSERT INTO orders.',
            },
            at: 0,
          },
        ],
        { page: true },
      ),
      flappingDisk(2),
    ],
    truth: {
      subject: ['gift_note', 'alembic', '50122', 'db-migrate', 'CHK-1201', 'ALTER TABLE'],
      mechanism: [/lock|migration|ALTER TABLE/i],
      oneHopShort: ['orders-db', 'checkout-api'],
      action: [
        /cancel|terminate|kill|stop|abort|roll(ing)?[ -]?back/i,
        /migration|ALTER|50122|alembic|gift_note|db-migrate/i,
      ],
    },
  },
  {
    id: 'operational-scraper-traffic-spike-search',
    class: 'operational',
    title: 'A scraper from one ASN multiplies search traffic',
    story:
      'A price-comparison scraper hit /v1/search at 2,400 req/s from 300 addresses of one hosting provider (AS14061). search-api and search-index saturated; ' +
      'real users saw timeouts. Blocking the ASN at the WAF restored latency; nothing had changed on our side.',
    world: shop(),
    deliveries: [
      routineDeploy('search-api', -360),
      otherDeploy('payments-api', -26),
      prom([
        {
          labels: {
            alertname: 'RequestRateAnomaly',
            service: 'api-gateway',
            route: '/v1/search',
            severity: 'warning',
            namespace: 'edge',
          },
          annotations: {
            description:
              '/v1/search receives 2,610 req/s (baseline 210); 91% from AS14061 (DigitalOcean), user-agent python-requests/2.31.',
          },
          at: -6,
        },
      ]),
      prom(
        [
          {
            labels: { alertname: 'HighLatencyP99', service: 'search-api', severity: 'critical', namespace: 'search' },
            annotations: {
              summary: 'search-api p99 above 2s',
              description: 'search-api p99 is 5.2s; request rate 12x baseline.',
            },
            at: 0,
          },
        ],
        { page: true },
      ),
      throttlingNoise(1),
    ],
    truth: {
      subject: ['AS14061', 'scraper', 'DigitalOcean', 'python-requests'],
      mechanism: [/traffic|spike|bot|scrap|crawl|request rate|surge/i],
      oneHopShort: ['search-index', 'search-api', 'api-gateway'],
      action: [/block|rate[- ]?limit|WAF|throttle|deny|ban/i],
    },
  },
  {
    id: 'operational-clock-skew-jwt',
    class: 'operational',
    title: "One node's clock drifts and its accounts-api pods reject fresh tokens",
    story:
      'chronyd on ip-10-0-2-33 lost its time source after a security-group change and the clock ran 95 s fast. accounts-api pods on that node rejected ' +
      'tokens as "used before issued"; a third of logins failed at random. Restarting chronyd fixed it.',
    world: shop(),
    deliveries: [
      routineDeploy('accounts-api', -150),
      prom([
        {
          labels: {
            alertname: 'NodeClockSkewDetected',
            container: 'node-exporter',
            instance: 'ip-10-0-2-33.eu-west-1.compute.internal:9100',
            job: 'node-exporter',
            namespace: 'monitoring',
            service: 'node-exporter',
            severity: 'warning',
          },
          annotations: {
            description:
              'Clock at ip-10-0-2-33.eu-west-1.compute.internal:9100 is out of sync by more than 0.05s. Ensure NTP is configured correctly on this host.',
            runbook_url: 'https://runbooks.prometheus-operator.dev/runbooks/node/nodeclockskewdetected',
            summary: 'Clock skew detected.',
          },
          at: -8,
        },
      ]),
      sentry(
        {
          project: 'accounts-api',
          type: 'jwt.exceptions.ImmatureSignatureError',
          value: 'The token is not yet valid (iat)',
          at: 0,
          frames: [{ filename: 'accounts/auth/tokens.py', lineno: 44, function: 'verify' }],
        },
        { page: true },
      ),
      otherDeploy('cart-api', 2),
    ],
    truth: {
      subject: ['ip-10-0-2-33', 'chronyd'],
      mechanism: [/clock|NTP|time sync|skew|chrony|drift/i],
      oneHopShort: ['accounts-api'],
      action: [/ntp|chrony|clock|time|sync|cordon|drain/i],
    },
  },
  {
    id: 'operational-file-descriptors-gateway',
    class: 'operational',
    title: 'api-gateway runs out of file descriptors after upstream keepalive is disabled',
    story:
      'An upstream pool setting made api-gateway open a new connection per request; sockets in TIME_WAIT and CLOSE_WAIT climbed until the 65,536 nofile limit. ' +
      'accept() failed with EMFILE and the gateway dropped connections. Nothing downstream was unhealthy.',
    world: shop(),
    deliveries: [
      routineDeploy('api-gateway', -320),
      otherDeploy('search-api', -19),
      prom([
        {
          labels: {
            alertname: 'ProcessFdNearLimit',
            service: 'api-gateway',
            namespace: 'edge',
            pod: 'api-gateway-6b9c7d8f5-n4k2x',
            severity: 'warning',
          },
          annotations: {
            description:
              'process_open_fds / process_max_fds is 0.98 for api-gateway-6b9c7d8f5-n4k2x (64,211 of 65,536).',
          },
          at: -3,
        },
      ]),
      sentry(
        {
          project: 'api-gateway',
          type: 'Error',
          value: 'accept4() failed (24: Too many open files)',
          at: 0,
          level: 'fatal',
          frames: [{ filename: 'src/server.ts', lineno: 88, function: 'onConnection' }],
        },
        { page: true },
      ),
      flappingDisk(1),
    ],
    truth: {
      subject: ['api-gateway'],
      mechanism: [/file descriptor|too many open files|ulimit|nofile|EMFILE|fd/i],
      oneHopShort: ['web-frontend'],
      action: [/keepalive|file descriptor|ulimit|nofile|connection|restart|limit/i, /api-gateway/i],
    },
  },
  {
    id: 'operational-poison-message-notifications',
    class: 'operational',
    title: 'One malformed message crash-loops notifications-worker',
    story:
      'A partner integration published a notification with a null locale. notifications-worker crashed on it, the message was redelivered, and the next consumer ' +
      'crashed too; every pod crash-looped and push notifications stopped. Moving message 7f3e… to the dead-letter queue ended it.',
    world: shop(),
    deliveries: [
      routineDeploy('notifications-worker', -480),
      otherDeploy('checkout-api', -23),
      sentry({
        project: 'notifications-worker',
        type: 'AttributeError',
        value:
          "'NoneType' object has no attribute 'split' (message_id=7f3e9a21-44c1-4b8e-9d0a-6c2f1e8b5a37, locale=None)",
        at: -4,
        frames: [{ filename: 'notifications/templates.py', lineno: 28, function: 'render' }],
      }),
      prom([crashLooping('messaging', 'notifications-worker', 0)], { groupBy: ['namespace'], page: true }),
      prom([
        {
          labels: {
            alertname: 'RabbitmqMessageRedeliveredHigh',
            service: 'notifications-queue',
            queue: 'push.outbound',
            severity: 'warning',
          },
          annotations: {
            description:
              'push.outbound redelivered message 7f3e9a21-44c1-4b8e-9d0a-6c2f1e8b5a37 14 times; 88,000 messages waiting behind it.',
          },
          at: 2,
        },
      ]),
      throttlingNoise(3),
    ],
    truth: {
      subject: ['7f3e9a21-44c1-4b8e-9d0a-6c2f1e8b5a37', '7f3e9a21', 'poison'],
      mechanism: [/poison|malformed|message|redeliver|null locale/i],
      oneHopShort: ['notifications-worker', 'notifications-queue'],
      action: [/dead[- ]?letter|DLQ|skip|remove|park|quarantine|move|reject|ack/i, /7f3e9a21|message/i],
    },
  },
  {
    id: 'operational-hot-key-session-cache',
    class: 'operational',
    title: 'One hot key pins a session-cache shard at 100% CPU',
    story:
      'A marketing banner stored its click counter in one Redis key (banner:bf-2025:clicks) that every page view incremented. The shard owning it hit 100% CPU; ' +
      'every cart whose session lived on that shard slowed. The cache was up with memory to spare.',
    world: shop(),
    deliveries: [
      routineDeploy('cart-api', -130),
      otherDeploy('catalog-api', -31),
      prom([
        {
          labels: {
            alertname: 'RedisHighCPU',
            service: 'redis-exporter',
            job: 'redis-exporter',
            instance: 'session-cache-2:9121',
            severity: 'warning',
          },
          annotations: {
            description:
              'session-cache-2 main thread CPU 99%; ops/s 187k (others 9k); top key by ops: banner:bf-2025:clicks (INCR).',
          },
          at: -4,
        },
      ]),
      prom(
        [
          {
            labels: { alertname: 'HighLatencyP99', service: 'cart-api', severity: 'high', namespace: 'storefront' },
            annotations: {
              description: 'cart-api p99 is 1.9s (threshold 500ms); slow requests all read session-cache-2.',
            },
            at: 0,
          },
        ],
        { page: true },
      ),
      flappingDisk(2),
    ],
    truth: {
      subject: ['banner:bf-2025:clicks', 'session-cache-2', 'session-cache'],
      mechanism: [/hot[- ]?(key|shard|spot)|single (hot )?key|one key|key contention/i],
      oneHopShort: ['cart-api'],
      action: [/banner|hot key|shard|split|move|disable|counter|local/i],
    },
  },
];
