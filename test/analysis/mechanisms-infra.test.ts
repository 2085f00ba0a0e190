/**
 * Mechanisms on nodes, storage and datastores, and changes in their less common shapes: each
 * test is one incident as its alerts read, checking the kept cause, its subject and first action.
 */
import { describe, expect, it } from 'vitest';
import { analyzeInvestigation, type AlertObservation } from '../../src/analysis/investigation/index.js';
import { alert, deploy, dependency, input, minutes, topologyWith } from './builders.js';

const firstAction = (r: ReturnType<typeof analyzeInvestigation>) => r.recommendedActions[0] ?? '';
const datastore = (name: string, type: 'database' | 'cache' | 'queue' = 'database') =>
  topologyWith(dependency({ name, type, alerting: true }));
const other = (o: Partial<AlertObservation> & { text: string }) => alert({ incidentId: 'inc_2', ...o });

describe('nodes', () => {
  it('a NotReady node strands a StatefulSet: cordon and drain the node', () => {
    const result = analyzeInvestigation(
      input({
        alerts: [alert({ text: 'Blackbox probe failed (instance tcp://inventory-db.fulfilment.svc:5432)' })],
        correlated: [
          other({
            alertName: 'KubeNodeNotReady',
            service: null,
            labels: { node: 'ip-10-0-3-9.eu-west-1.compute.internal' },
            text: 'ip-10-0-3-9.eu-west-1.compute.internal has been unready for more than 15 minutes.',
          }),
          other({
            alertName: 'KubeStatefulSetReplicasMismatch',
            service: 'inventory-db',
            text: 'StatefulSet fulfilment/inventory-db has not matched the expected number of replicas for longer than 15 minutes.',
          }),
        ],
        topology: datastore('inventory-db'),
      }),
    );
    expect(result.hypotheses[0]).toMatchObject({
      kind: 'node_failure',
      subject: 'ip-10-0-3-9.eu-west-1.compute.internal',
    });
    expect(firstAction(result)).toMatch(/^Cordon and drain ip-10-0-3-9/);
  });
});

describe('datastores', () => {
  it('WAL held by an inactive replication slot: drop the slot, not just grow the disk', () => {
    const result = analyzeInvestigation(
      input({
        alerts: [alert({ text: 'could not write to file "pg_wal/xlogtemp.412": No space left on device' })],
        correlated: [
          other({
            service: 'orders-db',
            text: 'Replication slot debezium_orders on orders-db-1:9187 has been inactive for 3 days and retains 381 GB of WAL.',
          }),
        ],
        topology: datastore('orders-db'),
      }),
    );
    expect(result.hypotheses[0]).toMatchObject({ kind: 'replication_slot', subject: 'debezium_orders' });
    expect(firstAction(result)).toMatch(/^Drop replication slot debezium_orders/);
  });

  it('a replica behind its primary because a report holds replay: cancel that query', () => {
    const result = analyzeInvestigation(
      input({
        alerts: [alert({ text: 'OrderNotFound: order 88213 does not exist' })],
        correlated: [
          other({
            service: 'orders-db',
            labels: { instance: 'orders-db-ro-0:9187' },
            text: 'PostgreSQL replication lag is going up (> 30s), VALUE = 846; replay paused by a conflicting query (pid 7731, usename analyst_ro, 38 min).',
          }),
        ],
        topology: datastore('orders-db'),
      }),
    );
    expect(result.hypotheses[0]).toMatchObject({ kind: 'replication_lag', subject: 'orders-db-ro' });
    expect(firstAction(result)).toMatch(/^Cancel the query pid 7731 of analyst_ro on replica orders-db-ro/);
  });

  it('a volume out of burst credits: provision IOPS', () => {
    const result = analyzeInvestigation(
      input({
        alerts: [alert({ text: 'checkout-api p99 is 3.8s; time is spent in orders-db queries' })],
        correlated: [
          other({
            service: null,
            provider: 'datadog',
            text: 'aws.ebs.burst_balance is 0% on vol-0a1b2c3d4e5f67890 (orders-db-data, gp2 1000 GiB) for the last 15 minutes.',
          }),
        ],
        topology: datastore('orders-db'),
      }),
    );
    expect(result.hypotheses[0]).toMatchObject({ kind: 'io_saturation', subject: 'orders-db' });
    expect(firstAction(result)).toMatch(/volume vol-0a1b2c3d4e5f67890 more I\/O: raise its provisioned IOPS/);
  });

  it('one client holding the connections of a cache: stop it and kill its clients', () => {
    const result = analyzeInvestigation(
      input({
        alerts: [alert({ text: 'redis.exceptions.ConnectionError: max number of clients reached' })],
        correlated: [
          other({
            service: 'session-cache',
            text: 'Redis is running out of connections (> 90% used): 9,998 of maxclients 10,000; CLIENT LIST by name: cart-cleanup 9,412, cart-api 480',
          }),
        ],
        topology: datastore('session-cache', 'cache'),
      }),
    );
    expect(result.hypotheses[0]).toMatchObject({ kind: 'connection_hog', subject: 'cart-cleanup' });
    expect(firstAction(result)).toMatch(/^Stop cart-cleanup/);
  });

  it('a consumer group kicked out and rejoining: a rebalance storm, fixed by the poll settings', () => {
    const result = analyzeInvestigation(
      input({
        alerts: [
          alert({
            service: 'loyalty-worker',
            labels: { consumergroup: 'loyalty-worker', topic: 'order-events' },
            text: 'Consumer group loyalty-worker is 412,930 messages behind on order-events; members joined the group 37 times in 30 minutes.',
          }),
        ],
      }),
    );
    expect(result.hypotheses[0]).toMatchObject({ kind: 'consumer_lag', subject: 'loyalty-worker' });
    expect(result.rootCause).toMatch(/rebalance storm/);
    expect(firstAction(result)).toMatch(/max\.poll\.interval\.ms/);
  });
});

