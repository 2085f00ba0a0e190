/**
 * The investigation engine against realistic incidents. Each scenario builds a tenant's world
 * through the real api (topology, runbooks, GitHub deployment and push webhooks, alerts from
 * Alertmanager, Datadog, Sentry and the generic webhook, which open the incidents), then runs
 * every agent activity and the synthesis with the built-in analyzer, and checks that the root
 * cause names the planted cause and that the first recommended action addresses it.
 */
import { MockActivityEnvironment } from '@temporalio/testing';
import { and, eq, like } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createInvestigationActivities } from '../../src/activities/investigation/index.js';
import type { HypothesisKind } from '../../src/analysis/investigation/index.js';
import {
  agentActivityNames,
  type AgentReport,
  type InvestigationRequest,
  type SynthesisResult,
} from '../../src/analysis/investigation-types.js';
import { createBuiltinProvider } from '../../src/analysis/providers.js';
import { agentRoles } from '../../src/analysis/types.js';
import { auditLog } from '../../src/db/schema/audit.js';
import { events } from '../../src/db/schema/events.js';
import { incidents } from '../../src/db/schema/incidents.js';
import {
  evidenceItems,
  investigationContext,
  investigations,
  type EvidenceType,
} from '../../src/db/schema/investigation.js';
import { startTestService, type TestService } from '../helpers/service.js';
import { createKey, postWebhook } from '../helpers/webhooks.js';
import { alertmanager, datadog, generic, githubDeployment, githubPush, sentry } from './payloads.js';

let svc: TestService;
let engine: ReturnType<typeof createInvestigationActivities>;
const activityEnv = new MockActivityEnvironment();
/** Runs an activity function inside a mock activity context (heartbeats go nowhere). */
const inActivity = <P extends unknown[], R>(fn: (...args: P) => Promise<R>, ...args: P): Promise<R> =>
  activityEnv.run(fn, ...args) as Promise<R>;
const outcomes: Array<{ name: string; correct: boolean }> = [];

beforeAll(async () => {
  svc = await startTestService({ withoutWorker: true, withoutDispatcher: true });
  engine = createInvestigationActivities({ db: svc.database.db, model: createBuiltinProvider() });
});

afterAll(async () => {
  const correct = outcomes.filter((o) => o.correct).length;
  console.log(`scenario accuracy: ${correct}/${outcomes.length}`);
  for (const o of outcomes.filter((x) => !x.correct)) console.log(`  missed: ${o.name}`);
  await svc?.stop();
});

/** One tenant's world, built through the api. */
class World {
  private readonly nodes = new Map<string, string>();
  private constructor(
    readonly tenantId: string,
    readonly admin: string,
    private readonly key: string,
  ) {}

  static async create(): Promise<World> {
    const tenant = await svc.newTenant({ plan: 'plan_business' });
    const key = await createKey(svc, tenant.admin);
    return new World(tenant.tenantId, tenant.admin, key.key);
  }

  async node(name: string, type: 'api' | 'worker' | 'database' | 'cache' | 'queue', criticality = 5): Promise<void> {
    const res = await svc.api('POST', '/v1/graph/nodes', {
      token: this.admin,
      body: { name, type, criticality, team: 'platform' },
    });
    expect(res.status, JSON.stringify(res.body)).toBe(201);
    this.nodes.set(name, res.body.serviceId);
  }

  /** `source` depends on `target`. */
  async edge(source: string, target: string): Promise<void> {
    const res = await svc.api('POST', '/v1/graph/edges', {
      token: this.admin,
      body: { sourceServiceId: this.nodes.get(source), targetServiceId: this.nodes.get(target) },
    });
    expect(res.status, JSON.stringify(res.body)).toBe(201);
  }

  async runbook(title: string, service: string | undefined, tags: string[], content: string): Promise<void> {
    const res = await svc.api('POST', '/v1/runbooks', {
      token: this.admin,
      body: { title, ...(service ? { service } : {}), tags, content },
    });
    expect(res.status, JSON.stringify(res.body)).toBe(201);
  }

  async send(provider: string, body: object, headers: Record<string, string> = {}): Promise<string[]> {
    const res = await postWebhook(svc, this.tenantId, provider, body, { key: this.key, headers });
    expect(res.status, JSON.stringify(res.body)).toBe(202);
    return res.body.incidentIds as string[];
  }

  async github(delivery: { body: object; headers: Record<string, string> }): Promise<void> {
    const res = await postWebhook(svc, this.tenantId, 'github', delivery.body, {
      key: this.key,
      headers: delivery.headers,
    });
    expect(res.status, JSON.stringify(res.body)).toBe(202);
    expect(res.body.eventIds).toHaveLength(1);
  }
}

interface Investigated {
  request: InvestigationRequest;
  reports: AgentReport[];
  result: SynthesisResult;
}

async function runAgents(request: InvestigationRequest): Promise<AgentReport[]> {
  const reports: AgentReport[] = [];
  for (const role of agentRoles) reports.push(await inActivity(engine[agentActivityNames[role]], request));
  return reports;
}

/** Creates the running investigation row (beginInvestigation's part), runs every agent twice and synthesises. */
async function investigate(world: World, incidentId: string): Promise<Investigated> {
  const db = svc.database.db;
  await db.insert(investigations).values({ incidentId, tenantId: world.tenantId, status: 'running', run: 1 });
  const request: InvestigationRequest = { incidentId, tenantId: world.tenantId, run: 1, workflowId: incidentId };
  const reports = await runAgents(request);
  const stored = await db.select().from(evidenceItems).where(eq(evidenceItems.incidentId, incidentId));
  // A retried agent (or a second pass) stores nothing twice and reports the same items.
  const again = await runAgents(request);
  const storedAgain = await db.select().from(evidenceItems).where(eq(evidenceItems.incidentId, incidentId));
  expect(storedAgain.map((e) => e.id).sort()).toEqual(stored.map((e) => e.id).sort());
  expect(again.map((r) => r.evidenceIds)).toEqual(reports.map((r) => r.evidenceIds));
  const result = await inActivity(engine.synthesizeInvestigation, { ...request, reports });
  return { request, reports, result };
}

interface Scenario {
  name: string;
  /** Builds the world and returns the incident an SRE would investigate. */
  build(world: World): Promise<string>;
  hypothesis: HypothesisKind;
  rootCause: RegExp[];
  firstAction: RegExp[];
  evidence: EvidenceType[];
}

