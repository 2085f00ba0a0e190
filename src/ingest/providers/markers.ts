/**
 * What a provider says about an alert beyond its fields: the origins it shares with other alerts
 * (the tool's own grouping, the deploy or commit it names) and whether it is a tool's test
 * notification or heartbeat. Runs on every alert, so it looks up a few known keys and markers, in
 * time linear in what the alert carries (ADR 0262).
 */
import { createHash } from 'node:crypto';
import type { NormalizedAlert } from '../types.js';

/** An origin value longer than this is hashed, so a tool's long group key stays a short jsonb string. */
const MAX_ORIGIN_VALUE = 200;

/** Labels, annotations or tags naming the commit an alert's code was built from (lower-case). */
const commitKeys = new Set([
  'commit',
  'commit_sha',
  'commit_id',
  'git_sha',
  'git_commit',
  'git_commit_sha',
  'git_revision',
  'git.commit.sha',
  'revision',
]);
/** ... naming the deployment itself (a deploy tool's id). */
const deploymentKeys = new Set(['deployment_id', 'deploy_id', 'deployment']);

/** kube-prometheus's always-firing heartbeats (DeadMansSwitch is Watchdog's older name). */
const heartbeatNames = new Set(['Watchdog', 'InfoInhibitor', 'DeadMansSwitch']);

const abbreviatedSha = /^[0-9a-f]{7,64}$/;

/** Lower case, one space for each run of white space, no white space at either end. */
function normalizeValue(value: string): string {
  return value.trim().toLowerCase().replace(/\s+/g, ' ');
}

function bounded(value: string): string {
  return value.length <= MAX_ORIGIN_VALUE
    ? value
    : `h:${createHash('sha256').update(value).digest('hex').slice(0, 32)}`;
}

/**
 * `deploy:<id>` for a value that names one deploy across services, else qualified by the service
 * (`deploy:<service>@<value>`): a short value such as revision `3` or version `1.2.0` is shared by
 * unrelated services by chance. A hex commit is cut to git's 7-character short form, so a tool
 * that sends the short SHA and one that sends the full SHA name the same deploy.
 */
function deployOrigin(
  raw: string,
  kind: 'commit' | 'deployment' | 'version',
  service: string | null,
): string | undefined {
  const value = normalizeValue(raw);
  if (value === '') return undefined;
  if ((kind === 'commit' || kind === 'version') && abbreviatedSha.test(value) && /[a-f]/.test(value)) {
    return `deploy:${value.slice(0, 7)}`;
  }
  // A version is per service (Datadog's unified service tagging); an id or commit of 7+ characters
  // is specific enough on its own.
  if (kind !== 'version' && value.length >= 7) return `deploy:${bounded(value)}`;
  if (service === null) return undefined;
  return `deploy:${bounded(`${normalizeValue(service)}@${value}`)}`;
}

/**
 * The deploys named by an alert's labels (and annotations, or tags): `commit`, `git_sha`,
 * `revision`, `deployment_id` and the like. `extra` are values the provider knows to be a deploy
 * (Sentry's release) or a service's version (Datadog's `version` tag).
 */
export function deployOrigins(
  service: string | null,
  sources: Array<Record<string, string> | undefined>,
  extra: { release?: string | undefined; version?: string | undefined } = {},
): string[] {
  const found: string[] = [];
  const add = (origin: string | undefined) => {
    if (origin !== undefined && !found.includes(origin)) found.push(origin);
  };
  for (const source of sources) {
    if (!source) continue;
    for (const key in source) {
      const value = source[key];
      if (value === undefined) continue;
      const name = key.toLowerCase();
      if (commitKeys.has(name)) add(deployOrigin(value, 'commit', service));
      else if (deploymentKeys.has(name)) add(deployOrigin(value, 'deployment', service));
    }
  }
  // A Sentry release is unique within the organisation whatever it looks like: never qualified.
  const release = extra.release === undefined ? '' : normalizeValue(extra.release);
  if (release !== '')
    add(abbreviatedSha.test(release) ? `deploy:${release.slice(0, 7)}` : `deploy:${bounded(release)}`);
  if (extra.version !== undefined) add(deployOrigin(extra.version, 'version', service));
  return found;
}

/**
 * The tool's own group (`<provider>:group:<groupKey>`), unless the route groups by nothing
 * (`{}:{}`, no group labels): every alert of such a route shares the key, so it says nothing about
 * a common cause.
 */
export function groupOrigin(
  provider: 'alertmanager' | 'grafana',
  groupKey: string | undefined,
  groupLabels: Record<string, string> | undefined,
): string | undefined {
  const key = groupKey?.trim();
  if (!key || key.endsWith(':{}')) return undefined;
  if (groupLabels !== undefined && Object.keys(groupLabels).length === 0) return undefined;
  return `${provider}:group:${bounded(key)}`;
}

/** `labels.test = "true"` (any case): someone says this alert is a test. */
export function testLabel(labels: Record<string, string>): boolean {
  const value = labels.test;
  return value !== undefined && value.trim().toLowerCase() === 'true';
}

/** An always-firing heartbeat of kube-prometheus (Watchdog, InfoInhibitor). */
export function isHeartbeat(alertName: string): boolean {
  return heartbeatNames.has(alertName);
}

/** The alert with its origins (when any) and its test mark (when set). */
export function marked(alert: NormalizedAlert, origins: Array<string | undefined>, test: boolean): NormalizedAlert {
  const list: string[] = [];
  for (const origin of origins) if (origin !== undefined && !list.includes(origin)) list.push(origin);
  const withOrigins = list.length > 0 ? { ...alert, origins: list } : alert;
  return test ? { ...withOrigins, test: true } : withOrigins;
}
