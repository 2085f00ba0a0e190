/** Class 4: operational mechanisms, each with its own fix (part A). */
import { flappingDisk, otherDeploy, routineDeploy, throttlingNoise } from '../noise.js';
import { datadog, prom, sentry } from '../payloads/alerts.js';
import { oomKilled } from '../payloads/kube.js';
import { shop, node } from '../worlds.js';
import type { CorpusIncident } from '../types.js';

export const operationalA: CorpusIncident[] = [
  {
    id: 'operational-consumer-lag-producer-burst',
    class: 'operational',
    title: 'A supplier catalogue import floods product-events and the indexer falls behind',
    story:
      'catalog-importer replayed a full supplier catalogue (2.4M updates) into the product-events topic in twelve minutes, forty times the usual rate. ' +
      'search-indexer, sized for the steady trickle, fell 1.9M messages behind and search showed stale prices for an hour. Nothing was broken: it needed more consumers and a throttled import.',
    world: shop({
      nodes: [
        node('catalog-importer', 'worker', 4, 'catalog'),
        node('product-events', 'queue', 7, 'catalog'),
        node('search-indexer', 'worker', 6, 'search'),
      ],
      edges: [
        ['catalog-importer', 'product-events'],
        ['search-indexer', 'product-events'],
        ['search-indexer', 'search-index'],
      ],
    }),
    deliveries: [
      routineDeploy('search-indexer', -400),
      otherDeploy('cart-api', -28),
      prom([
        {
          labels: {
            alertname: 'KafkaTopicProduceRateHigh',
            service: 'product-events',
            topic: 'product-events',
            job: 'kafka-exporter',
            severity: 'info',
          },
          annotations: {
            summary: 'product-events produce rate 41x its weekly baseline',
            description:
              'Messages in per second on product-events: 3,310 (baseline 80). Top producer client.id: catalog-importer.',
          },
          at: -12,
        },
      ]),
      prom(
        [
          {
            labels: {
              alertname: 'KafkaConsumerGroupLag',
              consumergroup: 'search-indexer',
              topic: 'product-events',
              job: 'kafka-exporter',
              instance: 'kafka-exporter.kafka:9308',
              service: 'kafka-exporter',
              severity: 'critical',
            },
            annotations: {
              summary: 'Consumer group search-indexer lagging',
              description:
                'Consumer group search-indexer is 1,912,440 messages behind on product-events and the lag is growing.',
            },
            at: 0,
            expr: 'sum(kafka_consumergroup_lag{consumergroup="search-indexer"}) by (consumergroup, topic) > 100000',
          },
        ],
        { page: true },
      ),
      datadog({
        title: 'Search results stale',
        body: 'search-api freshness check: price for SKU 55120-B differs from catalog-api for 14 minutes.',
        service: 'search-api',
        at: 4,
        priority: 'P3',
      }),
      flappingDisk(5),
    ],
    truth: {
      subject: ['catalog-importer', 'search-indexer', 'product-events'],
      mechanism: [/lag|backlog|behind|burst|flood|produce rate|spike/i],
      oneHopShort: ['search-api', 'search-index'],
      action: [
        /scale|throttle|rate[- ]?limit|pause|slow|add consumers|more consumers|partitions/i,
        /search-indexer|catalog-importer|consumer|producer|import/i,
      ],
    },
  },
  {
    id: 'operational-runaway-report-query-shared-db',
    class: 'operational',
    title: 'A month-end revenue report saturates the shared orders database',
    story:
      'reporting-worker started the monthly-revenue-report job at 14:00; its query sequentially scanned 400M order lines on the primary of orders-db. ' +
      "Database CPU sat at 100%, checkout and order-worker queries timed out, and cancelling the report's backend (pid 48213) brought latency back at once.",
    world: shop({
      runbooks: [
        {
          title: 'orders-db CPU saturation',
          service: 'orders-db',
          tags: ['postgres', 'cpu'],
          content:
            "1. Find the top queries: `select pid, application_name, now()-query_start, query from pg_stat_activity where state='active' order by 3 desc`.\n2. Cancel a runaway query with `select pg_cancel_backend(<pid>)` and stop the job that sent it.\n3. Reports belong on the replica orders-db-ro; tell the job's owner.",
        },
      ],
    }),
    deliveries: [
      routineDeploy('checkout-api', -230),
      otherDeploy('recommendations-api', -40),
      prom([
        {
          labels: {
            alertname: 'PostgresqlLongRunningQuery',
            service: 'orders-db',
            instance: 'orders-db-0:9187',
            job: 'postgres-exporter',
            datname: 'orders',
            application_name: 'reporting-worker',
            severity: 'warning',
          },
          annotations: {
            summary: 'Long running query on orders-db',
            description:
              "pid 48213 (application_name=reporting-worker, job monthly-revenue-report) has been running for 21m: SELECT date_trunc('day', o.created_at), sum(l.amount) FROM order_lines l JOIN orders o ON … WHERE o.created_at >= $1 GROUP BY 1",
          },
          at: -6,
        },
      ]),
      prom(
        [
          {
            labels: {
              alertname: 'PostgresHighCPU',
              service: 'orders-db',
              instance: 'orders-db-0:9187',
              severity: 'critical',
            },
            annotations: {
              summary: 'orders-db CPU above 95%',
              description: 'orders-db primary CPU has been above 95% for 10 minutes; active backends 84 (normal 12).',
            },
            at: 0,
          },
        ],
        { page: true },
      ),
      sentry({
        project: 'checkout-api',
        type: 'django.db.utils.OperationalError',
        value: 'canceling statement due to statement timeout',
        at: 1,
        frames: [{ filename: 'checkout/orders/repository.py', lineno: 112, function: 'save_order' }],
      }),
      prom([
        {
          labels: { alertname: 'JobDurationHigh', service: 'order-worker', severity: 'warning' },
          annotations: { description: 'order-worker p95 job duration 41s (normal 2s).' },
          at: 2,
        },
      ]),
      throttlingNoise(3),
    ],
    truth: {
      subject: ['monthly-revenue-report', 'reporting-worker', '48213'],
      mechanism: [/query|report|batch|job|scan/i],
      oneHopShort: ['orders-db'],
      action: [
        /cancel|terminate|kill|stop|pause|abort/i,
        /monthly-revenue-report|reporting-worker|48213|report|query/i,
      ],
    },
  },
  {
    id: 'operational-oom-one-supplier-feed',
    class: 'operational',
    title: 'One oversized supplier feed OOM-kills catalog-importer, restart after restart',
    story:
      'Supplier 7731 sent a 3.8 GB full-catalogue XML instead of its usual delta. catalog-importer parses a feed in memory, so every pod that picked it up ' +
      'was OOM-killed and the feed went back to the queue for the next pod. Restarting pods only repeated it; quarantining feed supplier-7731-full.xml did not.',
    world: shop({
      nodes: [node('catalog-importer', 'worker', 4, 'catalog'), node('import-queue', 'queue', 4, 'catalog')],
      edges: [
        ['catalog-importer', 'import-queue'],
        ['catalog-importer', 'catalog-db'],
      ],
    }),
    deliveries: [
      routineDeploy('catalog-importer', -500),
      otherDeploy('payments-api', -33),
      sentry({
        project: 'catalog-importer',
        type: 'MemoryError',
        value: 'parsing feed supplier-7731-full.xml (3.8 GB): out of memory in lxml.etree.parse',
        at: -9,
        culprit: 'importer.feeds.parse in load_feed',
        frames: [{ filename: 'importer/feeds/parse.py', lineno: 33, function: 'load_feed' }],
      }),
      prom([oomKilled('catalog', 'catalog-importer', 0)], { groupBy: ['namespace'], page: true }),
      prom([
        {
          labels: {
            alertname: 'RabbitmqMessageRedeliveredHigh',
            service: 'import-queue',
            queue: 'feeds.incoming',
            severity: 'warning',
          },
          annotations: {
            description:
              'feeds.incoming redelivered the same message 7 times in 20 minutes (message id feed-7731-20251127).',
          },
          at: 2,
        },
      ]),
      flappingDisk(3),
    ],
    truth: {
      subject: ['supplier-7731-full.xml', 'supplier-7731', 'feed-7731-20251127', '7731'],
      mechanism: [/OOM|out of memory|memory|oversized|too large|3\.8 ?GB/i],
      oneHopShort: ['catalog-importer', 'import-queue'],
      action: [
        /^(?!restart|roll|scale).*(stop|pause|skip|quarantine|remove|suspend|dead[- ]?letter|park|move)/i,
        /7731|feed/i,
      ],
    },
  },
  {
    id: 'operational-hikari-pool-exhaustion-inventory',
    class: 'operational',
    title: 'inventory-api HikariCP pool exhausted while the database idles',
    story:
      'A new stock-sync endpoint in inventory-api held a pooled connection across a 20-second call to a warehouse system. Under the lunch peak all ' +
      '20 connections of HikariPool-1 were held; requests waited 30 s and failed, while inventory-db itself sat at 15% CPU.',
    world: shop(),
    deliveries: [
      routineDeploy('inventory-api', -140),
      otherDeploy('search-api', -19),
      prom([
        {
          labels: {
            alertname: 'HikariPoolPendingHigh',
            service: 'inventory-api',
            pool: 'HikariPool-1',
            namespace: 'fulfilment',
            severity: 'warning',
          },
          annotations: {
            summary: 'inventory-api connection pool saturated',
            description: 'hikaricp_connections_pending{pool="HikariPool-1"} = 143; active 20/20; idle 0.',
          },
          at: -3,
          expr: 'max(hikaricp_connections_pending{service="inventory-api"}) > 10',
        },
      ]),
      sentry(
        {
          project: 'inventory-api',
          type: 'java.sql.SQLTransientConnectionException',
          value:
            'HikariPool-1 - Connection is not available, request timed out after 30000ms (total=20, active=20, idle=0, waiting=143)',
          at: 0,
          culprit: 'com.exampleshop.inventory.StockRepository.reserve',
          frames: [{ filename: 'com/exampleshop/inventory/StockRepository.java', lineno: 88, function: 'reserve' }],
        },
        { page: true },
      ),
      prom([
        {
          labels: { alertname: 'HighErrorRate', service: 'checkout-api', severity: 'high', namespace: 'shop' },
          annotations: { description: '7% of checkout-api requests fail: inventory reservation timeouts.' },
          at: 2,
        },
      ]),
      throttlingNoise(3),
    ],
    truth: {
      subject: ['inventory-api', 'HikariPool-1'],
      mechanism: [/pool|connections? (exhaust|leak|held|saturat)/i],
      oneHopShort: ['inventory-db', 'checkout-api'],
      action: [
        /pool|connection|leak|stock-sync|held|release|restart|increase|raise/i,
        /inventory-api|HikariPool|pool/i,
      ],
    },
  },
];
