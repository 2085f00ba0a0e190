/**
 * Ranking: runs every rule, applies patterns and context, keeps the best hypothesis and writes
 * the root cause, confidence, actions and summary.
 */
import { dependencyBump, featureFlag } from './change-kinds.js';
import { badDeploy, configChange, memoryLeak, upstreamDeploy } from './changes.js';
import { contextEffect, contextOnlyHypotheses } from './context.js';
import { expiredCredentials } from './credentials.js';
import { clockSkew, nodeFailure, noisyNeighbour } from './hosts.js';
import { datasourceFailure, failedJob } from './jobs.js';
import { connectionHog, cpuLimit, fdExhaustion, hotKey, workerSaturation } from './limits.js';
import { cacheEviction, oomFromInput, retryStorm, runawayJob } from './load.js';
import { calibratedConfidence, hypothesisProbabilities } from './calibration.js';
import { applyKnownPatterns } from './patterns.js';
import { brokerAlarm, consumerLag } from './queues.js';
import { connectionPool, diskFull, dnsFailure, expiredCertificate, replicationSlot } from './resources.js';
import { recommendedActions } from './runbooks.js';
import { clamp, lower, round2, textOf } from './text.js';
import { cacheFailure, flappingAlert, selfFailure, trafficSpike, upstreamFailure } from './topology.js';
import {
  type AlertObservation,
  type Hypothesis,
  type HypothesisKind,
  type InvestigationAnalysis,
  type InvestigationInput,
} from './types.js';
import { undetermined } from './undetermined.js';
import { ioSaturation, replicationLag } from './storage.js';
import { thirdPartyOutage } from './vendors.js';
import { buildView, restrictToRoles, type View } from './view.js';

// ---------------------------------------------------------------------------------------------
// Ranking

/** Ties go to the more specific cause. */
const KIND_ORDER: HypothesisKind[] = [
  'feature_flag',
  'dependency_bump',
  'config_change',
  'oom_input',
  'runaway_job',
  'broker_alarm',
  'consumer_lag',
  'cache_eviction',
  'retry_storm',
  'rate_limited',
  'expired_credentials',
  'failed_job',
  'hot_key',
  'clock_skew',
  'noisy_neighbor',
  'fd_exhaustion',
  'worker_saturation',
  'datasource_failure',
  'replication_slot',
  'replication_lag',
  'io_saturation',
  'node_failure',
  'connection_hog',
  'cpu_limit',
  'memory_leak',
  'bad_deploy',
  'upstream_deploy',
  'expired_certificate',
  'dns_failure',
  'connection_pool',
  'disk_full',
  'cache_failure',
  'third_party_outage',
  'upstream_failure',
  'traffic_spike',
  'flapping_alert',
  'known_pattern',
  'undetermined',
];

const SLOW_CONSUMER_CAUSES = new Set<HypothesisKind>([
  'third_party_outage',
  'rate_limited',
  'runaway_job',
  'expired_credentials',
  'upstream_failure',
  'dns_failure',
  'expired_certificate',
]);

/** A generic hypothesis that a more specific one explains (same change, same dependency). */
function subsumedBy(h: Hypothesis, others: Hypothesis[]): Hypothesis | undefined {
  const near = (o: Hypothesis, by = 0.15) => o.score >= h.score - by;
  const sameSubject = (o: Hypothesis) => lower(o.subject) === lower(h.subject);
  if (h.kind === 'upstream_failure' || h.kind === 'cache_failure' || h.kind === 'connection_pool') {
    const by = others.find((o) => (o.kind === 'node_failure' || o.kind === 'connection_hog') && near(o, 0.15));
    if (by) return by;
  }
  if (h.kind === 'config_change')
    return others.find(
      (o) => o.kind === 'expired_credentials' && near(o, 0.2) && o.sources.some((s) => h.sources.includes(s)),
    );
  if (h.kind === 'memory_leak') return others.find((o) => o.kind === 'oom_input' && near(o));
  if (h.kind === 'cache_failure')
    return others.find((o) => o.kind === 'cache_eviction' && (sameSubject(o) || o.score >= h.score));
  if (h.kind === 'traffic_spike')
    return others.find(
      (o) =>
        ((o.kind === 'consumer_lag' || o.kind === 'retry_storm') && near(o, 0.1)) ||
        ((o.kind === 'cache_eviction' || o.kind === 'hot_key') && o.score >= 0.6) ||
        (o.kind === 'cpu_limit' && near(o, 0.1)),
    );
  if (h.kind === 'disk_full') return others.find((o) => o.kind === 'replication_slot' && near(o, 0.2));
  if (h.kind === 'runaway_job')
    return others.find((o) => (o.kind === 'replication_lag' || o.kind === 'io_saturation') && near(o, 0.15));
  if (h.kind === 'worker_saturation')
    return others.find((o) => (o.kind === 'retry_storm' || o.kind === 'traffic_spike') && near(o, 0.15));
  // Lagging consumers are a symptom of what slows them, when that is seen.
  if (h.kind === 'consumer_lag' && h.evidence === 'topological')
    return others.find((o) => SLOW_CONSUMER_CAUSES.has(o.kind) && o.evidence === 'direct' && near(o, 0.15));
  if (h.kind === 'bad_deploy' || h.kind === 'upstream_deploy') {
    // A migration's run is a deploy, but what broke is the lock it holds.
    const migration = others.find(
      (o) => o.kind === 'runaway_job' && near(o, 0.2) && o.sources.some((s) => h.sources.includes(s)),
    );
    if (migration) return migration;
  }
  if (h.kind === 'bad_deploy') {
    return others.find(
      (o) =>
        (o.kind === 'config_change' || o.kind === 'memory_leak' || o.kind === 'dependency_bump') &&
        o.score >= h.score - 0.2 &&
        (o.subject === h.subject || o.kind === 'dependency_bump') &&
        o.sources.some((s) => h.sources.includes(s) || o.changeRef === h.changeRef),
    );
  }
  if (h.kind === 'upstream_failure') {
    return others.find(
      (o) =>
        (o.kind === 'upstream_deploy' && sameSubject(o) && o.score > h.score) ||
        ((o.kind === 'runaway_job' || o.kind === 'broker_alarm' || o.kind === 'cache_eviction') && near(o, 0.1)) ||
        (o.kind === 'connection_pool' && sameSubject(o) && near(o, 0.05)),
    );
  }
  return undefined;
}

