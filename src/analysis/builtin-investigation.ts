/**
 * The built-in investigation analyzer: deterministic rules that turn what the specialist agents
 * observed (the incident's alerts, correlated alerts, deployments and code changes, the topology
 * around the service, matching runbooks, and human context) into competing hypotheses, ranks
 * them, and writes the root cause narrative, a calibrated confidence and ordered concrete actions.
 * Pure functions: no I/O, no clock (times come in the input), so every decision is unit-testable.
 */
import type { Severity } from '../db/schema/incidents.js';
import type { AgentRole } from './types.js';

export const BUILTIN_INVESTIGATION_MODEL = 'builtin-analyzer-1';

/** One alert as the agents saw it (the incident's own, or a correlated one). */
export interface AlertObservation {
  eventId: string;
  provider: string;
  incidentId: string | null;
  alertName: string;
  service: string | null;
  severity: Severity | null;
  status: 'firing' | 'resolved';
  occurredAt: string;
  title: string;
  /** Searchable text: description, annotations, exception messages, metric query (bounded). */
  text: string;
  labels: Record<string, string>;
}

export interface CommitObservation {
  id: string;
  message: string;
  files: string[];
}

/** A deployment or a push of the incident's service (hops 0) or of a dependency (hops ≥ 1). */
export interface ChangeObservation {
  eventId: string;
  kind: 'deployment' | 'code_change';
  provider: string;
  service: string | null;
  repository: string | null;
  occurredAt: string;
  deploymentId: string | null;
  sha: string | null;
  ref: string | null;
  environment: string | null;
  /** Deployment state (`success`, `failure`, …); null for pushes. */
  state: string | null;
  description: string | null;
  commits: CommitObservation[];
  title: string;
  hops: number;
}

export interface DependencyObservation {
  name: string;
  type: string;
  hops: number;
  /** Firing alerts or open incidents on it around the incident. */
  alerting: boolean;
  alertCount: number;
  firstAlertAt: string | null;
  alertNames: string[];
  /** Alert texts on it (bounded), for the failure mode. */
  alertTexts: string[];
  /** Alerting services (the incident's own included) that depend on it, directly or transitively. */
  alertingDependents: string[];
}

export interface TopologyObservation {
  /** Whether the incident's service is a node of the graph. */
  known: boolean;
  serviceType: string | null;
  dependencies: DependencyObservation[];
  dependents: Array<{ name: string; hops: number; impact: 'high' | 'medium' | 'low' }>;
}

export interface RunbookObservation {
  runbookId: string;
  title: string;
  service: string | null;
  tags: string[];
  steps: Array<{ number: number; text: string }>;
  score: number;
  matchedKeywords: string[];
}

export interface ContextNote {
  seq: number;
  content: string;
}

/** A learned pattern whose symptoms (service, alert names) the incident shows (knowledge agent). */
export interface PatternObservation {
  patternId: string;
  title: string;
  /** Root-cause category: a hypothesis kind, or `other`. */
  category: string;
  rootCause: string;
  /** The actions that resolved it before. */
  fix: string[];
  status: 'emerging' | 'stable';
  confidence: number;
  occurrences: number;
  /** Share of alert names in common (0.5 for a service-only match). */
  overlap: number;
}

export interface InvestigationInput {
  incident: {
    incidentId: string;
    title: string;
    description: string;
    service: string | null;
    severity: Severity;
    /** The first firing alert of the incident (its creation time when it has none). */
    firstAlertAt: string;
    occurrenceCount: number;
    recovered: boolean;
  };
  /** The agents that ran: signals of the others are not used. */
  roles: AgentRole[];
  /** The incident's own alerts, firing and resolved. */
  alerts: AlertObservation[];
  /** Other alerts of the tenant around the first alert (other services, other incidents). */
  correlated: AlertObservation[];
  changes: ChangeObservation[];
  topology: TopologyObservation;
  runbooks: RunbookObservation[];
  context: ContextNote[];
  /** Learned patterns matching the incident's symptoms, best first (absent: none). */
  patterns?: PatternObservation[];
  /** What the tenant's skills answered the agents (absent: none). */
  findings?: SkillFinding[];
}

/**
 * A skill's answer to an agent about the incident's service (logs, metrics, changes), read as
 * text: its signals count like those of the service's own alerts.
 */
export interface SkillFinding {
  /** The evidence item's source id (`skill:<skillId>:<run>`). */
  sourceId: string;
  agentRole: AgentRole;
  skill: string;
  occurredAt: string;
  text: string;
}

export const hypothesisKinds = [
  'bad_deploy',
  'upstream_deploy',
  'config_change',
  'memory_leak',
  'connection_pool',
  'disk_full',
  'expired_certificate',
  'dns_failure',
  'third_party_outage',
  'cache_failure',
  'upstream_failure',
  'traffic_spike',
  'flapping_alert',
  'known_pattern',
  'undetermined',
] as const;
export type HypothesisKind = (typeof hypothesisKinds)[number];

export interface Hypothesis {
  kind: HypothesisKind;
  /** One line: what went wrong, naming the service, change, dependency or host. */
  statement: string;
  /** What the hypothesis blames: a service, dependency, host or vendor. */
  subject: string;
  score: number;
  status: 'kept' | 'discarded';
  /** Why it was kept, or why it was discarded. */
  reason: string;
  support: string[];
  against: string[];
  /** The ingested event ids (alerts, deployments, pushes) it rests on. */
  sources: string[];
  /** Human context that moved its score (+/-). */
  contextAdjustment: number;
  rootCause: string;
  actions: string[];
  /** Words a runbook for this cause would use (runbook matching). */
  keywords: string[];
  /** For change hypotheses: the sha or event of the change, to tell specific from generic ones. */
  changeRef?: string;
  /** A stable learned pattern's past fix leads the actions (before any runbook step). */
  fixFirst?: boolean;
}

export interface InvestigationAnalysis {
  rootCause: string;
  confidence: number;
  recommendedActions: string[];
  /** Every hypothesis considered, best first; the first is kept. */
  hypotheses: Hypothesis[];
  /** A readable account of the ranking (stored as the synthesis finding). */
  summary: string;
}

// ---------------------------------------------------------------------------------------------
// Signals in text

const RE = {
  dns: /(nxdomain|servfail|no such host|enotfound|eai_again|name resolution|name or service not known|\bdns\b|could not resolve|failed to resolve|unknown host|unable to resolve|lookup [\w.-]+ on [\d.:]+)/i,
  dnsStrong:
    /(nxdomain|servfail|no such host|enotfound|eai_again|name resolution|failed to resolve|could not resolve|name or service not known)/i,
  cert: /(certificate (has )?expired|cert(ificate)?s? (is |has )?expir|x509|ssl ?(cert|expir|error|handshake)|tls handshake|certificate verify failed|cert_has_expired|probe_ssl_earliest_cert_expiry|sslcert|certificate.{0,40}(expired|not valid after))/i,
  certExpired: /(expired|cert_has_expired|not valid after|expir\w* .{0,20}ago|earliest_cert_expiry.{0,40}< ?0)/i,
  pool: /(connection pool|pool (is )?exhausted|too many (clients|connections)|remaining connection slots|max_connections|hikaripool|queuepool limit|connection is not available|pool timeout|no available connections|pgbouncer|connections? (saturat|exhaust)|pool size)/i,
  disk: /(disk (is )?full|no space left|enospc|filesystem.{0,40}(full|avail|space)|node_filesystem|out of (disk|space)|disk ?(space|usage)|volume.{0,20}full|inodes)/i,
  memory:
    /(out ?of ?memory|oomkill|oom[- ]?killed|\boom\b|heap (space|usage|out|size)|memory (leak|usage|limit|pressure)|container_memory|javascript heap|memorynear|memoryhigh|high ?memory|memory.{0,30}(limit|of \d))/i,
  cache:
    /(\bredis\b|memcache|cache[- ]?miss|cache hit|hit ratio|cache (unavailable|down|cluster|server|node)|elasticache)/i,
  traffic:
    /(traffic (spike|surge)|request rate|requests? per (second|minute)|\brps\b|\bqps\b|\brpm\b|\d+(\.\d+)?x (the |its )?(normal|baseline|usual)|x baseline|surge|spike in (requests|traffic)|hpa.{0,40}max|max(imum)? replicas|load (spike|surge))/i,
  trafficMultiplier: /(\d+(\.\d+)?x (the |its )?(normal|baseline|usual)|x baseline|\d+ ?% above (normal|baseline))/i,
  saturation: /(cpu|latency|p9\d|saturat|throttl|hpa|replicas|queue depth)/i,
  error:
    /(\b5\d\d\b|5xx|error rate|errors?\b|exception|traceback|panic|crash|fail(ed|ure|ing)?\b|refused|timed? ?out)/i,
  upstreamDown:
    /(connection refused|econnrefused|could not connect|connection reset|server closed the connection|is down|\bdown\b|unreachable|no route to host|pg_up|up == 0|failed to connect|cannot connect|unavailable)/i,
  dbLoad: /(cpu|load|query rate|queries per|slow quer|connections|iops)/i,
  config:
    /(config|configuration|settings?\b|timeout|feature[- ]?flag|\bflags?\b|env(ironment)? var|\.ya?ml\b|\.env\b|\.toml\b|\.ini\b|\blimits?\b|threshold|pool size|max_?conn|values\.ya?ml|helm)/i,
  flappingHint: /(flapp|toggl)/i,
  thirdPartyWords:
    /(third[- ]party|3rd[- ]party|external (api|provider|service|dependency)|vendor|upstream provider|status page|statuspage)/i,
};

