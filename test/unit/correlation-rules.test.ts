import { describe, expect, it } from 'vitest';
import {
  compileGlob,
  compileRules,
  isActive,
  matchingRule,
  ruleGroupKey,
  type EvaluableRule,
  type RuleAlert,
} from '../../src/correlation/rules.js';

const t0 = new Date('2026-01-01T00:00:00Z');

function rule(id: string, overrides: Partial<EvaluableRule> = {}): EvaluableRule {
  return {
    id,
    order: 100,
    createdAt: t0,
    enabled: true,
    match: { provider: 'alertmanager' },
    groupBy: [],
    minAlerts: 1,
    forMinutes: 0,
    action: 'group',
    activeFrom: null,
    activeUntil: null,
    ...overrides,
  };
}

function alert(overrides: Partial<RuleAlert> = {}): RuleAlert {
  return {
    provider: 'alertmanager',
    service: 'checkout',
    alertName: 'KubePodCrashLooping',
    labels: { cluster: 'eu-1', namespace: 'payments', severity: 'critical' },
    severity: 'critical',
    ...overrides,
  };
}

const first = (rows: EvaluableRule[], a: RuleAlert = alert(), now = t0) => matchingRule(compileRules(rows), a, now)?.id;

describe('compileGlob', () => {
  it.each([
    // pattern, value, matches
    ['HighErrorRate', 'HighErrorRate', true],
    ['HighErrorRate', 'higherrorrate', false], // case matters
    ['HighErrorRate', 'HighErrorRateX', false], // exact is whole value
    ['Kube*', 'KubePodCrashLooping', true],
    ['Kube*', 'Kube', true], // * may be empty
    ['Kube*', 'kube', false],
    ['*Looping', 'KubePodCrashLooping', true],
    ['*Crash*', 'KubePodCrashLooping', true],
    ['*Crash*', 'KubePodLooping', false],
    ['*', '', true],
    ['*', 'anything at all', true],
    ['**', 'x', true],
    ['a*b*c', 'abc', true],
    ['a*b*c', 'aXbYc', true],
    ['a*b*c', 'acb', false],
    ['a*a', 'a', false], // prefix and suffix may not share the one character
    ['a*a', 'aa', true],
    ['ab*ba', 'aba', false],
    ['a*b*b', 'ab', false], // middle and suffix may not overlap
    ['a*b*b', 'abb', true],
    ['eu-?', 'eu-1', true],
    ['eu-?', 'eu-12', false],
    ['eu-?', 'eu-', false],
    ['???', 'abc', true],
    ['???', 'ab', false],
    ['?', '€', true], // one character, not one byte
    ['?', '😀', true], // one code point, not a UTF-16 half
    ['a?*', 'a😀b', true],
    ['*?c', 'c', false],
    ['*?c', 'bc', true],
    ['a?c*d?f', 'abcXXdef', true],
    ['a?c*d?f', 'abcXXdf', false],
    // Every other character is literal: nothing of RegExp syntax leaks through.
    ['a.b', 'aXb', false],
    ['a.b', 'a.b', true],
    ['(x|y)+', '(x|y)+', true],
    ['(x|y)+', 'x', false],
    ['[ab]*', '[ab]zzz', true],
    ['[ab]*', 'azzz', false],
    ['^start$', '^start$', true],
    ['back\\slash*', 'back\\slash!', true],
    ['{1,2}?', '{1,2}x', true],
    ['line*', 'line\nbreak', true], // * spans any character
  ])('%j against %j → %s', (pattern, value, expected) => {
    expect(compileGlob(pattern)(value)).toBe(expected);
  });

  it('agrees with the equivalent RegExp on every small pattern and value (exhaustive over a, b, *, ?)', () => {
    const words = (alphabet: string[], max: number): string[] => {
      const out = [''];
      for (let i = 0, frontier = ['']; i < max; i++) {
        frontier = frontier.flatMap((w) => alphabet.map((c) => w + c));
        out.push(...frontier);
      }
      return out;
    };
    const values = words(['a', 'b'], 6);
    let compared = 0;
    for (const pattern of words(['a', 'b', '*', '?'], 5)) {
      if (pattern === '') continue;
      const reference = new RegExp(`^${pattern.replaceAll('*', '.*').replaceAll('?', '.')}$`, 's');
      const glob = compileGlob(pattern);
      for (const value of values) {
        if (glob(value) !== reference.test(value)) expect({ pattern, value, glob: glob(value) }).toBe('as RegExp');
        compared++;
      }
    }
    expect(compared).toBeGreaterThan(100_000);
  });

  it('stays linear where a backtracking RegExp takes seconds (a*a*a*a*b against 2,000 a)', () => {
    const value = 'a'.repeat(2000);
    const started = performance.now();
    expect(compileGlob('*a*a*a*a*a*a*b')(value)).toBe(false);
    expect(compileGlob('*a?a*a?a*a?a*b')(value)).toBe(false);
    expect(compileGlob('*a*a*a*a*a*a*a')(value)).toBe(true);
    expect(performance.now() - started).toBeLessThan(200);
  });
});