const scenarios: Scenario[] = [
  {
    name: 'bad deploy of the failing service',
    hypothesis: 'bad_deploy',
    async build(w) {
      await w.node('web-frontend', 'api', 8);
      await w.node('checkout-api', 'api', 9);
      await w.node('orders-db', 'database', 9);
      await w.node('search-api', 'api');
      await w.edge('web-frontend', 'checkout-api');
      await w.edge('checkout-api', 'orders-db');
      await w.runbook(
        'Checkout high error rate',
        'checkout-api',
        ['checkout', '5xx'],
        '1. Check the 5xx dashboard of checkout-api\n2. Roll back the last deployment with `deployctl rollback checkout-api`\n3. Page the payments team',
      );
      await w.github(
        githubDeployment({
          repo: 'checkout-api',
          id: 4201,
          sha: '0aa11bb22cc33dd44ee55ff66aa77bb88cc99dd0',
          minutes: -300,
        }),
      );
      await w.github(
        githubPush({
          repo: 'checkout-api',
          minutes: -32,
          commits: [
            {
              id: '1a2b3c4d5e6f708192a3b4c5d6e7f8091a2b3c4d',
              message: 'Use Decimal for order totals',
              modified: ['checkout/orders/total.py'],
            },
          ],
        }),
      );
      await w.github(
        githubDeployment({
          repo: 'checkout-api',
          id: 4242,
          sha: '1a2b3c4d5e6f708192a3b4c5d6e7f8091a2b3c4d',
          minutes: -22,
          state: 'in_progress',
        }),
      );
      await w.github(
        githubDeployment({
          repo: 'checkout-api',
          id: 4242,
          sha: '1a2b3c4d5e6f708192a3b4c5d6e7f8091a2b3c4d',
          minutes: -21,
        }),
      );
      await w.github(
        githubDeployment({
          repo: 'search-api',
          id: 7310,
          sha: 'feedface00112233445566778899aabbccddeeff',
          minutes: -15,
        }),
      ); // unrelated service
      const [incident] = await w.send(
        'alertmanager',
        alertmanager([
          {
            labels: {
              alertname: 'HighErrorRate',
              service: 'checkout-api',
              severity: 'critical',
              env: 'production',
              namespace: 'shop',
            },
            annotations: {
              summary: 'checkout-api 5xx error rate above 5%',
              description: '5xx responses are 12.4% of checkout-api requests over the last 5 minutes (threshold 5%).',
            },
            startsAt: -10,
            expr: 'sum(rate(http_requests_total{service="checkout-api",code=~"5.."}[5m])) / sum(rate(http_requests_total{service="checkout-api"}[5m])) > 0.05',
          },
        ]),
      );
      await w.send(
        'sentry',
        sentry({
          project: 'checkout-api',
          type: 'TypeError',
          value: "unsupported operand type(s) for +: 'decimal.Decimal' and 'float'",
          minutes: -9,
          culprit: '/api/v1/orders',
          release: 'checkout-api@1a2b3c4',
          frames: [{ filename: 'checkout/orders/total.py', lineno: 42, function: 'compute_total' }],
        }),
      );
      return incident!;
    },
    rootCause: [/deployment 4242 of checkout-api/, /1a2b3c4/],
    firstAction: [
      /^Roll back deployment 4242 of checkout-api \(sha 1a2b3c4\) back to the previous release \(sha 0aa11bb\)/,
    ],
    evidence: ['deployment', 'code_change', 'alert', 'log', 'metric', 'runbook'],
  },
  {
    name: 'upstream database outage seen from three services',
    hypothesis: 'upstream_failure',
    async build(w) {
      for (const name of ['checkout-api', 'inventory-api']) await w.node(name, 'api', 8);
      await w.node('billing-worker', 'worker', 6);
      await w.node('orders-db', 'database', 10);
      await w.node('payments-api', 'api', 9);
      for (const name of ['checkout-api', 'inventory-api', 'billing-worker']) await w.edge(name, 'orders-db');
      await w.edge('checkout-api', 'payments-api');
      await w.runbook(
        'orders-db failover',
        'orders-db',
        ['postgres', 'failover'],
        '1. Confirm the primary is down: `patronictl -c /etc/patroni.yml list`\n2. Promote the replica: `patronictl failover orders-db --candidate orders-db-1`\n3. Point pgbouncer at the new primary and restart the clients',
      );
      await w.github(
        githubDeployment({
          repo: 'checkout-api',
          id: 3900,
          sha: 'aa00bb11cc22dd33ee44ff5566778899aabbccdd',
          minutes: -240,
        }),
      ); // hours earlier
      const [incident] = await w.send(
        'sentry',
        sentry({
          project: 'checkout-api',
          type: 'OperationalError',
          value:
            'could not connect to server: Connection refused. Is the server running on host "orders-db.internal" (10.0.3.17) and accepting TCP/IP connections on port 5432?',
          minutes: -8,
          frames: [{ filename: 'checkout/db.py', lineno: 31, function: 'connect' }],
        }),
      );
      await w.send(
        'datadog',
        datadog({
          title: 'Error rate on inventory-api',
          body: 'inventory-api error rate is 31% for the last 5 minutes.\npsycopg2.OperationalError: connection to server at "orders-db.internal" (10.0.3.17), port 5432 failed: Connection refused',
          service: 'inventory-api',
          minutes: -9,
          metric: 'trace.http.request.errors',
        }),
      );
      await w.send(
        'alertmanager',
        alertmanager([
          {
            labels: { alertname: 'JobFailuresHigh', service: 'billing-worker', severity: 'high' },
            annotations: {
              summary: 'billing-worker jobs failing',
              description:
                'billing-worker failed 214 jobs in 5 minutes: database unreachable (orders-db:5432 connection refused).',
            },
            startsAt: -7,
          },
        ]),
      );
      return incident!;
    },
    rootCause: [
      /orders-db/,
      /common dependency|checkout-api, inventory-api and billing-worker|billing-worker, checkout-api and inventory-api/,
    ],
    firstAction: [/^Follow runbook 'orders-db failover' step 2: Promote the replica/],
    evidence: ['alert', 'log', 'runbook'],
  },
  {
    name: 'connection pool exhaustion',
    hypothesis: 'connection_pool',
    async build(w) {
      await w.node('checkout-api', 'api', 9);
      await w.node('orders-db', 'database', 10);
      await w.edge('checkout-api', 'orders-db');
      await w.runbook(
        'Postgres connection exhaustion',
        'orders-db',
        ['postgres', 'connections'],
        "## Step 1: Find the clients\nGroup `pg_stat_activity` by application_name.\n\n## Step 2: Terminate idle-in-transaction connections\n`select pg_terminate_backend(pid) from pg_stat_activity where state = 'idle in transaction'`\n\n## Step 3: Restart the leaking service\nRoll its pods one by one.",
      );
      await w.runbook(
        'Checkout latency',
        'checkout-api',
        ['latency'],
        '1. Check the p99 dashboard\n2. Scale checkout-api out',
      );
      await w.send(
        'alertmanager',
        alertmanager([
          {
            labels: {
              alertname: 'PostgresTooManyConnections',
              service: 'orders-db',
              severity: 'warning',
              instance: 'orders-db-0:9187',
            },
            annotations: {
              summary: 'orders-db connections near max_connections',
              description: 'orders-db uses 97% of max_connections (194/200).',
            },
            startsAt: -12,
            expr: 'sum(pg_stat_activity_count) / pg_settings_max_connections > 0.9',
          },
        ]),
      );
      const [incident] = await w.send(
        'sentry',
        sentry({
          project: 'checkout-api',
          type: 'sqlalchemy.exc.TimeoutError',
          value: 'QueuePool limit of size 20 overflow 10 reached, connection timed out, timeout 30.00',
          minutes: -10,
          frames: [{ filename: 'checkout/orders/repository.py', lineno: 88, function: 'load_order' }],
        }),
      );
      return incident!;
    },
    rootCause: [/[Cc]onnection pool exhaustion/, /orders-db/],
    firstAction: [
      /^Follow runbook 'Postgres connection exhaustion' step 2: Terminate idle-in-transaction connections/,
      /orders-db/,
    ],
    evidence: ['alert', 'log', 'metric', 'runbook'],
  },
  {
    name: 'expired TLS certificate',
    hypothesis: 'expired_certificate',
    async build(w) {
      await w.node('mobile-bff', 'api', 7);
      await w.node('public-api', 'api', 9);
      await w.edge('mobile-bff', 'public-api');
      await w.runbook(
        'TLS certificate renewal',
        undefined,
        ['tls', 'certificate'],
        '1. Check the expiry: `openssl s_client -connect <domain>:443 | openssl x509 -noout -enddate`\n2. Renew it: `certbot renew --cert-name <domain>`\n3. Reload the ingress controller',
      );
      await w.github(
        githubDeployment({
          repo: 'public-api',
          id: 812,
          sha: 'b1b2b3b4b5b6b7b8b9b0c1c2c3c4c5c6c7c8c9c0',
          minutes: -180,
        }),
      );
      const [incident] = await w.send(
        'alertmanager',
        alertmanager([
          {
            labels: {
              alertname: 'SSLCertExpired',
              service: 'public-api',
              severity: 'critical',
              instance: 'https://api.example.com',
              job: 'blackbox',
            },
            annotations: {
              summary: 'TLS certificate of api.example.com expired',
              description:
                'The TLS certificate of api.example.com expired 2 hours ago (probe_ssl_earliest_cert_expiry - time() < 0).',
            },
            startsAt: -6,
            expr: 'probe_ssl_earliest_cert_expiry{instance="https://api.example.com"} - time() < 0',
          },
        ]),
      );
      await w.send(
        'sentry',
        sentry({
          project: 'mobile-bff',
          type: 'requests.exceptions.SSLError',
          value:
            "HTTPSConnectionPool(host='api.example.com', port=443): Max retries exceeded with url: /v2/profile (Caused by SSLError(SSLCertVerificationError(1, '[SSL: CERTIFICATE_VERIFY_FAILED] certificate verify failed: certificate has expired (_ssl.c:1006)')))",
          minutes: -5,
        }),
      );
      return incident!;
    },
    rootCause: [/TLS certificate on api\.example\.com/, /expired/],
    firstAction: [/[Rr]enew/, /api\.example\.com/],
    evidence: ['alert', 'metric', 'runbook', 'deployment'],
  },
  {
    name: 'disk full on the database host',
    hypothesis: 'disk_full',
    async build(w) {
      await w.node('reporting-api', 'api', 5);
      await w.node('reporting-db', 'database', 7);
      await w.edge('reporting-api', 'reporting-db');
      await w.runbook(
        'Database disk full',
        'reporting-db',
        ['disk', 'postgres'],
        '1. Check `df -h /var/lib/postgresql` on the host\n2. Delete archived WAL older than 3 days to free space\n3. Expand the EBS volume and grow the filesystem',
      );
      await w.github(
        githubPush({
          repo: 'reporting-api',
          minutes: -130,
          commits: [
            {
              id: 'c4c4c4c4d5d5d5d5e6e6e6e6f7f7f7f7a8a8a8a8',
              message: 'Add quarterly revenue report',
              added: ['reports/quarterly.py'],
            },
          ],
        }),
      );
      await w.send(
        'alertmanager',
        alertmanager([
          {
            labels: {
              alertname: 'NodeFilesystemAlmostOutOfSpace',
              service: 'reporting-db',
              severity: 'critical',
              instance: 'reporting-db-1:9100',
              mountpoint: '/var/lib/postgresql',
              device: '/dev/nvme1n1',
              fstype: 'ext4',
            },
            annotations: {
              summary: 'Filesystem almost full',
              description:
                'Filesystem /var/lib/postgresql on reporting-db-1 has 1.8% available space left (98.2% used).',
            },
            startsAt: -15,
            expr: 'node_filesystem_avail_bytes{mountpoint="/var/lib/postgresql"} / node_filesystem_size_bytes < 0.05',
          },
        ]),
      );
      const [incident] = await w.send(
        'sentry',
        sentry({
          project: 'reporting-api',
          type: 'psycopg2.errors.DiskFull',
          value: 'could not extend file "base/16384/24576": No space left on device',
          minutes: -12,
          frames: [{ filename: 'reports/export.py', lineno: 120, function: 'write_rows' }],
        }),
      );
      return incident!;
    },
    rootCause: [/disk is full on reporting-db-1 \(\/var\/lib\/postgresql\)/],
    firstAction: [/^Follow runbook 'Database disk full' step \d/, /reporting-db-1|WAL|volume/],
    evidence: ['alert', 'log', 'metric', 'runbook', 'code_change'],
  },
  {
    name: 'memory leak after a code change',
    hypothesis: 'memory_leak',
    async build(w) {
      await w.node('recommendation-api', 'api', 6);
      await w.node('catalog-db', 'database', 7);
      await w.edge('recommendation-api', 'catalog-db');
      await w.github(
        githubPush({
          repo: 'recommendation-api',
          minutes: -185,
          commits: [
            {
              id: '5e6f7a8b9c0d1e2f3a4b5c6d7e8f9a0b1c2d3e4f',
              message: 'Cache user embeddings in a module-level dict',
              modified: ['recommender/embeddings.py'],
            },
            {
              id: '6f7a8b9c0d1e2f3a4b5c6d7e8f9a0b1c2d3e4f5a',
              message: 'Bump numpy to 1.26.4',
              modified: ['requirements.txt'],
            },
          ],
        }),
      );
      const [incident] = await w.send(
        'alertmanager',
        alertmanager([
          {
            labels: {
              alertname: 'ContainerMemoryNearLimit',
              service: 'recommendation-api',
              severity: 'warning',
              container: 'recommender',
              pod: 'recommendation-api-5c9d7-qx2lp',
            },
            annotations: {
              summary: 'recommendation-api memory near its limit',
              description: 'Container recommender memory working set is 1.94GiB of its 2GiB limit (97%).',
            },
            startsAt: -20,
            expr: 'container_memory_working_set_bytes{container="recommender"} / container_spec_memory_limit_bytes > 0.9',
          },
        ]),
      );
      await w.send(
        'alertmanager',
        alertmanager([
          {
            labels: {
              alertname: 'KubePodCrashLooping',
              service: 'recommendation-api',
              severity: 'high',
              pod: 'recommendation-api-5c9d7-qx2lp',
            },
            annotations: {
              description:
                'Pod recommendation-api-5c9d7-qx2lp restarted 6 times in 30 minutes (last state: OOMKilled).',
            },
            startsAt: -12,
          },
        ]),
      );
      return incident!;
    },
    rootCause: [/memory leak in recommendation-api/i, /5e6f7a8/, /Cache user embeddings/],
    firstAction: [/^Revert commit 5e6f7a8/, /recommendation-api/],
    evidence: ['code_change', 'alert', 'metric'],
  },
  {
    name: 'cache failure with fan-out',
    hypothesis: 'cache_failure',
    async build(w) {
      await w.node('web-frontend', 'api', 8);
      await w.node('session-api', 'api', 8);
      await w.node('profile-api', 'api', 6);
      await w.node('sessions-redis', 'cache', 8);
      await w.node('users-db', 'database', 9);
      for (const s of ['session-api', 'profile-api']) {
        await w.edge('web-frontend', s);
        await w.edge(s, 'sessions-redis');
        await w.edge(s, 'users-db');
      }
      await w.runbook(
        'Redis failover',
        'sessions-redis',
        ['redis', 'cache'],
        '1. Check replication: `redis-cli -h sessions-redis info replication`\n2. Fail over to the replica: `redis-cli -h sessions-sentinel sentinel failover sessions`\n3. Warm the cache: `sessionctl warm --top 100000`',
      );
      await w.send(
        'alertmanager',
        alertmanager([
          {
            labels: {
              alertname: 'RedisDown',
              service: 'sessions-redis',
              severity: 'critical',
              instance: 'sessions-redis-0:6379',
            },
            annotations: { description: 'Redis instance sessions-redis-0:6379 is down (redis_up == 0).' },
            startsAt: -14,
            expr: 'redis_up == 0',
          },
        ]),
      );
      const [incident] = await w.send(
        'alertmanager',
        alertmanager([
          {
            labels: { alertname: 'HighLatencyP99', service: 'session-api', severity: 'high' },
            annotations: {
              description:
                'p99 latency of session-api is 3.8s (threshold 1s); cache miss ratio 100% (sessions-redis unreachable: ECONNREFUSED 10.0.5.12:6379).',
            },
            startsAt: -12,
          },
        ]),
      );
      await w.send(
        'datadog',
        datadog({
          title: 'Error rate on profile-api',
          body: 'profile-api error rate is 18%: timeouts reading sessions from Redis, falling back to users-db.',
          service: 'profile-api',
          minutes: -11,
        }),
      );
      await w.send(
        'alertmanager',
        alertmanager([
          {
            labels: {
              alertname: 'PostgresHighCPU',
              service: 'users-db',
              severity: 'high',
              instance: 'users-db-0:9187',
            },
            annotations: { description: 'users-db CPU at 96%; query rate 8x baseline (cache-miss reads of sessions).' },
            startsAt: -10,
          },
        ]),
      );
      return incident!;
    },
    rootCause: [/sessions-redis/, /users-db/, /cache/i],
    firstAction: [/^Follow runbook 'Redis failover' step 2: Fail over to the replica/],
    evidence: ['alert', 'metric', 'log', 'runbook'],
  },
  {
    name: 'configuration change',
    hypothesis: 'config_change',
    async build(w) {
      await w.node('checkout-api', 'api', 9);
      await w.node('payments-gateway', 'api', 9);
      await w.edge('checkout-api', 'payments-gateway');
      await w.github(
        githubPush({
          repo: 'checkout-api',
          minutes: -25,
          commits: [
            {
              id: '9b1e4d2c7a5f3e8b0d6c4a2f1e9d7b5c3a1f0e2d',
              message: 'Lower payments-gateway client timeout to 2s\n\nThe gateway p99 is 1.2s.',
              modified: ['checkout/payments/client.py', 'checkout/settings.py'],
            },
            {
              id: '3f2c9a7e5b1d4c8f9e0a6b2d7c4e1f3a5b8c9d0e',
              message: 'Merge pull request #1412 from example-shop/payments-timeout\n\nLower payments-gateway timeout',
            },
          ],
        }),
      );
      await w.github(
        githubDeployment({
          repo: 'checkout-api',
          id: 5150,
          sha: '3f2c9a7e5b1d4c8f9e0a6b2d7c4e1f3a5b8c9d0e',
          minutes: -15,
        }),
      );
      const [incident] = await w.send(
        'sentry',
        sentry({
          project: 'checkout-api',
          type: 'PaymentGatewayTimeout',
          value: 'Timed out calling payments-gateway after 2s',
          minutes: -8,
          frames: [{ filename: 'checkout/payments/client.py', lineno: 142, function: 'charge' }],
        }),
      );
      await w.send(
        'alertmanager',
        alertmanager([
          {
            labels: { alertname: 'HighErrorRate', service: 'checkout-api', severity: 'critical' },
            annotations: { description: '5xx responses are 9.1% of checkout-api requests (threshold 5%).' },
            startsAt: -9,
          },
        ]),
      );
      return incident!;
    },
    rootCause: [/configuration change/i, /9b1e4d2/, /payments-gateway client timeout/],
    firstAction: [/^Revert config change 9b1e4d2 in example-shop\/checkout-api/],
    evidence: ['code_change', 'deployment', 'log', 'alert'],
  },
  {
    name: 'third-party dependency outage',
    hypothesis: 'third_party_outage',
    async build(w) {
      await w.node('checkout-api', 'api', 9);
      await w.node('payments-api', 'api', 9);
      await w.node('payments-db', 'database', 9);
      await w.edge('checkout-api', 'payments-api');
      await w.edge('payments-api', 'payments-db');
      await w.runbook(
        'Payment provider outage',
        'payments-api',
        ['stripe', 'payments', 'vendor'],
        '1. Check status.stripe.com\n2. Switch to the fallback provider: `payctl provider set adyen`\n3. Queue the charges that failed for retry',
      );
      await w.github(
        githubPush({
          repo: 'payments-api',
          minutes: -240,
          commits: [
            {
              id: 'd1d2d3d4e5e6e7e8f9f0a1a2b3b4c5c6d7d8e9e0',
              message: 'Add idempotency keys to refunds',
              modified: ['payments/refunds.py'],
            },
          ],
        }),
      );
      const [incident] = await w.send(
        'sentry',
        sentry({
          project: 'payments-api',
          type: 'stripe.error.APIConnectionError',
          value: 'Could not connect to Stripe (https://api.stripe.com/v1/payment_intents). Request timed out after 30s',
          minutes: -9,
          frames: [{ filename: 'payments/providers/stripe.py', lineno: 77, function: 'create_intent' }],
        }),
      );
      await w.send(
        'datadog',
        datadog({
          title: 'External API errors on payments-api',
          body: 'Requests from payments-api to api.stripe.com return 503 Service Unavailable (45% of calls in the last 5 minutes).',
          service: 'payments-api',
          minutes: -8,
          metric: 'http.client.errors',
          query:
            'sum(last_5m):sum:http.client.errors{service:payments-api,peer.hostname:api.stripe.com}.as_count() > 100',
        }),
      );
      await w.send(
        'alertmanager',
        alertmanager([
          {
            labels: { alertname: 'CheckoutPaymentsFailing', service: 'checkout-api', severity: 'high' },
            annotations: { description: 'checkout-api: 38% of orders fail at the payment step.' },
            startsAt: -7,
          },
        ]),
      );
      return incident!;
    },
    rootCause: [/third-party outage/i, /Stripe \(api\.stripe\.com\)/],
    firstAction: [/^Follow runbook 'Payment provider outage' step 2: Switch to the fallback provider/, /Stripe/],
    evidence: ['log', 'metric', 'alert', 'runbook', 'code_change'],
  },
  {
    name: 'noisy flapping alert',
    hypothesis: 'flapping_alert',
    async build(w) {
      await w.node('batch-worker', 'worker', 4);
      await w.node('jobs-queue', 'queue', 6);
      await w.edge('batch-worker', 'jobs-queue');
      await w.github(
        githubDeployment({
          repo: 'batch-worker',
          id: 615,
          sha: 'e0e1e2e3e4e5e6e7e8e9f0f1f2f3f4f5f6f7f8f9',
          minutes: -300,
        }),
      );
      const labels = {
        alertname: 'CPUThrottlingHigh',
        service: 'batch-worker',
        severity: 'warning',
        container: 'worker',
        namespace: 'batch',
      };
      const annotations = {
        description: 'CPU throttling of container worker in batch-worker is 27% of periods (threshold 25%).',
      };
      const toggles: Array<[number, 'firing' | 'resolved']> = [
        [-60, 'firing'],
        [-55, 'resolved'],
        [-50, 'firing'],
        [-44, 'resolved'],
        [-38, 'firing'],
        [-31, 'resolved'],
        [-25, 'firing'],
        [-18, 'resolved'],
      ];
      let incident: string | undefined;
      for (const [minutes, status] of toggles) {
        const ids = await w.send(
          'alertmanager',
          alertmanager([
            {
              labels,
              annotations,
              status,
              startsAt: status === 'firing' ? minutes : minutes - 5,
              endsAt: minutes,
              fingerprint: 'b7c1d9e2f3a40516',
            },
          ]),
        );
        incident ??= ids[0];
        expect(ids[0]).toBe(incident); // every toggle attaches to the same incident
      }
      return incident!;
    },
    rootCause: [/flapping alert/i, /CPUThrottlingHigh on batch-worker/, /7 times/],
    firstAction: [/^Tune alert CPUThrottlingHigh on batch-worker/],
    evidence: ['alert', 'metric', 'deployment'],
  },
  {
    name: 'traffic spike',
    hypothesis: 'traffic_spike',
    async build(w) {
      await w.node('search-api', 'api', 7);
      await w.node('search-index', 'database', 7);
      await w.edge('search-api', 'search-index');
      await w.runbook(
        'search-api capacity',
        'search-api',
        ['scaling', 'traffic'],
        '1. Check the autoscaler: `kubectl get hpa search-api`\n2. Raise the HPA maximum to 24 replicas: `kubectl patch hpa search-api -p \'{"spec":{"maxReplicas":24}}\'`\n3. Enable per-client rate limiting at the edge',
      );
      await w.github(
        githubDeployment({
          repo: 'search-index',
          id: 4410,
          sha: 'f0f1f2f3a4a5a6a7b8b9c0c1d2d3e4e5f6f7a8a9',
          minutes: -260,
        }),
      );
      const [incident] = await w.send(
        'datadog',
        datadog({
          title: 'Request rate on search-api',
          body: 'search-api receives 38k requests/min, 9.5x its baseline (4k/min), mostly GET /v1/search from a single campaign landing page.\nThe HPA is at its maximum replicas (12/12).',
          service: 'search-api',
          minutes: -10,
          metric: 'trace.http.request.hits',
          query:
            'avg(last_10m):sum:trace.http.request.hits{service:search-api}.as_rate() > 3 * week_before(sum:trace.http.request.hits{service:search-api}.as_rate())',
        }),
      );
      await w.send(
        'alertmanager',
        alertmanager([
          {
            labels: { alertname: 'HighLatencyP99', service: 'search-api', severity: 'high' },
            annotations: { description: 'p99 latency of search-api is 2.9s (threshold 1s).' },
            startsAt: -8,
          },
          {
            labels: { alertname: 'ElasticsearchHighCPU', service: 'search-index', severity: 'warning' },
            annotations: { description: 'CPU 92% on search-index data nodes.' },
            startsAt: -7,
          },
        ]),
      );
      return incident!;
    },
    rootCause: [/traffic spike/i, /search-api/, /9\.5x its baseline/],
    firstAction: [/^Follow runbook 'search-api capacity' step \d/, /search-api|rate limiting|replicas/],
    evidence: ['alert', 'metric', 'runbook', 'deployment'],
  },
  {
    name: 'DNS failure',
    hypothesis: 'dns_failure',
    async build(w) {
      await w.node('checkout-api', 'api', 9);
      await w.node('payments-api', 'api', 9);
      await w.node('inventory-api', 'api', 7);
      await w.node('warehouse-api', 'api', 6);
      await w.edge('checkout-api', 'payments-api');
      await w.edge('inventory-api', 'warehouse-api');
      await w.runbook(
        'Checkout high error rate',
        'checkout-api',
        ['checkout'],
        '1. Check the 5xx dashboard\n2. Roll back the last deployment',
      );
      await w.github(
        githubDeployment({
          repo: 'inventory-api',
          id: 2290,
          sha: 'a9a8a7a6b5b4b3b2c1c0d9d8e7e6f5f4a3a2a1a0',
          minutes: -50,
        }),
      );
      await w.github(
        githubPush({
          repo: 'checkout-api',
          minutes: -300,
          commits: [
            {
              id: 'ab12cd34ef56ab78cd90ef12ab34cd56ef78ab90',
              message: 'Tidy order confirmation email',
              modified: ['checkout/email.py'],
            },
          ],
        }),
      );
      await w.send(
        'alertmanager',
        alertmanager([
          {
            labels: {
              alertname: 'ProbeDNSFailed',
              service: 'internal-dns',
              severity: 'critical',
              instance: 'payments.internal.example.com',
              job: 'blackbox-dns',
            },
            annotations: {
              description: 'DNS probe for payments.internal.example.com returned SERVFAIL from 10.0.0.2.',
            },
            startsAt: -10,
          },
        ]),
      );
      const [incident] = await w.send(
        'sentry',
        sentry({
          project: 'checkout-api',
          type: 'requests.exceptions.ConnectionError',
          value:
            "HTTPSConnectionPool(host='payments.internal.example.com', port=443): Max retries exceeded with url: /v1/charges (Caused by NameResolutionError(\"Failed to resolve 'payments.internal.example.com' ([Errno -3] Temporary failure in name resolution)\"))",
          minutes: -9,
        }),
      );
      await w.send(
        'generic',
        generic({
          name: 'UpstreamDNSErrors',
          service: 'inventory-api',
          minutes: -8,
          description: 'getaddrinfo EAI_AGAIN warehouse.internal.example.com (1,204 failed lookups in 5 minutes)',
        }),
      );
      return incident!;
    },
    rootCause: [/DNS failure/, /payments\.internal\.example\.com/],
    firstAction: [/^Restore DNS resolution of payments\.internal\.example\.com/],
    evidence: ['log', 'alert', 'code_change'],
  },
  {
    name: 'bad deploy of an upstream dependency',
    hypothesis: 'upstream_deploy',
    async build(w) {
      await w.node('checkout-api', 'api', 9);
      await w.node('auth-service', 'api', 10);
      await w.edge('checkout-api', 'auth-service');
      await w.github(
        githubDeployment({
          repo: 'auth-service',
          id: 777,
          sha: 'c0ffee1234567890abcdef1234567890abcdef12',
          minutes: -14,
        }),
      );
      await w.send(
        'datadog',
        datadog({
          title: 'Error rate on auth-service',
          body: 'auth-service 5xx rate is 22% on POST /v1/tokens/verify.',
          service: 'auth-service',
          minutes: -9,
        }),
      );
      const [incident] = await w.send(
        'alertmanager',
        alertmanager([
          {
            labels: { alertname: 'HighErrorRate', service: 'checkout-api', severity: 'critical' },
            annotations: {
              description:
                '18% of checkout-api requests fail with 500: token validation calls to auth-service return errors.',
            },
            startsAt: -8,
          },
        ]),
      );
      return incident!;
    },
    rootCause: [/deployment 777 of auth-service/, /c0ffee1/],
    firstAction: [/^Roll back deployment 777 of auth-service \(sha c0ffee1\)/],
    evidence: ['deployment', 'alert'],
  },
];

