import { describe, expect, it } from 'vitest';
import {
  analyzeInvestigation,
  contextEffect,
  flapStats,
  hostsIn,
  pickRunbookStep,
  proximity,
  restrictToRoles,
  type InvestigationInput,
  type RunbookObservation,
} from '../../src/analysis/investigation/index.js';
import { agentRoles } from '../../src/analysis/types.js';

import { alert, deploy, dependency, input, minutes, topologyWith } from './builders.js';

describe('hypothesis ranking', () => {
  it('blames a deploy of the failing service shortly before the first alert, and discards the weaker hypotheses with their reason', () => {
    const result = analyzeInvestigation(
      input({
        changes: [
          deploy(),
          deploy({ deploymentId: '4100', sha: '0aa11bb22cc33dd44ee55ff66aa77bb88cc99dd0', occurredAt: minutes(-300) }),
        ],
        topology: {
          known: true,
          serviceType: 'api',
          dependencies: [
            dependency({
              name: 'orders-db',
              alerting: true,
              alertCount: 1,
              firstAlertAt: minutes(5),
              alertNames: ['PostgresSlowQueries'],
              alertTexts: ['slow queries'],
              alertingDependents: ['checkout-api'],
            }),
          ],
          dependents: [],
        },
      }),
    );
    const [kept, ...discarded] = result.hypotheses;
    expect(kept).toMatchObject({ kind: 'bad_deploy', status: 'kept', subject: 'checkout-api' });
    expect(result.rootCause).toContain('deployment 4242 of checkout-api (sha 1a2b3c4)');
    expect(result.recommendedActions[0]).toBe(
      'Roll back deployment 4242 of checkout-api (sha 1a2b3c4) back to the previous release (sha 0aa11bb)',
    );
    expect(discarded.map((h) => h.kind).sort()).toEqual(['bad_deploy', 'upstream_failure']);
    for (const h of discarded) {
      expect(h.status).toBe('discarded');
      expect(h.reason).toMatch(/below bad_deploy|too weak/);
    }
    // The older deployment is discarded as the less likely change.
    expect(discarded.find((h) => h.kind === 'bad_deploy')!.statement).toContain('4100');
    expect(result.summary).toContain('[kept] bad_deploy');
  });

  it('ranks an upstream dependency that several alerting services share above a deploy hours earlier', () => {
    const result = analyzeInvestigation(
      input({
        alerts: [
          alert({
            provider: 'sentry',
            alertName: 'OperationalError: could not connect to server: Connection refused',
            text: 'could not connect to server: Connection refused (orders-db.internal:5432)',
          }),
        ],
        changes: [deploy({ occurredAt: minutes(-240) })],
        topology: {
          known: true,
          serviceType: 'api',
          dependencies: [
            dependency({ name: 'orders-db', alertingDependents: ['billing-worker', 'checkout-api', 'inventory-api'] }),
          ],
          dependents: [],
        },
      }),
    );
    expect(result.hypotheses[0]).toMatchObject({ kind: 'upstream_failure', subject: 'orders-db' });
    const deployment = result.hypotheses.find((h) => h.kind === 'bad_deploy')!;
    expect(deployment.status).toBe('discarded');
    expect(deployment.reason).toContain('billing-worker and inventory-api fail the same way and were not deployed');
    expect(result.recommendedActions[0]).toMatch(/^Restore orders-db/);
  });

  it('discards the generic deploy hypothesis in favour of the specific configuration change it shipped', () => {
    const result = analyzeInvestigation(
      input({
        alerts: [
          alert({
            provider: 'sentry',
            alertName: 'PaymentGatewayTimeout: Timed out calling payments-gateway after 2s',
            text: 'Timed out calling payments-gateway after 2s',
          }),
        ],
        changes: [
          {
            ...deploy({ kind: 'code_change', deploymentId: null, occurredAt: minutes(-25), sha: 'ffff' }),
            commits: [
              {
                id: '9b1e4d2c7a5f3e8b0d6c4a2f1e9d7b5c3a1f0e2d',
                message: 'Lower payments-gateway client timeout to 2s',
                files: ['checkout/settings.py'],
              },
              { id: 'ffff', message: 'Merge pull request #1 from example-shop/timeout', files: [] },
            ],
          },
          deploy({ sha: 'ffff', occurredAt: minutes(-15) }),
        ],
      }),
    );
    expect(result.hypotheses[0]).toMatchObject({ kind: 'config_change', status: 'kept' });
    expect(result.recommendedActions[0]).toMatch(/^Revert config change 9b1e4d2 in example-shop\/checkout-api/);
    const generic = result.hypotheses.find((h) => h.kind === 'bad_deploy')!;
    expect(generic.reason).toMatch(/^the same cause is explained more specifically by config_change/);
  });

  it('recognises a flapping alert and does not blame an old deploy for it', () => {
    const toggles = [0, 5, 10, 16, 22, 29].map((m, i) =>
      alert({
        alertName: 'CPUThrottlingHigh',
        service: 'batch-worker',
        severity: 'medium',
        status: i % 2 === 0 ? 'firing' : 'resolved',
        occurredAt: minutes(m),
        text: 'CPU throttling 27% of periods (threshold 25%)',
      }),
    );
    const result = analyzeInvestigation(
      input({
        incident: { ...input().incident, service: 'batch-worker', recovered: true },
        alerts: toggles,
        changes: [deploy({ service: 'batch-worker', occurredAt: minutes(-200) })],
      }),
    );
    expect(result.hypotheses[0]).toMatchObject({ kind: 'flapping_alert', subject: 'CPUThrottlingHigh' });
    expect(result.recommendedActions[0]).toMatch(/^Tune alert CPUThrottlingHigh on batch-worker/);
    expect(result.hypotheses.find((h) => h.kind === 'bad_deploy')!.against.join(' ')).toContain('recovers on its own');
  });

  it('answers "undetermined" with a low confidence when nothing explains the incident', () => {
    const result = analyzeInvestigation(
      input({ alerts: [alert({ alertName: 'SomethingOdd', text: 'odd behaviour' })] }),
    );
    expect(result.hypotheses[0]).toMatchObject({ kind: 'undetermined', status: 'kept' });
    expect(result.rootCause).toMatch(/^Undetermined/);
    expect(result.confidence).toBeLessThanOrEqual(0.3);
    expect(result.recommendedActions[0]).toContain('checkout-api');
  });

  it('only uses the signals of the agents that ran', () => {
    const full = input({ changes: [deploy()] });
    const withoutDeployments = { ...full, roles: agentRoles.filter((r) => r !== 'deployment') };
    expect(restrictToRoles(withoutDeployments).changes).toEqual([]);
    expect(analyzeInvestigation(full).hypotheses[0]!.kind).toBe('bad_deploy');
    expect(analyzeInvestigation(withoutDeployments).hypotheses[0]!.kind).toBe('undetermined');
  });

  it('is deterministic', () => {
    const scenario = input({ changes: [deploy()], context: [{ seq: 1, content: 'The deploy went out at 09:18.' }] });
    expect(analyzeInvestigation(scenario)).toEqual(analyzeInvestigation(structuredClone(scenario)));
  });
});