const VENDORS: Array<{ name: string; pattern: RegExp; host: string }> = [
  { name: 'Stripe', pattern: /\bstripe\b|api\.stripe\.com/i, host: 'api.stripe.com' },
  { name: 'PayPal', pattern: /\bpaypal\b/i, host: 'api.paypal.com' },
  { name: 'Adyen', pattern: /\badyen\b/i, host: 'adyen.com' },
  { name: 'Braintree', pattern: /\bbraintree\b/i, host: 'api.braintreegateway.com' },
  { name: 'Twilio', pattern: /\btwilio\b/i, host: 'api.twilio.com' },
  { name: 'SendGrid', pattern: /\bsendgrid\b/i, host: 'api.sendgrid.com' },
  { name: 'Mailgun', pattern: /\bmailgun\b/i, host: 'api.mailgun.net' },
  { name: 'Auth0', pattern: /\bauth0\b/i, host: 'auth0.com' },
  { name: 'Okta', pattern: /\bokta\b/i, host: 'okta.com' },
  { name: 'Algolia', pattern: /\balgolia\b/i, host: 'algolia.net' },
  { name: 'Cloudflare', pattern: /\bcloudflare\b/i, host: 'cloudflare.com' },
  { name: 'AWS S3', pattern: /s3[.-][\w-]*\.?amazonaws\.com|\bamazon s3\b|\baws s3\b/i, host: 's3.amazonaws.com' },
  { name: 'OpenAI', pattern: /\bopenai\b|api\.openai\.com/i, host: 'api.openai.com' },
  { name: 'Google APIs', pattern: /googleapis\.com/i, host: 'googleapis.com' },
  { name: 'Shopify', pattern: /\bshopify\b/i, host: 'shopify.com' },
  { name: 'Salesforce', pattern: /\bsalesforce\b/i, host: 'salesforce.com' },
];