describe('matchingRule criteria', () => {
  it('matches on provider and service exactly', () => {
    expect(first([rule('r', { match: { provider: 'alertmanager' } })])).toBe('r');
    expect(first([rule('r', { match: { provider: 'grafana' } })])).toBeUndefined();
    expect(first([rule('r', { match: { service: 'checkout' } })])).toBe('r');
    expect(first([rule('r', { match: { service: 'check*' } })])).toBeUndefined(); // service is exact
    expect(first([rule('r', { match: { service: 'checkout' } })], alert({ service: null }))).toBeUndefined();
  });

  it('matches alertName exactly or by glob', () => {
    expect(first([rule('r', { match: { alertName: 'KubePodCrashLooping' } })])).toBe('r');
    expect(first([rule('r', { match: { alertName: 'Kube*' } })])).toBe('r');
    expect(first([rule('r', { match: { alertName: 'Kube?od*' } })])).toBe('r');
    expect(first([rule('r', { match: { alertName: 'Node*' } })])).toBeUndefined();
  });

  it('matches every given label, by value or glob; a missing label never matches, not even *', () => {
    expect(first([rule('r', { match: { labels: { cluster: 'eu-1', namespace: 'pay*' } } })])).toBe('r');
    expect(first([rule('r', { match: { labels: { cluster: 'eu-?' } } })])).toBe('r');
    expect(first([rule('r', { match: { labels: { cluster: 'eu-1', namespace: 'web' } } })])).toBeUndefined();
    expect(first([rule('r', { match: { labels: { region: '*' } } })])).toBeUndefined();
    expect(first([rule('r', { match: { labels: { region: '*' } } })], alert({ labels: { region: '' } }))).toBe('r');
    // Not a prototype property either.
    expect(first([rule('r', { match: { labels: { toString: '*' } } })])).toBeUndefined();
  });

  it('matches severity as a list', () => {
    expect(first([rule('r', { match: { severity: ['critical', 'high'] } })])).toBe('r');
    expect(first([rule('r', { match: { severity: ['critical'] } })], alert({ severity: 'low' }))).toBeUndefined();
    expect(first([rule('r', { match: { severity: ['low', 'medium'] } })], alert({ severity: 'low' }))).toBe('r');
  });

  it('needs every criterion to match', () => {
    const match = { provider: 'alertmanager', alertName: 'Kube*', labels: { cluster: 'eu-1' }, severity: ['critical'] };
    expect(first([rule('r', { match })])).toBe('r');
    expect(first([rule('r', { match })], alert({ provider: 'grafana' }))).toBeUndefined();
    expect(first([rule('r', { match })], alert({ alertName: 'NodeDown' }))).toBeUndefined();
    expect(first([rule('r', { match })], alert({ labels: { cluster: 'us-1' } }))).toBeUndefined();
    expect(first([rule('r', { match })], alert({ severity: 'high' }))).toBeUndefined();
  });

  it('never matches with a rule of no criteria (the api refuses one; a row read from elsewhere stays inert)', () => {
    expect(first([rule('empty', { match: {} }), rule('r', { order: 200 })])).toBe('r');
    expect(first([rule('empty', { match: { labels: {} } })])).toBeUndefined();
  });
});

