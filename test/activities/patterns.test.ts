/**
 * Pattern rules without I/O: confidence arithmetic, maturity at the threshold, categories of a
 * written correction, signatures and matching, and what the analyzer makes of a learned pattern.
 */
import { describe, expect, it } from 'vitest';
import {
  analyzeInvestigation,
  knownPatternScore,
  type InvestigationInput,
  type PatternObservation,
} from '../../src/analysis/investigation/index.js';
import { agentRoles } from '../../src/analysis/types.js';
import {
  actionsInText,
  categorizeText,
  commonLabels,
  patternConfidence,
  patternStatus,
  signatureKey,
  signatureMatch,
  symptomMatch,
  type PatternSignature,
} from '../../src/domain/patterns.js';
import { verdictEffect } from '../../src/db/repositories/feedback.js';

describe('confidence and maturity', () => {
  it('is the Beta posterior mean (confirms + 1) / (confirms + rejects + 2)', () => {
    expect(patternConfidence(0, 0)).toBe(0.5);
    expect(patternConfidence(1, 0)).toBeCloseTo(2 / 3, 12);
    expect(patternConfidence(0, 1)).toBeCloseTo(1 / 3, 12);
    expect(patternConfidence(5, 0)).toBeCloseTo(6 / 7, 12);
    expect(patternConfidence(3, 3)).toBe(0.5);
  });

  it('is stable exactly from 5 occurrences and confidence 0.85, both ways', () => {
    // 16 confirms, 2 rejects: exactly 17/20 = 0.85.
    const exactly = patternConfidence(16, 2);
    expect(exactly).toBe(0.85);
    expect(patternStatus(5, exactly)).toBe('stable');
    expect(patternStatus(4, exactly)).toBe('emerging');
    expect(patternStatus(5, patternConfidence(15, 2))).toBe('emerging'); // 16/19 ≈ 0.842
    expect(patternStatus(5, patternConfidence(16, 3))).toBe('emerging'); // demoted: 17/21 ≈ 0.81
    // With no rejection, five confirmations are the fewest that reach 0.85 (6/7 ≈ 0.857; 5/6 ≈ 0.833).
    expect(patternStatus(5, patternConfidence(5, 0))).toBe('stable');
    expect(patternStatus(5, patternConfidence(4, 0))).toBe('emerging');
    expect(patternStatus(100, 0.9)).toBe('stable');
  });

  it('counts a verdict: confirm, reject, and a correction as a rejection unless it names the same category', () => {
    const pool = { category: 'connection_pool' };
    expect(verdictEffect('confirm_rca', null, pool)).toEqual({ confirms: 1, rejects: 0 });
    expect(verdictEffect('reject_rca', null, pool)).toEqual({ confirms: 0, rejects: 1 });
    expect(verdictEffect('correct_rca', 'The DNS resolver was failing', pool)).toEqual({ confirms: 0, rejects: 1 });
    expect(verdictEffect('correct_rca', 'pgbouncer pool exhausted by a leaked cursor', pool)).toEqual({
      confirms: 1,
      rejects: 0,
    });
  });
});

describe('categories of a written root cause', () => {
  it.each([
    ['The TLS certificate of api.example.com expired at midnight', 'expired_certificate'],
    ['Route53 resolvers returned SERVFAIL for the internal zone', 'dns_failure'],
    ['The orders-db connection pool was exhausted by a leaked cursor; restart pgbouncer', 'connection_pool'],
    ['A memory leak in the image cache filled the heap until OOM', 'memory_leak'],
    ['Release 2.4 shipped a regression in the checkout flow; we rolled back', 'bad_deploy'],
    ['Someone changed the feature flag configuration for payments', 'config_change'],
    ['Stripe had an outage, see their status page', 'third_party_outage'],
    ['Nobody knows; a batch job ran long', 'runaway_job'],
    ['Nobody knows; it went away on its own', 'other'],
    ['It was not the deploy. A volume filled up', 'disk_full'],
  ])('%s → %s', (text, category) => {
    expect(categorizeText(text)).toBe(category);
  });

  it('finds the actions a correction names', () => {
    expect(
      actionsInText(
        'The orders-db pool was exhausted by a leaked cursor; restart pgbouncer and kill idle connections. Then raise max_connections to 400.',
      ),
    ).toEqual(['Restart pgbouncer and kill idle connections', 'Raise max_connections to 400']);
    expect(actionsInText('A batch job ran long')).toEqual([]);
  });
});

