/**
 * How an investigation is graded against an incident's truth (ADR 0271). The cause statement is
 * the root cause before "Ruled out:" and before "Evidence:": alternatives the engine lists as ruled
 * out name nothing, and neither do the alert texts it quotes as evidence (they hold every word).
 */
import type { Truth } from './types.js';

export type Grade = 'bullseye' | 'one hop short' | 'right area, wrong diagnosis' | 'wrong area';

/** An engine answering a lean with at most this confidence is hedging, not claiming. */
export const HEDGED_CONFIDENCE = 0.4;

export function causeStatement(rootCause: string): string {
  const at = rootCause.search(/Ruled out:|Evidence:/i);
  return (at >= 0 ? rootCause.slice(0, at) : rootCause).trim();
}

const escape = (s: string) => s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
/** A name counts when it stands as a word of its own (checkout-api does not name checkout-api-v2's "checkout"). */
export function names(statement: string, name: string): boolean {
  return new RegExp(`(^|[^A-Za-z0-9_-])${escape(name)}($|[^A-Za-z0-9_-])`, 'i').test(statement);
}

export const saysUndetermined = (statement: string): boolean =>
  /^\s*undetermined|\b(cannot|could not|can't) (be )?determine|\binconclusive\b/i.test(statement);

export interface Graded {
  grade: Grade;
  /** Bullseye: what the accuracy and the Brier score count. */
  correct: boolean;
  firstActionCorrect: boolean;
  statement: string;
}

export function grade(
  truth: Truth,
  result: { rootCause: string; confidence: number; recommendedActions: string[] },
): Graded {
  const statement = causeStatement(result.rootCause);
  const subject = truth.subject.some((n) => names(statement, n));
  const hop = truth.oneHopShort.some((n) => names(statement, n));
  const first = result.recommendedActions[0] ?? '';
  const firstActionCorrect = truth.action.every((re) => re.test(first));
  let g: Grade;
  if (truth.undetermined) {
    // Correct: saying so, or leaning on a plausible cause with a hedged confidence.
    if (saysUndetermined(statement) || (subject && result.confidence <= HEDGED_CONFIDENCE)) g = 'bullseye';
    else if (subject) g = 'right area, wrong diagnosis';
    else if (hop) g = 'one hop short';
    else g = 'wrong area';
  } else if (saysUndetermined(statement)) {
    // Declining to name a cause names none, whatever the explanation of what is missing mentions.
    g = 'wrong area';
  } else {
    const mechanism = truth.mechanism.some((re) => re.test(statement));
    if (subject && mechanism) g = 'bullseye';
    else if (subject) g = 'right area, wrong diagnosis';
    else if (hop) g = 'one hop short';
    else g = 'wrong area';
  }
  return { grade: g, correct: g === 'bullseye', firstActionCorrect, statement };
}

export interface Scored {
  confidence: number;
  correct: boolean;
  firstActionCorrect: boolean;
  /** The truth is undetermined: no named cause can be right, so the calibration outcome is 0. */
  undetermined?: boolean;
}

/**
 * What the confidence is calibrated against: whether the cause the engine named is the cause.
 * On an undetermined incident nothing named can be, so an honest low confidence scores well there.
 */
export const outcome = (r: Scored): number => (r.correct && !r.undetermined ? 1 : 0);

export interface Figures {
  n: number;
  rootCauseAccuracy: number;
  firstActionAccuracy: number;
  brier: number;
  /** `accuracy`: the share of the bin whose named cause is the cause (the calibration outcome). */
  reliability: Array<{ bin: string; count: number; meanConfidence: number; accuracy: number }>;
}

export function figures(rows: Scored[]): Figures {
  const n = rows.length;
  const mean = (xs: number[]) => (xs.length ? xs.reduce((a, b) => a + b, 0) / xs.length : 0);
  const bins = [0, 0.2, 0.4, 0.6, 0.8].map((lo) => {
    const hi = lo + 0.2;
    const inBin = rows.filter((r) => r.confidence >= lo && (hi >= 1 ? r.confidence <= 1 : r.confidence < hi));
    return {
      bin: `${lo.toFixed(1)}–${Math.min(hi, 1).toFixed(1)}`,
      count: inBin.length,
      meanConfidence: mean(inBin.map((r) => r.confidence)),
      accuracy: mean(inBin.map(outcome)),
    };
  });
  return {
    n,
    rootCauseAccuracy: mean(rows.map((r) => (r.correct ? 1 : 0))),
    firstActionAccuracy: mean(rows.map((r) => (r.firstActionCorrect ? 1 : 0))),
    brier: mean(rows.map((r) => (r.confidence - outcome(r)) ** 2)),
    reliability: bins,
  };
}
