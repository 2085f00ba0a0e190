/**
 * The mechanisms the analyzer names beyond "a component failed": each test is one incident as its
 * alerts read, with a distractor, and checks the kept hypothesis, its subject and its first action.
 */
import { describe, expect, it } from 'vitest';
import { analyzeInvestigation } from '../../src/analysis/investigation/index.js';
import { alert, deploy, dependency, input, minutes, topologyWith } from './builders.js';

const firstAction = (r: ReturnType<typeof analyzeInvestigation>) => r.recommendedActions[0] ?? '';

describe('third parties', () => {
  it('an SDK exception naming the vendor beats a deploy three hours earlier', () => {
    const result = analyzeInvestigation(
      input({
        alerts: [
          alert({
            provider: 'sentry',
            alertName: 'Stripe::APIConnectionError: Could not connect to Stripe (api.stripe.com)',
            text: 'Stripe::APIConnectionError: Could not connect to Stripe (api.stripe.com). Request req_8Jx timed out after 30s\napp/services/charge.rb in create_charge',
          }),
        ],
        changes: [deploy({ occurredAt: minutes(-190) })],
      }),
    );
    expect(result.hypotheses[0]).toMatchObject({ kind: 'third_party_outage', subject: 'Stripe' });
    expect(firstAction(result)).toMatch(/Stripe/);
    const deployment = result.hypotheses.find((h) => h.kind === 'bad_deploy');
    expect(deployment?.against.join(' ')).toMatch(/min before the first alert, and the alerts name another cause/);
  });

  it('a vendor host answering 503 names the vendor even when it is not a well-known one', () => {
    const result = analyzeInvestigation(
      input({
        alerts: [
          alert({
            text: 'POST https://api.acmeshipping.com/v2/labels returned 503 Service Unavailable (27 of the last 30 calls)',
          }),
        ],
      }),
    );
    expect(result.hypotheses[0]).toMatchObject({ kind: 'third_party_outage', subject: 'acmeshipping.com' });
  });

  it('429s from a vendor are a rate limit with its own fix, not an outage', () => {
    const result = analyzeInvestigation(
      input({
        alerts: [
          alert({
            text: 'twilio.base.exceptions.TwilioRestException: HTTP 429 error: Too Many Requests (api.twilio.com)',
          }),
        ],
      }),
    );
    expect(result.hypotheses[0]).toMatchObject({ kind: 'rate_limited', subject: 'Twilio' });
    expect(firstAction(result)).toMatch(/request rate .*Twilio.*backoff/i);
  });
});

describe('queues', () => {
  it('consumer lag with a producer burst: scale the consumers, throttle the producer', () => {
    const result = analyzeInvestigation(
      input({
        incident: { ...input().incident, service: 'order-events-consumer', title: 'KafkaConsumerLagHigh' },
        alerts: [
          alert({
            service: 'order-events-consumer',
            alertName: 'KafkaConsumerLagHigh',
            labels: { consumergroup: 'order-events-consumer', topic: 'orders.created' },
            text: 'Consumer group order-events-consumer lag is 1.2M messages on topic orders.created and growing',
          }),
        ],
        correlated: [
          alert({
            service: 'bulk-importer',
            alertName: 'ProduceRateHigh',
            text: 'bulk-importer produce rate 18000 msg/s, 12x the normal rate on orders.created',
          }),
        ],
      }),
    );
    expect(result.hypotheses[0]).toMatchObject({ kind: 'consumer_lag', subject: 'order-events-consumer' });
    expect(firstAction(result)).toMatch(/Scale out consumer group order-events-consumer/);
    expect(result.recommendedActions.join(' ')).toMatch(/Throttle bulk-importer/);
  });

  it('a RabbitMQ memory alarm from a queue nobody consumes: drain the queue, not restart the broker', () => {
    const result = analyzeInvestigation(
      input({
        incident: { ...input().incident, service: 'notifications-api', title: 'publish timeouts' },
        alerts: [alert({ service: 'notifications-api', text: 'amqp publish timed out: connection blocked by broker' })],
        correlated: [
          alert({
            service: 'rabbitmq',
            alertName: 'RabbitmqMemoryAlarm',
            text: 'RabbitMQ memory alarm raised on rabbit@rabbitmq-0: publishers are blocked',
          }),
          alert({
            service: 'rabbitmq',
            alertName: 'RabbitmqQueueNoConsumers',
            labels: { queue: 'email-digest' },
            text: 'Queue email-digest has 4.1M ready messages and consumers = 0',
          }),
        ],
      }),
    );
    expect(result.hypotheses[0]).toMatchObject({ kind: 'broker_alarm', subject: 'email-digest' });
    expect(firstAction(result)).toMatch(/queue email-digest/);
    expect(firstAction(result)).not.toMatch(/^Restart/);
  });
});

