/**
 * Learned failure patterns: pure rules (no I/O). A pattern's signature is what failed (service,
 * alert names, stable labels) and why (the root-cause category, with the evidence types that
 * decided it). Confidence is the Beta posterior mean of human and system confirmations and
 * rejections; maturity follows from occurrences and confidence (DESIGN §5).
 */
import { createHash } from 'node:crypto';
import { CAUSE_CUES, hypothesisKinds, type HypothesisKind } from '../analysis/investigation/index.js';
import type { PatternStatus } from '../db/schema/knowledge.js';

/** A pattern is `stable` from this many occurrences… */
export const STABLE_MIN_OCCURRENCES = 5;
/** …and this confidence on. */
export const STABLE_MIN_CONFIDENCE = 0.85;

/** Beta(1, 1) prior: `(confirms + 1) / (confirms + rejects + 2)`. A new pattern starts at 0.5. */
export function patternConfidence(confirms: number, rejects: number): number {
  return (Math.max(0, confirms) + 1) / (Math.max(0, confirms) + Math.max(0, rejects) + 2);
}

/** `stable` when occurrences ≥ 5 and confidence ≥ 0.85, else `emerging` (both ways: demotion too). */
export function patternStatus(occurrences: number, confidence: number): PatternStatus {
  return occurrences >= STABLE_MIN_OCCURRENCES && confidence >= STABLE_MIN_CONFIDENCE ? 'stable' : 'emerging';
}

/**
 * Root-cause categories: the built-in analyzer's hypothesis kinds (so a learned pattern and a
 * signal-based hypothesis speak of the same cause), plus `other` for a human correction that
 * names none of them.
 */
export type PatternCategory = Exclude<HypothesisKind, 'known_pattern' | 'undetermined'> | 'other';
export const patternCategories: readonly PatternCategory[] = [
  ...hypothesisKinds.filter(
    (k): k is Exclude<HypothesisKind, 'known_pattern' | 'undetermined'> =>
      k !== 'known_pattern' && k !== 'undetermined',
  ),
  'other',
];

export const isPatternCategory = (value: string): value is PatternCategory =>
  (patternCategories as readonly string[]).includes(value);

const CATEGORY_NAMES: Record<PatternCategory, string> = {
  bad_deploy: 'Bad deployment',
  upstream_deploy: 'Deployment of a dependency',
  config_change: 'Configuration change',
  memory_leak: 'Memory leak',
  connection_pool: 'Connection pool exhaustion',
  disk_full: 'Disk full',
  expired_certificate: 'Expired certificate',
  dns_failure: 'DNS failure',
  third_party_outage: 'Third-party outage',
  rate_limited: 'Rate limited by a provider',
  feature_flag: 'Feature flag change',
  dependency_bump: 'Dependency upgrade',
  consumer_lag: 'Consumer lag',
  broker_alarm: 'Broker alarm from an unconsumed queue',
  runaway_job: 'Runaway job or query on a shared database',
  cache_eviction: 'Cache eviction storm',
  retry_storm: 'Retry storm',
  oom_input: 'Out of memory on one job or input',
  expired_credentials: 'Expired or rotated credentials',
  hot_key: 'Hot key on a cache shard',
  noisy_neighbor: 'Noisy neighbour on a node',
  clock_skew: 'Clock skew',
  fd_exhaustion: 'File descriptor exhaustion',
  worker_saturation: 'Worker pool saturation',
  failed_job: 'Failed job',
  datasource_failure: 'Monitoring data source failure',
  cpu_limit: 'CPU limit too low',
  replication_slot: 'WAL held by a replication slot',
  replication_lag: 'Replica lag',
  io_saturation: 'Disk I/O saturation',
  node_failure: 'Node failure',
  connection_hog: 'Connections held by one client',
  cache_failure: 'Cache failure',
  upstream_failure: 'Dependency failure',
  traffic_spike: 'Traffic spike',
  flapping_alert: 'Flapping alert',
  other: 'Recurring failure',
};