const HOST =
  /\b((?:[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?\.)+(?:com|net|org|io|dev|app|cloud|co|internal|local|svc|ai|sh|tech|example|eu|us|uk|de|fr))\b/gi;

/** Host names in a text (lowercased, first seen first). */
export function hostsIn(text: string): string[] {
  const found: string[] = [];
  for (const match of text.matchAll(HOST)) {
    const host = match[1]!.toLowerCase();
    if (!found.includes(host)) found.push(host);
  }
  return found;
}

const STOPWORDS = new Set(
  'the and for with from that this into than then when were have has been after before about over under more less only also which while their there these those what your ours they them will would could should into onto like just other some most such very each both down make made last first since until using used uses merge pull request main branch commit commits update updated change changes fix fixes fixed add added remove removed refactor'.split(
    ' ',
  ),
);

/** Distinctive words (≥ 5 characters, not common English) of a text, lowercased. */
export function distinctiveWords(text: string): Set<string> {
  const words = text.toLowerCase().match(/[a-z][a-z0-9_-]{4,}/g) ?? [];
  return new Set(words.filter((w) => !STOPWORDS.has(w)));
}

// ---------------------------------------------------------------------------------------------
// Time helpers

const MINUTE = 60_000;
const ms = (iso: string) => new Date(iso).getTime();
/** Minutes from `earlier` to `later` (negative when `earlier` is after `later`). */
const minutesBetween = (earlier: string, later: string) => (ms(later) - ms(earlier)) / MINUTE;

export function formatDuration(minutes: number): string {
  const m = Math.max(0, Math.round(minutes));
  if (m < 60) return `${m} min`;
  const h = Math.floor(m / 60);
  const rest = m % 60;
  return rest === 0 ? `${h} h` : `${h} h ${rest} min`;
}

/** How strongly a change this many minutes before the first alert points at it (0 … 1). */
export function proximity(minutesBefore: number): number {
  if (minutesBefore < -5) return 0; // after the first alert (5 min of clock skew allowed)
  if (minutesBefore <= 30) return 1;
  if (minutesBefore <= 60) return 0.8;
  if (minutesBefore <= 120) return 0.6;
  if (minutesBefore <= 360) return 0.3;
  return 0;
}

const hhmm = (iso: string) => `${iso.slice(11, 16)} UTC`;
const sha7 = (sha: string | null) => (sha ? sha.slice(0, 7) : null);
const clamp = (x: number, lo: number, hi: number) => Math.min(hi, Math.max(lo, x));
const round2 = (x: number) => Math.round(x * 100) / 100;
const quote = (text: string, max = 120) => {
  const one = text.replace(/\s+/g, ' ').trim();
  return one.length > max ? `${one.slice(0, max - 1)}…` : one;
};
const firstLine = (message: string) => message.split('\n', 1)[0]!.trim();
const list = (items: string[]) =>
  items.length <= 1 ? (items[0] ?? '') : `${items.slice(0, -1).join(', ')} and ${items[items.length - 1]}`;

// ---------------------------------------------------------------------------------------------
// Views over the input

interface View {
  input: InvestigationInput;
  service: string;
  first: string;
  own: AlertObservation[];
  ownFiring: AlertObservation[];
  /** Correlated alerts on the same service, its dependencies or its dependents. */
  related: AlertObservation[];
  /** Own and related alerts. */
  scope: AlertObservation[];
  /** Every alert seen (own and all correlated). */
  all: AlertObservation[];
  dependencyNames: Set<string>;
  deployments: ChangeObservation[];
  pushes: ChangeObservation[];
  /** Own alerts are flapping (toggling firing/resolved without lasting impact). */
  flapping: FlapStats | null;
}

interface FlapStats {
  alertName: string;
  toggles: number;
  firing: number;
  resolved: number;
  spanMinutes: number;
  sources: string[];
}

const META_LINE =
  /^(labels|source|link|runbook|status|transition|scope|host|metric|level|alert rule|culprit|details|environment|dashboard|panel|query|values):/i;
/** The most telling line of an alert (a value, an error), without metadata or the repeated title. */
export function alertDetail(a: AlertObservation, max = 140): string {
  const name = a.alertName.trim();
  const lines = a.text
    .split('\n')
    .map((l) => l.trim())
    .filter(
      (l) =>
        l !== '' &&
        !META_LINE.test(l) &&
        !l.startsWith('[[') &&
        l !== name &&
        l !== a.title.trim() &&
        !name.startsWith(l),
    );
  const telling = lines.find((l) =>
    /\d|error|fail|refused|expired|timed? ?out|exception|down|unreachable|no space|oom/i.test(l),
  );
  return quote(telling ?? lines[0] ?? a.title, max).replace(/[.;,]+$/, '');
}
/** `Name on service (provider, 09:30 UTC): detail`; a long name (an exception) stands for itself. */
const alertLine = (a: AlertObservation) =>
  `${quote(a.alertName, 120)}${a.service ? ` on ${a.service}` : ''} (${a.provider}, ${hhmm(a.occurredAt)})${a.alertName.length > 60 ? '' : `: ${alertDetail(a)}`}`;
/** What an alert says, for narratives: the exception or the telling line. */
const says = (a: AlertObservation, max = 140) =>
  a.alertName.length > 60 ? quote(a.alertName, max).replace(/[.;,]+$/, '') : alertDetail(a, max);
const textOf = (a: AlertObservation) => `${a.alertName}\n${a.title}\n${a.text}`;
const lower = (s: string | null | undefined) => (s ?? '').toLowerCase();

/** Drops what the agents that did not run would have contributed. */
export function restrictToRoles(input: InvestigationInput): InvestigationInput {
  const ran = new Set(input.roles);
  return {
    ...input,
    correlated: ran.has('alerts') || ran.has('topology') ? input.correlated : [],
    changes: input.changes.filter((c) => (c.kind === 'deployment' ? ran.has('deployment') : ran.has('code_change'))),
    topology: ran.has('topology')
      ? input.topology
      : { known: input.topology.known, serviceType: input.topology.serviceType, dependencies: [], dependents: [] },
    runbooks: ran.has('runbook') ? input.runbooks : [],
    patterns: ran.has('knowledge') ? (input.patterns ?? []) : [],
    findings: (input.findings ?? []).filter((f) => ran.has(f.agentRole)),
  };
}

export function flapStats(alerts: AlertObservation[]): FlapStats | null {
  const byName = new Map<string, AlertObservation[]>();
  for (const a of alerts) byName.set(a.alertName, [...(byName.get(a.alertName) ?? []), a]);
  let best: FlapStats | null = null;
  for (const [alertName, group] of byName) {
    const ordered = [...group].sort((x, y) => ms(x.occurredAt) - ms(y.occurredAt) || (x.eventId < y.eventId ? -1 : 1));
    let toggles = 0;
    for (let i = 1; i < ordered.length; i++) if (ordered[i]!.status !== ordered[i - 1]!.status) toggles++;
    const firing = ordered.filter((a) => a.status === 'firing').length;
    const resolved = ordered.length - firing;
    if (resolved < 2 || firing < 3) continue;
    const stats = {
      alertName,
      toggles,
      firing,
      resolved,
      spanMinutes: minutesBetween(ordered[0]!.occurredAt, ordered[ordered.length - 1]!.occurredAt),
      sources: ordered.map((a) => a.eventId),
    };
    if (!best || stats.toggles > best.toggles) best = stats;
  }
  return best;
}

function buildView(input: InvestigationInput): View {
  const service = input.incident.service ?? 'the affected service';
  const serviceLower = lower(input.incident.service);
  const dependencyNames = new Set(input.topology.dependencies.map((d) => d.name.toLowerCase()));
  const dependentNames = new Set(input.topology.dependents.map((d) => d.name.toLowerCase()));
  const related = input.correlated.filter((a) => {
    const s = lower(a.service);
    return s !== '' && (s === serviceLower || dependencyNames.has(s) || dependentNames.has(s));
  });
  const ownFiring = input.alerts.filter((a) => a.status === 'firing');
  // A skill's answer reads as a signal of the incident's own service.
  const found: AlertObservation[] = (input.findings ?? []).map((f) => ({
    eventId: f.sourceId,
    provider: 'skill',
    incidentId: input.incident.incidentId,
    alertName: f.skill,
    service: input.incident.service,
    severity: null,
    status: 'firing',
    occurredAt: f.occurredAt,
    title: f.skill,
    text: f.text,
    labels: {},
  }));
  return {
    input,
    service,
    first: input.incident.firstAlertAt,
    own: input.alerts,
    ownFiring,
    related,
    scope: [...input.alerts, ...related, ...found],
    all: [...input.alerts, ...input.correlated, ...found],
    dependencyNames,
    deployments: input.changes.filter((c) => c.kind === 'deployment'),
    pushes: input.changes.filter((c) => c.kind === 'code_change'),
    flapping: flapStats(input.alerts),
  };
}

const matching = (alerts: AlertObservation[], re: RegExp) => alerts.filter((a) => re.test(textOf(a)));
const servicesOf = (alerts: AlertObservation[]) => [
  ...new Set(alerts.map((a) => a.service).filter((s): s is string => !!s)),
];

function draft(
  kind: HypothesisKind,
  fields: Omit<Hypothesis, 'kind' | 'status' | 'reason' | 'contextAdjustment'>,
): Hypothesis {
  return {
    kind,
    status: 'discarded',
    reason: '',
    contextAdjustment: 0,
    ...fields,
    score: round2(clamp(fields.score, 0, 0.95)),
  };
}

// ---------------------------------------------------------------------------------------------
// Deployments and code changes

interface Deploy {
  change: ChangeObservation;
  minutesBefore: number;
  previousSha: string | null;
}

/** The latest state of each deployment (GitHub sends one event per status), with the release before it. */
function latestDeploys(deployments: ChangeObservation[]): ChangeObservation[] {
  const byId = new Map<string, ChangeObservation>();
  for (const d of deployments) {
    const key = d.deploymentId ?? `${d.service}:${d.sha}:${d.environment}`;
    const seen = byId.get(key);
    if (!seen || ms(d.occurredAt) > ms(seen.occurredAt)) byId.set(key, d);
  }
  return [...byId.values()];
}

const failedState = (state: string | null) => state !== null && /^(failure|error|inactive)$/i.test(state);
const notYetLive = (state: string | null) => state !== null && /^(queued|pending)$/i.test(state);
const isProduction = (env: string | null) => env === null || /prod|live|main/i.test(env);

function deploysOf(v: View, hops: (h: number) => boolean): Deploy[] {
  const latest = latestDeploys(v.deployments).filter((d) => hops(d.hops) && !notYetLive(d.state));
  return latest
    .map((change) => {
      const earlier = latest
        .filter(
          (o) =>
            o.service === change.service &&
            o.environment === change.environment &&
            ms(o.occurredAt) < ms(change.occurredAt) &&
            !failedState(o.state),
        )
        .sort((a, b) => ms(b.occurredAt) - ms(a.occurredAt))[0];
      return { change, minutesBefore: minutesBetween(change.occurredAt, v.first), previousSha: earlier?.sha ?? null };
    })
    .filter((d) => proximity(d.minutesBefore) > 0);
}

const deployName = (c: ChangeObservation) =>
  `deployment ${c.deploymentId ?? sha7(c.sha) ?? c.eventId} of ${c.service ?? c.repository ?? 'the service'}`;
const shaPart = (c: ChangeObservation) => (c.sha ? ` (sha ${sha7(c.sha)})` : '');

/** Pushes whose commits include the deployed sha (or any push of the service shortly before it). */
function commitsBehind(v: View, deploy: ChangeObservation): CommitObservation[] {
  const exact = v.pushes.filter(
    (p) => p.commits.some((c) => deploy.sha && c.id === deploy.sha) || (deploy.sha && p.sha === deploy.sha),
  );
  const pushes =
    exact.length > 0
      ? exact
      : v.pushes.filter(
          (p) =>
            p.service === deploy.service &&
            ms(p.occurredAt) <= ms(deploy.occurredAt) &&
            minutesBetween(p.occurredAt, deploy.occurredAt) <= 180,
        );
  return pushes.flatMap((p) => p.commits).filter((c) => !/^merge (pull request|branch)/i.test(c.message));
}

function badDeploy(v: View): Hypothesis[] {
  const errors = matching(v.own, RE.error).length > 0;
  return deploysOf(v, (h) => h === 0).map(({ change, minutesBefore, previousSha }) => {
    const support: string[] = [
      `${deployName(change)}${shaPart(change)} to ${change.environment ?? 'an environment'} (${change.state ?? 'deployed'}) ${formatDuration(minutesBefore)} before the first alert`,
    ];
    const against: string[] = [];
    let score = 0.35 + 0.4 * proximity(minutesBefore);
    if (errors) {
      score += 0.1;
      support.push('errors started after it');
    }
    const release = v.own.find((a) => {
      const r = lower(a.labels.release ?? a.labels.version ?? '');
      return (
        r !== '' &&
        ((change.sha !== null &&
          (r.includes(lower(change.sha).slice(0, 7)) || lower(change.sha).startsWith(r.split('@').pop() ?? '@@'))) ||
          (change.ref !== null && r.endsWith(lower(change.ref))))
      );
    });
    if (release) {
      score += 0.1;
      support.push(`the failing events carry its release (${release.labels.release ?? release.labels.version})`);
    }
    if (failedState(change.state)) {
      score -= 0.2;
      against.push(`the deployment ended in state ${change.state}, so it may not be live`);
    }
    if (!isProduction(change.environment)) {
      score -= 0.25;
      against.push(`it went to ${change.environment}, not production`);
    }
    const siblings = v.input.topology.dependencies
      .filter((d) => d.alertingDependents.length >= 2)
      .flatMap((d) => d.alertingDependents);
    const undeployed = [...new Set(siblings)].filter(
      (s) => lower(s) !== lower(change.service) && !v.deployments.some((d) => lower(d.service) === lower(s)),
    );
    if (undeployed.length > 0) {
      score -= 0.2;
      against.push(`${list(undeployed)} fail the same way and were not deployed`);
    }
    if (v.flapping) {
      score -= 0.15;
      against.push(
        `the alert recovers on its own and fires again (${v.flapping.toggles} toggles), which a broken release does not do`,
      );
    }
    const commits = commitsBehind(v, change);
    const commitPart =
      commits.length > 0
        ? ` It shipped ${commits
            .slice(0, 3)
            .map((c) => `${sha7(c.id)} "${quote(firstLine(c.message), 80)}"`)
            .join(', ')}.`
        : '';
    const symptom = v.ownFiring[0] ? ` ${v.ownFiring[0].alertName} fired at ${hhmm(v.ownFiring[0].occurredAt)}.` : '';
    const name = deployName(change);
    const target = previousSha
      ? ` back to the previous release (sha ${sha7(previousSha)})`
      : ' to the previous release';
    return draft('bad_deploy', {
      statement: `${name[0]!.toUpperCase()}${name.slice(1)}${shaPart(change)} broke ${change.service ?? v.service}`,
      subject: change.service ?? v.service,
      score,
      support,
      against,
      sources: [change.eventId, ...(release ? [release.eventId] : [])],
      rootCause: `A bad release: ${name}${shaPart(change)} to ${change.environment ?? 'production'} at ${hhmm(change.occurredAt)}, ${formatDuration(minutesBefore)} before the first alert.${symptom}${commitPart}`,
      actions: [
        `Roll back ${name}${shaPart(change)}${target}`,
        `Confirm the errors stop on ${change.service ?? v.service} after the rollback, then fix forward from ${sha7(change.sha) ?? 'the release'} with a test that reproduces the failure`,
      ],
      keywords: ['deploy', 'deployment', 'rollback', 'roll back', 'release'],
      changeRef: change.sha ?? change.eventId,
    });
  });
}

function upstreamDeploy(v: View): Hypothesis[] {
  const errors = matching(v.own, RE.error).length > 0;
  return deploysOf(v, (h) => h >= 1).map(({ change, minutesBefore, previousSha }) => {
    const dep = v.input.topology.dependencies.find((d) => lower(d.name) === lower(change.service));
    const support = [
      `${deployName(change)}${shaPart(change)}, a dependency of ${v.service} (${change.hops} hop${change.hops === 1 ? '' : 's'}), ${formatDuration(minutesBefore)} before the first alert`,
    ];
    const against: string[] = [];
    let score = 0.25 + 0.35 * proximity(minutesBefore) - 0.05 * (change.hops - 1);
    if (dep?.alerting) {
      score += 0.2;
      support.push(`${dep.name} itself alerts (${list(dep.alertNames.slice(0, 3))})`);
    }
    if (errors) score += 0.05;
    if (failedState(change.state)) {
      score -= 0.2;
      against.push(`the deployment ended in state ${change.state}`);
    }
    if (!isProduction(change.environment)) {
      score -= 0.25;
      against.push(`it went to ${change.environment}, not production`);
    }
    const mentioned = v.own.some((a) => lower(textOf(a)).includes(lower(change.service)));
    if (mentioned) {
      score += 0.05;
      support.push(`${v.service}'s errors name ${change.service}`);
    }
    const name = deployName(change);
    const target = previousSha
      ? ` back to the previous release (sha ${sha7(previousSha)})`
      : ' to the previous release';
    return draft('upstream_deploy', {
      statement: `${name[0]!.toUpperCase()}${name.slice(1)}${shaPart(change)}, which ${v.service} depends on, broke ${v.service}`,
      subject: change.service ?? 'a dependency',
      score,
      support,
      against,
      sources: [change.eventId],
      rootCause: `A bad release of a dependency: ${name}${shaPart(change)} at ${hhmm(change.occurredAt)}, ${formatDuration(minutesBefore)} before ${v.service} started failing; ${v.service} depends on ${change.service}${dep?.alerting ? `, which alerts too (${list(dep.alertNames.slice(0, 3))})` : ''}.`,
      actions: [
        `Roll back ${name}${shaPart(change)}${target}`,
        `Check that ${v.service} recovers once ${change.service} is rolled back`,
      ],
      keywords: ['deploy', 'deployment', 'rollback', 'release', lower(change.service)],
      changeRef: change.sha ?? change.eventId,
    });
  });
}

interface CandidateChange {
  change: ChangeObservation;
  commit: CommitObservation | null;
  minutesBefore: number;
}

/** Changes of the service (pushes with their commits, and deployments) before the first alert. */
function ownChanges(v: View, lookbackProximity: (m: number) => number): CandidateChange[] {
  const out: CandidateChange[] = [];
  for (const change of v.input.changes) {
    if (change.hops !== 0) continue;
    const minutesBefore = minutesBetween(change.occurredAt, v.first);
    if (lookbackProximity(minutesBefore) <= 0) continue;
    if (change.kind === 'code_change') {
      const commits = change.commits.filter((c) => !/^merge (pull request|branch)/i.test(c.message));
      for (const commit of commits.length > 0 ? commits : change.commits) out.push({ change, commit, minutesBefore });
    } else if (!failedState(change.state)) {
      out.push({ change, commit: null, minutesBefore });
    }
  }
  return out;
}

const commitText = (c: CandidateChange) =>
  c.commit ? `${c.commit.message}\n${c.commit.files.join('\n')}` : `${c.change.description ?? ''}\n${c.change.title}`;
const changeName = (c: CandidateChange) =>
  c.commit
    ? `commit ${sha7(c.commit.id)} "${quote(firstLine(c.commit.message), 90)}"`
    : `${deployName(c.change)}${shaPart(c.change)}`;
/** The deployment that shipped a commit, when one is known. */
const shippedBy = (v: View, sha: string | null) =>
  sha
    ? latestDeploys(v.deployments).find((d) => d.sha === sha || commitsBehind(v, d).some((c) => c.id === sha))
    : undefined;

function configChange(v: View): Hypothesis[] {
  const ownText = v.own.map(textOf).join('\n');
  const alertWords = distinctiveWords(ownText);
  const candidates = ownChanges(v, proximity).filter((c) => RE.config.test(commitText(c)));
  return candidates.map((c) => {
    const overlap = [...distinctiveWords(c.commit ? c.commit.message : commitText(c))].filter((w) => alertWords.has(w));
    let score = 0.45 + 0.35 * proximity(c.minutesBefore);
    const support = [
      `${changeName(c)} changes configuration (${quote(commitText(c).match(RE.config)?.[0] ?? 'config', 40)}) ${formatDuration(c.minutesBefore)} before the first alert`,
    ];
    if (overlap.length > 0) {
      score += 0.15;
      support.push(`the alerts name what it changed (${overlap.slice(0, 4).join(', ')})`);
    } else {
      score -= 0.1;
    }
    const against: string[] = [];
    if (v.flapping) {
      score -= 0.15;
      against.push('the alert flaps, which a configuration change does not explain');
    }
    const sha = c.commit?.id ?? c.change.sha;
    const repo = c.change.repository ?? c.change.service ?? v.service;
    const deploy = shippedBy(v, sha);
    return draft('config_change', {
      statement:
        `Configuration change ${sha7(sha) ?? ''} of ${v.service} ("${quote(firstLine(c.commit?.message ?? c.change.title), 80)}")`.replace(
          '  ',
          ' ',
        ),
      subject: v.service,
      score,
      support,
      against,
      sources: [c.change.eventId, ...(deploy ? [deploy.eventId] : [])],
      rootCause: `A configuration change: ${changeName(c)} in ${repo}, ${formatDuration(c.minutesBefore)} before the first alert${deploy ? ` (shipped by ${deployName(deploy)})` : ''}; the failures match what it changed${overlap.length > 0 ? ` (${overlap.slice(0, 4).join(', ')})` : ''}.`,
      actions: [
        `Revert config change ${sha7(sha) ?? ''} in ${repo} ("${quote(firstLine(c.commit?.message ?? c.change.title), 80)}") and redeploy ${v.service}`.replace(
          '  ',
          ' ',
        ),
        ...(deploy ? [`If the revert cannot ship quickly, roll back ${deployName(deploy)}${shaPart(deploy)}`] : []),
        `Add a check for this setting to ${v.service}'s deploy pipeline so the value is validated before release`,
      ],
      keywords: ['config', 'configuration', 'revert', 'rollback', 'settings'],
      changeRef: sha ?? c.change.eventId,
    });
  });
}

const MEMORY_CODE =
  /(cache|buffer|memo|map|dict|list|pool|memory|leak|retain|global|listener|subscri|queue|array|heap|in[- ]process|static)/i;

function memoryLeak(v: View): Hypothesis[] {
  const sameService = v.scope.filter(
    (a) => v.own.includes(a) || (a.service !== null && lower(a.service) === lower(v.input.incident.service)),
  );
  const signals = matching(sameService, RE.memory);
  if (signals.length === 0 || !signals.some((a) => v.own.includes(a))) return [];
  const oom = signals.some((a) => /oom|out ?of ?memory|crashloop|restart/i.test(textOf(a)));
  // A leak grows slowly: any change of the service in the 6 h window counts.
  const relaxed = (m: number) => (m < -5 ? 0 : m <= 360 ? 1 - (m / 360) * 0.5 : 0);
  const changes = ownChanges(v, relaxed).sort((a, b) => {
    const am = MEMORY_CODE.test(commitText(a)) ? 1 : 0;
    const bm = MEMORY_CODE.test(commitText(b)) ? 1 : 0;
    return bm - am || a.minutesBefore - b.minutesBefore || (a.commit ? 0 : 1) - (b.commit ? 0 : 1);
  });
  const best = changes[0];
  const support = signals.slice(0, 3).map(alertLine);
  const base = 0.5 + (oom ? 0.05 : 0);
  if (!best) {
    return [
      draft('memory_leak', {
        statement: `Memory exhaustion on ${v.service}`,
        subject: v.service,
        score: base,
        support,
        against: ['no code change of the service in the 6 h before the first alert to blame'],
        sources: signals.map((a) => a.eventId),
        rootCause: `${v.service} runs out of memory (${says(signals[0]!)}); no recent change of the service explains it.`,
        actions: [
          `Restart the ${v.service} pods that are near their memory limit and capture a heap profile before they are killed`,
          `Raise ${v.service}'s memory limit temporarily while the heap profile is analysed`,
        ],
        keywords: ['memory', 'oom', 'heap', 'leak'],
      }),
    ];
  }
  const sha = best.commit?.id ?? best.change.sha;
  const deploy = best.commit ? shippedBy(v, sha) : best.change;
  const suspicious = MEMORY_CODE.test(commitText(best));
  const score = base + 0.25 + 0.1 * relaxed(best.minutesBefore) + (suspicious ? 0.05 : 0);
  const revert = deploy
    ? `Roll back ${deployName(deploy)}${shaPart(deploy)}, which shipped ${changeName(best)}, and restart the OOM-killed ${v.service} pods`
    : `Revert ${changeName(best)} in ${best.change.repository ?? v.service} and redeploy ${v.service}; restart the OOM-killed pods meanwhile`;
  return [
    draft('memory_leak', {
      statement: `Memory leak in ${v.service} introduced by ${changeName(best)}`,
      subject: v.service,
      score,
      support: [
        ...support,
        `${changeName(best)} ${formatDuration(best.minutesBefore)} before the first alert${suspicious ? ' touches in-memory state' : ''}`,
      ],
      against: [],
      sources: [
        best.change.eventId,
        ...signals.map((a) => a.eventId),
        ...(deploy && deploy !== best.change ? [deploy.eventId] : []),
      ],
      rootCause: `A memory leak in ${v.service} introduced by ${changeName(best)}${best.commit ? '' : ` (${sha7(sha) ?? 'the change'})`}, ${formatDuration(best.minutesBefore)} before the first alert: memory grew until ${oom ? 'the pods were OOM-killed' : 'it reached the limit'} (${says(signals[0]!, 120)}).`,
      actions: [
        revert,
        `Take a heap profile of ${v.service} under load to confirm what ${sha7(sha) ?? 'the change'} retains before fixing forward`,
      ],
      keywords: ['memory', 'oom', 'leak', 'heap', 'rollback'],
      changeRef: sha ?? best.change.eventId,
    }),
  ];
}

// ---------------------------------------------------------------------------------------------
// Resources

const databaseOf = (v: View, text: string): DependencyObservation | undefined => {
  const deps = v.input.topology.dependencies;
  return (
    deps.find((d) => lower(text).includes(lower(d.name))) ??
    deps.find((d) => d.type === 'database' && d.alerting) ??
    deps.find((d) => d.type === 'database')
  );
};

function connectionPool(v: View): Hypothesis[] {
  const signals = matching(v.scope, RE.pool);
  if (signals.length === 0) return [];
  const ownSignals = signals.filter((a) => v.own.includes(a) || lower(a.service) === lower(v.input.incident.service));
  const db = databaseOf(v, signals.map(textOf).join('\n'));
  let score = 0.55 + 0.1 * Math.min(2, signals.length - 1);
  const support = signals.slice(0, 3).map(alertLine);
  if (db?.alerting && db.alertTexts.some((t) => RE.pool.test(t) || /connections?/i.test(t))) {
    score += 0.1;
    support.push(`${db.name} reports its connections near the limit`);
  }
  if (ownSignals.length === 0) score -= 0.15;
  const dbName = db?.name ?? 'the database';
  return [
    draft('connection_pool', {
      statement: `${v.service} exhausted its connection pool to ${dbName}`,
      subject: dbName,
      score,
      support,
      against:
        ownSignals.length === 0 ? [`the pool errors come from ${list(servicesOf(signals))}, not ${v.service}`] : [],
      sources: signals.map((a) => a.eventId),
      rootCause: `Connection pool exhaustion: ${v.service} cannot get connections to ${dbName} (${says(signals[0]!)})${db?.alerting ? `, and ${dbName} is at its connection limit` : ''}.`,
      actions: [
        `Terminate idle and idle-in-transaction connections on ${dbName} and restart the ${v.service} pods holding leaked connections`,
        `Cap ${v.service}'s pool size so all replicas together stay below ${dbName}'s max_connections (or put PgBouncer in front)`,
      ],
      keywords: [
        'connection',
        'connections',
        'pool',
        'exhaustion',
        'postgres',
        'pgbouncer',
        'max_connections',
        lower(dbName),
      ],
    }),
  ];
}

function diskFull(v: View): Hypothesis[] {
  const signals = matching(v.scope, RE.disk);
  if (signals.length === 0) return [];
  const main = signals.find((a) => a.labels.mountpoint ?? a.labels.device ?? a.labels.instance) ?? signals[0]!;
  const host = (
    main.labels.instance ??
    main.labels.host ??
    main.labels.hostname ??
    main.labels.node ??
    main.service ??
    v.service
  ).replace(/:\d+$/, '');
  const mount = main.labels.mountpoint ?? main.labels.mount ?? main.labels.device ?? main.labels.volume ?? null;
  const percent = textOf(main).match(/(\d{2,3}(\.\d+)?) ?%/)?.[1];
  let score = 0.6;
  if (percent && Number(percent) >= 95) score += 0.15;
  if (signals.some((a) => /no space left|enospc/i.test(textOf(a)))) score += 0.15;
  if (main.severity === 'critical') score += 0.05;
  const where = `${host}${mount ? ` (${mount})` : ''}`;
  return [
    draft('disk_full', {
      statement: `Disk full on ${where}`,
      subject: host,
      score,
      support: signals.slice(0, 3).map(alertLine),
      against: [],
      sources: signals.map((a) => a.eventId),
      rootCause: `The disk is full on ${where}${percent ? ` (${percent}% used)` : ''}: ${says(main)}. Writes fail on ${v.service} until space is freed.`,
      actions: [
        `Free disk space on ${where}: delete rotated logs, old WAL/archives and temporary files, then expand the volume`,
        `Add an alert at 80% disk usage on ${host} with a forecast (predict_linear) so it warns hours ahead`,
      ],
      keywords: ['disk', 'space', 'volume', 'filesystem', 'full', lower(host)],
    }),
  ];
}

function expiredCertificate(v: View): Hypothesis[] {
  const signals = matching(v.all, RE.cert);
  if (signals.length === 0) return [];
  const labelHost = signals
    .map(
      (a) =>
        a.labels.instance ??
        a.labels.target ??
        a.labels.domain ??
        a.labels.host ??
        a.labels.server_name ??
        a.labels.cn ??
        '',
    )
    .map((h) => hostsIn(h)[0])
    .find((h): h is string => !!h);
  const domain = labelHost ?? signals.flatMap((a) => hostsIn(textOf(a)))[0] ?? v.service;
  const expired = signals.some((a) => RE.certExpired.test(textOf(a)));
  const services = servicesOf(signals);
  let score = 0.6 + (expired ? 0.25 : 0) + (services.length > 1 ? 0.05 : 0);
  if (!signals.some((a) => v.own.includes(a) || v.related.includes(a))) score -= 0.2;
  return [
    draft('expired_certificate', {
      statement: `The TLS certificate of ${domain} ${expired ? 'has expired' : 'is failing'}`,
      subject: domain,
      score,
      support: signals.slice(0, 3).map(alertLine),
      against: [],
      sources: signals.map((a) => a.eventId),
      rootCause: `An ${expired ? 'expired' : 'invalid'} TLS certificate on ${domain}: ${says(signals[0]!)}. Clients of ${domain}${services.length > 0 ? ` (${list(services)})` : ''} fail the TLS handshake.`,
      actions: [
        `Renew the TLS certificate of ${domain} and deploy it where TLS terminates (load balancer or ingress), then verify with \`openssl s_client -connect ${domain}:443\``,
        `Automate renewal for ${domain} (cert-manager or ACME) and alert 14 days before expiry`,
      ],
      keywords: ['certificate', 'tls', 'ssl', 'cert', 'renew', 'expiry', lower(domain)],
    }),
  ];
}

function dnsFailure(v: View, contextOnly = false): Hypothesis[] {
  const signals = matching(v.all, RE.dns);
  if (signals.length === 0 && !contextOnly) return [];
  const hostSource = signals.length > 0 ? signals : v.own;
  const candidates = hostSource.flatMap((a) => {
    const text = textOf(a);
    const near = text.match(
      /(?:lookup|resolve|resolving|enotfound|eai_again|host)\s*'?"?([a-z0-9.-]+\.[a-z]{2,})/i,
    )?.[1];
    return [...(near ? [near.toLowerCase()] : []), ...hostsIn(text)];
  });
  const host =
    candidates.find((h) => !/(sentry\.io|github\.com|datadoghq|example\.com\/)/.test(h)) ??
    candidates[0] ??
    `${v.service}'s dependencies`;
  const services = servicesOf(signals);
  let score = contextOnly
    ? 0.3
    : 0.55 + 0.1 * Math.min(3, services.length - 1) + (signals.some((a) => RE.dnsStrong.test(textOf(a))) ? 0.15 : 0);
  if (!contextOnly && !signals.some((a) => v.own.includes(a))) score -= 0.15;
  return [
    draft('dns_failure', {
      statement: `DNS resolution of ${host} fails`,
      subject: host,
      score,
      support: signals.length > 0 ? signals.slice(0, 3).map(alertLine) : ['human context points at DNS'],
      against: [],
      sources: signals.map((a) => a.eventId),
      rootCause: `A DNS failure: ${host} does not resolve${services.length > 0 ? ` for ${list(services)}` : ''}${signals[0] ? ` (${says(signals[0])})` : ''}.`,
      actions: [
        `Restore DNS resolution of ${host}: check its records at the DNS provider and the cluster resolvers (\`dig ${host}\`), and roll back the latest DNS change`,
        `Flush the resolver caches (CoreDNS / node-local DNS) once the records are correct, and confirm ${v.service} resolves ${host}`,
      ],
      keywords: ['dns', 'resolver', 'domain', 'records', lower(host)],
    }),
  ];
}

function thirdPartyOutage(v: View): Hypothesis[] {
  const out: Hypothesis[] = [];
  const internal = new Set([lower(v.input.incident.service), ...v.dependencyNames]);
  for (const vendor of VENDORS) {
    if (internal.has(vendor.name.toLowerCase())) continue;
    const signals = v.all.filter((a) => vendor.pattern.test(textOf(a)));
    if (signals.length === 0) continue;
    const failing = signals.filter((a) => RE.error.test(textOf(a)) || RE.upstreamDown.test(textOf(a)));
    if (failing.length === 0) continue;
    const services = servicesOf(failing);
    let score = 0.55 + 0.15 + 0.1 * Math.min(2, failing.length - 1) + (services.length > 1 ? 0.05 : 0);
    if (!failing.some((a) => v.own.includes(a))) score -= 0.2;
    const host = hostsIn(failing.map(textOf).join('\n')).find((h) => vendor.pattern.test(h)) ?? vendor.host;
    out.push(
      draft('third_party_outage', {
        statement: `Third-party outage: ${vendor.name} (${host}) is failing`,
        subject: vendor.name,
        score,
        support: failing.slice(0, 3).map(alertLine),
        against: [],
        sources: failing.map((a) => a.eventId),
        rootCause: `A third-party outage: ${vendor.name} (${host}) fails or times out for ${list(services.length > 0 ? services : [v.service])} (${says(failing[0]!)}); nothing changed on our side to explain it.`,
        actions: [
          `Fail over ${v.service}'s calls to ${vendor.name} (${host}): switch to the fallback provider or queue the requests for retry, and follow ${vendor.name}'s status page until it recovers`,
          `Shorten ${v.service}'s timeout and open a circuit breaker on ${host} so threads are not held while ${vendor.name} is down`,
        ],
        keywords: ['third-party', 'vendor', 'provider', 'external', 'failover', vendor.name.toLowerCase()],
      }),
    );
  }
  if (out.length === 0) {
    const generic = matching(v.own, RE.thirdPartyWords).filter(
      (a) => RE.error.test(textOf(a)) || RE.upstreamDown.test(textOf(a)),
    );
    if (generic.length > 0) {
      const host = hostsIn(generic.map(textOf).join('\n'))[0] ?? 'the external provider';
      out.push(
        draft('third_party_outage', {
          statement: `Third-party outage: ${host} is failing`,
          subject: host,
          score: 0.55,
          support: generic.slice(0, 3).map(alertLine),
          against: [],
          sources: generic.map((a) => a.eventId),
          rootCause: `A third-party outage: ${host} fails for ${v.service} (${says(generic[0]!)}).`,
          actions: [
            `Fail over ${v.service}'s calls to ${host}: switch to a fallback or queue the requests, and follow the provider's status page`,
            `Open a circuit breaker on ${host} in ${v.service} so it degrades instead of failing`,
          ],
          keywords: ['third-party', 'vendor', 'provider', 'external'],
        }),
      );
    }
  }
  return out;
}

// ---------------------------------------------------------------------------------------------
// Topology

const isCache = (d: DependencyObservation) => d.type === 'cache' || /redis|memcache|cache/i.test(d.name);

function cacheFailure(v: View): Hypothesis[] {
  const ownCacheSignals = matching(v.scope, RE.cache);
  const caches = v.input.topology.dependencies.filter(
    (d) =>
      isCache(d) &&
      (d.alerting ||
        d.alertingDependents.length >= 2 ||
        ownCacheSignals.some((a) => lower(textOf(a)).includes(lower(d.name)))),
  );
  if (caches.length === 0 && ownCacheSignals.length === 0) return [];
  const targets = caches.length > 0 ? caches : [undefined];
  return targets.map((cache) => {
    const name = cache?.name ?? textOf(ownCacheSignals[0]!).match(/\b(redis|memcached?)[\w.-]*/i)?.[0] ?? 'the cache';
    const support: string[] = [];
    let score = 0.5;
    if (cache?.alerting) {
      score += 0.2;
      support.push(
        `${cache.name} alerts: ${list(cache.alertNames.slice(0, 3))}${cache.firstAlertAt ? ` since ${hhmm(cache.firstAlertAt)}` : ''}`,
      );
    }
    const fanOut = cache
      ? cache.alertingDependents.filter((s) => lower(s) !== lower(cache.name))
      : servicesOf(ownCacheSignals);
    if (fanOut.length >= 2) {
      score += 0.1 * Math.min(2, fanOut.length - 1);
      support.push(`${fanOut.length} services that use it alert: ${list(fanOut)}`);
    }
    if (ownCacheSignals.length > 0) {
      score += 0.1;
      support.push(...ownCacheSignals.slice(0, 2).map(alertLine));
    }
    const loaded = v.input.topology.dependencies.filter(
      (d) => d.type === 'database' && d.alerting && d.alertTexts.some((t) => RE.dbLoad.test(t)),
    );
    if (loaded.length > 0) {
      score += 0.05;
      support.push(
        `${list(loaded.map((d) => d.name))} takes the cache misses (${list(loaded[0]!.alertNames.slice(0, 2))})`,
      );
    }
    const db = loaded[0]?.name ?? v.input.topology.dependencies.find((d) => d.type === 'database')?.name;
    return draft('cache_failure', {
      statement: `Cache ${name} failed and the misses fan out${db ? ` to ${db}` : ''}`,
      subject: name,
      score,
      support,
      against: [],
      sources: ownCacheSignals.map((a) => a.eventId),
      rootCause: `A cache failure with fan-out: ${name} is down or unreachable${cache?.firstAlertAt ? ` since ${hhmm(cache.firstAlertAt)}` : ''}, so every request of ${list(fanOut.length > 0 ? fanOut : [v.service])} misses the cache${db ? ` and falls through to ${db}, which is overloaded` : ''}.`,
      actions: [
        `Restore the cache ${name}: restart or fail over its primary, then warm it before sending full traffic`,
        ...(db
          ? [
              `Protect ${db} meanwhile: rate-limit cache-miss reads from ${list(fanOut.length > 0 ? fanOut : [v.service])} or serve stale responses`,
            ]
          : []),
        `Add request coalescing (single-flight) on cache misses in ${v.service} so one miss does not become N database queries`,
      ],
      keywords: ['cache', 'redis', 'memcached', 'failover', lower(name)],
    });
  });
}

const DB_ACTION: Record<string, (name: string) => string> = {
  database: (n) =>
    `Restore ${n}: check the primary's health (process, connections, replication, disk) and fail over to the replica if it is down`,
  cache: (n) => `Restore ${n}: restart or fail over its primary`,
  queue: (n) => `Restore ${n}: check the brokers' health and disk, and restart or fail over the unhealthy broker`,
  api: (n) => `Restore ${n}: roll back its latest change or restart it, and check its own dependencies`,
  worker: (n) => `Restore ${n}: restart it and check the jobs it is stuck on`,
};

function upstreamFailure(v: View): Hypothesis[] {
  const deps = v.input.topology.dependencies.filter(
    (d) => !isCache(d) && (d.alerting || d.alertingDependents.length >= 2),
  );
  const firstCache = v.input.topology.dependencies
    .filter((d) => isCache(d) && d.alerting && d.firstAlertAt)
    .sort((a, b) => ms(a.firstAlertAt!) - ms(b.firstAlertAt!))[0];
  const downText = matching(v.own, RE.upstreamDown);
  return deps.map((d) => {
    const support: string[] = [];
    const against: string[] = [];
    let score = 0.35 - 0.05 * (d.hops - 1);
    if (d.alerting) {
      score += 0.25;
      support.push(
        `${d.name} alerts: ${list(d.alertNames.slice(0, 3))}${d.firstAlertAt ? ` since ${hhmm(d.firstAlertAt)}` : ''}`,
      );
    } else {
      against.push(`${d.name} has no alert of its own (its monitoring may be down with it)`);
    }
    const others = d.alertingDependents.filter((s) => lower(s) !== lower(v.input.incident.service));
    if (d.alertingDependents.length >= 2) {
      score += 0.1 * Math.min(3, d.alertingDependents.length - 1);
      support.push(
        `common dependency of ${d.alertingDependents.length} alerting services: ${list(d.alertingDependents)}`,
      );
    }
    const naming = downText.filter((a) => lower(textOf(a)).includes(lower(d.name)) || d.type === 'database');
    if (naming.length > 0) {
      score += 0.1;
      support.push(...naming.slice(0, 2).map(alertLine));
    }
    if (d.type === 'database' || d.type === 'queue') score += 0.05;
    if (d.firstAlertAt && ms(d.firstAlertAt) <= ms(v.first)) {
      score += 0.05;
      support.push(`${d.name} failed first`);
    }
    if (
      d.alerting &&
      d.alertTexts.length > 0 &&
      d.alertTexts.every((t) => RE.pool.test(t) || /connections?\b/i.test(t)) &&
      matching(v.scope, RE.pool).length > 0
    ) {
      score -= 0.15;
      against.push(`${d.name} only reports connection saturation, which the pool exhaustion explains`);
    }
    if (firstCache && d.type === 'database' && d.firstAlertAt && ms(firstCache.firstAlertAt!) < ms(d.firstAlertAt)) {
      score -= 0.15;
      against.push(`${d.name}'s load rose after ${firstCache.name} failed (cache-miss fan-out)`);
    }
    const trafficOwn = matching(v.own, RE.traffic).length > 0;
    const loadAfter =
      d.firstAlertAt !== null && ms(d.firstAlertAt) > ms(v.first) && d.alertTexts.some((t) => RE.dbLoad.test(t));
    if (
      d.alerting &&
      trafficOwn &&
      (loadAfter || d.alertTexts.some((t) => RE.trafficMultiplier.test(t) || RE.traffic.test(t)))
    ) {
      score -= 0.1;
      against.push(`${d.name}'s load follows the traffic ${v.service} receives`);
    }
    const action = (DB_ACTION[d.type] ?? DB_ACTION.api!)(d.name);
    const shared =
      d.alertingDependents.length >= 2
        ? `, the dependency ${list(d.alertingDependents)} share`
        : `, which ${v.service} depends on`;
    return draft('upstream_failure', {
      statement: `Upstream dependency ${d.name} (${d.type}) is failing`,
      subject: d.name,
      score,
      support,
      against,
      sources: naming.map((a) => a.eventId),
      rootCause: `An upstream failure: ${d.name} (${d.type})${shared}, is failing${d.firstAlertAt ? ` since ${hhmm(d.firstAlertAt)}` : ''}${others.length > 0 ? `; ${list(others)} fail the same way` : ''}${naming[0] ? ` (${says(naming[0], 120)})` : ''}.`,
      actions: [
        `${action}${d.alertingDependents.length >= 2 ? ` — ${list(d.alertingDependents)} recover with it` : ''}`,
        `Once ${d.name} is back, check that ${v.service}'s connection retries recovered and drain any queued work`,
      ],
      keywords: [
        lower(d.name),
        d.type,
        'failover',
        'outage',
        'primary',
        'replica',
        ...(d.type === 'database' ? ['postgres', 'database'] : []),
      ],
    });
  });
}

function trafficSpike(v: View): Hypothesis[] {
  const mine = (a: AlertObservation) => v.own.includes(a) || lower(a.service) === lower(v.input.incident.service);
  const signals = matching(v.scope.filter(mine), RE.traffic);
  if (signals.length === 0) return [];
  const multiplier = signals.map((a) => textOf(a).match(RE.trafficMultiplier)?.[0]).find((m): m is string => !!m);
  const saturated = matching(v.scope.filter(mine), RE.saturation);
  const saturatedOther = saturated.find((a) => !signals.includes(a));
  let score = 0.5 + (multiplier ? 0.15 : 0) + (saturated.length > 0 ? 0.1 : 0);
  const recent = v.input.changes.some((c) => c.hops === 0 && proximity(minutesBetween(c.occurredAt, v.first)) >= 0.6);
  if (!recent) score += 0.05;
  return [
    draft('traffic_spike', {
      statement: `Traffic spike on ${v.service}${multiplier ? ` (${multiplier})` : ''}`,
      subject: v.service,
      score,
      support: [...signals.slice(0, 3).map(alertLine), ...(recent ? [] : ['no recent change of the service'])],
      against: recent ? ['the service also changed shortly before'] : [],
      sources: signals.map((a) => a.eventId),
      rootCause: `A traffic spike: ${v.service} receives ${multiplier ?? 'far more requests than usual'} (${says(signals[0]!)}) and saturates${saturatedOther ? ` (${saturatedOther.alertName}: ${says(saturatedOther, 80)})` : ''}; nothing changed in the service itself.`,
      actions: [
        `Scale out ${v.service}: raise its replica count and its autoscaler maximum above the current ceiling`,
        `Rate-limit or shed the excess traffic at the edge for ${v.service} (per client), and find its source in the access logs`,
      ],
      keywords: ['traffic', 'scale', 'scaling', 'capacity', 'autoscaling', 'rate limit', 'load'],
    }),
  ];
}

function flappingAlert(v: View): Hypothesis[] {
  const f = v.flapping;
  if (!f) return [];
  const support = [
    `${f.alertName} toggled ${f.toggles} times (${f.firing} firing, ${f.resolved} resolved) in ${formatDuration(f.spanMinutes)}`,
  ];
  const against: string[] = [];
  let score = 0.4 + Math.min(0.45, 0.07 * f.toggles);
  if (v.input.incident.recovered) {
    score += 0.05;
    support.push('it is currently resolved');
  }
  const impact = v.related.filter((a) => a.status === 'firing' && (a.severity === 'critical' || a.severity === 'high'));
  if (impact.length > 0) {
    score -= 0.2;
    against.push(`related services alert too (${list(servicesOf(impact))})`);
  } else {
    support.push('no related service alerts');
  }
  if (v.ownFiring.some((a) => a.severity === 'critical')) {
    score -= 0.1;
    against.push('the alert is critical');
  }
  if (matching(v.own, /(5xx|error rate|exception|outage|down\b)/i).length > 0) {
    score -= 0.1;
    against.push('the alert reports errors');
  }
  return [
    draft('flapping_alert', {
      statement: `Noisy flapping alert ${f.alertName} on ${v.service}, no real impact`,
      subject: f.alertName,
      score,
      support,
      against,
      sources: f.sources,
      rootCause: `A noisy, flapping alert rather than an outage: ${f.alertName} on ${v.service} toggled between firing and resolved ${f.toggles} times in ${formatDuration(f.spanMinutes)} around its threshold, with no correlated alerts and no lasting impact.`,
      actions: [
        `Tune alert ${f.alertName} on ${v.service}: add a hold duration (\`for: 15m\`) and hysteresis, or raise its threshold, so it stops flapping; no change to ${v.service} is needed`,
        `Silence ${f.alertName} for ${v.service} until the rule change is deployed`,
      ],
      keywords: ['alert', 'alerting', 'flapping', 'noise', 'threshold', lower(f.alertName)],
    }),
  ];
}

// ---------------------------------------------------------------------------------------------
// Learned patterns

/** How much a matching pattern adds to the signal-based hypothesis of its category. */
export const PATTERN_SUPPORT = { stable: 0.25, emerging: 0.1 } as const;

/** The score of a pattern standing on its own: strong when stable, weak when emerging. */
export function knownPatternScore(p: Pick<PatternObservation, 'status' | 'confidence'>): number {
  return round2(p.status === 'stable' ? 0.5 + 0.4 * p.confidence : 0.2 + 0.3 * p.confidence);
}

const describePattern = (p: PatternObservation) =>
  `learned ${p.status} pattern '${p.title}' (${p.occurrences} earlier incident(s), confidence ${round2(p.confidence)})`;

/**
 * Learned patterns matching the incident's symptoms. A pattern whose category is a hypothesis
 * the signals already raised supports it (+0.25 when stable, +0.1 when emerging), and a stable
 * pattern's past fix then leads that hypothesis' actions. Otherwise the pattern is a hypothesis
 * of its own (`known_pattern`, citing the pattern): 0.5 + 0.4 × confidence when stable, 0.2 +
 * 0.3 × confidence when emerging, with the fix as its actions. At most three patterns count.
 */
function applyKnownPatterns(v: View, found: PatternObservation[], existing: Hypothesis[]): Hypothesis[] {
  const added: Hypothesis[] = [];
  for (const p of found.slice(0, 3)) {
    const same = existing.filter((h) => h.kind === p.category).sort((a, b) => b.score - a.score)[0];
    if (same) {
      same.score = round2(clamp(same.score + PATTERN_SUPPORT[p.status], 0, 0.95));
      same.support.push(`the ${describePattern(p)} names the same cause`);
      same.sources.push(p.patternId);
      if (p.status === 'stable' && p.fix.length > 0) {
        same.actions = [...new Set([...p.fix, ...same.actions])];
        same.fixFirst = true;
      }
      continue;
    }
    const stable = p.status === 'stable';
    added.push(
      draft('known_pattern', {
        statement: `${v.service} shows the symptoms of the ${describePattern(p)}`,
        subject: p.title,
        score: knownPatternScore(p),
        support: [
          `the ${describePattern(p)} matches the service${p.overlap > 0 && p.overlap !== 0.5 ? ` and ${p.overlap >= 1 ? 'every' : 'some'} alert name(s)` : ''}: ${quote(p.rootCause, 160)}`,
          ...(p.fix.length > 0 ? [`it was resolved before by: ${quote(p.fix[0]!, 120)}`] : []),
        ],
        against: stable ? [] : ['the pattern is still emerging: seen few times or with mixed feedback'],
        sources: [p.patternId],
        rootCause: `A known failure pattern: ${v.service} matches the ${describePattern(p)}. Its root cause then: ${quote(p.rootCause, 600)}`,
        actions:
          p.fix.length > 0
            ? p.fix.slice(0, 5)
            : [`Check whether the cause of '${p.title}' applies again: ${quote(p.rootCause, 160)}`],
        keywords: [...distinctiveWords(`${p.title} ${p.rootCause}`)].slice(0, 8),
      }),
    );
  }
  return added;
}

// ---------------------------------------------------------------------------------------------
// Human context

/**
 * Words that name a cause, by hypothesis kind, most specific first. Read in human context (does a
 * sentence speak of a hypothesis?) and in a written root cause (which kind a correction
 * describes: `categorizeText` in src/domain/patterns.ts, which also counts hits, so order breaks
 * ties there).
 */
export const CAUSE_CUES: ReadonlyArray<{ kind: HypothesisKind; pattern: RegExp }> = [
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
function contextOnlyHypotheses(v: View, notes: ContextNote[], existing: Set<HypothesisKind>): Hypothesis[] {
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

// ---------------------------------------------------------------------------------------------
// Runbooks

const REMEDIATION_VERBS =
  /\b(terminate|kill|restart|roll ?back|revert|fail ?over|promote|renew|rotate|free|delete|purge|clear|flush|scale|increase|raise|lower|drain|recycle|disable|enable|switch|reload|restore|expand|resize|evict|reduce|cap|warm|redeploy|point|repoint|queue|requeue|retry)\b/i;
const DIAGNOSTIC_VERBS =
  /^\s*(check|verify|look|confirm|inspect|observe|review|find|identify|open|see|watch|page|notify|announce)\b/i;

/** How well a runbook fits a hypothesis: its subject as the runbook's service, and its keywords. */
export function runbookFit(runbook: RunbookObservation, h: Hypothesis, service: string | null): number {
  const text = `${runbook.title}\n${runbook.tags.join(' ')}`.toLowerCase();
  const steps = runbook.steps
    .map((s) => s.text)
    .join('\n')
    .toLowerCase();
  const keywordHits = h.keywords.filter((k) => k && text.includes(k)).length;
  const stepHits = h.keywords.filter((k) => k && steps.includes(k)).length;
  const forSubject = runbook.service !== null && lower(runbook.service) === lower(h.subject);
  const forService = runbook.service !== null && lower(runbook.service) === lower(service);
  if (keywordHits === 0 && !forSubject) return 0;
  return keywordHits * 2 + Math.min(2, stepHits) + (forSubject ? 3 : forService ? 1 : 0);
}

/** The step that acts on the cause: remediation verbs and the hypothesis' words, not diagnostics. */
export function pickRunbookStep(
  runbook: RunbookObservation,
  h: Pick<Hypothesis, 'keywords'>,
): { number: number; text: string } | undefined {
  let best: { number: number; text: string } | undefined;
  let bestScore = -Infinity;
  for (const step of runbook.steps) {
    const text = step.text.toLowerCase();
    let score = h.keywords.filter((k) => k && text.includes(k)).length;
    if (REMEDIATION_VERBS.test(step.text)) score += 2;
    if (DIAGNOSTIC_VERBS.test(step.text)) score -= 1;
    if (score > bestScore) {
      best = step;
      bestScore = score;
    }
  }
  return best;
}

/** Kinds whose own first action (roll back, revert, renew) beats any runbook step. */
const OWN_ACTION_FIRST = new Set<HypothesisKind>([
  'bad_deploy',
  'upstream_deploy',
  'config_change',
  'memory_leak',
  'flapping_alert',
  'known_pattern',
]);

function recommendedActions(
  top: Hypothesis,
  runbooks: RunbookObservation[],
  service: string | null,
  runnerUp: Hypothesis | undefined,
): string[] {
  const fitting = runbooks
    .map((r) => ({ runbook: r, fit: runbookFit(r, top, service) }))
    .filter((r) => r.fit > 0 && r.runbook.steps.length > 0)
    .sort((a, b) => b.fit - a.fit || b.runbook.score - a.runbook.score);
  const actions: string[] = [];
  const best = fitting[0]?.runbook;
  const step = best ? pickRunbookStep(best, top) : undefined;
  const runbookAction =
    best && step
      ? `Follow runbook '${best.title}' step ${step.number}: ${step.text}${lower(step.text).includes(lower(top.subject)) ? '' : ` (${top.subject})`}`
      : undefined;
  if (runbookAction && !OWN_ACTION_FIRST.has(top.kind) && !top.fixFirst) {
    actions.push(runbookAction, ...top.actions);
  } else {
    actions.push(top.actions[0]!);
    if (runbookAction) actions.push(runbookAction);
    actions.push(...top.actions.slice(1));
  }
  if (best && step) {
    const next = best.steps.find((s) => s.number === step.number + 1);
    if (next && REMEDIATION_VERBS.test(next.text))
      actions.push(`Then runbook '${best.title}' step ${next.number}: ${next.text}`);
  }
  if (runnerUp && runnerUp.score >= 0.45 && runnerUp.kind !== 'undetermined') {
    actions.push(`If that does not resolve it, check the runner-up: ${runnerUp.statement}`);
  }
  return [...new Set(actions)].slice(0, 6);
}

// ---------------------------------------------------------------------------------------------
// Ranking

/** Ties go to the more specific cause. */
const KIND_ORDER: HypothesisKind[] = [
  'config_change',
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

/** A generic hypothesis that a more specific one explains (same change, same dependency). */
function subsumedBy(h: Hypothesis, others: Hypothesis[]): Hypothesis | undefined {
  if (h.kind === 'bad_deploy') {
    return others.find(
      (o) =>
        (o.kind === 'config_change' || o.kind === 'memory_leak') &&
        o.score >= h.score - 0.2 &&
        o.subject === h.subject &&
        o.sources.some((s) => h.sources.includes(s) || o.changeRef === h.changeRef),
    );
  }
  if (h.kind === 'upstream_failure') {
    return others.find(
      (o) => o.kind === 'upstream_deploy' && lower(o.subject) === lower(h.subject) && o.score > h.score,
    );
  }
  return undefined;
}

const MIN_CREDIBLE = 0.35;

/**
 * Ranks every hypothesis the signals support, applies human context, keeps the best one and
 * discards the rest with the reason, and writes the narrative, confidence and actions.
 *
 * Confidence: the winner's score, discounted when the runner-up is close
 * (`score × (0.6 + 0.4 × min(1, margin / 0.3))`), within [0.05, 0.95]; an undetermined cause
 * is at most 0.3.
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
    ...cacheFailure(v),
    ...upstreamFailure(v),
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
    const weak = top;
    top = draft('undetermined', {
      statement: `No single cause stands out for ${v.service}`,
      subject: v.service,
      score: 0.2,
      support: weak
        ? [`the best candidate, ${weak.statement}, scores only ${weak.score}`]
        : ['no deployment, dependency failure or known failure mode matches the alerts'],
      against: [],
      sources: v.own.map((a) => a.eventId),
      rootCause: `Undetermined: no deployment, code change, dependency failure or known failure mode explains "${quote(input.incident.title, 100)}" on ${v.service}${weak ? `; the closest candidate is that ${weak.statement.charAt(0).toLowerCase()}${weak.statement.slice(1)} (score ${weak.score})` : ''}.`,
      actions: [
        `Read ${v.service}'s error logs around ${hhmm(v.first)} and the first alert (${v.ownFiring[0]?.alertName ?? input.incident.title}) to find the failing call`,
        `Add what you find as context to this investigation so it is re-synthesised`,
      ],
      keywords: [],
    });
    ranked.unshift(top);
    hypotheses.unshift(top);
  }
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

  const margin = top.score - (runnerUp?.score ?? 0);
  let confidence = top.score * (0.6 + 0.4 * Math.min(1, margin / 0.3));
  confidence = top.kind === 'undetermined' ? Math.min(0.3, confidence) : confidence;
  confidence = round2(clamp(confidence, 0.05, 0.95));

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
    ...hypotheses.map((h, i) => `${i + 1}. [${h.status}] ${h.kind} (${h.score}): ${h.statement} — ${h.reason}.`),
  ].join('\n');
  return { rootCause: rootCause.slice(0, 4000), confidence, recommendedActions: actions, hypotheses, summary };
}
