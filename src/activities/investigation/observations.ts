/** Raw ingested rows as the analyzer's observations, log and metric lines, and evidence severities. */
import {
  changeTypes,
  proximity,
  type AlertObservation,
  type ChangeMatch,
  type ChangeObservation,
  type ChangeType,
} from '../../analysis/investigation/index.js';
import type { Severity } from '../../db/schema/incidents.js';
import type { IngestedEventRow } from '../../db/schema/ingestion.js';
import { evidenceSeverities } from '../../db/schema/investigation.js';
import { iso, type EvidenceSeverity } from './common.js';
import { arr, obj, rawDetails, searchText, str, type Json } from './payloads.js';

export function toAlertObservation(row: IngestedEventRow): AlertObservation {
  return {
    eventId: row.id,
    provider: row.provider,
    incidentId: row.incidentId,
    alertName: row.alertName ?? row.title,
    service: row.service,
    severity: (row.severity as Severity | null) ?? null,
    status: row.status ?? 'firing',
    occurredAt: iso(row.occurredAt),
    title: row.title,
    text: searchText(row),
    labels: row.labels,
  };
}

/**
 * How each change row read for an investigation was tied to its service (recentChanges records
 * it), so every reader of those rows describes the same tie without carrying it along.
 */
const matches = new WeakMap<IngestedEventRow, ChangeMatch>();
export function rememberMatch(row: IngestedEventRow, matchedBy: ChangeMatch): void {
  matches.set(row, matchedBy);
}

export function toChangeObservation(
  row: IngestedEventRow,
  hops: number,
  matchedBy: ChangeMatch = matches.get(row) ?? 'service',
): ChangeObservation {
  const raw = obj(row.raw) ?? {};
  const deployment = obj(raw.deployment);
  const status = obj(raw.deployment_status);
  const commits = arr(raw.commits)
    .map(obj)
    .filter((c): c is Json => !!c && typeof c.id === 'string')
    .map((c) => ({
      id: c.id as string,
      message: str(c.message) ?? '',
      files: [...arr(c.added), ...arr(c.modified), ...arr(c.removed)].filter((f): f is string => typeof f === 'string'),
    }));
  const kind = row.kind === 'deployment' ? 'deployment' : 'code_change';
  return {
    eventId: row.id,
    kind,
    changeType: (changeTypes as readonly string[]).includes(row.labels.change_type ?? '')
      ? (row.labels.change_type as ChangeType)
      : kind === 'deployment'
        ? 'deploy'
        : 'push',
    matchedBy,
    paths: (row.labels.paths ?? '').split('\n').filter((p) => p !== ''),
    flag: row.labels.flag ?? null,
    version: row.labels.version ?? null,
    author: row.labels.author ?? row.labels.creator ?? row.labels.pusher ?? null,
    provider: row.provider,
    service: row.service,
    repository: row.labels.repository ?? null,
    occurredAt: iso(row.occurredAt),
    deploymentId: str(deployment?.id) ?? null,
    sha: row.labels.sha ?? row.labels.head_commit ?? null,
    ref: row.labels.ref ?? null,
    environment: row.labels.environment ?? null,
    state: row.kind === 'deployment' ? (row.labels.state ?? str(status?.state) ?? null) : null,
    description: str(status?.description) ?? str(deployment?.description) ?? null,
    commits,
    title: row.title,
    hops,
  };
}

/** The first line of an alert that reads like a log line (exception, error message, body). */
export function logLine(row: IngestedEventRow): string | undefined {
  const { logs } = rawDetails(row);
  if (logs[0]) return logs[0];
  const lines = row.description
    .split('\n')
    .map((l) => l.trim())
    .filter(
      (l) =>
        l !== '' &&
        !l.startsWith('[[') &&
        !l.includes('](http') &&
        !/^(labels|source|link|runbook|status|transition|scope|host|metric|level|alert rule|culprit|details|environment|dashboard|panel):/i.test(
          l,
        ),
    );
  return lines.find((l) =>
    /(error|exception|fail|refused|timed? ?out|panic|crash|denied|unavailable|expired|no space|oom|killed|could not|cannot|unable|invalid|\b5\d\d\b|5xx)/i.test(
      l,
    ),
  );
}

export const METRIC_TEXT =
  /(\d+(\.\d+)?\s?(%|ms|s\b|gib|mib|gb|mb|rps|rpm|qps|x\b|req)|threshold|above|below|p9\d|rate|usage|utili[sz]ation|latency|saturation)/i;

export function metricLine(row: IngestedEventRow): string | undefined {
  const { metric } = rawDetails(row);
  const valueLine = row.description
    .split('\n')
    .map((l) => l.trim())
    .find(
      (l) =>
        l !== '' &&
        !l.startsWith('[[') &&
        !l.includes('](http') &&
        !/^(labels|source|link|runbook):/i.test(l) &&
        METRIC_TEXT.test(l),
    );
  if (!metric && !valueLine) return undefined;
  return [valueLine, metric && `query: ${metric}`].filter(Boolean).join(' — ');
}

export const alertSeverity = (s: string | null): EvidenceSeverity =>
  (evidenceSeverities as readonly string[]).includes(s ?? '') ? (s as EvidenceSeverity) : 'medium';

export function changeRelevance(minutesBefore: number, hops: number, failed: boolean): EvidenceSeverity {
  const p = proximity(minutesBefore);
  if (failed) return 'low';
  if (hops === 0) return p >= 0.8 ? 'critical' : p >= 0.6 ? 'high' : p >= 0.3 ? 'medium' : 'low';
  return p >= 0.8 ? 'high' : p >= 0.6 ? 'medium' : 'low';
}

/** The first row of each alert fingerprint (stable across retries, so its dedupe key is too). */
export function firstPerFingerprint(
  rows: IngestedEventRow[],
): Array<{ first: IngestedEventRow; rows: IngestedEventRow[] }> {
  const groups = new Map<string, IngestedEventRow[]>();
  for (const row of rows) {
    const key = row.fingerprint ?? row.id;
    groups.set(key, [...(groups.get(key) ?? []), row]);
  }
  return [...groups.values()].map((group) => {
    const ordered = [...group].sort(
      (a, b) => a.occurredAt.getTime() - b.occurredAt.getTime() || (a.id < b.id ? -1 : 1),
    );
    return { first: ordered.find((r) => r.status !== 'resolved') ?? ordered[0]!, rows: ordered };
  });
}