describe('signatures', () => {
  const sig: PatternSignature = {
    service: 'checkout-api',
    alertNames: ['HighErrorRate', 'DBConnections'],
    labels: { env: 'prod' },
    category: 'connection_pool',
    evidenceTypes: ['alert', 'log'],
    rootCause: 'pool exhausted',
  };
  const asPattern = (s: PatternSignature) => ({ ...s, signatureKey: signatureKey(s) });

  it('keys on service, category and alert names, whatever their order and case', () => {
    expect(signatureKey(sig)).toBe(
      signatureKey({
        ...sig,
        service: 'Checkout-API',
        alertNames: ['DBConnections', 'HighErrorRate'],
        rootCause: 'other words',
      }),
    );
    expect(signatureKey(sig)).not.toBe(signatureKey({ ...sig, category: 'dns_failure' }));
    // Free-form ("other") causes also key on their words.
    const other = { ...sig, category: 'other' as const };
    expect(signatureKey({ ...other, rootCause: 'a batch job ran long' })).not.toBe(
      signatureKey({ ...other, rootCause: 'the intern unplugged the switch' }),
    );
  });

  it('matches the same service and category with alert names in common; labels only break ties', () => {
    expect(signatureMatch(sig, asPattern({ ...sig, alertNames: ['HighErrorRate'], labels: {} }))).toBeCloseTo(0.5, 5);
    expect(signatureMatch(sig, asPattern({ ...sig, alertNames: ['HighErrorRate'] }))).toBeGreaterThan(0.5);
    expect(signatureMatch(sig, asPattern({ ...sig, alertNames: ['DiskFull'] }))).toBeNull();
    expect(signatureMatch(sig, asPattern({ ...sig, service: 'search-api' }))).toBeNull();
    expect(signatureMatch(sig, asPattern({ ...sig, category: 'cache_failure' }))).toBeNull();
  });

  it('matches symptoms by service alone when either side has no alert names (manual incidents)', () => {
    expect(
      symptomMatch({ service: 'checkout-api', alertNames: [] }, { service: 'checkout-api', alertNames: ['X'] }),
    ).toBe(0.5);
    expect(symptomMatch({ service: null, alertNames: [] }, { service: null, alertNames: [] })).toBeNull();
    expect(symptomMatch({ service: 'a', alertNames: ['X', 'Y'] }, { service: 'A', alertNames: ['y'] })).toBe(0.5);
  });

  it('keeps only the labels every alert shares, without volatile ones', () => {
    expect(
      commonLabels([
        { env: 'prod', instance: 'a:9090', team: 'x' },
        { env: 'prod', instance: 'b:9090', team: 'y' },
      ]),
    ).toEqual({ env: 'prod' });
    expect(commonLabels([])).toEqual({});
  });
});

