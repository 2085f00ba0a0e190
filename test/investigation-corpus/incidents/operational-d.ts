/** Class 4: operational mechanisms, each with its own fix (part D). */
import { flappingDisk, otherDeploy, routineDeploy, throttlingNoise } from '../noise.js';
import { datadogDefault, prom, sentry } from '../payloads/alerts.js';
import { node, shop } from '../worlds.js';
import type { CorpusIncident } from '../types.js';

export const operationalD: CorpusIncident[] = [
  {
    id: 'operational-replica-lag-stale-reads',
    class: 'operational',
    title: 'orders-db read replica lags 14 minutes behind; order-worker reads orders that do not exist yet',
    story:
      'An analyst ran a 40-minute report on the orders-db-ro replica with hot_standby_feedback off; replay paused behind the query and the replica fell 14 minutes ' +
      'behind. order-worker reads new orders from the replica and found none, so fulfilments failed "order not found". Cancelling the report let replay catch up.',
    world: shop({
      nodes: [node('orders-db-ro', 'database', 8, 'payments')],
      edges: [
        ['order-worker', 'orders-db-ro'],
        ['reporting-worker', 'orders-db-ro'],
      ],
    }),
    deliveries: [
      routineDeploy('order-worker', -150),
      otherDeploy('search-api', -31),
      prom([
        {
          labels: {
            alertname: 'PostgresqlReplicationLag',
            service: 'postgres-exporter',
            job: 'postgres-exporter',
            instance: 'orders-db-ro-0:9187',
            severity: 'critical',
          },
          annotations: {
            summary: 'Postgresql replication lag (instance orders-db-ro-0:9187)',
            description:
              'PostgreSQL replication lag is going up (> 30s)\n  VALUE = 846\n  LABELS = map[instance:orders-db-ro-0:9187]; replay paused by a conflicting query (pid 7731, usename analyst_ro, 38 min).',
          },
          at: -4,
        },
      ]),
      sentry(
        {
          project: 'order-worker',
          type: 'fulfilment.errors.OrderNotFound',
          value: 'order 9918274 not found (read from orders-db-ro)',
          at: 0,
          frames: [{ filename: 'fulfilment/orders.py', lineno: 58, function: 'load_order' }],
        },
        { page: true },
      ),
      flappingDisk(1),
    ],
    truth: {
      subject: ['orders-db-ro', 'analyst_ro', '7731'],
      mechanism: [/replication lag|replica lag|lag(ging)? behind|replay/i],
      oneHopShort: ['order-worker', 'orders-db'],
      action: [
        /cancel|terminate|kill|stop|route reads|read from the primary/i,
        /orders-db-ro|7731|analyst|replica|primary/i,
      ],
    },
  },
  {
    id: 'operational-ebs-burst-balance-orders-db',
    class: 'operational',
    title: "orders-db's gp2 volume runs out of burst credits; I/O wait everywhere",
    story:
      "The nightly vacuum and a backfill drained the BurstBalance of orders-db's gp2 data volume. Once at zero, it was held to its 300 IOPS baseline; " +
      'queries waited on I/O, checkout slowed and order-worker backed up. The database had not changed; the fix was a gp3 volume with provisioned IOPS.',
    world: shop(),
    deliveries: [
      routineDeploy('checkout-api', -330),
      datadogDefault({
        title: 'EBS burst balance low on vol-0a1b2c3d4e5f67890',
        scope: 'volumeid:vol-0a1b2c3d4e5f67890,name:orders-db-data',
        body: 'aws.ebs.burst_balance is 0% on vol-0a1b2c3d4e5f67890 (orders-db-data, gp2 1000 GiB) for the last 15 minutes.',
        at: -6,
        priority: 'P3',
      }),
      prom([
        {
          labels: {
            alertname: 'NodeDiskIOSaturation',
            container: 'node-exporter',
            device: 'nvme1n1',
            instance: 'orders-db-0.db.internal:9100',
            job: 'node-exporter',
            service: 'node-exporter',
            severity: 'warning',
          },
          annotations: {
            description:
              'Disk IO queue (aqu-sq) is high on nvme1n1 at orders-db-0.db.internal:9100, has been above 10 for the last 30 minutes, is currently at 47.2.\nThis symptom might indicate disk saturation.',
            summary: 'Disk IO queue is high.',
          },
          at: -3,
        },
      ]),
      prom(
        [
          {
            labels: { alertname: 'HighLatencyP99', service: 'checkout-api', severity: 'critical', namespace: 'shop' },
            annotations: {
              description: 'checkout-api p99 is 3.8s (threshold 1s); time is spent in orders-db queries.',
            },
            at: 0,
          },
        ],
        { page: true },
      ),
    ],
    truth: {
      subject: ['orders-db', 'vol-0a1b2c3d4e5f67890', 'orders-db-data'],
      mechanism: [/burst|IOPS|I\/O (wait|saturation|credits)|disk (I\/O|IO)|IO queue|throughput/i],
      oneHopShort: ['checkout-api', 'order-worker'],
      action: [/gp3|IOPS|provision|volume|burst|throughput/i],
    },
  },
  {
    id: 'operational-kafka-rebalance-storm',
    class: 'operational',
    title: 'loyalty-worker consumers keep getting kicked out of their group',
    story:
      'A new enrichment call made each order-events record take ~1 s in loyalty-worker; with max.poll.records 500 a batch took longer than max.poll.interval.ms ' +
      '(300 s), so consumers were kicked out, the group rebalanced, and the same batch started over. Lag grew without any consumer being down.',
    world: shop({
      nodes: [node('loyalty-worker', 'worker', 5, 'growth'), node('order-events', 'queue', 8, 'platform')],
      edges: [
        ['loyalty-worker', 'order-events'],
        ['order-worker', 'order-events'],
      ],
    }),
    deliveries: [
      routineDeploy('loyalty-worker', -95),
      otherDeploy('payments-api', -30),
      sentry({
        project: 'loyalty-worker',
        type: 'org.apache.kafka.clients.consumer.CommitFailedException',
        value:
          'Offset commit cannot be completed since the consumer is not part of an active group for auto partition assignment; it is likely that the consumer was kicked out of the group.',
        at: -5,
        frames: [{ filename: 'com/exampleshop/loyalty/OrderEventsConsumer.java', lineno: 92, function: 'commit' }],
      }),
      prom(
        [
          {
            labels: {
              alertname: 'KafkaConsumerGroupLag',
              consumergroup: 'loyalty-worker',
              topic: 'order-events',
              job: 'kafka-exporter',
              instance: 'kafka-exporter.kafka:9308',
              service: 'kafka-exporter',
              severity: 'warning',
            },
            annotations: {
              summary: 'Consumer group loyalty-worker lagging',
              description:
                'Consumer group loyalty-worker is 412,930 messages behind on order-events; members joined the group 37 times in 30 minutes.',
            },
            at: 0,
          },
        ],
        { page: true },
      ),
      throttlingNoise(2),
    ],
    truth: {
      subject: ['loyalty-worker'],
      mechanism: [/rebalanc|kicked out|max\.poll|poll interval|leaves? the group|rejoin/i],
      oneHopShort: ['order-events'],
      action: [/max\.poll|poll interval|batch|records|processing time/i],
    },
  },
  {
    id: 'operational-redis-maxclients-cart-cleanup',
    class: 'operational',
    title: 'A new cart-cleanup cron job exhausts session-cache maxclients',
    story:
      'cart-cleanup, a CronJob added on Monday, opened a Redis connection per abandoned cart and never closed them. At the top of the hour it held 9,400 ' +
      'of session-cache\'s 10,000 clients; cart-api got "max number of clients reached". Killing the job\'s clients and suspending the CronJob fixed it.',
    world: shop({
      nodes: [node('cart-cleanup', 'worker', 2, 'storefront')],
      edges: [['cart-cleanup', 'session-cache']],
    }),
    deliveries: [
      routineDeploy('cart-api', -160),
      prom([
        {
          labels: {
            alertname: 'RedisTooManyConnections',
            service: 'redis-exporter',
            job: 'redis-exporter',
            instance: 'session-cache-0:9121',
            severity: 'warning',
          },
          annotations: {
            summary: 'Redis too many connections (instance session-cache-0:9121)',
            description:
              'Redis is running out of connections (> 90% used)\n  VALUE = 9,998 of maxclients 10,000; CLIENT LIST by name: cart-cleanup 9,412, cart-api 480',
          },
          at: -2,
        },
      ]),
      sentry(
        {
          project: 'cart-api',
          type: 'ReplyError',
          value: 'ERR max number of clients reached',
          at: 0,
          frames: [{ filename: 'src/redis.ts', lineno: 18, function: 'connect' }],
        },
        { page: true },
      ),
      otherDeploy('search-api', 3),
    ],
    truth: {
      subject: ['cart-cleanup'],
      mechanism: [/max(imum)? (number of )?clients|maxclients|connections?|leak/i],
      oneHopShort: ['session-cache', 'session-cache-0', 'cart-api'],
      action: [/stop|suspend|kill|disable|pause|client kill/i, /cart-cleanup/i],
    },
  },
];
