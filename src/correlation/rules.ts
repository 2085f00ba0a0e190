/**
 * A tenant's correlation rules, evaluated per alert on the webhook path: pure, no I/O. Rules are
 * compiled once per read of the tenant's rules (globs into matchers), then each alert walks the
 * sorted list and takes the first enabled, active rule whose every given criterion matches
 * (ADR 0256). Globs never become backtracking RegExps: `a*a*a*b` against 200 characters took
 * seconds that way; these matchers are linear in the value per star (ADR 0257).
 */
import type { RuleAction, RuleMatch } from '../db/schema/correlation.js';

export interface RuleAlert {
  provider: string;
  service: string | null;
  alertName: string;
  labels: Record<string, string>;
  severity: string;
}

export interface EvaluableRule {
  id: string;
  order: number;
  createdAt: Date;
  enabled: boolean;
  match: RuleMatch;
  groupBy: string[];
  minAlerts: number;
  forMinutes: number;
  action: RuleAction;
  activeFrom: Date | null;
  activeUntil: Date | null;
}

/** Tests one value: a literal compared as is, or a glob's compiled form. */
export type ValueMatcher = (value: string) => boolean;

export interface CompiledRule extends EvaluableRule {
  /** Every given criterion as one test each; a rule matches when all pass. */
  readonly tests: ReadonlyArray<(alert: RuleAlert) => boolean>;
}

const WILDCARD = /[*?]/;

/** Does `pattern` use glob syntax (`*` any run of characters, `?` exactly one)? */
export function isGlob(pattern: string): boolean {
  return WILDCARD.test(pattern);
}

/** One `?`-bearing segment against `chars` at `at`: code points, so `?` is one character, never half of one. */
function segmentAt(chars: string[], at: number, segment: string[]): boolean {
  for (let i = 0; i < segment.length; i++) {
    if (segment[i] !== '?' && segment[i] !== chars[at + i]) return false;
  }
  return true;
}

/** A glob with `?`: segments between stars matched on code points, each middle one leftmost. */
function questionGlob(parts: string[]): ValueMatcher {
  const segments = parts.map((p) => Array.from(p));
  const first = segments[0]!;
  if (segments.length === 1) {
    return (value) => {
      const chars = Array.from(value);
      return chars.length === first.length && segmentAt(chars, 0, first);
    };
  }
  const last = segments.at(-1)!;
  const middle = segments.slice(1, -1).filter((s) => s.length > 0);
  const minimum = segments.reduce((n, s) => n + s.length, 0);
  return (value) => {
    const chars = Array.from(value);
    if (chars.length < minimum) return false;
    const end = chars.length - last.length;
    if (!segmentAt(chars, 0, first) || !segmentAt(chars, end, last)) return false;
    let pos = first.length;
    for (const segment of middle) {
      let at = pos;
      while (at + segment.length <= end && !segmentAt(chars, at, segment)) at++;
      if (at + segment.length > end) return false;
      pos = at + segment.length;
    }
    return true;
  };
}

/**
 * A value matcher: `pattern` alone is an exact match; with `*` or `?` it is a glob over the whole
 * value. Leftmost placement of each middle segment is enough: if any placement matches, the
 * leftmost one leaves the most room for the rest.
 */
export function compileGlob(pattern: string): ValueMatcher {
  if (!isGlob(pattern)) return (value) => value === pattern;
  const parts = pattern.split('*');
  if (pattern.includes('?')) return questionGlob(parts);
  const first = parts[0]!;
  const last = parts.at(-1)!;
  const middle = parts.slice(1, -1).filter((s) => s.length > 0);
  const minimum = parts.reduce((n, s) => n + s.length, 0);
  return (value) => {
    if (value.length < minimum || !value.startsWith(first) || !value.endsWith(last)) return false;
    const end = value.length - last.length;
    let pos = first.length;
    for (const segment of middle) {
      const at = value.indexOf(segment, pos);
      if (at < 0 || at + segment.length > end) return false;
      pos = at + segment.length;
    }
    return true;
  };
}

function testsOf(match: RuleMatch): Array<(alert: RuleAlert) => boolean> {
  const tests: Array<(alert: RuleAlert) => boolean> = [];
  if (match.provider !== undefined) {
    const provider = match.provider;
    tests.push((a) => a.provider === provider);
  }
  if (match.service !== undefined) {
    const service = match.service;
    tests.push((a) => a.service === service);
  }
  if (match.alertName !== undefined) {
    const name = compileGlob(match.alertName);
    tests.push((a) => name(a.alertName));
  }
  for (const [label, pattern] of Object.entries(match.labels ?? {})) {
    const value = compileGlob(pattern);
    // A missing label never matches, not even `*`: a glob of `*` says "the label is present".
    tests.push((a) => Object.hasOwn(a.labels, label) && value(a.labels[label]!));
  }
  if (match.severity !== undefined) {
    const severities = new Set(match.severity);
    tests.push((a) => severities.has(a.severity));
  }
  return tests;
}

/** Rules in evaluation order (`order`, then creation, then id), each with its criteria compiled once. */
export function compileRules(rows: EvaluableRule[]): CompiledRule[] {
  return rows
    .map((row) => ({ ...row, tests: testsOf(row.match) }))
    .sort(
      (a, b) =>
        a.order - b.order || a.createdAt.getTime() - b.createdAt.getTime() || (a.id < b.id ? -1 : a.id > b.id ? 1 : 0),
    );
}

/** Is the rule in force at `now`: `activeFrom <= now < activeUntil`, a null bound unbounded. */
export function isActive(rule: Pick<EvaluableRule, 'activeFrom' | 'activeUntil'>, now: Date): boolean {
  const t = now.getTime();
  return (
    (rule.activeFrom === null || rule.activeFrom.getTime() <= t) &&
    (rule.activeUntil === null || t < rule.activeUntil.getTime())
  );
}

/** The first enabled rule in force at `now` whose every given criterion matches the alert; first match wins. */
export function matchingRule(rules: CompiledRule[], alert: RuleAlert, now: Date): CompiledRule | undefined {
  for (const rule of rules) {
    // A rule without criteria is refused by the api; one read from elsewhere still matches nothing.
    if (!rule.enabled || rule.tests.length === 0 || !isActive(rule, now)) continue;
    if (rule.tests.every((test) => test(alert))) return rule;
  }
  return undefined;
}

/**
 * The key of the group the alert falls in under `rule`: the rule's id, then each `groupBy`
 * label's value in order (a missing label counts as empty). Values are URI-encoded so that a `|`
 * inside one can never make two different groups one key.
 */
export function ruleGroupKey(rule: CompiledRule, alert: RuleAlert): string {
  let key = `${rule.id}|`;
  for (let i = 0; i < rule.groupBy.length; i++) {
    const label = rule.groupBy[i]!;
    const value = Object.hasOwn(alert.labels, label) ? alert.labels[label]! : '';
    key += (i > 0 ? '|' : '') + encodeURIComponent(value);
  }
  return key;
}