describe('confidence', () => {
  it('stays within [0.05, 0.95] whatever the input', () => {
    const variants: InvestigationInput[] = [
      input(),
      input({ changes: [deploy()] }),
      input({ changes: [deploy(), deploy({ service: 'orders-db', hops: 1, deploymentId: '9' })] }),
      input({
        alerts: [alert({ text: 'certificate has expired for api.example.com; x509: certificate has expired' })],
      }),
      input({
        alerts: [
          alert({ text: 'No space left on device (99% used)', labels: { instance: 'db-1', mountpoint: '/data' } }),
        ],
        changes: [deploy()],
      }),
      input({
        alerts: [
          alert({ text: 'NXDOMAIN for payments.internal.example.com' }),
          alert({ text: 'Request rate 12x its baseline; HPA at max replicas' }),
        ],
        context: [{ seq: 1, content: 'We changed DNS. It was not the traffic. Definitely DNS.' }],
      }),
    ];
    for (const v of variants) {
      const { confidence, hypotheses } = analyzeInvestigation(v);
      expect(confidence).toBeGreaterThanOrEqual(0.05);
      expect(confidence).toBeLessThanOrEqual(0.95);
      for (const h of hypotheses) {
        expect(h.score).toBeGreaterThanOrEqual(0);
        expect(h.score).toBeLessThanOrEqual(0.98);
      }
    }
  });

  it('is lower when a competing hypothesis is close than when the winner stands alone', () => {
    const orders = topologyWith(
      dependency({
        name: 'orders-db',
        alerting: true,
        alertCount: 2,
        firstAlertAt: minutes(-1),
        alertNames: ['PostgresDown'],
        alertTexts: ['orders-db is down'],
        alertingDependents: ['checkout-api', 'inventory-api'],
      }),
    );
    // The same winner, alone and then with a deploy of the service 12 minutes before as a rival.
    const clear = analyzeInvestigation(input({ topology: orders }));
    const contested = analyzeInvestigation(input({ changes: [deploy()], topology: orders }));
    expect(clear.hypotheses[0]!.kind).toBe(contested.hypotheses[0]!.kind);
    expect(contested.hypotheses[1]!.score).toBeGreaterThan(0.5);
    expect(contested.confidence).toBeLessThan(clear.confidence);
  });
});

