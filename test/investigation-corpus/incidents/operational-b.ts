/** Class 4: operational mechanisms, each with its own fix (part B). */
import { flappingDisk, otherDeploy, routineDeploy, throttlingNoise } from '../noise.js';
import { datadog, datadogDefault, prom, sentry } from '../payloads/alerts.js';
import { cpuThrottling, filesystemAlmostFull, nodeCpuHigh } from '../payloads/kube.js';
import { node, shop } from '../worlds.js';
import type { CorpusIncident } from '../types.js';

export const operationalB: CorpusIncident[] = [
  {
    id: 'operational-rabbitmq-memory-alarm-unconsumed-queue',
    class: 'operational',
    title: 'RabbitMQ memory alarm from an email queue nobody consumes; publishers blocked',
    story:
      'A maintenance script paused the email consumers (notifications-worker, queue email.outbound) on Tuesday and never resumed them. email.outbound grew to 3.1M messages ' +
      'until the broker hit its memory high watermark and blocked every publisher, so checkout-api could not publish order events. Resuming consumers drained it.',
    world: shop({
      edges: [['checkout-api', 'notifications-queue']],
      runbooks: [
        {
          title: 'RabbitMQ memory alarm',
          service: 'notifications-queue',
          tags: ['rabbitmq', 'memory'],
          content:
            '1. `rabbitmqctl list_queues name messages consumers memory` — find the queue holding memory.\n2. If it has no consumers, start them (or shovel the queue to a lazy queue); purge only with the owner.\n3. Do not restart the broker: publishers reconnect into the same alarm.',
        },
      ],
    }),
    deliveries: [
      routineDeploy('notifications-worker', -2900),
      otherDeploy('search-api', -50),
      prom([
        {
          labels: {
            alertname: 'RabbitmqTooManyReadyMessages',
            service: 'rabbitmq-exporter',
            job: 'rabbitmq',
            instance: 'rabbitmq-messaging-0:15692',
            queue: 'email.outbound',
            vhost: 'messaging',
            severity: 'warning',
          },
          annotations: {
            summary: 'RabbitMQ too many ready messages (email.outbound)',
            description: 'email.outbound has 3,104,882 ready messages and 0 consumers.',
          },
          at: -20,
        },
      ]),
      prom(
        [
          {
            labels: {
              alertname: 'RabbitmqMemoryHigh',
              service: 'rabbitmq-exporter',
              job: 'rabbitmq',
              instance: 'rabbitmq-messaging-0:15692',
              severity: 'critical',
            },
            annotations: {
              summary: 'RabbitMQ memory high (instance rabbitmq-messaging-0:15692)',
              description:
                'A node use more than 90% of allocated RAM; memory alarm set, publishers blocked.\n  VALUE = 0.97',
            },
            at: 0,
          },
        ],
        { page: true },
      ),
      sentry({
        project: 'checkout-api',
        type: 'kombu.exceptions.OperationalError',
        value: 'Connection blocked by broker: low on memory (connection.blocked)',
        at: 1,
        frames: [{ filename: 'checkout/events.py', lineno: 22, function: 'publish_order_created' }],
      }),
      flappingDisk(2),
    ],
    truth: {
      subject: ['email.outbound', 'notifications-worker'],
      mechanism: [
        /memory alarm|unconsumed|no consumers|0 consumers|backlog|watermark|queue (depth|growth|grew)|ready messages/i,
      ],
      oneHopShort: ['notifications-queue', 'rabbitmq-messaging-0', 'checkout-api'],
      action: [/consum|drain|shovel|resume|start|scale|purge|move/i, /email\.outbound|notifications-worker|consumer/i],
    },
  },
  {
    id: 'operational-cache-eviction-storm-product-cache',
    class: 'operational',
    title: 'product-cache evicts hot keys after a bulk preload; catalog-db takes the misses',
    story:
      'A merchandising preload wrote 9 GB of campaign pages into product-cache (maxmemory 10 GB, allkeys-lru). Redis evicted 40k keys a second, the hit ratio fell ' +
      'from 97% to 41% and catalog-db absorbed the misses. Redis stayed up throughout: the cache was full, not down.',
    world: shop(),
    deliveries: [
      routineDeploy('catalog-api', -240),
      otherDeploy('payments-api', -22),
      prom([
        {
          labels: {
            alertname: 'RedisEvictingKeys',
            service: 'redis-exporter',
            job: 'redis-exporter',
            instance: 'product-cache-0:9121',
            severity: 'warning',
          },
          annotations: {
            summary: 'Redis evicting keys (instance product-cache-0:9121)',
            description:
              'product-cache evicts 41,200 keys/s; used_memory 9.98GB of maxmemory 10GB; keyspace hit ratio 0.41.',
          },
          at: -5,
        },
      ]),
      prom([
        {
          labels: {
            alertname: 'PostgresHighCPU',
            service: 'catalog-db',
            instance: 'catalog-db-0:9187',
            severity: 'warning',
          },
          annotations: { description: 'catalog-db CPU above 90% for 5 minutes; queries per second 6x baseline.' },
          at: -2,
        },
      ]),
      datadog(
        {
          title: 'High p99 latency on catalog-api',
          body: 'catalog-api p99 latency is 2.3s over the last 5 minutes (threshold 800ms).',
          service: 'catalog-api',
          at: 0,
          metric: 'trace.http.request.duration',
        },
        { page: true },
      ),
    ],
    truth: {
      subject: ['product-cache', 'product-cache-0'],
      mechanism: [/evict|maxmemory|memory (full|pressure)|miss|hit ratio|preload/i],
      oneHopShort: ['catalog-db', 'catalog-api'],
      action: [
        /maxmemory|memory|evict|preload|campaign|delete|flush|scale|increase/i,
        /product-cache|preload|campaign/i,
      ],
    },
  },
  {
    id: 'operational-retry-storm-payments',
    class: 'operational',
    title: 'A 90-second payments blip becomes a retry storm from checkout-api',
    story:
      'payments-db failed over in 90 seconds, as designed. checkout-api retries payment calls five times with no backoff and web-frontend retries checkout three times; ' +
      'payments-api received 14x its normal load and stayed saturated for 25 minutes after the database was back. Shedding retries ended it.',
    world: shop(),
    deliveries: [
      routineDeploy('checkout-api', -180),
      prom([
        {
          labels: {
            alertname: 'PostgresFailover',
            service: 'payments-db',
            instance: 'payments-db-1:9187',
            severity: 'warning',
          },
          annotations: { description: 'payments-db-1 promoted to primary (failover completed in 88s).' },
          at: -14,
        },
        {
          labels: {
            alertname: 'PostgresFailover',
            service: 'payments-db',
            instance: 'payments-db-1:9187',
            severity: 'warning',
          },
          annotations: { description: 'payments-db-1 promoted to primary (failover completed in 88s).' },
          at: -14,
          status: 'resolved',
          endsAt: -12,
        },
      ]),
      prom([
        {
          labels: {
            alertname: 'RequestRateAnomaly',
            service: 'payments-api',
            severity: 'warning',
            namespace: 'payments',
          },
          annotations: {
            description:
              'payments-api receives 9,800 req/s (baseline 700); 93% of requests carry X-Retry-Attempt >= 1, from checkout-api.',
          },
          at: -6,
        },
      ]),
      prom(
        [
          {
            labels: {
              alertname: 'HighErrorRate',
              service: 'payments-api',
              severity: 'critical',
              namespace: 'payments',
            },
            annotations: {
              summary: 'payments-api 503 above 20%',
              description:
                '503 responses are 61% of payments-api requests (worker pool exhausted); payments-db healthy since 12 minutes.',
            },
            at: 0,
          },
        ],
        { page: true },
      ),
      sentry({
        project: 'checkout-api',
        type: 'tenacity.RetryError',
        value:
          'RetryError[<Future at 0x7f0a state=finished raised HTTPError>] after 5 attempts calling payments-api /v1/charges',
        at: 1,
        frames: [{ filename: 'checkout/payments/client.py', lineno: 118, function: 'charge' }],
      }),
      throttlingNoise(2),
    ],
    truth: {
      subject: ['checkout-api', 'payments-api'],
      mechanism: [/retr(y|ies)/i],
      oneHopShort: ['payments-db', 'web-frontend'],
      action: [/retr(y|ies)|backoff|circuit|shed|rate[- ]?limit|throttle/i],
    },
  },
  {
    id: 'operational-internal-mtls-cert-expired',
    class: 'operational',
    title: "payments-api's internal mTLS certificate expired; cert-manager could not renew it",
    story:
      "cert-manager had been failing to renew payments-api-tls for a week (the issuer's ACME account was rate-limited). It expired at 14:02; checkout-api's calls " +
      'to payments-api failed the TLS handshake with x509 errors. Reissuing the certificate fixed it; nothing was deployed.',
    world: shop(),
    deliveries: [
      routineDeploy('payments-api', -500),
      prom([
        {
          labels: {
            alertname: 'CertManagerCertNotReady',
            service: 'cert-manager',
            job: 'cert-manager',
            namespace: 'payments',
            name: 'payments-api-tls',
            condition: 'False',
            severity: 'critical',
          },
          annotations: {
            summary: 'The cert payments-api-tls is not ready to serve traffic.',
            description:
              'The cert payments-api-tls is not ready to serve traffic (Issuing: Failed to finalize Order: 429 urn:ietf:params:acme:error:rateLimited).',
          },
          at: -3,
        },
      ]),
      sentry(
        {
          project: 'checkout-api',
          type: 'requests.exceptions.SSLError',
          value:
            "HTTPSConnectionPool(host='payments-api.payments.svc', port=8443): Max retries exceeded (Caused by SSLError(SSLCertVerificationError(1, '[SSL: CERTIFICATE_VERIFY_FAILED] certificate verify failed: certificate has expired (_ssl.c:1006)')))",
          at: 0,
          frames: [{ filename: 'checkout/payments/client.py', lineno: 97, function: 'charge' }],
        },
        { page: true },
      ),
      otherDeploy('cart-api', 2),
    ],
    truth: {
      subject: ['payments-api-tls', 'payments-api', 'cert-manager'],
      mechanism: [/certificate|x509|TLS|SSL|expir/i],
      oneHopShort: ['checkout-api'],
      action: [/renew|reissue|re-issue|rotate|replace/i, /payments-api-tls|certificate|cert/i],
    },
  },
  {
    id: 'operational-coredns-failures',
    class: 'operational',
    title: 'CoreDNS is overloaded and service names stop resolving',
    story:
      'A node-local-dns rollout was paused half-way and every pod on the other nodes hit the two CoreDNS replicas directly; they dropped queries. Services failed ' +
      'with EAI_AGAIN and "no such host" at random, across unrelated teams. Scaling CoreDNS to six replicas fixed it.',
    world: shop(),
    deliveries: [
      otherDeploy('recommendations-api', -37),
      prom([
        {
          labels: {
            alertname: 'CoreDNSErrorsHigh',
            service: 'kube-dns',
            job: 'kube-dns',
            namespace: 'kube-system',
            severity: 'critical',
          },
          annotations: {
            description: 'CoreDNS is returning SERVFAIL for 7.3% of all requests.',
            runbook_url: 'https://runbooks.prometheus-operator.dev/runbooks/coredns/corednserrorshigh',
            summary: 'CoreDNS is returning SERVFAIL.',
          },
          at: -4,
        },
      ]),
      sentry(
        {
          project: 'cart-api',
          type: 'Error',
          value: 'getaddrinfo EAI_AGAIN session-cache.storefront.svc.cluster.local',
          at: 0,
          frames: [{ filename: 'src/redis.ts', lineno: 18, function: 'connect' }],
        },
        { page: true },
      ),
      sentry({
        project: 'inventory-api',
        type: 'java.net.UnknownHostException',
        value: 'inventory-db.fulfilment.svc.cluster.local: Temporary failure in name resolution',
        at: 1,
        frames: [{ filename: 'com/exampleshop/inventory/Db.java', lineno: 33, function: 'connect' }],
      }),
      flappingDisk(2),
    ],
    truth: {
      subject: ['coredns', 'kube-dns', 'cluster DNS', 'node-local-dns'],
      mechanism: [/DNS|resolution|resolv|SERVFAIL|name lookup/i],
      oneHopShort: ['session-cache', 'inventory-db', 'cart-api', 'inventory-api'],
      action: [/coredns|kube-dns|node-local-dns/i],
    },
  },
  {
    id: 'operational-disk-full-debug-logs',
    class: 'operational',
    title: "Debug logging left on in search-api fills a node's disk; kubelet evicts pods",
    story:
      "search-api's log level was set to DEBUG to chase a bug and left there. It wrote 60 GB of container logs in a day on ip-10-0-7-12; the root filesystem filled, kubelet " +
      'evicted the pods on that node (checkout-api among them). The Datadog monitor only knows the host.',
    world: shop(),
    deliveries: [
      routineDeploy('search-api', -1500),
      otherDeploy('accounts-api', -45),
      datadogDefault(
        {
          title: 'Disk space low on ip-10-0-7-12',
          scope: 'host:ip-10-0-7-12.eu-west-1.compute.internal,device:/dev/nvme0n1p1',
          body: 'system.disk.in_use is 0.991 on host ip-10-0-7-12 (/). Largest directory: /var/log/containers (61 GB), search-api-7c9f8d6b5-x2k4p_search_search-api-*.log.',
          at: 0,
          priority: 'P2',
        },
        { page: true },
      ),
      prom([filesystemAlmostFull('ip-10-0-7-12.eu-west-1.compute.internal:9100', '/', 1, 0.9, '/dev/nvme0n1p1')], {
        groupBy: ['alertname', 'instance'],
      }),
      prom([
        {
          labels: {
            alertname: 'KubePodEvicted',
            job: 'kube-state-metrics',
            service: 'kube-state-metrics',
            namespace: 'shop',
            pod: 'checkout-api-5d8c7b9f4-qr2lm',
            reason: 'Evicted',
            severity: 'warning',
          },
          annotations: {
            description:
              'Pod shop/checkout-api-5d8c7b9f4-qr2lm was evicted: The node was low on resource: ephemeral-storage.',
          },
          at: 3,
        },
      ]),
    ],
    truth: {
      subject: ['search-api', 'ip-10-0-7-12'],
      mechanism: [/log|debug|disk|space|ephemeral/i],
      oneHopShort: ['checkout-api'],
      action: [/log|debug|level|rotate|clean|delete|truncate|free/i, /search-api|ip-10-0-7-12|\/var\/log|logs?/i],
    },
  },
  {
    id: 'operational-noisy-neighbour-transcoder',
    class: 'operational',
    title: 'A video-transcoder batch pod starves checkout-api on the same node',
    story:
      "media's video-transcoder job had no CPU limit and was scheduled onto ip-10-0-9-17 next to two checkout-api pods. It used all 16 cores; checkout-api on that " +
      'node slowed to 4 s while its pods elsewhere were fine. Cordoning the node and limiting the job fixed it.',
    world: shop({ nodes: [node('video-transcoder', 'worker', 2, 'media')] }),
    deliveries: [
      routineDeploy('checkout-api', -210),
      otherDeploy('catalog-api', -30),
      prom([nodeCpuHigh('ip-10-0-9-17.eu-west-1.compute.internal:9100', -7, 100)], {
        groupBy: ['alertname', 'instance'],
      }),
      prom([cpuThrottling('shop', 'checkout-api', 'ip-10-0-9-17.eu-west-1.compute.internal', -3, 71)], {
        groupBy: ['namespace'],
      }),
      prom(
        [
          {
            labels: { alertname: 'HighLatencyP99', service: 'checkout-api', severity: 'critical', namespace: 'shop' },
            annotations: {
              summary: 'checkout-api p99 above 2s',
              description: 'checkout-api p99 is 4.1s; pods on ip-10-0-9-17 serve 92% of the slow requests.',
            },
            at: 0,
          },
        ],
        { page: true },
      ),
      datadogDefault({
        title: 'Top CPU consumer on ip-10-0-9-17',
        scope: 'host:ip-10-0-9-17.eu-west-1.compute.internal',
        body: 'kubernetes.cpu.usage.total by pod on ip-10-0-9-17: video-transcoder-29384811-mz8tq 15.6 cores (no limit), checkout-api-5d8c7b9f4-7wq9z 0.3 cores.',
        at: 1,
        priority: 'P4',
      }),
    ],
    truth: {
      subject: ['video-transcoder', 'ip-10-0-9-17'],
      mechanism: [/noisy neighbou?r|node|CPU|contention|co-?located|starv|same host/i],
      oneHopShort: ['checkout-api'],
      action: [/move|evict|cordon|drain|reschedul|limit|taint|stop|kill|delete/i, /video-transcoder|ip-10-0-9-17/i],
    },
  },
  {
    id: 'operational-gunicorn-worker-saturation',
    class: 'operational',
    title: 'recommendations-api gunicorn sync workers all block on a slow call',
    story:
      'recommendations-api runs 4 sync gunicorn workers per pod. A slow feature-store endpoint (8 s) held every worker; gunicorn killed them on timeout and the ' +
      'pods answered 502 to the gateway. The feature store was slow but up; the worker model was the problem.',
    world: shop({
      nodes: [node('feature-store', 'database', 5, 'discovery')],
      edges: [['recommendations-api', 'feature-store']],
    }),
    deliveries: [
      routineDeploy('recommendations-api', -260),
      otherDeploy('inventory-api', -15),
      prom([
        {
          labels: { alertname: 'HighLatencyP99', service: 'feature-store', severity: 'warning' },
          annotations: { description: 'feature-store GET /features p99 is 8.2s (threshold 1s).' },
          at: -6,
        },
      ]),
      sentry(
        {
          project: 'recommendations-api',
          type: 'SystemExit',
          value: '[CRITICAL] WORKER TIMEOUT (pid:4117) — all 4 workers busy; 212 requests in backlog',
          at: 0,
          level: 'fatal',
          frames: [{ filename: 'gunicorn/workers/sync.py', lineno: 179, function: 'handle_request' }],
        },
        { page: true },
      ),
      prom([
        {
          labels: {
            alertname: 'HighErrorRate',
            service: 'api-gateway',
            severity: 'high',
            route: '/api/recommendations',
          },
          annotations: { description: '502 from upstream recommendations-api on 31% of /api/recommendations.' },
          at: 1,
        },
      ]),
      throttlingNoise(2),
    ],
    truth: {
      subject: ['recommendations-api', 'gunicorn'],
      mechanism: [/worker|thread|pool|saturat|busy/i],
      oneHopShort: ['feature-store', 'api-gateway'],
      action: [
        /workers?|threads?|async|gevent|scale|timeout|concurrency/i,
        /recommendations-api|gunicorn|feature-store/i,
      ],
    },
  },
];
