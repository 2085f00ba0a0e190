/** Class 2: alerts whose service label is the exporter's or the tool's, not the workload's (part B). */
import { flappingDisk, otherDeploy, routineDeploy, throttlingNoise } from '../noise.js';
import { datadogDefault, grafana, prom, sentry } from '../payloads/alerts.js';
import { flux } from '../payloads/changes.js';
import { deploymentStatus } from '../payloads/github.js';
import {
  cpuThrottling,
  filesystemAlmostFull,
  helmChartNaming,
  hpaMaxedOut,
  jobFailed,
  podNotReady,
  probeFailed,
  probeSlow,
  pvcFillingUp,
  statefulSetMismatch,
} from '../payloads/kube.js';
import { node, shop } from '../worlds.js';
import type { CorpusIncident } from '../types.js';

export const attributionB: CorpusIncident[] = [
  {
    id: 'attribution-node-exporter-wal-disk-orders-db',
    class: 'attribution',
    title: 'node-exporter says a filesystem is full on orders-db-1: WAL kept for a dead replication slot',
    story:
      'The Debezium connector feeding the data warehouse was stopped for a migration and its replication slot debezium_orders stayed. orders-db kept ' +
      'every WAL segment for it until /var/lib/postgresql on orders-db-1 filled; writes failed. Dropping the slot freed 380 GB.',
    world: shop({
      runbooks: [
        {
          title: 'Postgres disk full',
          service: 'orders-db',
          tags: ['postgres', 'disk', 'wal'],
          content:
            "1. `select slot_name, active, pg_size_pretty(pg_wal_lsn_diff(pg_current_wal_lsn(), restart_lsn)) from pg_replication_slots` — an inactive slot holds WAL.\n2. Drop the inactive slot after checking with its owner: `select pg_drop_replication_slot('<slot>')`.\n3. If no slot holds WAL, grow the volume.",
        },
      ],
    }),
    deliveries: [
      routineDeploy('checkout-api', -270),
      otherDeploy('recommendations-api', -33),
      prom([
        {
          labels: {
            alertname: 'PostgresqlReplicationSlotInactive',
            service: 'postgres-exporter',
            job: 'postgres-exporter',
            instance: 'orders-db-1.db.internal:9187',
            slot_name: 'debezium_orders',
            severity: 'warning',
          },
          annotations: {
            summary: 'Replication slot debezium_orders inactive',
            description:
              'Replication slot debezium_orders on orders-db-1.db.internal:9187 has been inactive for 3 days and retains 381 GB of WAL.',
          },
          at: -30,
        },
      ]),
      prom([filesystemAlmostFull('orders-db-1.db.internal:9100', '/var/lib/postgresql', 0, 0.41, '/dev/nvme1n1')], {
        groupBy: ['alertname', 'instance'],
        page: true,
      }),
      sentry({
        project: 'checkout-api',
        type: 'psycopg2.errors.DiskFull',
        value: 'could not extend file "base/16384/2619": No space left on device\nHINT:  Check free disk space.',
        at: 1,
        frames: [{ filename: 'checkout/orders/repository.py', lineno: 112, function: 'save_order' }],
      }),
      flappingDisk(2),
    ],
    truth: {
      subject: ['debezium_orders', 'orders-db', 'orders-db-1'],
      mechanism: [/replication slot|debezium|WAL (retained|kept|held)|retain(s|ed)? WAL|holds? WAL/i],
      oneHopShort: ['checkout-api', 'order-worker'],
      action: [/drop|remove|delete|advance/i, /slot|debezium/i],
    },
  },
  {
    id: 'attribution-kafka-pvc-full',
    class: 'attribution',
    title: 'kubelet reports a Kafka broker volume full; producers in order-worker time out',
    story:
      'Broker 2 of the events cluster hosts the leader of a 2-TB compacted topic whose retention was never set. Its PersistentVolume (data-kafka-2) filled; the ' +
      "broker went offline and producers timed out. The alerts came from the kube-prometheus-stack chart's kubelet and kube-state-metrics jobs, with the StatefulSet name only.",
    world: shop({
      nodes: [node('events-kafka', 'queue', 9, 'platform')],
      edges: [
        ['order-worker', 'events-kafka'],
        ['checkout-api', 'events-kafka'],
      ],
    }),
    deliveries: [
      routineDeploy('order-worker', -200),
      otherDeploy('search-api', -17),
      prom(
        [helmChartNaming(pvcFillingUp('kafka', 'data-kafka-2', 'ip-10-0-8-31.eu-west-1.compute.internal', -6, 0.8))],
        {
          groupBy: ['namespace'],
        },
      ),
      prom([helmChartNaming(statefulSetMismatch('kafka', 'kafka', 0))], { groupBy: ['namespace'], page: true }),
      sentry({
        project: 'order-worker',
        type: 'confluent_kafka.KafkaException',
        value: 'KafkaError{code=_MSG_TIMED_OUT,val=-192,str="Local: Message timed out"} producing to order-events',
        at: 2,
        frames: [{ filename: 'fulfilment/events.py', lineno: 40, function: 'publish' }],
      }),
    ],
    truth: {
      subject: ['kafka', 'data-kafka-2', 'events-kafka'],
      mechanism: [/disk|volume|space|full|retention|storage/i],
      oneHopShort: ['order-worker', 'checkout-api'],
      action: [/retention|expand|resize|free|delete|grow|increase/i, /kafka/i],
    },
  },
  {
    id: 'attribution-ksm-job-failed-reindex',
    class: 'attribution',
    title: 'The nightly reindex CronJob failed and left the products alias pointing nowhere',
    story:
      'reindex-products builds a new index and swaps the products alias. Tonight it ran out of heap half-way, after deleting the old index; the alias pointed nowhere ' +
      'and catalog searches returned index_not_found. kube-state-metrics reported KubeJobFailed with the job name only.',
    world: shop(),
    deliveries: [
      routineDeploy('search-api', -600),
      prom([jobFailed('search', 'reindex-products-29384720', -25)], { groupBy: ['namespace'] }),
      otherDeploy('payments-api', -14),
      sentry(
        {
          project: 'search-api',
          type: 'elasticsearch.NotFoundError',
          value:
            "NotFoundError(404, 'index_not_found_exception', 'no such index [products]', products, index_or_alias)",
          at: 0,
          frames: [{ filename: 'search/query.py', lineno: 88, function: 'search_products' }],
        },
        { page: true },
      ),
      prom([
        {
          labels: { alertname: 'HighErrorRate', service: 'search-api', severity: 'critical', namespace: 'search' },
          annotations: { description: '5xx responses are 97% of search-api requests.' },
          at: 1,
        },
      ]),
      throttlingNoise(3),
    ],
    truth: {
      subject: ['reindex-products', 'reindex-products-29384720'],
      mechanism: [/job|reindex|index|alias|cron/i],
      oneHopShort: ['search-index', 'search-api'],
      action: [/re-?run|restore|alias|reindex|point|recreate|rebuild/i, /reindex|alias|index|products/i],
    },
  },
  {
    id: 'attribution-cadvisor-throttling-recommendations',
    class: 'attribution',
    title: 'cAdvisor throttling and a maxed HPA: recommendations-api is CPU-limited at 500m',
    story:
      "recommendations-api still had the 500m CPU limit from its first manifest. Traffic had grown slowly for months; today's campaign pushed it over: 78% " +
      'of periods throttled, the HPA at its maximum, the blackbox probe slow. Raising the limit to 2 cores fixed it; nothing had changed.',
    world: shop(),
    deliveries: [
      routineDeploy('recommendations-api', -2000),
      otherDeploy('cart-api', -44),
      prom([helmChartNaming(hpaMaxedOut('discovery', 'recommendations-api', -9))], { groupBy: ['namespace'] }),
      prom(
        [
          helmChartNaming(
            cpuThrottling('discovery', 'recommendations-api', 'ip-10-0-6-77.eu-west-1.compute.internal', -4, 78),
          ),
        ],
        {
          groupBy: ['namespace'],
        },
      ),
      prom([probeSlow('http://recommendations-api.discovery.svc:8080/health', 0, 3.1)], {
        groupBy: ['alertname'],
        page: true,
      }),
      datadogDefault({
        title: 'Homepage carousel timeouts',
        scope: 'service:web-frontend,env:production',
        body: 'web-frontend: 9% of GET /api/recommendations time out at 2s.',
        at: 2,
        priority: 'P3',
      }),
    ],
    truth: {
      subject: ['recommendations-api'],
      mechanism: [/CPU[- ]limit|limits?\.cpu|500m|limited to|CPU quota/i],
      oneHopShort: ['web-frontend', 'catalog-api'],
      action: [/limit|cpu|quota/i, /recommendations-api/i],
    },
  },
  {
    id: 'attribution-grafana-kpi-folder-cart-deploy',
    class: 'attribution',
    title: 'A Grafana business-KPI rule with no service label fires after a cart-api deploy',
    story:
      'The "Checkout conversion" rule lives in the Business KPIs folder and carries only team labels. cart-api deployment 66031 dropped the coupon field ' +
      'from the cart payload; checkout rejected carts with coupons. The only other page was the cart-api Sentry issue.',
    world: shop(),
    deliveries: [
      routineDeploy('checkout-api', -290),
      deploymentStatus(
        { repo: 'cart-api', id: 66031, sha: '9b1d3f5a7c9e1b3d5f7a9c1e3b5d7f9a1c3e5b7d', at: -19 },
        { note: 'the cause' },
      ),
      otherDeploy('search-api', -7),
      grafana(
        [
          {
            labels: {
              alertname: 'Checkout conversion below baseline',
              grafana_folder: 'Business KPIs',
              team: 'growth',
              severity: 'critical',
            },
            annotations: {
              summary: 'Checkout conversion 38% below the same hour last week',
              description: 'Orders per cart-view are 1.9% (baseline 3.1%).',
            },
            at: 0,
            values: { A: 0.019, B: 0.031, C: 1 },
            dashboard: 'business-kpis',
          },
        ],
        { page: true },
      ),
      sentry({
        project: 'cart-api',
        type: 'ValidationError',
        value: "cart 4410921: 'coupon' is a required property (checkout contract v3)",
        at: 1,
        frames: [{ filename: 'cart/serializers.py', lineno: 95, function: 'to_checkout' }],
      }),
    ],
    truth: {
      subject: ['cart-api', '66031', '9b1d3f5'],
      mechanism: [/deploy|release|rollout|66031|9b1d3f5/i],
      oneHopShort: ['checkout-api', 'session-cache'],
      action: [/roll(ing)?[ -]?back|revert|undo/i, /cart-api|66031|9b1d3f5/i],
    },
  },
  {
    id: 'attribution-grafana-nodata-order-worker-scaled-to-zero',
    class: 'attribution',
    title: 'DatasourceNoData on order-worker: a Flux change scaled it to zero',
    story:
      'A kustomization patch meant for staging set order-worker replicas to 0 in production. Flux applied it; the workers vanished and so did their metrics, ' +
      "so Grafana's rule went NoData rather than firing. Orders queued for 25 minutes before anyone looked at the queue.",
    world: shop(),
    deliveries: [
      routineDeploy('order-worker', -310),
      flux(
        {
          kind: 'Kustomization',
          name: 'fulfilment',
          namespace: 'flux-system',
          reason: 'Progressing',
          message:
            'Deployment/fulfilment/order-worker configured\nHorizontalPodAutoscaler/fulfilment/order-worker deleted',
          revision: 'main@sha1:2c4e6a8b0d1f3a5c7e9b1d3f5a7c9e0b2d4f6a8c',
          at: -27,
        },
        { note: 'the cause' },
      ),
      otherDeploy('accounts-api', -12),
      grafana(
        [
          {
            labels: {
              alertname: 'DatasourceNoData',
              datasource_uid: 'P1809F7CD0C75ACF3',
              grafana_folder: 'Fulfilment',
              ref_id: 'A',
              rulename: 'order-worker processed jobs',
              team: 'fulfilment',
            },
            annotations: { summary: 'order-worker processed fewer than 10 jobs per minute' },
            at: 0,
          },
        ],
        { page: true },
      ),
      prom([
        {
          labels: {
            alertname: 'RabbitmqQueueBacklog',
            service: 'orders-queue',
            queue: 'orders.created',
            vhost: 'shop',
            severity: 'warning',
          },
          annotations: { description: 'orders.created has 21,877 ready messages and 0 consumers.' },
          at: 2,
        },
      ]),
      flappingDisk(3),
    ],
    truth: {
      subject: ['order-worker', '2c4e6a8', 'fulfilment'],
      mechanism: [/replicas|scaled|zero|kustomiz|flux|config|change|2c4e6a8/i],
      oneHopShort: ['orders-queue'],
      action: [/revert|roll(ing)?[ -]?back|scale|restore|replicas/i, /order-worker|2c4e6a8|fulfilment/i],
    },
  },
  {
    id: 'attribution-es-exporter-cluster-red',
    class: 'attribution',
    title: 'search-api pods not ready and a failing probe: the search-index cluster is red',
    story:
      'Two search-index data nodes were replaced by the autoscaler at once and a primary shard of products had no copy left. elasticsearch_exporter ' +
      'said ClusterRed (service elasticsearch-exporter); search-api failed its readiness checks. A search-api deploy 40 minutes earlier drew the first look.',
    world: shop(),
    deliveries: [
      otherDeploy('search-api', -40),
      prom([
        {
          labels: {
            alertname: 'ElasticsearchClusterRed',
            cluster: 'search-index',
            job: 'elasticsearch-exporter',
            instance: '10.2.9.14:9114',
            service: 'elasticsearch-exporter',
            namespace: 'search',
            severity: 'critical',
          },
          annotations: {
            summary: 'Elasticsearch Cluster Red (instance 10.2.9.14:9114)',
            description: 'Elastic Cluster Red status\n  VALUE = 1\n  LABELS = map[cluster:search-index]',
          },
          at: -5,
        },
      ]),
      prom([podNotReady('search', 'search-api', -1)], { groupBy: ['namespace'] }),
      prom([probeFailed('http://search-api.search.svc:8080/ready', 0)], { groupBy: ['alertname'], page: true }),
      throttlingNoise(2),
    ],
    truth: {
      subject: ['search-index', 'elasticsearch'],
      mechanism: [/red|shard|elasticsearch|unassigned|cluster|down|fail/i],
      oneHopShort: ['search-api'],
      action: [/search-index|elasticsearch|shard/i],
    },
  },
];