const MIN_CREDIBLE = 0.35;

/**
 * Rules that read every alert of the tenant around the first alert can find a mechanism in an
 * unrelated service's alerts: one that rests on none of the incident's own alerts, its related
 * services' or its changes is discounted, so it cannot outrank what the incident itself shows.
 */
function awayFromTheIncident(v: View, hypotheses: Hypothesis[]): void {
  // An alert no service claims (an exporter's, a host's) is near when it names one of ours.
  const ours = [v.input.incident.service, ...v.dependencyNames, ...v.input.topology.dependents.map((d) => d.name)]
    .filter((n): n is string => !!n && n.length >= 3)
    .map(lower);
  const namesOurs = (a: AlertObservation) => {
    if (a.service !== null) return false;
    const text = lower(`${textOf(a)}\n${Object.values(a.labels).join(' ')}`);
    return ours.some((n) => text.includes(n));
  };
  const claimedBySomeone = new Set(v.all.filter((a) => a.service !== null).map((a) => a.eventId));
  const near = new Set([
    ...v.scope.map((a) => a.eventId),
    ...v.all.filter(namesOurs).map((a) => a.eventId),
    ...v.input.changes.map((c) => c.eventId),
  ]);
  for (const h of hypotheses) {
    if (h.kind === 'undetermined' || h.kind === 'known_pattern' || h.sources.length === 0) continue;
    if (h.sources.some((s) => near.has(s))) continue;
    // Another service's own alerts are further away than an alert no service claims (a cache
    // exporter's, a host's), which may well be a neighbour the topology does not show.
    h.score = round2(clamp(h.score - (h.sources.some((s) => claimedBySomeone.has(s)) ? 0.2 : 0.1), 0, 0.95));
    h.against.push("it rests only on other services' alerts, none of this incident's or its neighbours'");
  }
}

/**
 * A change that is only earlier in time (more than 30 min before the first alert) loses to
 * evidence that names the mechanism: "errors started after the deploy" is the weakest link.
 */
function directBeatsTemporal(hypotheses: Hypothesis[]): void {
  const direct = hypotheses.filter((h) => h.evidence === 'direct' && h.score >= 0.6);
  if (direct.length === 0) return;
  const best = direct.sort((a, b) => b.score - a.score)[0]!;
  for (const h of hypotheses) {
    if (h.evidence !== 'temporal' || (h.minutesBefore ?? 0) <= 30) continue;
    h.score = round2(clamp(h.score - 0.15, 0, 0.95));
    h.against.push(
      `it went out ${Math.round(h.minutesBefore ?? 0)} min before the first alert, and the alerts name another cause (${best.kind}: ${best.subject})`,
    );
  }
}

/**
 * Ranks every hypothesis the signals support, applies human context, keeps the best one and
 * discards the rest with the reason, and writes the narrative, confidence and actions.
 *
 * Confidence: the calibrated probability that the kept hypothesis is right (calibration.ts);
 * every ranked hypothesis carries its own probability.
 */