describe('human context', () => {
  const ambiguous = () =>
    input({
      alerts: [
        alert({
          provider: 'sentry',
          alertName: 'ConnectTimeout: Read timed out calling payments-api',
          text: "HTTPSConnectionPool(host='payments.internal.example.com', port=443): Read timed out calling payments-api",
        }),
      ],
      changes: [
        deploy({
          service: 'payments-api',
          repository: 'example-shop/payments-api',
          deploymentId: '9120',
          hops: 1,
          occurredAt: minutes(-40),
        }),
      ],
      topology: {
        known: true,
        serviceType: 'api',
        dependencies: [dependency({ name: 'payments-api', type: 'api' })],
        dependents: [],
      },
    });

  it('tips the ranking: "we rotated the DNS provider at 03:00" makes DNS the cause', () => {
    const before = analyzeInvestigation(ambiguous());
    expect(before.hypotheses[0]!.kind).toBe('upstream_deploy');
    const after = analyzeInvestigation({
      ...ambiguous(),
      context: [
        {
          seq: 1,
          content: 'We rotated the DNS provider at 03:00; lookups of payments.internal.example.com fail since.',
        },
      ],
    });
    expect(after.hypotheses[0]).toMatchObject({
      kind: 'dns_failure',
      subject: 'payments.internal.example.com',
      status: 'kept',
    });
    expect(after.hypotheses[0]!.contextAdjustment).toBeGreaterThan(0);
    expect(after.hypotheses[0]!.support.join(' ')).toContain('human context for');
    expect(after.recommendedActions[0]).toMatch(/^Restore DNS resolution of payments\.internal\.example\.com/);
    expect(after.hypotheses.find((h) => h.kind === 'upstream_deploy')).toMatchObject({ status: 'discarded' });
  });

  it('lowers a hypothesis the humans rule out', () => {
    const ruledOut = analyzeInvestigation({
      ...ambiguous(),
      context: [{ seq: 1, content: 'The payments-api deploy was a no-op, only docs changed.' }],
    });
    const deployment = ruledOut.hypotheses.find((h) => h.kind === 'upstream_deploy')!;
    expect(deployment.contextAdjustment).toBeLessThan(0);
    expect(deployment.status).toBe('discarded');
    expect(deployment.against.join(' ')).toContain('human context against');
    expect(ruledOut.hypotheses[0]!.kind).toBe('undetermined');
  });

  it('reads each sentence on its own: a negation elsewhere does not cancel a cue', () => {
    const h = { kind: 'dns_failure' as const, subject: 'payments.internal.example.com' };
    expect(
      contextEffect(h, [{ seq: 1, content: 'It was not the deploy. We moved DNS to a new provider.' }]).delta,
    ).toBeCloseTo(0.3);
    expect(contextEffect(h, [{ seq: 1, content: 'DNS is not involved.' }]).delta).toBeCloseTo(-0.35);
    expect(contextEffect(h, [{ seq: 1, content: 'Lunch was late.' }]).delta).toBe(0);
    // Capped, however much is said.
    expect(
      contextEffect(
        h,
        [1, 2, 3].map((seq) => ({ seq, content: 'DNS! DNS again.' })),
      ).delta,
    ).toBeCloseTo(0.45);
  });
});

describe('helpers', () => {
  it('weighs a change by how close it came before the first alert', () => {
    expect(proximity(-10)).toBe(0);
    expect(proximity(-3)).toBe(1); // clock skew
    expect(proximity(10)).toBe(1);
    expect(proximity(45)).toBeGreaterThan(proximity(90));
    expect(proximity(90)).toBeGreaterThan(proximity(300));
    expect(proximity(400)).toBe(0);
  });

  it('picks the runbook step that acts on the cause, not the diagnostic one', () => {
    const runbook: RunbookObservation = {
      runbookId: 'rbk_1',
      title: 'Postgres connection exhaustion',
      service: 'orders-db',
      tags: ['postgres'],
      steps: [
        { number: 1, text: 'Check pg_stat_activity for idle connections' },
        { number: 2, text: 'Terminate idle-in-transaction connections' },
        { number: 3, text: 'Page the database team' },
      ],
      score: 5,
      matchedKeywords: ['postgres'],
    };
    expect(pickRunbookStep(runbook, { keywords: ['connections', 'pool'] })).toEqual({
      number: 2,
      text: 'Terminate idle-in-transaction connections',
    });
  });

  it('finds host names but not file names or modules', () => {
    expect(
      hostsIn(
        "HTTPSConnectionPool(host='api.example.com'): see checkout/orders/total.py and payments.internal.example.com",
      ),
    ).toEqual(['api.example.com', 'payments.internal.example.com']);
  });

  it('counts toggles of a flapping alert, and ignores an alert that fired once', () => {
    const single = [alert({ text: 'x' })];
    expect(flapStats(single)).toBeNull();
    const toggling = [0, 1, 2, 3, 4].map((m, i) =>
      alert({ alertName: 'Flappy', status: i % 2 === 0 ? 'firing' : 'resolved', occurredAt: minutes(m), text: 'x' }),
    );
    expect(flapStats(toggling)).toMatchObject({ alertName: 'Flappy', toggles: 4, firing: 3, resolved: 2 });
  });
});