/** The analyzer's cause words, counting every hit (a correction's category has the most). */
const TEXT_CUES = CAUSE_CUES.map((cue) => ({
  category: cue.kind as PatternCategory,
  pattern: new RegExp(cue.pattern.source, 'gi'),
}));
const NEGATED = /\b(not|no|never|didn'?t|wasn'?t|isn'?t|ruled out|unrelated|nothing to do)\b/i;

/**
 * The category a written root cause (a human correction) describes: the one with the most cue
 * hits in its non-negated sentences, ties going to the more specific; `other` when none.
 */
export function categorizeText(text: string): PatternCategory {
  const sentences = text.split(/(?<=[.!?;])\s+|\n+/).filter((s) => s.trim() !== '' && !NEGATED.test(s));
  let best: PatternCategory = 'other';
  let bestHits = 0;
  for (const cue of TEXT_CUES) {
    const hits = sentences.reduce((n, s) => n + (s.match(cue.pattern)?.length ?? 0), 0);
    if (hits > bestHits) {
      best = cue.category;
      bestHits = hits;
    }
  }
  return best;
}

/** Labels that identify a host, a pod or a single event: never part of a signature. */
const VOLATILE_LABELS = new Set([
  'instance',
  'pod',
  'pod_name',
  'host',
  'hostname',
  'container',
  'container_id',
  'node',
  'ip',
  'address',
  'fingerprint',
  'timestamp',
  'id',
  'request_id',
  'trace_id',
  'span_id',
  'uid',
  'replica',
  'sha',
  'head_commit',
  'value',
  'alertname',
  'startsat',
]);
const MAX_SIGNATURE_LABELS = 10;
const MAX_SIGNATURE_ALERTS = 20;

/** The labels every alert carries with the same value, without volatile ones (at most 10). */
export function commonLabels(labelSets: Array<Record<string, string>>): Record<string, string> {
  const [first, ...rest] = labelSets;
  if (!first) return {};
  const common: Record<string, string> = {};
  for (const key of Object.keys(first).sort()) {
    const value = first[key]!;
    if (VOLATILE_LABELS.has(key.toLowerCase()) || value === '' || value.length > 100) continue;
    if (rest.every((labels) => labels[key] === value)) common[key] = value;
    if (Object.keys(common).length >= MAX_SIGNATURE_LABELS) break;
  }
  return common;
}

/** Distinct alert names, sorted (at most 20). */
export function normaliseAlertNames(names: Array<string | null | undefined>): string[] {
  const distinct = new Set(names.map((n) => (n ?? '').trim()).filter((n) => n !== ''));
  return [...distinct].sort().slice(0, MAX_SIGNATURE_ALERTS);
}

export interface PatternSignature {
  service: string | null;
  alertNames: string[];
  labels: Record<string, string>;
  category: PatternCategory;
  evidenceTypes: string[];
  /** The root cause in words (a hypothesis statement or a correction). */
  rootCause: string;
}

const normalisedWords = (text: string) =>
  [...new Set(text.toLowerCase().match(/[a-z][a-z0-9_-]{3,}/g) ?? [])].sort().slice(0, 12);

/**
 * The canonical key of a signature (unique per tenant): service, category and alert names. An
 * `other` cause also keys on the words of its root cause, so unrelated free-form causes of one
 * service stay apart.
 */
export function signatureKey(sig: Pick<PatternSignature, 'service' | 'category' | 'alertNames' | 'rootCause'>): string {
  const parts = [
    (sig.service ?? '').toLowerCase(),
    sig.category,
    normaliseAlertNames(sig.alertNames).map((n) => n.toLowerCase()),
    sig.category === 'other' ? normalisedWords(sig.rootCause) : null,
  ];
  return createHash('sha256').update(JSON.stringify(parts)).digest('hex');
}

/** "Connection pool exhaustion on checkout-api (HighErrorRate, DBConnections)". */
export function patternTitle(sig: Pick<PatternSignature, 'service' | 'category' | 'alertNames' | 'rootCause'>): string {
  const where = sig.service ?? 'an unnamed service';
  const alerts =
    sig.alertNames.length > 0
      ? ` (${sig.alertNames.slice(0, 2).join(', ')}${sig.alertNames.length > 2 ? ', …' : ''})`
      : '';
  if (sig.category === 'other') {
    const first = sig.rootCause
      .split(/(?<=[.!?;])\s+|\n/)[0]!
      .trim()
      .replace(/[.;]+$/, '');
    const short = first.length > 80 ? `${first.slice(0, 79)}…` : first;
    return `${where}: ${short}${alerts}`.slice(0, 200);
  }
  return `${CATEGORY_NAMES[sig.category]} on ${where}${alerts}`.slice(0, 200);
}

/** Share of alert names two signatures have in common (Jaccard, case-insensitive). */
export function alertOverlap(a: string[], b: string[]): number {
  const x = new Set(a.map((n) => n.toLowerCase()));
  const y = new Set(b.map((n) => n.toLowerCase()));
  if (x.size === 0 || y.size === 0) return 0;
  let shared = 0;
  for (const n of x) if (y.has(n)) shared++;
  return shared / (x.size + y.size - shared);
}

const sameService = (a: string | null, b: string | null) => (a ?? '').toLowerCase() === (b ?? '').toLowerCase();

/**
 * Whether an incident's symptoms (service and alert names) are those of a pattern: the same
 * service, and alert names in common; when either side has no alert names (a manual incident,
 * or a pattern learned from one), the same named service is enough. Returns the overlap (0…1,
 * 0.5 for a service-only match), or null when it does not match.
 */
export function symptomMatch(
  incident: { service: string | null; alertNames: string[] },
  pattern: { service: string | null; alertNames: string[] },
): number | null {
  if (!sameService(incident.service, pattern.service)) return null;
  if (incident.alertNames.length === 0 || pattern.alertNames.length === 0) return incident.service ? 0.5 : null;
  const overlap = alertOverlap(incident.alertNames, pattern.alertNames);
  return overlap > 0 ? overlap : null;
}

/**
 * The matching rule for a whole signature (at resolution and for corrections): symptoms match
 * and the category is the same; an `other` cause matches only its exact key. Returns a score to
 * rank candidates (overlap, plus shared labels as a tie-break), or null.
 */
export function signatureMatch(
  sig: PatternSignature,
  pattern: {
    service: string | null;
    alertNames: string[];
    labels: Record<string, string>;
    category: string;
    signatureKey: string;
  },
): number | null {
  if (pattern.category !== sig.category) return null;
  if (sig.category === 'other' && pattern.signatureKey !== signatureKey(sig)) return null;
  const overlap = symptomMatch(sig, pattern);
  if (overlap === null) return null;
  const sharedLabels = Object.entries(sig.labels).filter(([k, v]) => pattern.labels[k] === v).length;
  return overlap + Math.min(sharedLabels, 10) * 0.001;
}

const ACTION_VERBS =
  /\b(terminate|kill|restart|roll ?back|revert|fail ?over|promote|renew|rotate|free|delete|purge|clear|flush|scale|increase|raise|lower|drain|recycle|disable|enable|switch|reload|restore|expand|resize|evict|reduce|cap|redeploy|repoint|patch|upgrade|downgrade|bump|add|set|fix|replace|reissue)\b/i;

/**
 * The actions a written correction names ("…; restart pgbouncer and raise max_connections to
 * 400"): its sentences and clauses that carry a remediation verb, in order (at most 5).
 */
export function actionsInText(text: string): string[] {
  const clauses = text
    .split(
      /(?<=[.!?;])\s+|\n+|,\s+(?=(?:then|and then|so|fix(ed)? by|fixed with)\b)|\b(?:fix(?:ed)? by|fixed with|resolved by|mitigated by)\b/i,
    )
    .map((s) =>
      (s ?? '')
        .trim()
        .replace(/^(then|and then|so)\s+/i, '')
        .replace(/[.;]+$/, ''),
    )
    .filter((s) => s.length >= 6 && ACTION_VERBS.test(s));
  const seen = new Set<string>();
  const out: string[] = [];
  for (const clause of clauses) {
    const action = clause.charAt(0).toUpperCase() + clause.slice(1);
    if (seen.has(action.toLowerCase())) continue;
    seen.add(action.toLowerCase());
    out.push(action.length > 300 ? `${action.slice(0, 299)}…` : action);
  }
  return out.slice(0, 5);
}
