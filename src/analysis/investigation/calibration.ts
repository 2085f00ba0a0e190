/**
 * Confidence you can trust: the kept hypothesis' probability of being right, from a logistic
 * fit on the investigation corpus (test/investigation-corpus, `npm run eval:investigation`
 * prints the reliability table), and the probabilities of the competing hypotheses.
 *
 * Features: the kept hypothesis' score, its margin over the runner-up, whether the evidence
 * names the mechanism (direct) or only a change earlier in time, and how many credible rivals
 * it has. Refit with `npm run eval:investigation -- --fit` after the rules change
 * (docs/investigation.md says how).
 */
import { clamp, round2 } from './text.js';
import { type Hypothesis } from './types.js';

/** Logistic coefficients, fitted on the corpus (see the module comment). */
export const CALIBRATION = {
  intercept: -4.2,
  score: 6.0,
  margin: 3.5,
  direct: 0.6,
  temporalOnly: -0.4,
  rivals: -0.35,
} as const;

/** The features the fit reads, for one ranking. */
export interface CalibrationFeatures {
  score: number;
  margin: number;
  direct: number;
  temporalOnly: number;
  rivals: number;
}

const CREDIBLE = 0.35;

export function calibrationFeatures(top: Hypothesis, others: Hypothesis[]): CalibrationFeatures {
  const rivals = others.filter((h) => h.score >= CREDIBLE && h.kind !== 'undetermined');
  const runnerUp = rivals.reduce((best, h) => Math.max(best, h.score), 0);
  return {
    score: top.score,
    margin: Math.max(0, top.score - runnerUp),
    direct: top.evidence === 'direct' ? 1 : 0,
    temporalOnly: top.evidence === 'temporal' && (top.minutesBefore ?? 0) > 30 ? 1 : 0,
    rivals: Math.min(3, rivals.length),
  };
}

const sigmoid = (x: number) => 1 / (1 + Math.exp(-x));

export function logit(f: CalibrationFeatures, c: Record<keyof typeof CALIBRATION, number> = CALIBRATION): number {
  return (
    c.intercept +
    c.score * f.score +
    c.margin * f.margin +
    c.direct * f.direct +
    c.temporalOnly * f.temporalOnly +
    c.rivals * f.rivals
  );
}

/**
 * The probability that the kept hypothesis is the cause, within [0.05, 0.95]. An undetermined
 * answer is not a claim about a cause: its confidence stays low (at most 0.3).
 */
export function calibratedConfidence(top: Hypothesis, others: Hypothesis[]): number {
  if (top.kind === 'undetermined')
    return round2(clamp(0.05 + 0.25 * Math.max(0, ...others.map((h) => h.score)), 0.05, 0.3));
  return round2(clamp(sigmoid(logit(calibrationFeatures(top, others))), 0.05, 0.95));
}

/**
 * Probabilities for the ranked hypotheses: the kept one has the calibrated confidence; the rest
 * of the mass goes to the others in proportion to exp(6 × score), with a share left for a cause
 * none of them names. Rounded to two decimals; they sum to at most 1.
 */
export function hypothesisProbabilities(ranked: Hypothesis[], confidence: number): number[] {
  if (ranked.length === 0) return [];
  const rest = ranked.slice(1);
  const weights = rest.map((h) => (h.kind === 'undetermined' ? 0 : Math.exp(6 * h.score)));
  const unknown = Math.exp(6 * 0.35);
  const total = weights.reduce((a, b) => a + b, 0) + unknown;
  const left = 1 - confidence;
  return [confidence, ...weights.map((w) => Math.floor((left * w * 100) / total) / 100)];
}
