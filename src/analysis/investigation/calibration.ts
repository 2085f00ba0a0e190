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
  intercept: -3.6,
  score: 6.6,
  margin: 2.5,
  direct: 0.6,
  temporalOnly: -0.4,
  rivals: -0.2,
} as const;

/**
 * Ceilings the fit cannot see on a corpus the rules were written against: a cause resting only on
 * timing or on the topology is never near-certain, and a close credible rival halves the claim.
 */
const CEILINGS = { indirect: 0.8, contested: 0.4, emerging: 0.45 } as const;

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

/**
 * A rival that makes the claim a coin toss: another cause (not the same subject or the same
 * change), on evidence of its own (direct or a change), scoring close to the kept one; a change
 * that is only earlier in time is contested by any direct rival.
 */
function contests(top: Hypothesis, h: Hypothesis): boolean {
  if (h.kind === 'undetermined' || (h.evidence !== 'direct' && h.evidence !== 'temporal')) return false;
  if (h.subject.toLowerCase() === top.subject.toLowerCase()) return false;
  if (h.sources.some((s) => top.sources.includes(s)) || (h.changeRef && h.changeRef === top.changeRef)) return false;
  if (h.score < 0.55 || h.score < top.score - 0.2) return false;
  return top.evidence !== 'direct' || h.evidence === 'direct';
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
  const f = calibrationFeatures(top, others);
  let p = sigmoid(logit(f));
  if (top.evidence !== 'direct') p = Math.min(p, CEILINGS.indirect);
  if (others.some((h) => contests(top, h))) p = Math.min(p, CEILINGS.contested);
  // A learned pattern seen few times, or with mixed feedback, is a lead, not a finding.
  if (top.kind === 'known_pattern' && top.against.some((a) => /emerging/.test(a))) p = Math.min(p, CEILINGS.emerging);
  return round2(clamp(p, 0.05, 0.95));
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