export function analyzeInvestigation(raw: InvestigationInput): InvestigationAnalysis {
  const input = restrictToRoles(raw);
  const v = buildView(input);
  let hypotheses: Hypothesis[] = [
    ...badDeploy(v),
    ...upstreamDeploy(v),
    ...configChange(v),
    ...memoryLeak(v),
    ...connectionPool(v),
    ...diskFull(v),
    ...expiredCertificate(v),
    ...dnsFailure(v),
    ...thirdPartyOutage(v),
    ...featureFlag(v),
    ...dependencyBump(v),
    ...consumerLag(v),
    ...brokerAlarm(v),
    ...runawayJob(v),
    ...cacheEviction(v),
    ...retryStorm(v),
    ...oomFromInput(v),
    ...expiredCredentials(v),
    ...failedJob(v),
    ...hotKey(v),
    ...clockSkew(v),
    ...noisyNeighbour(v),
    ...fdExhaustion(v),
    ...workerSaturation(v),
    ...datasourceFailure(v),
    ...cpuLimit(v),
    ...replicationSlot(v),
    ...replicationLag(v),
    ...ioSaturation(v),
    ...nodeFailure(v),
    ...connectionHog(v),
    ...cacheFailure(v),
    ...upstreamFailure(v),
    ...selfFailure(v),
    ...trafficSpike(v),
    ...flappingAlert(v),
  ];
  // Only the best hypothesis per kind and subject (several deployments of one service, …).
  const bestOf = new Map<string, Hypothesis>();
  for (const h of hypotheses) {
    const key = `${h.kind}:${lower(h.subject)}:${h.changeRef ?? ''}`;
    const seen = bestOf.get(key);
    if (!seen || h.score > seen.score) bestOf.set(key, h);
  }
  hypotheses = [...bestOf.values()];
  hypotheses.push(...applyKnownPatterns(v, input.patterns ?? [], hypotheses));
  if (input.context.length > 0) {
    hypotheses.push(...contextOnlyHypotheses(v, input.context, new Set(hypotheses.map((h) => h.kind))));
    for (const h of hypotheses) {
      const effect = contextEffect(h, input.context);
      if (effect.delta !== 0) {
        h.contextAdjustment = round2(effect.delta);
        h.score = round2(clamp(h.score + effect.delta, 0, 0.98));
        (effect.delta > 0 ? h.support : h.against).push(...effect.notes.map((n) => `human context ${n}`));
      }
    }
  }
  awayFromTheIncident(v, hypotheses);
  directBeatsTemporal(hypotheses);
  const order = (h: Hypothesis) => KIND_ORDER.indexOf(h.kind);
  hypotheses.sort((a, b) => b.score - a.score || order(a) - order(b) || a.subject.localeCompare(b.subject));

  const subsumed = new Map<Hypothesis, Hypothesis>();
  for (const h of hypotheses) {
    const by = subsumedBy(h, hypotheses);
    if (by) subsumed.set(h, by);
  }
  const ranked = hypotheses.filter((h) => !subsumed.has(h));
  let top = ranked[0];
  if (!top || top.score < MIN_CREDIBLE) {
    top = undetermined(v, top);
    ranked.unshift(top);
    hypotheses.unshift(top);
  }
  // The kept hypothesis leads the list even when a subsumed one scored higher.
  hypotheses = [top, ...hypotheses.filter((h) => h !== top)];
  const runnerUp = ranked[1];
  top.status = 'kept';
  top.reason =
    top.kind === 'undetermined'
      ? 'no hypothesis reached the credibility threshold'
      : runnerUp
        ? `highest score (${top.score}), ahead of ${runnerUp.kind} (${runnerUp.score})${top.contextAdjustment ? `; human context moved it ${top.contextAdjustment > 0 ? '+' : ''}${top.contextAdjustment}` : ''}`
        : `the only hypothesis the evidence supports (${top.score})`;
  for (const h of hypotheses) {
    if (h === top) continue;
    h.status = 'discarded';
    const by = subsumed.get(h);
    if (by) h.reason = `the same cause is explained more specifically by ${by.kind}: ${by.statement}`;
    else if (h.score < MIN_CREDIBLE)
      h.reason = `too weak (${h.score})${h.against.length > 0 ? `: ${h.against.join('; ')}` : ''}`;
    else
      h.reason = `scored ${h.score}, below ${top.kind} (${top.score})${h.against.length > 0 ? `: ${h.against.join('; ')}` : ''}`;
  }

  const confidence = calibratedConfidence(
    top,
    ranked.filter((h) => h !== top),
  );
  const probabilities = hypothesisProbabilities(ranked, confidence);
  ranked.forEach((h, i) => (h.probability = probabilities[i] ?? 0));
  for (const h of subsumed.keys()) h.probability = 0;

  const discarded = hypotheses.filter((h) => h !== top).slice(0, 3);
  const rootCause = [
    top.rootCause,
    top.support.length > 0 && top.kind !== 'undetermined' ? `Evidence: ${top.support.slice(0, 4).join('; ')}.` : '',
    discarded.length > 0 ? `Ruled out: ${discarded.map((h) => `${h.statement} (${h.reason})`).join('; ')}.` : '',
  ]
    .filter((s) => s !== '')
    .join(' ');

  const actions = recommendedActions(top, input.runbooks, input.incident.service, runnerUp);
  const summary = [
    `Ranked ${hypotheses.length} hypothes${hypotheses.length === 1 ? 'is' : 'es'}; confidence ${confidence}.`,
    ...hypotheses.map(
      (h, i) =>
        `${i + 1}. [${h.status}] ${h.kind} (score ${h.score}, p ${h.probability ?? 0}): ${h.statement} — ${h.reason}.`,
    ),
  ].join('\n');
  return { rootCause: rootCause.slice(0, 4000), confidence, recommendedActions: actions, hypotheses, summary };
}
