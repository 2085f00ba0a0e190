import { severities, type Severity } from '../db/schema/incidents.js';

/** The higher of two severities (`a` when equal; `b` alone when `a` is undefined). */
export function higherSeverity(a: Severity | undefined, b: Severity): Severity {
  return a === undefined || severities.indexOf(b) < severities.indexOf(a) ? b : a;
}

/** The highest of some severities (the first of equals). */
export function highestSeverity(first: Severity, ...more: Severity[]): Severity {
  return more.reduce<Severity>((top, s) => higherSeverity(top, s), first);
}