describe('load', () => {
  it('a runaway batch job on the shared database: stop the job by name', () => {
    const result = analyzeInvestigation(
      input({
        alerts: [alert({ text: 'p99 latency 4.2s, 5xx 7%: timeouts waiting for orders-db' })],
        topology: topologyWith(
          dependency({
            name: 'orders-db',
            alerting: true,
            alertCount: 2,
            alertNames: ['PostgresLongRunningQuery'],
            alertTexts: ['query running for 47 min'],
            alertingDependents: ['checkout-api', 'invoices-api'],
          }),
        ),
        correlated: [
          alert({
            service: 'orders-db',
            alertName: 'PostgresLongRunningQuery',
            labels: { application_name: 'monthly-revenue-report', datname: 'orders' },
            text: 'A query from monthly-revenue-report has been running for 47 min on orders-db (seq scan on order_items), CPU 97%',
          }),
        ],
      }),
    );
    expect(result.hypotheses[0]).toMatchObject({ kind: 'runaway_job', subject: 'monthly-revenue-report' });
    expect(firstAction(result)).toMatch(/^Stop monthly-revenue-report/);
  });

  it('a cache evicting keys is an eviction storm, not a cache outage', () => {
    const result = analyzeInvestigation(
      input({
        alerts: [alert({ text: 'checkout-api p99 latency 2.1s' })],
        topology: topologyWith(
          dependency({ name: 'sessions-redis', type: 'cache', alerting: true, alertNames: ['RedisEvictions'] }),
        ),
        correlated: [
          alert({
            service: 'sessions-redis',
            alertName: 'RedisEvictions',
            text: 'sessions-redis evicted_keys 52k/min, used_memory at maxmemory (100%); hit ratio dropped to 41%',
          }),
        ],
      }),
    );
    expect(result.hypotheses[0]).toMatchObject({ kind: 'cache_eviction', subject: 'sessions-redis' });
    expect(firstAction(result)).toMatch(/maxmemory/);
  });

  it('an OOM on one job is stopped at the job, not by restarting pods', () => {
    const result = analyzeInvestigation(
      input({
        incident: { ...input().incident, service: 'billing-worker', title: 'KubePodCrashLooping' },
        alerts: [
          alert({
            service: 'billing-worker',
            alertName: 'KubePodCrashLooping',
            labels: { job_name: 'invoice-export-28734120', container: 'billing-worker' },
            text: 'Container billing-worker was OOMKilled (exit code 137) while processing file tenant_4411_invoices.csv (3.2 GB)',
          }),
        ],
      }),
    );
    expect(result.hypotheses[0]).toMatchObject({ kind: 'oom_input', subject: 'invoice-export' });
    expect(firstAction(result)).toMatch(/^Stop invoice-export/);
  });

  it('a retry storm: cut the retries', () => {
    const result = analyzeInvestigation(
      input({
        alerts: [
          alert({
            text: 'checkout-api retries to inventory-api at 9,800/s (14x baseline) after a 30 s inventory-api blip; retry storm',
          }),
        ],
      }),
    );
    expect(result.hypotheses[0]).toMatchObject({ kind: 'retry_storm', subject: 'checkout-api' });
    expect(firstAction(result)).toMatch(/Cut checkout-api's retries/);
  });
});

describe('changes', () => {
  it('a flag flipped minutes before that the errors name: turn the flag off', () => {
    const result = analyzeInvestigation(
      input({
        alerts: [
          alert({ text: 'TypeError in new-checkout-flow: cannot read properties of undefined (reading "total")' }),
        ],
        changes: [
          deploy({ occurredAt: minutes(-200) }),
          deploy({
            kind: 'deployment',
            changeType: 'feature_flag',
            provider: 'launchdarkly',
            flag: 'new-checkout-flow',
            environment: 'production',
            deploymentId: null,
            sha: null,
            occurredAt: minutes(-6),
            title: 'Flag new-checkout-flow turned on in production',
          }),
        ],
      }),
    );
    expect(result.hypotheses[0]).toMatchObject({ kind: 'feature_flag', subject: 'new-checkout-flow' });
    expect(firstAction(result)).toMatch(/^Turn off feature flag new-checkout-flow in production in LaunchDarkly/);
  });

  it('a dependency bump shipped by a deploy: revert the bump', () => {
    const result = analyzeInvestigation(
      input({
        alerts: [alert({ text: 'TypeError: pg.Pool is not a constructor (node_modules/pg/lib/index.js)' })],
        changes: [
          deploy({
            kind: 'code_change',
            changeType: 'dependency',
            provider: 'github',
            deploymentId: null,
            sha: 'abcdef1234567890',
            occurredAt: minutes(-40),
            title: 'Bump pg from 8.11.3 to 9.0.0',
          }),
          deploy({ occurredAt: minutes(-20) }),
        ],
      }),
    );
    expect(result.hypotheses[0]).toMatchObject({ kind: 'dependency_bump', subject: 'pg' });
    expect(firstAction(result)).toMatch(/^Revert the upgrade of pg back to 8\.11\.3/);
  });
});

describe('undetermined', () => {
  it('says what evidence is missing and what would supply it', () => {
    const result = analyzeInvestigation(
      input({ topology: { known: false, serviceType: null, dependencies: [], dependents: [] } }),
    );
    expect(result.hypotheses[0]!.kind).toBe('undetermined');
    expect(result.rootCause).toMatch(/Missing: no deploy, flag or config change/);
    expect(result.rootCause).toMatch(/not in the topology graph/);
    expect(result.confidence).toBeLessThanOrEqual(0.3);
  });
});

describe('credentials', () => {
  it('a 401 after a secret rotation: restore the credential, not the dependency', () => {
    const result = analyzeInvestigation(
      input({
        alerts: [
          alert({
            text: 'FATAL: password authentication failed for user "checkout_rw" (orders-db:5432); 5xx 31%',
          }),
        ],
        changes: [
          deploy({
            kind: 'code_change',
            changeType: 'config',
            deploymentId: null,
            occurredAt: minutes(-14),
            title: 'Rotate orders-db credentials in vault (ops/secrets#212)',
          }),
        ],
        topology: topologyWith(dependency({ name: 'orders-db' })),
      }),
    );
    expect(result.hypotheses[0]).toMatchObject({ kind: 'expired_credentials', subject: 'orders-db' });
    expect(firstAction(result)).toMatch(/^Restore checkout-api's credential for orders-db \(checkout_rw\)/);
  });
});

describe('node causes', () => {
  it('a node disk alert (its mountpoint label) is not clock skew', () => {
    const result = analyzeInvestigation(
      input({
        alerts: [
          alert({
            alertName: 'NodeFilesystemAlmostOutOfSpace',
            service: null,
            labels: { instance: 'ip-10-0-7-12:9100', mountpoint: '/', device: '/dev/nvme0n1p1' },
            text: 'Filesystem has less than 5% space left. mountpoint=/',
          }),
        ],
      }),
    );
    expect(result.hypotheses.map((h) => h.kind)).not.toContain('clock_skew');
    expect(result.hypotheses[0]!.kind).toBe('disk_full');
  });

  it('a skewed node clock and tokens "used before issued" are clock skew on that node', () => {
    const result = analyzeInvestigation(
      input({
        alerts: [alert({ text: 'jwt.exceptions.ImmatureSignatureError: The token is not yet valid (iat)' })],
        correlated: [
          alert({
            alertName: 'NodeClockSkewDetected',
            service: null,
            labels: { instance: 'ip-10-0-2-33.eu-west-1.compute.internal:9100' },
            text: 'Clock at ip-10-0-2-33 is out of sync by more than 0.05s. Ensure NTP is configured correctly on this host.',
          }),
        ],
      }),
    );
    expect(result.hypotheses[0]).toMatchObject({
      kind: 'clock_skew',
      subject: 'ip-10-0-2-33.eu-west-1.compute.internal',
    });
    expect(firstAction(result)).toMatch(/^Restore time sync on ip-10-0-2-33/);
  });
});

describe('our own hosts', () => {
  it('a probe of our own public endpoint is not a vendor outage', () => {
    const result = analyzeInvestigation(
      input({
        alerts: [
          alert({
            alertName: 'BlackboxProbeFailed',
            labels: { job: 'blackbox', module: 'http_2xx', instance: 'https://shop.acme-retail.com/health' },
            text: 'Probe failed: https://shop.acme-retail.com/health returned 503',
          }),
          alert({ text: 'GET https://checkout.acme-retail.com/cart answered 503 for 12% of requests' }),
        ],
      }),
    );
    expect(result.hypotheses.map((h) => h.kind)).not.toContain('third_party_outage');
  });
});

describe('commit messages that only look like bumps', () => {
  it('"Update docs to reflect …" is not a dependency upgrade', () => {
    const result = analyzeInvestigation(
      input({
        changes: [
          deploy({
            kind: 'code_change',
            changeType: 'push',
            deploymentId: null,
            occurredAt: minutes(-10),
            title: 'Update docs to reflect the new checkout flow',
          }),
        ],
      }),
    );
    expect(result.hypotheses.map((h) => h.kind)).not.toContain('dependency_bump');
  });
});

describe('alerts of other services', () => {
  it("an unrelated service's mechanism in the same hour does not outrank the incident's own deploy", () => {
    const result = analyzeInvestigation(
      input({
        alerts: [alert({ text: 'KeyError: address_line_2 in checkout serializer; 5xx 9%' })],
        changes: [deploy({ occurredAt: minutes(-20) })],
        correlated: [
          alert({
            incidentId: 'inc_9',
            service: 'analytics-ingest',
            alertName: 'RabbitmqMemoryAlarm',
            text: 'RabbitMQ memory alarm raised on rabbit@analytics-0: publishers are blocked; queue events-raw has 3.2M ready messages and consumers = 0',
          }),
        ],
      }),
    );
    expect(result.hypotheses[0]!.kind).toBe('bad_deploy');
    const far = result.hypotheses.find((h) => h.kind === 'broker_alarm');
    expect(far?.against.join(' ')).toMatch(/rests only on other services' alerts/);
  });
});
