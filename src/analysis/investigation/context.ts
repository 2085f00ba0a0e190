/** Human context: which hypotheses the people's notes raise or lower, and those they raise alone. */
import { dnsFailure } from './resources.js';
import { clamp, lower, quote } from './text.js';
import { VENDORS } from './vendors.js';
import { type ContextNote, type Hypothesis, type HypothesisKind } from './types.js';
import { type View } from './view.js';

// ---------------------------------------------------------------------------------------------
// Human context

/**
 * Words that name a cause, by hypothesis kind, most specific first. Read in human context (does a
 * sentence speak of a hypothesis?) and in a written root cause (which kind a correction
 * describes: `categorizeText` in src/domain/patterns.ts, which also counts hits, so order breaks
 * ties there).
 */
export const CAUSE_CUES: ReadonlyArray<{ kind: HypothesisKind; pattern: RegExp }> = [
  { kind: 'feature_flag', pattern: /\b(feature[- ]?flags?|flag flip\w*|toggles?|launchdarkly|unleash|flagsmith)\b/i },
  {
    kind: 'dependency_bump',
    pattern: /\b(dependabot|renovate|dependency (bump|upgrade|update)|library (upgrade|update)|bump(ed)? of)\b/i,
  },
  { kind: 'broker_alarm', pattern: /\b(memory alarm|disk alarm|broker alarm|blocked publishers?|unconsumed queue)\b/i },
  { kind: 'consumer_lag', pattern: /\b(consumer lag|consumer groups?|backlog|lagging consumers?)\b/i },
  {
    kind: 'runaway_job',
    pattern:
      /\b(runaway|long[- ]running (query|transaction)|batch job|cron ?job|backfill|report query|pg_cancel_backend)\b/i,
  },
  { kind: 'cache_eviction', pattern: /\b(evict\w*|maxmemory|hit ratio)\b/i },
  { kind: 'retry_storm', pattern: /\b(retry storm|retries|thundering herd)\b/i },
  { kind: 'oom_input', pattern: /\b(oversized|huge (file|payload|input)|poison (message|pill))\b/i },
  {
    kind: 'expired_credentials',
    pattern: /\b(credentials?|secrets? rotat\w*|api key|password|expired token|unauthori[sz]ed|401)\b/i,
  },
  { kind: 'hot_key', pattern: /\b(hot ?keys?|hot shard)\b/i },
  { kind: 'clock_skew', pattern: /\b(clock skew|ntp|chronyd?|time sync|clock drift)\b/i },
  { kind: 'noisy_neighbor', pattern: /\b(noisy neighbou?r|co-?located|same node)\b/i },
  { kind: 'fd_exhaustion', pattern: /\b(file descriptors?|too many open files|ulimit|nofile|emfile)\b/i },
  { kind: 'worker_saturation', pattern: /\b(worker pool|thread pool|all workers busy|gunicorn|puma|uwsgi)\b/i },
  { kind: 'failed_job', pattern: /\b(job failed|failed job|cron ?job failed)\b/i },
  { kind: 'datasource_failure', pattern: /\b(data ?source|prometheus (was |is )?down|monitoring gap|no data)\b/i },
  { kind: 'replication_slot', pattern: /\b(replication slots?|wal (retained|kept)|debezium)\b/i },
  { kind: 'replication_lag', pattern: /\b(replica(tion)? lag|replay (lag|paused)|stale reads?)\b/i },
  { kind: 'io_saturation', pattern: /\b(iops|burst balance|i\/o saturation|io wait|gp2|gp3)\b/i },
  { kind: 'node_failure', pattern: /\b(node (was |is )?not ?ready|notready|node failure|node died|cordon\w*)\b/i },
  { kind: 'connection_hog', pattern: /\b(maxclients|max number of clients|connection hog|never closed)\b/i },
  { kind: 'cpu_limit', pattern: /\b(cpu limits?|cpu throttl\w*|limits\.cpu)\b/i },
  { kind: 'rate_limited', pattern: /\b(rate[- ]limit\w*|429|throttl\w*|quota)\b/i },
  { kind: 'expired_certificate', pattern: /\b(cert(ificate)?s?|x509|tls|ssl)\b/i },
  {
    kind: 'dns_failure',
    pattern: /\b(dns|resolvers?|name ?servers?|nxdomain|servfail|route ?53|domain records?|cname|a records?)\b/i,
  },
  { kind: 'disk_full', pattern: /\b(disk|volume|storage|no space|enospc|inodes?|filesystem)\b/i },
  { kind: 'memory_leak', pattern: /\b(memory|oom\w*|leak\w*|heap)\b/i },
  {
    kind: 'connection_pool',
    pattern: /\b(connection pool|pool|max_connections|pgbouncer|connection limit|too many connections)\b/i,
  },
  { kind: 'cache_failure', pattern: /\b(redis|memcached?|cache)\b/i },
  {
    kind: 'third_party_outage',
    pattern: new RegExp(
      `\\b(third[- ]party|vendor|status ?page|${VENDORS.map((x) => x.name.toLowerCase().replace(/ /g, '\\s')).join('|')})\\b`,
      'i',
    ),
  },
  { kind: 'config_change', pattern: /\b(config(uration)?|settings?|feature flags?|flags?|env(ironment)? var\w*)\b/i },
  {
    kind: 'upstream_deploy',
    pattern: /\b(upstream|dependency|dependencies)\b.{0,40}\b(deploy\w*|release\w*|rollout)\b/i,
  },
  {
    kind: 'bad_deploy',
    pattern: /\b(deploy(ed|ment|s)?|releases?d?|roll(ed)? ?out|shipped|rollback|rolled back|regression)\b/i,
  },
  {
    kind: 'traffic_spike',
    pattern: /\b(traffic|surge|spike|campaign|marketing|launch|load test|ddos|bots?|black friday|viral)\b/i,
  },
  { kind: 'upstream_failure', pattern: /\b(outage|failover|primary|replica|database (was |is )?down|unreachable)\b/i },
  { kind: 'flapping_alert', pattern: /\b(flapp\w*|noisy|false (positive|alarm)|known issue|harmless|just noise)\b/i },
];
/** A sentence about deploying speaks of a dependency's deploy too. */
const cueSpeaksOf = (cue: (typeof CAUSE_CUES)[number], kind: HypothesisKind) =>
  cue.kind === kind || (cue.kind === 'bad_deploy' && kind === 'upstream_deploy');
