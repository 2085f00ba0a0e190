/**
 * `npm run fit:calibration -- <records.json>`: fits the investigation confidence (the logistic
 * coefficients of src/analysis/investigation/calibration.ts) on the corpus records that
 * `INVESTIGATION_EVAL_JSON=<file> npm run eval:investigation` writes, and prints the coefficients,
 * the Brier score and the reliability table with the current coefficients and with the fitted
 * ones. Paste the fitted coefficients into CALIBRATION when they do better, and re-run the eval.
 * Regularised toward the current coefficients (L2) with fixed signs, and reported with a
 * leave-one-out Brier, because the corpus is also what the rules were written against: its
 * in-sample accuracy is an optimistic guide to a held-out set's.
 */
import { readFileSync } from 'node:fs';
import {
  CALIBRATION,
  calibrationFeatures,
  logit,
  type CalibrationFeatures,
} from '../src/analysis/investigation/calibration.js';
import type { Hypothesis } from '../src/analysis/investigation/index.js';

interface StoredRecord {
  id: string;
  confidence: number;
  causeRight: number;
  hypotheses: Array<Partial<Hypothesis> & { kind: string; score: number; status: string }>;
}

type Coefficients = Record<keyof typeof CALIBRATION, number>;
const KEYS = Object.keys(CALIBRATION) as Array<keyof typeof CALIBRATION>;
const sigmoid = (x: number) => 1 / (1 + Math.exp(-x));

function rows(file: string): Array<{ id: string; f: CalibrationFeatures; y: number; stored: number }> {
  const parsed = JSON.parse(readFileSync(file, 'utf8')) as { records: StoredRecord[] };
  return parsed.records.flatMap((r) => {
    const top = r.hypotheses.find((h) => h.status === 'kept');
    if (!top || top.kind === 'undetermined') return [];
    const others = r.hypotheses.filter((h) => h !== top && h.probability !== 0);
    return [
      {
        id: r.id,
        f: calibrationFeatures(top as Hypothesis, others as Hypothesis[]),
        y: r.causeRight,
        stored: r.confidence,
      },
    ];
  });
}

const vector = (f: CalibrationFeatures): Record<keyof typeof CALIBRATION, number> => ({ intercept: 1, ...f });
const predict = (c: Coefficients, f: CalibrationFeatures) => Math.min(0.95, Math.max(0.05, sigmoid(logit(f, c))));

function fit(data: Array<{ f: CalibrationFeatures; y: number }>, lambda = 0.3): Coefficients {
  const c = { ...CALIBRATION } as Coefficients;
  const rate = 0.5;
  for (let step = 0; step < 4_000; step++) {
    const grad = Object.fromEntries(KEYS.map((k) => [k, 0])) as Coefficients;
    for (const { f, y } of data) {
      const err = sigmoid(logit(f, c)) - y;
      const x = vector(f);
      for (const k of KEYS) grad[k] += err * x[k];
    }
    for (const k of KEYS)
      c[k] -= (rate * (grad[k] + (k === 'intercept' ? 0 : lambda * (c[k] - CALIBRATION[k])))) / data.length;
    // Signs are part of the model: more score, margin or direct evidence never lowers confidence;
    // a merely earlier change or more rivals never raise it.
    for (const k of ['score', 'margin', 'direct'] as const) c[k] = Math.max(0, c[k]);
    for (const k of ['temporalOnly', 'rivals'] as const) c[k] = Math.min(0, c[k]);
  }
  for (const k of KEYS) c[k] = Math.round(c[k] * 100) / 100;
  return c;
}

function report(
  name: string,
  data: Array<{ f: CalibrationFeatures; y: number }>,
  p: (f: CalibrationFeatures) => number,
) {
  const brier = data.reduce((s, d) => s + (p(d.f) - d.y) ** 2, 0) / data.length;
  console.log(`\n${name}: Brier ${brier.toFixed(3)} over ${data.length} claimed causes`);
  console.log('bin        n  mean conf  accuracy');
  for (const lo of [0, 0.2, 0.4, 0.6, 0.8]) {
    const inBin = data.filter((d) => p(d.f) >= lo && (lo >= 0.8 ? p(d.f) <= 1 : p(d.f) < lo + 0.2));
    const mean = (xs: number[]) => (xs.length ? xs.reduce((a, b) => a + b, 0) / xs.length : NaN);
    console.log(
      `${lo.toFixed(1)}–${(lo + 0.2).toFixed(1)} ${String(inBin.length).padStart(4)}  ${mean(inBin.map((d) => p(d.f)))
        .toFixed(2)
        .padStart(9)}  ${(mean(inBin.map((d) => d.y)) * 100).toFixed(1).padStart(7)}%`,
    );
  }
}

const file = process.argv[2];
if (!file) {
  console.error('usage: npm run fit:calibration -- <records.json>');
  process.exit(2);
}
const data = rows(file);
report('current coefficients', data, (f) => predict(CALIBRATION, f));
const fitted = fit(data);
report('fitted coefficients', data, (f) => predict(fitted, f));
// Leave-one-out: each incident predicted by a fit that did not see it.
const loo = data.reduce((sum, d, i) => {
  const c = fit(data.filter((_, j) => j !== i));
  return sum + (predict(c, d.f) - d.y) ** 2;
}, 0);
console.log(`\nleave-one-out Brier of the fit: ${(loo / data.length).toFixed(3)}`);
console.log(`\nfitted: ${JSON.stringify(fitted)}`);