describe('investigation scenarios (built-in analyzer)', () => {
  for (const scenario of scenarios) {
    it(scenario.name, async () => {
      let correct = false;
      try {
        const world = await World.create();
        const incidentId = await scenario.build(world);
        const { result, reports } = await investigate(world, incidentId);
        const db = svc.database.db;
        if (process.env.SCENARIO_VERBOSE) {
          const [stored] = await db.select().from(investigations).where(eq(investigations.incidentId, incidentId));
          console.log(
            `\n### ${scenario.name}\n${result.rootCause}\nconfidence ${result.confidence}\n- ${result.recommendedActions.join('\n- ')}\n${stored!.findings.map((f) => `[${f.agentRole}] ${f.content}`).join('\n')}`,
          );
        }

        for (const pattern of scenario.rootCause) expect(result.rootCause).toMatch(pattern);
        for (const pattern of scenario.firstAction) expect(result.recommendedActions[0]).toMatch(pattern);
        correct = true;

        // The investigation row, the incident and the events follow.
        const [row] = await db.select().from(investigations).where(eq(investigations.incidentId, incidentId));
        expect(row).toMatchObject({
          status: 'completed',
          rootCause: result.rootCause,
          confidence: result.confidence,
          recommendedActions: result.recommendedActions,
          model: 'builtin-analyzer-1',
          tokensUsed: 0,
          costUsd: 0,
        });
        expect(row!.completedAt).not.toBeNull();
        expect(result.confidence).toBeGreaterThan(0.4);
        expect(result.confidence).toBeLessThanOrEqual(0.95);
        expect(result.recommendedActions.length).toBeGreaterThanOrEqual(2);
        const hypotheses = row!.hypotheses as Array<{ kind: string; status: string; reason: string }>;
        expect(hypotheses[0]).toMatchObject({ kind: scenario.hypothesis, status: 'kept' });
        for (const h of hypotheses.slice(1)) {
          expect(h.status).toBe('discarded');
          expect(h.reason.length).toBeGreaterThan(5);
        }
        expect(row!.findings.map((f) => f.agentRole)).toEqual([...agentRoles, 'synthesis']);
        const [incident] = await db.select().from(incidents).where(eq(incidents.id, incidentId));
        expect(incident).toMatchObject({
          rootCause: result.rootCause,
          recommendedActions: result.recommendedActions,
          assignedAgents: [...agentRoles],
        });
        const completed = await db
          .select()
          .from(events)
          .where(and(eq(events.incidentId, incidentId), eq(events.type, 'investigation.completed')))
          .orderBy(events.seq);
        expect(completed).toHaveLength(1);
        expect(completed[0]!.payload).toMatchObject({
          rootCause: result.rootCause,
          confidence: result.confidence,
          run: 1,
        });
        expect(completed[0]!.idempotencyKey).toBe(`${incidentId}:investigation:1:synthesis:0:completed`);

        // Evidence: the expected types, bounded snippets, one evidence_added event per agent that found something.
        const evidence = await db.select().from(evidenceItems).where(eq(evidenceItems.incidentId, incidentId));
        const types = new Set(evidence.map((e) => e.type));
        for (const type of scenario.evidence) expect(types, `evidence of type ${type}`).toContain(type);
        for (const e of evidence) {
          expect(e.tenantId).toBe(world.tenantId);
          expect(e.rawSnippet.length).toBeLessThanOrEqual(2000);
          expect(e.rawSnippet.length).toBeGreaterThan(0);
          expect(e.dedupeKey.startsWith(`${e.agentRole}:`)).toBe(true);
          expect(['critical', 'high', 'medium', 'low', 'info']).toContain(e.severity);
        }
        const added = await db
          .select()
          .from(events)
          .where(and(eq(events.incidentId, incidentId), eq(events.type, 'investigation.evidence_added')))
          .orderBy(events.seq);
        const finders = reports
          .filter((r) => r.evidenceIds.length > 0)
          .map((r) => r.agentRole)
          .sort();
        expect(added.map((e) => e.payload.agentRole).sort()).toEqual(finders);
        expect(added.reduce((n, e) => n + (e.payload.added as number), 0)).toBe(evidence.length);
        expect(reports.find((r) => r.agentRole === 'knowledge')).toMatchObject({ found: false, evidenceIds: [] });
      } finally {
        outcomes.push({ name: scenario.name, correct });
      }
    });
  }
});

