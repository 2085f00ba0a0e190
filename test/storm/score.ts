/**
 * How a grouping compares with the truth, over the distinct alerts of a scenario (one per
 * fingerprint). Pairwise: a pair of alerts is correctly together when both are in one incident
 * and of one outage; noise alerts belong with nothing; tests belong in no incident and are left
 * out of the pairs. An alert in no incident (held, suppressed) counts as alone.
 */
import { NOISE, TEST, type Truth } from './types.js';

export interface PairCounts {
  /** Pairs of one outage. */
  truePairs: number;
  /** Pairs the service put in one incident. */
  predictedPairs: number;
  /** Both. */
  correctPairs: number;
}

export interface ScenarioScore extends PairCounts {
  /** Distinct alerts that are not tests. */
  alerts: number;
  /** correct / predicted; null when the service put no two alerts together. */
  precision: number | null;
  /** correct / true; null when no two alerts are of one outage. */
  recall: number | null;
  /** Per outage: its distinct alerts and the incidents they went into (1 is right). */
  outages: Record<string, { alerts: number; incidents: number; unassigned: number }>;
  noise: { alerts: number; incidents: number; withOutageAlerts: number };
  tests: { alerts: number; inIncidents: number };
  /** Distinct incidents holding any of the scenario's alerts. */
  incidents: number;
}

const pairs = (n: number) => (n * (n - 1)) / 2;

/** Sizes of the groups of `keys` by `groupOf` (undefined: each alone). */
function groupSizes<K>(keys: K[], groupOf: (key: K) => string | undefined): number[] {
  const sizes = new Map<string, number>();
  let alone = 0;
  for (const key of keys) {
    const group = groupOf(key);
    if (group === undefined) alone++;
    else sizes.set(group, (sizes.get(group) ?? 0) + 1);
  }
  return [...sizes.values(), ...Array<number>(alone).fill(1)];
}

/** `truth` and `incidentOf` are keyed by the alert's fingerprint; `incidentOf` lacks alerts in no incident. */
export function scoreGrouping(truth: Map<string, Truth>, incidentOf: Map<string, string>): ScenarioScore {
  const keys = [...truth.keys()].filter((key) => truth.get(key) !== TEST);
  const outageOf = (key: string) => {
    const label = truth.get(key)!;
    return label === NOISE ? undefined : label;
  };
  const truePairs = groupSizes(keys, outageOf).reduce((sum, n) => sum + pairs(n), 0);
  const predictedPairs = groupSizes(keys, (key) => incidentOf.get(key)).reduce((sum, n) => sum + pairs(n), 0);
  const correctPairs = groupSizes(keys, (key) => {
    const outage = outageOf(key);
    const incident = incidentOf.get(key);
    return outage !== undefined && incident !== undefined ? `${outage}\u0000${incident}` : undefined;
  }).reduce((sum, n) => sum + pairs(n), 0);

  const outages: ScenarioScore['outages'] = {};
  const incidentsWithOutage = new Set<string>();
  for (const key of keys) {
    const outage = outageOf(key);
    if (outage === undefined) continue;
    const entry = (outages[outage] ??= { alerts: 0, incidents: 0, unassigned: 0 });
    entry.alerts++;
    const incident = incidentOf.get(key);
    if (incident === undefined) entry.unassigned++;
    else incidentsWithOutage.add(incident);
  }
  for (const outage of Object.keys(outages)) {
    const incidents = new Set(keys.filter((k) => outageOf(k) === outage).map((k) => incidentOf.get(k)));
    incidents.delete(undefined);
    outages[outage]!.incidents = incidents.size;
  }
  const noiseKeys = keys.filter((key) => outageOf(key) === undefined);
  const noiseIncidents = new Set(noiseKeys.map((k) => incidentOf.get(k)).filter((id) => id !== undefined));
  const testKeys = [...truth.keys()].filter((key) => truth.get(key) === TEST);
  return {
    alerts: keys.length,
    truePairs,
    predictedPairs,
    correctPairs,
    precision: predictedPairs === 0 ? null : correctPairs / predictedPairs,
    recall: truePairs === 0 ? null : correctPairs / truePairs,
    outages,
    noise: {
      alerts: noiseKeys.length,
      incidents: noiseIncidents.size,
      withOutageAlerts: noiseKeys.filter((k) => incidentsWithOutage.has(incidentOf.get(k) ?? '')).length,
    },
    tests: { alerts: testKeys.length, inIncidents: testKeys.filter((k) => incidentOf.has(k)).length },
    incidents: new Set([...truth.keys()].map((k) => incidentOf.get(k)).filter((id) => id !== undefined)).size,
  };
}

/** Precision and recall over all scenarios' pairs together. */
export function overall(scores: PairCounts[]): { precision: number | null; recall: number | null } & PairCounts {
  const sum = (pick: (s: PairCounts) => number) => scores.reduce((total, s) => total + pick(s), 0);
  const truePairs = sum((s) => s.truePairs);
  const predictedPairs = sum((s) => s.predictedPairs);
  const correctPairs = sum((s) => s.correctPairs);
  return {
    truePairs,
    predictedPairs,
    correctPairs,
    precision: predictedPairs === 0 ? null : correctPairs / predictedPairs,
    recall: truePairs === 0 ? null : correctPairs / truePairs,
  };
}
