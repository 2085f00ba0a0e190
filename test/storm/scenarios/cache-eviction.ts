import { alertmanager, datadog, generic, grafana, grafanaTest, ruleAlert, sentry, watchdog } from '../payloads.js';
import { NOISE, type ScenarioDefinition } from '../types.js';
import { shopEdges, shopServices } from './shop.js';

const CACHE = 'session-cache-evictions';
const byService = { groupBy: ['alertname', 'service'] };

/**
 * session-cache reaches maxmemory after a TTL change and evicts sessions: logins and carts miss the
 * cache, auth-api and profile-api slow down, and their reads fall through to users-db, whose CPU
 * saturates (a dependency of the cache's users, not of the cache). Unrelated: the search cluster's
 * heap, a nightly report, the ledger's disk, heartbeats and a contact point test.
 */
export const cacheEviction: ScenarioDefinition = {
  name: 'cache-eviction',
  durationSeconds: 170,
  build: (t) => ({
    name: 'cache-eviction',
    title: 'session-cache eviction storm',
    description:
      'session-cache evicts sessions at maxmemory; auth, profile, cart and the login journey slow or fail, and users-db saturates with the cache misses.',
    services: shopServices,
    edges: shopEdges,
    outages: { [CACHE]: { root: 'session-cache', summary: 'session-cache at maxmemory, evicting sessions' } },
    deliveries: [
      alertmanager(
        t,
        0,
        [
          ruleAlert(
            'RedisEvictionsHigh',
            'session-cache',
            'warning',
            'session-cache evicts 4,800 keys per second',
            -30,
            CACHE,
            {
              labels: { instance: 'session-cache-0:9121', namespace: 'identity' },
            },
          ),
        ],
        byService,
      ),
      datadog(t, 15, {
        monitorId: 61100001,
        name: 'session-cache hit rate below 60%',
        service: 'session-cache',
        tags: ['team:identity'],
        priority: 'P2',
        metric: 'redis.stats.keyspace_hits',
        status: 'keyspace hit ratio over service:session-cache was < 0.6 on average during the last 5m.',
        message: 'Most session reads miss the cache.',
        truth: CACHE,
      }),
      alertmanager(
        t,
        30,
        [
          ruleAlert('HighLatencyP99', 'auth-api', 'critical', 'auth-api p99 latency above 1 s', 5, CACHE, {
            labels: { namespace: 'identity', route: '/v1/sessions' },
          }),
        ],
        byService,
      ),
      grafana(
        t,
        40,
        [ruleAlert('Profile p99 latency', 'profile-api', 'high', 'profile-api p99 latency above 800 ms', 15, CACHE)],
        { folder: 'Identity', value: 1.4 },
      ),
      alertmanager(
        t,
        55,
        [
          ruleAlert('PostgresHighCPU', 'users-db', 'critical', 'users-db CPU above 90% for 5 minutes', 20, CACHE, {
            labels: { instance: 'users-db-0:9187', namespace: 'identity' },
          }),
        ],
        byService,
      ),
      sentry(t, 70, {
        project: 'auth-api',
        title: 'TimeoutError: session lookup exceeded 2s',
        culprit: 'auth.sessions in load_session',
        release: 'auth-api@5.2.1',
        truth: CACHE,
      }),
      generic(t, 80, [
        {
          name: 'LoginJourneyFailing',
          service: 'mobile-bff',
          severity: 'critical',
          summary: 'Login from the app failed from 3 of 3 locations',
          labels: { check: 'app-login' },
          startsAt: 75,
          truth: CACHE,
        },
      ]),
      datadog(t, 90, {
        monitorId: 61100420,
        name: 'cart-api 5xx rate above 1%',
        service: 'cart-api',
        tags: ['team:checkout'],
        priority: 'P2',
        metric: 'trace.http.request.errors',
        status:
          'trace.http.request.errors over env:production,service:cart-api was > 0.01 on average during the last 5m.',
        message: 'cart-api cannot load carts.',
        truth: CACHE,
      }),
      alertmanager(
        t,
        100,
        [
          ruleAlert(
            'ElasticsearchHeapUsageTooHigh',
            'search-index',
            'warning',
            'search-index-2 heap above 85%',
            60,
            NOISE,
            {
              labels: { instance: 'search-index-2:9114', namespace: 'search' },
            },
          ),
        ],
        byService,
      ),
      watchdog(t, 110),
      generic(
        t,
        120,
        [
          {
            name: 'NightlyReportFailed',
            service: 'reporting-worker',
            severity: 'warning',
            summary: 'The nightly revenue report exited with code 1',
            labels: { job: 'revenue-report' },
            startsAt: 118,
            truth: NOISE,
          },
        ],
        'cronitor',
      ),
      grafanaTest(t, 130),
      alertmanager(
        t,
        150,
        [
          ruleAlert('HighErrorRate', 'auth-api', 'critical', 'auth-api 5xx error rate above 5%', 120, CACHE, {
            labels: { namespace: 'identity', job: 'auth-api' },
          }),
        ],
        byService,
      ),
      datadog(t, 170, {
        monitorId: 61109090,
        name: 'ledger-db disk usage above 80%',
        service: 'ledger-db',
        tags: ['team:payments'],
        priority: 'P4',
        transition: 'Warn',
        metric: 'system.disk.in_use',
        status: 'system.disk.in_use over service:ledger-db was > 0.8 on average during the last 15m.',
        message: 'ledger-db disk is filling with WAL archives.',
        truth: NOISE,
      }),
    ],
  }),
};