describe('investigation engine behaviour', () => {
  it('re-synthesises with human context in the same run: the context tips the ranking, each synthesis is one event', async () => {
    const w = await World.create();
    await w.node('checkout-api', 'api', 9);
    await w.node('payments-api', 'api', 9);
    await w.edge('checkout-api', 'payments-api');
    await w.github(
      githubDeployment({
        repo: 'payments-api',
        id: 9120,
        sha: 'ddeeff00112233445566778899aabbccddeeff00',
        minutes: -50,
      }),
    );
    const [incidentId] = await w.send(
      'sentry',
      sentry({
        project: 'checkout-api',
        type: 'requests.exceptions.ConnectTimeout',
        value:
          "HTTPSConnectionPool(host='payments.internal.example.com', port=443): Read timed out calling payments-api (read timeout=5)",
        minutes: -6,
      }),
    );
    const { request, reports, result } = await investigate(w, incidentId!);
    expect(result.rootCause).toMatch(/deployment 9120 of payments-api/);

    const db = svc.database.db;
    await db.insert(investigationContext).values({
      tenantId: w.tenantId,
      incidentId: incidentId!,
      seq: 1,
      content:
        'We rotated the DNS provider at 03:00; since then lookups of payments.internal.example.com intermittently fail. The payments-api deploy was a no-op (docs only).',
      actorId: 'user-admin',
    });
    const resynthesised = await inActivity(engine.synthesizeInvestigation, { ...request, reports });
    expect(resynthesised.rootCause).toMatch(/DNS failure/);
    expect(resynthesised.rootCause).toMatch(/payments\.internal\.example\.com/);
    expect(resynthesised.recommendedActions[0]).toMatch(/^Restore DNS resolution of payments\.internal\.example\.com/);
    const [row] = await db.select().from(investigations).where(eq(investigations.incidentId, incidentId!));
    const hypotheses = row!.hypotheses as Array<{
      kind: string;
      status: string;
      contextAdjustment: number;
      reason: string;
    }>;
    expect(hypotheses[0]).toMatchObject({ kind: 'dns_failure', status: 'kept' });
    expect(hypotheses[0]!.contextAdjustment).toBeGreaterThan(0);
    expect(hypotheses.find((h) => h.kind === 'upstream_deploy')).toMatchObject({ status: 'discarded' });
    expect(hypotheses.find((h) => h.kind === 'upstream_deploy')!.contextAdjustment).toBeLessThan(0);

    // A retried synthesis with the same context records nothing new and answers what was recorded.
    const retried = await inActivity(engine.synthesizeInvestigation, { ...request, reports });
    expect(retried).toEqual(resynthesised);
    const completed = await db
      .select()
      .from(events)
      .where(and(eq(events.incidentId, incidentId!), eq(events.type, 'investigation.completed')))
      .orderBy(events.seq);
    expect(completed.map((e) => e.idempotencyKey).sort()).toEqual([
      `${incidentId}:investigation:1:synthesis:0:completed`,
      `${incidentId}:investigation:1:synthesis:1:completed`,
    ]);
    expect(completed.map((e) => e.payload.contextSeq).sort()).toEqual([0, 1]);
    const audits = await db
      .select()
      .from(auditLog)
      .where(and(eq(auditLog.incidentId, incidentId!), eq(auditLog.action, 'investigation.completed')))
      .orderBy(auditLog.seq);
    expect(audits).toHaveLength(2);
    expect(audits[0]).toMatchObject({ actorType: 'system', workflowId: incidentId });
  });

  it("ignores an older run's synthesis, and records a failure once per run", async () => {
    const w = await World.create();
    const [incidentId] = await w.send(
      'alertmanager',
      alertmanager([
        {
          labels: { alertname: 'HighErrorRate', service: 'cart-api', severity: 'high' },
          annotations: { description: 'cart-api 5xx above 5%' },
          startsAt: -5,
        },
      ]),
    );
    const db = svc.database.db;
    await db
      .insert(investigations)
      .values({ incidentId: incidentId!, tenantId: w.tenantId, status: 'running', run: 2 });
    const stale: InvestigationRequest = {
      incidentId: incidentId!,
      tenantId: w.tenantId,
      run: 1,
      workflowId: incidentId!,
    };
    const reports = await runAgents(stale);
    const result = await inActivity(engine.synthesizeInvestigation, { ...stale, reports });
    expect(result.rootCause.length).toBeGreaterThan(0);
    const [row] = await db.select().from(investigations).where(eq(investigations.incidentId, incidentId!));
    expect(row).toMatchObject({ status: 'running', rootCause: null, run: 2 });
    expect(
      await db
        .select()
        .from(events)
        .where(and(eq(events.incidentId, incidentId!), eq(events.type, 'investigation.completed')))
        .orderBy(events.seq),
    ).toHaveLength(0);
    const [incident] = await db.select().from(incidents).where(eq(incidents.id, incidentId!));
    expect(incident!.rootCause).toBeNull();

    // Nothing explains this incident: the analyzer says so with a low confidence.
    const current = { ...stale, run: 2 };
    const undetermined = await inActivity(engine.synthesizeInvestigation, { ...current, reports });
    expect(undetermined.rootCause).toMatch(/^Undetermined/);
    expect(undetermined.confidence).toBeLessThanOrEqual(0.3);
    expect(undetermined.recommendedActions[0]).toMatch(/cart-api/);

    await engine.recordInvestigationFailure({ ...stale, reason: 'old run' });
    await engine.recordInvestigationFailure({ ...current, reason: 'synthesis timed out' });
    await engine.recordInvestigationFailure({ ...current, reason: 'synthesis timed out' });
    const [failed] = await db.select().from(investigations).where(eq(investigations.incidentId, incidentId!));
    expect(failed).toMatchObject({ status: 'failed', failure: 'synthesis timed out', run: 2 });
    const failures = await db
      .select()
      .from(events)
      .where(and(eq(events.incidentId, incidentId!), eq(events.type, 'investigation.failed')))
      .orderBy(events.seq);
    expect(failures).toHaveLength(1);
    expect(failures[0]!.payload).toMatchObject({ run: 2, reason: 'synthesis timed out' });
  });

  it('the agents of a run share one read of the scene; a later run reads afresh', async () => {
    const w = await World.create();
    const [incidentId] = await w.send(
      'alertmanager',
      alertmanager([
        {
          labels: { alertname: 'HighErrorRate', service: 'search-api', severity: 'high' },
          annotations: { description: 'search-api 5xx above 5%' },
          startsAt: -5,
        },
      ]),
    );
    const run1: InvestigationRequest = {
      incidentId: incidentId!,
      tenantId: w.tenantId,
      run: 1,
      workflowId: incidentId!,
    };
    const first = await inActivity(engine.alertsAgent, run1);
    // An alert of another service arrives in the correlation window while run 1 is under way.
    await w.send(
      'alertmanager',
      alertmanager([
        {
          labels: { alertname: 'ElasticsearchClusterRed', service: 'search-index', severity: 'critical' },
          annotations: { description: 'search-index cluster status red' },
          startsAt: -4,
        },
      ]),
    );
    // Another agent of run 1 starts from the same scene and correlated alerts as the first.
    const sameRun = await inActivity(engine.alertsAgent, run1);
    expect(sameRun.content).toBe(first.content);
    expect(sameRun.content).not.toMatch(/ElasticsearchClusterRed/);
    // Synthesis and a new run read afresh and see it.
    const run2 = await inActivity(engine.alertsAgent, { ...run1, run: 2 });
    expect(run2.content).toMatch(/ElasticsearchClusterRed/);
  });

  it("never reads another tenant's data", async () => {
    const mine = await World.create();
    const theirs = await World.create();
    for (const w of [mine, theirs]) {
      await w.node('checkout-api', 'api', 9);
      await w.node('orders-db', 'database', 9);
      await w.edge('checkout-api', 'orders-db');
    }
    await theirs.github(
      githubDeployment({
        repo: 'checkout-api',
        id: 6666,
        sha: 'deadbeefdeadbeefdeadbeefdeadbeefdeadbeef',
        minutes: -12,
      }),
    );
    await theirs.runbook('Their checkout runbook', 'checkout-api', ['checkout'], '1. Roll back');
    await theirs.send(
      'alertmanager',
      alertmanager([
        {
          labels: { alertname: 'PostgresDown', service: 'orders-db', severity: 'critical' },
          annotations: { description: 'orders-db is down' },
          startsAt: -9,
        },
      ]),
    );
    const [incidentId] = await mine.send(
      'alertmanager',
      alertmanager([
        {
          labels: { alertname: 'HighErrorRate', service: 'checkout-api', severity: 'critical' },
          annotations: { description: '5xx responses are 8% of checkout-api requests.' },
          startsAt: -8,
        },
      ]),
    );
    const { result, reports } = await investigate(mine, incidentId!);
    expect(result.rootCause).not.toMatch(/6666|deadbee|orders-db is down/);
    expect(reports.find((r) => r.agentRole === 'deployment')).toMatchObject({ found: false });
    expect(reports.find((r) => r.agentRole === 'runbook')).toMatchObject({ found: false });
    expect(reports.find((r) => r.agentRole === 'topology')).toMatchObject({ found: false });
    const leaked = await svc.database.db
      .select()
      .from(evidenceItems)
      .where(and(eq(evidenceItems.incidentId, incidentId!), like(evidenceItems.rawSnippet, '%deadbee%')));
    expect(leaked).toHaveLength(0);
  });
});