describe('matchingRule order, enabled and windows', () => {
  it('takes the first rule by order, then creation, then id: first match wins', () => {
    const later = new Date(t0.getTime() + 1000);
    expect(first([rule('b', { order: 200 }), rule('a', { order: 100 })])).toBe('a');
    expect(first([rule('late', { createdAt: later }), rule('early')])).toBe('early');
    expect(first([rule('r2'), rule('r1')])).toBe('r1');
    // A lower order that does not match gives way to the next one that does.
    expect(first([rule('miss', { order: 1, match: { provider: 'sentry' } }), rule('hit', { order: 2 })])).toBe('hit');
    expect(
      compileRules([rule('c', { order: 5 }), rule('a', { order: 5 }), rule('b', { order: 0 })]).map((r) => r.id),
    ).toEqual(['b', 'a', 'c']);
  });

  it('skips a disabled rule', () => {
    expect(first([rule('off', { order: 1, enabled: false }), rule('on', { order: 2 })])).toBe('on');
    expect(first([rule('off', { enabled: false })])).toBeUndefined();
  });

  it('applies a rule only in its window: activeFrom <= now < activeUntil, null unbounded', () => {
    const from = new Date('2026-01-01T02:00:00Z');
    const until = new Date('2026-01-01T04:00:00Z');
    const windowed = [
      rule('maintenance', { order: 1, action: 'suppress', activeFrom: from, activeUntil: until }),
      rule('rest'),
    ];
    expect(first(windowed, alert(), new Date(from.getTime() - 1))).toBe('rest');
    expect(first(windowed, alert(), from)).toBe('maintenance');
    expect(first(windowed, alert(), new Date(until.getTime() - 1))).toBe('maintenance');
    expect(first(windowed, alert(), until)).toBe('rest');
    expect(isActive({ activeFrom: null, activeUntil: until }, new Date(0))).toBe(true);
    expect(isActive({ activeFrom: from, activeUntil: null }, new Date('2999-01-01T00:00:00Z'))).toBe(true);
    expect(isActive({ activeFrom: null, activeUntil: null }, t0)).toBe(true);
  });

  it('returns the compiled rule with its action and thresholds', () => {
    const [compiled] = compileRules([rule('r', { action: 'open_separately', minAlerts: 3, forMinutes: 5 })]);
    const found = matchingRule([compiled!], alert(), t0)!;
    expect(found).toMatchObject({ id: 'r', action: 'open_separately', minAlerts: 3, forMinutes: 5 });
  });

  it('evaluates 200 rules against an alert in well under a millisecond on average', () => {
    const rows = Array.from({ length: 200 }, (_, i) =>
      rule(`r${String(i).padStart(3, '0')}`, {
        order: i,
        match: { alertName: `Alert${i}*`, labels: { cluster: 'eu-*', team: `team-${i}` }, severity: ['critical'] },
      }),
    );
    const rules = compileRules(rows);
    const a = alert({ alertName: 'Alert199Burst', labels: { cluster: 'eu-1', team: 'team-199' } });
    const started = performance.now();
    for (let i = 0; i < 2000; i++) expect(matchingRule(rules, a, t0)?.id).toBe('r199');
    expect((performance.now() - started) / 2000).toBeLessThan(0.5);
  });
});

describe('ruleGroupKey', () => {
  it('is the rule id then the groupBy label values in order, a missing label empty', () => {
    const [r] = compileRules([rule('crl_1', { groupBy: ['cluster', 'region', 'namespace'] })]);
    expect(ruleGroupKey(r!, alert())).toBe('crl_1|eu-1||payments');
    const [none] = compileRules([rule('crl_2')]);
    expect(ruleGroupKey(none!, alert())).toBe('crl_2|');
  });

  it('puts alerts with equal groupBy values in one group and different ones apart, whatever else differs', () => {
    const [r] = compileRules([rule('crl_1', { groupBy: ['cluster'] })]);
    const a = ruleGroupKey(r!, alert({ alertName: 'A', labels: { cluster: 'eu-1', pod: 'x' } }));
    const b = ruleGroupKey(r!, alert({ alertName: 'B', labels: { cluster: 'eu-1', pod: 'y' } }));
    const c = ruleGroupKey(r!, alert({ alertName: 'A', labels: { cluster: 'us-1', pod: 'x' } }));
    expect(a).toBe(b);
    expect(a).not.toBe(c);
  });

  it('never lets a | inside a value make two groups one', () => {
    const [r] = compileRules([rule('crl_1', { groupBy: ['a', 'b'] })]);
    const one = ruleGroupKey(r!, alert({ labels: { a: 'x|y', b: '' } }));
    const two = ruleGroupKey(r!, alert({ labels: { a: 'x', b: 'y' } }));
    expect(one).not.toBe(two);
  });
});