describe('the analyzer with a learned pattern', () => {
  const base: InvestigationInput = {
    incident: {
      incidentId: 'inc_1',
      title: 'Checkout errors',
      description: 'Checkout answers errors',
      service: 'checkout-api',
      severity: 'high',
      firstAlertAt: '2025-01-01T10:00:00.000Z',
      occurrenceCount: 1,
      recovered: false,
    },
    roles: [...agentRoles],
    alerts: [],
    correlated: [],
    changes: [],
    topology: { known: false, serviceType: null, dependencies: [], dependents: [] },
    runbooks: [],
    context: [],
  };
  const pattern = (over: Partial<PatternObservation>): PatternObservation => ({
    patternId: 'pat_1',
    title: 'Connection pool exhaustion on checkout-api (CheckoutErrors)',
    category: 'connection_pool',
    rootCause: 'The orders-db pool was exhausted by a leaked cursor',
    fix: ['Restart pgbouncer', 'Kill idle connections of the reporting job'],
    status: 'stable',
    confidence: 0.9,
    occurrences: 6,
    overlap: 1,
    ...over,
  });

  it('concludes a stable pattern with its past fix leading the actions', () => {
    const result = analyzeInvestigation({ ...base, patterns: [pattern({})] });
    const top = result.hypotheses[0]!;
    expect(top).toMatchObject({ kind: 'known_pattern', status: 'kept', score: 0.86 }); // 0.5 + 0.4 × 0.9
    expect(top.sources).toEqual(['pat_1']);
    expect(result.rootCause).toContain('The orders-db pool was exhausted by a leaked cursor');
    expect(result.recommendedActions.slice(0, 2)).toEqual([
      'Restart pgbouncer',
      'Kill idle connections of the reporting job',
    ]);
    expect(result.confidence).toBeGreaterThan(0.7);
  });

  it('scores a known pattern 0.5 + 0.4 × confidence when stable, 0.2 + 0.3 × confidence when emerging', () => {
    expect(knownPatternScore({ status: 'stable', confidence: 0.9 })).toBe(0.86);
    expect(knownPatternScore({ status: 'stable', confidence: 0 })).toBe(0.5);
    expect(knownPatternScore({ status: 'stable', confidence: 1 })).toBe(0.9);
    expect(knownPatternScore({ status: 'emerging', confidence: 2 / 3 })).toBe(0.4);
    expect(knownPatternScore({ status: 'emerging', confidence: 1 })).toBe(0.5);
  });

  it('weighs an emerging pattern less, and a rejected one not at all', () => {
    const emerging = analyzeInvestigation({
      ...base,
      patterns: [pattern({ status: 'emerging', confidence: 2 / 3, occurrences: 1 })],
    });
    expect(emerging.hypotheses[0]!.kind).toBe('known_pattern');
    expect(emerging.confidence).toBeLessThan(0.5);
    const rejected = analyzeInvestigation({ ...base, patterns: [pattern({ status: 'emerging', confidence: 1 / 3 })] });
    expect(rejected.hypotheses[0]!.kind).toBe('undetermined');
    // Without the knowledge agent, patterns are not used.
    const without = analyzeInvestigation({
      ...base,
      roles: agentRoles.filter((r) => r !== 'knowledge'),
      patterns: [pattern({})],
    });
    expect(without.hypotheses.some((h) => h.kind === 'known_pattern')).toBe(false);
  });

  it('supports the signal-based hypothesis of the same category instead of competing with it', () => {
    const poolAlert = {
      eventId: 'evt_1',
      provider: 'generic',
      incidentId: 'inc_1',
      alertName: 'DBConnections',
      service: 'checkout-api',
      severity: 'high' as const,
      status: 'firing' as const,
      occurredAt: '2025-01-01T10:00:00.000Z',
      title: 'Connection pool exhausted',
      text: 'HikariPool-1 - Connection is not available, request timed out after 30000ms (pool exhausted)',
      labels: {},
    };
    const plain = analyzeInvestigation({ ...base, alerts: [poolAlert] });
    const withPattern = analyzeInvestigation({ ...base, alerts: [poolAlert], patterns: [pattern({})] });
    expect(plain.hypotheses[0]!.kind).toBe('connection_pool');
    const top = withPattern.hypotheses[0]!;
    expect(top.kind).toBe('connection_pool');
    expect(top.score).toBeGreaterThan(plain.hypotheses[0]!.score);
    expect(top.support.some((s) => s.includes('learned stable pattern'))).toBe(true);
    expect(withPattern.hypotheses.some((h) => h.kind === 'known_pattern')).toBe(false);
    expect(withPattern.recommendedActions[0]).toBe('Restart pgbouncer');
  });
});