describe('limits', () => {
  it('a throttled CPU limit with the autoscaler at its maximum: raise the limit', () => {
    const result = analyzeInvestigation(
      input({
        alerts: [
          alert({
            text: '78% throttling of CPU in namespace shop for container checkout-api in pod checkout-api-7d9f8b6c5-x2x9k.',
          }),
        ],
        correlated: [
          other({ text: 'HPA shop/checkout-api has been running at max replicas for longer than 15 minutes.' }),
        ],
      }),
    );
    expect(result.hypotheses[0]).toMatchObject({ kind: 'cpu_limit', subject: 'checkout-api' });
    expect(firstAction(result)).toMatch(/^Raise checkout-api's CPU limit/);
  });

  it('EMFILE: file descriptors, not the dependencies', () => {
    const result = analyzeInvestigation(
      input({
        alerts: [alert({ text: 'accept4() failed (24: Too many open files); process_open_fds 65,536 of 65,536' })],
      }),
    );
    expect(result.hypotheses[0]).toMatchObject({ kind: 'fd_exhaustion', subject: 'checkout-api' });
  });

  it('every gunicorn worker busy behind a slow dependency: more concurrency and a shorter timeout', () => {
    const result = analyzeInvestigation(
      input({ alerts: [alert({ text: '[CRITICAL] WORKER TIMEOUT (pid:4211); gunicorn 4 sync workers all busy' })] }),
    );
    expect(result.hypotheses[0]).toMatchObject({ kind: 'worker_saturation', subject: 'checkout-api' });
    expect(firstAction(result)).toMatch(/gunicorn/);
  });

  it('a hot key saturates one cache shard', () => {
    const result = analyzeInvestigation(
      input({
        alerts: [alert({ text: 'cart p99 2.4s' })],
        correlated: [
          other({
            service: 'session-cache',
            text: 'session-cache-2 main thread CPU 99%; ops/s 187k (others 9k); top key by ops: banner:bf-2025:clicks (INCR)',
          }),
        ],
        topology: datastore('session-cache', 'cache'),
      }),
    );
    expect(result.hypotheses[0]).toMatchObject({ kind: 'hot_key', subject: 'banner:bf-2025:clicks' });
  });
});

describe('jobs and monitoring', () => {
  it('a job that failed half-way and left an alias pointing nowhere', () => {
    const result = analyzeInvestigation(
      input({
        alerts: [
          alert({
            text: "elasticsearch.NotFoundError: NotFoundError(404, 'index_not_found_exception', 'no such index [products]')",
          }),
        ],
        correlated: [
          other({
            alertName: 'KubeJobFailed',
            service: 'reindex-products',
            labels: { job: 'kube-state-metrics', job_name: 'reindex-products-29384720' },
            text: 'Job search/reindex-products-29384720 failed to complete.',
          }),
        ],
      }),
    );
    expect(result.hypotheses[0]).toMatchObject({ kind: 'failed_job', subject: 'reindex-products' });
    expect(firstAction(result)).toMatch(/re-run reindex-products/);
  });

  it('a schema migration holding a lock: cancel the migration', () => {
    const result = analyzeInvestigation(
      input({
        alerts: [
          alert({
            text: 'canceling statement due to statement timeout; waiting for AccessShareLock on relation orders',
          }),
        ],
        correlated: [other({ service: 'orders-db', text: 'PostgreSQL has 212 sessions waiting for a lock on orders' })],
        changes: [
          deploy({
            kind: 'deployment',
            changeType: 'ci_workflow',
            deploymentId: null,
            occurredAt: minutes(-9),
            title: 'Workflow db-migrate of example-shop/orders@50122ab succeeded',
            description: 'alembic upgrade head: ALTER TABLE orders ADD COLUMN gift_note text NOT NULL',
          }),
        ],
        topology: datastore('orders-db'),
      }),
    );
    expect(result.hypotheses[0]).toMatchObject({ kind: 'runaway_job', subject: 'db-migrate' });
    expect(firstAction(result)).toMatch(/^Cancel the migration db-migrate on orders-db/);
  });

  it('Grafana cannot query its data source: a monitoring gap, not the services', () => {
    const result = analyzeInvestigation(
      input({
        incident: {
          ...input().incident,
          service: null,
          title: '[DatasourceError] checkout-api 5xx error rate above 5%',
        },
        alerts: [
          alert({
            service: null,
            alertName: 'DatasourceError',
            text: 'Error: failed to execute query A: Post "http://prometheus-k8s.monitoring.svc:9090/api/v1/query_range": dial tcp 10.2.4.1:9090: connect: connection refused',
          }),
        ],
        topology: { known: false, serviceType: null, dependencies: [], dependents: [] },
      }),
    );
    expect(result.hypotheses[0]).toMatchObject({ kind: 'datasource_failure', subject: 'prometheus-k8s' });
  });
});

describe('changes in other shapes', () => {
  it('a kill switch turned off is turned back on', () => {
    const result = analyzeInvestigation(
      input({
        alerts: [alert({ text: 'search_bot_protection disabled: 40x bot traffic on /v1/search' })],
        changes: [
          deploy({
            changeType: 'feature_flag',
            provider: 'flagsmith',
            flag: 'search_bot_protection',
            state: 'disabled',
            environment: 'Production',
            deploymentId: null,
            sha: null,
            occurredAt: minutes(-10),
            title: 'Flag search_bot_protection disabled in Production',
          }),
        ],
      }),
    );
    expect(result.hypotheses[0]).toMatchObject({ kind: 'feature_flag', subject: 'search_bot_protection' });
    expect(firstAction(result)).toMatch(/^Turn feature flag search_bot_protection back on in Production/);
  });

  it('a release no deployment followed is the deploy, and the errors naming its library make it direct', () => {
    const result = analyzeInvestigation(
      input({
        alerts: [
          alert({
            text: "sqlalchemy.exc.ArgumentError: Textual SQL expression 'SELECT * FROM variants' should be declared as text()",
          }),
        ],
        changes: [
          deploy({
            kind: 'code_change',
            changeType: 'release',
            version: 'v4.2.0',
            deploymentId: null,
            occurredAt: minutes(-9),
            title: 'Release v4.2.0 of example-shop/checkout-api: SQLAlchemy 2.0',
          }),
        ],
      }),
    );
    expect(result.hypotheses[0]).toMatchObject({ kind: 'bad_deploy', evidence: 'direct' });
    expect(firstAction(result)).toMatch(/^Roll back release v4\.2\.0 of checkout-api/);
  });
});

describe('disks', () => {
  it('reads "available" as what is left, not what is used', () => {
    const result = analyzeInvestigation(
      input({
        alerts: [
          alert({
            service: null,
            labels: { instance: 'orders-db-1.db.internal:9100', mountpoint: '/var/lib/postgresql' },
            text: 'Filesystem on /dev/nvme1n1, mounted on /var/lib/postgresql, at orders-db-1.db.internal:9100 has only 0.41% available space left.',
          }),
        ],
      }),
    );
    expect(result.hypotheses[0]!.kind).toBe('disk_full');
    expect(result.rootCause).toContain('(99.59% used)');
  });
});

describe('words that only look like a mechanism', () => {
  it('a stack trace through gunicorn is not worker saturation, and an API throttling requests is not a CPU limit', () => {
    const result = analyzeInvestigation(
      input({
        alerts: [
          alert({
            provider: 'sentry',
            text: 'KeyError: address_line_2\n  File "/usr/local/lib/python3.12/site-packages/gunicorn/workers/sync.py", line 135, in handle',
          }),
          alert({ text: 'partner-api throttled 62% of our requests (429)' }),
        ],
      }),
    );
    const kinds = result.hypotheses.map((h) => h.kind);
    expect(kinds).not.toContain('worker_saturation');
    expect(kinds).not.toContain('cpu_limit');
  });
});