const NEGATION =
  /\b(not|no|never|didn'?t|wasn'?t|isn'?t|aren'?t|ruled out|unrelated|nothing to do|excluded|no-op|noop|fine)\b/i;

/** A note's sentences (and clauses joined by "but", "and", "so", "while"). */
const sentences = (text: string) =>
  text
    .split(/(?<=[.!?;])\s+|\n+|,\s+(?=(?:but|and|so|while)\b)/i)
    .map((s) => s.trim())
    .filter((s) => s !== '');

interface ContextEffect {
  delta: number;
  notes: string[];
}

/**
 * What the human context says of each hypothesis: a sentence that names its kind or its subject
 * raises it (+0.3 for the kind, +0.15 for the subject), and lowers it (−0.35) when the sentence
 * negates ("not the deploy", "the deploy was a no-op"). Capped to ±0.45 per hypothesis.
 */
export function contextEffect(h: Pick<Hypothesis, 'kind' | 'subject'>, notes: ContextNote[]): ContextEffect {
  let delta = 0;
  const used: string[] = [];
  for (const note of notes) {
    for (const s of sentences(note.content)) {
      const kindHit = CAUSE_CUES.some((cue) => cueSpeaksOf(cue, h.kind) && cue.pattern.test(s));
      const subjectHit = h.subject.length >= 3 && lower(s).includes(lower(h.subject));
      if (!kindHit && !subjectHit) continue;
      const negated = NEGATION.test(s);
      const change = negated ? -0.35 : (kindHit ? 0.3 : 0) + (subjectHit ? 0.15 : 0);
      delta += change;
      used.push(`${negated ? 'against' : 'for'}: "${quote(s, 100)}"`);
    }
  }
  return { delta: clamp(delta, -0.45, 0.45), notes: used };
}

/** Kinds the context can raise on its own, when no signal produced them. */
export function contextOnlyHypotheses(v: View, notes: ContextNote[], existing: Set<HypothesisKind>): Hypothesis[] {
  const out: Hypothesis[] = [];
  const said = (kind: HypothesisKind) =>
    notes.some((n) =>
      sentences(n.content).some(
        (s) => CAUSE_CUES.some((cue) => cueSpeaksOf(cue, kind) && cue.pattern.test(s)) && !NEGATION.test(s),
      ),
    );
  if (!existing.has('dns_failure') && said('dns_failure')) out.push(...dnsFailure(v, true));
  return out;
}
