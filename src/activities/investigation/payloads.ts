// Reading the raw payloads (the real formats of src/ingest/providers/*)
import type { IngestedEventRow } from '../../db/schema/ingestion.js';
import { withoutMarkdownFences } from '../../ingest/providers/datadog.js';
import { clip, RAW_SNIPPET_MAX } from './common.js';

export type Json = Record<string, unknown>;
export const obj = (v: unknown): Json | undefined =>
  v !== null && typeof v === 'object' && !Array.isArray(v) ? (v as Json) : undefined;
export const str = (v: unknown): string | undefined =>
  typeof v === 'string' && v.trim() !== '' ? v : typeof v === 'number' ? String(v) : undefined;
export const arr = (v: unknown): unknown[] => (Array.isArray(v) ? v : []);

export function sentryEvent(raw: unknown): Json | undefined {
  const body = obj(raw);
  return obj(obj(body?.data)?.event) ?? obj(body?.event);
}

/** `Type: value` of each exception, with its innermost in-app frame. */
export function sentryExceptions(event: Json | undefined): string[] {
  return arr(obj(event?.exception)?.values).flatMap((v) => {
    const value = obj(v);
    if (!value) return [];
    const frames = arr(obj(value.stacktrace)?.frames)
      .map(obj)
      .filter((f): f is Json => !!f);
    const inApp = [...frames].reverse().find((f) => f.in_app === true) ?? frames[frames.length - 1];
    const where = inApp
      ? ` at ${str(inApp.filename) ?? str(inApp.module) ?? '?'}:${str(inApp.lineno) ?? '?'} in ${str(inApp.function) ?? '?'}`
      : '';
    return [`${str(value.type) ?? 'Error'}: ${str(value.value) ?? ''}${where}`];
  });
}

/** The PromQL expression of an Alertmanager / Grafana generator URL. */
export function promExpression(url: string | undefined): string | undefined {
  if (!url) return undefined;
  try {
    return new URL(url).searchParams.get('g0.expr') ?? undefined;
  } catch {
    return undefined;
  }
}

/** Log-like and metric-like details hidden in the raw payload (beyond the normalised description). */
export function rawDetails(row: IngestedEventRow): { logs: string[]; metric: string | undefined } {
  const raw = obj(row.raw) ?? {};
  if (row.provider === 'sentry') {
    const event = sentryEvent(raw);
    const logs = [...sentryExceptions(event), str(obj(event?.logentry)?.formatted), str(event?.message)].filter(
      (s): s is string => !!s,
    );
    return { logs, metric: undefined };
  }
  if (row.provider === 'datadog') {
    return { logs: [], metric: str(raw.alert_query) ?? str(raw.alert_metric) };
  }
  const expr = promExpression(str(raw.generatorURL));
  const value = str(raw.valueString);
  return { logs: [], metric: [expr, value && `values: ${value}`].filter(Boolean).join('; ') || undefined };
}

export function searchText(row: IngestedEventRow): string {
  const { logs, metric } = rawDetails(row);
  return clip([row.description, ...logs, metric ? `Query: ${metric}` : ''].filter(Boolean).join('\n'), 1500);
}

/** A bounded excerpt of the source system's own payload: the parts that matter, as JSON. */
export function rawExcerpt(row: IngestedEventRow): string {
  const raw = obj(row.raw) ?? {};
  let focus: unknown = raw;
  if (row.provider === 'sentry') {
    const event = sentryEvent(raw) ?? {};
    focus = {
      title: event.title,
      culprit: event.culprit,
      level: event.level,
      release: event.release,
      exception: sentryExceptions(event),
      environment: event.environment,
      url: event.web_url ?? raw.url,
      rule: obj(raw.data)?.triggered_rule ?? raw.triggering_rules,
    };
  } else if (row.provider === 'datadog') {
    focus = {
      title: raw.title,
      body: typeof raw.body === 'string' ? withoutMarkdownFences(raw.body).trim() : raw.body,
      alert_status: raw.alert_status,
      alert_transition: raw.alert_transition,
      alert_priority: raw.alert_priority,
      alert_metric: raw.alert_metric,
      alert_query: raw.alert_query,
      alert_scope: raw.alert_scope,
      tags: raw.tags,
      date: raw.date,
    };
  } else if (row.provider === 'github' && row.kind === 'deployment') {
    const deployment = obj(raw.deployment) ?? {};
    const status = obj(raw.deployment_status) ?? {};
    focus = {
      deployment: {
        id: deployment.id,
        sha: deployment.sha,
        ref: deployment.ref,
        environment: deployment.environment,
        description: deployment.description,
        creator: obj(deployment.creator)?.login,
      },
      deployment_status: {
        state: status.state,
        description: status.description,
        environment: status.environment,
        target_url: status.target_url,
        updated_at: status.updated_at,
      },
      repository: obj(raw.repository)?.full_name,
    };
  } else if (row.provider === 'github' && row.kind === 'code_change') {
    focus = {
      ref: raw.ref,
      before: raw.before,
      after: raw.after,
      compare: raw.compare,
      forced: raw.forced,
      pusher: obj(raw.pusher)?.name,
      repository: obj(raw.repository)?.full_name,
      commits: arr(raw.commits).map((c) => {
        const commit = obj(c) ?? {};
        return {
          id: commit.id,
          message: commit.message,
          timestamp: commit.timestamp,
          author: obj(commit.author)?.username ?? obj(commit.author)?.name,
          added: commit.added,
          modified: commit.modified,
          removed: commit.removed,
        };
      }),
    };
  }
  return clip(JSON.stringify(focus), RAW_SNIPPET_MAX);
}
