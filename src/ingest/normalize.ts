import { createHash } from 'node:crypto';
import type { z } from 'zod';
import type { Severity } from '../db/schema/incidents.js';
import { PayloadError, type NormalizedEvent } from './types.js';

/** Most alerts one delivery may carry. */
export const MAX_ALERTS_PER_DELIVERY = 500;
export const TITLE_MAX = 200;
export const DESCRIPTION_MIN = 10;
export const DESCRIPTION_MAX = 4000;

const severityWords: Record<string, Severity> = {};
for (const [severity, words] of [
  ['critical', ['critical', 'crit', 'fatal', 'emergency', 'page', 'p1', 'sev1', 'disaster']],
  ['high', ['high', 'error', 'err', 'major', 'p2', 'sev2']],
  ['medium', ['warning', 'warn', 'medium', 'moderate', 'average', 'p3', 'sev3']],
  ['low', ['low', 'info', 'informational', 'minor', 'debug', 'notice', 'p4', 'p5', 'sev4', 'sev5']],
] as const) {
  for (const word of words) severityWords[word] = severity;
}

/** Maps a tool's severity / level / priority word onto ours (case-insensitive); unknown → `fallback`. */
export function mapSeverity(value: string | undefined | null, fallback: Severity = 'medium'): Severity {
  if (typeof value !== 'string') return fallback;
  return severityWords[value.trim().toLowerCase()] ?? fallback;
}

/** Our own fingerprint for tools that send none: stable across label order. */
export function hashFingerprint(
  provider: string,
  alertName: string,
  service: string | null,
  labels: Record<string, string>,
): string {
  const labelLines = Object.keys(labels)
    .sort()
    .map((key) => `${key}=${labels[key] ?? ''}`);
  const digest = createHash('sha256')
    .update([provider, alertName, service ?? '', ...labelLines].join('\n'))
    .digest('hex');
  return `${provider}:h:${digest}`;
}

/** The tool's own fingerprint, qualified by the provider. */
export function toolFingerprint(provider: string, fp: string): string {
  return `${provider}:${fp}`;
}

/** Cuts `text` to at most `max` characters, ending with '…' when cut. */
export function clip(text: string, max: number): string {
  if (text.length <= max) return text;
  if (max <= 0) return '';
  if (max === 1) return '…';
  let end = max - 1;
  // Do not split a surrogate pair.
  const last = text.charCodeAt(end - 1);
  if (last >= 0xd800 && last <= 0xdbff) end -= 1;
  return `${text.slice(0, end)}…`;
}

/** `[alertName] summary` (or just the alert name), 1–200 characters. */
export function makeTitle(alertName: string, summary?: string | null): string {
  const name = alertName.trim();
  const rest = summary?.trim() ?? '';
  let title: string;
  if (rest === '' || rest === name) title = name;
  else if (name === '') title = rest;
  else title = `[${name}] ${rest}`;
  title = title.replace(/\s+/g, ' ').trim();
  return clip(title === '' ? '(untitled alert)' : title, TITLE_MAX);
}

/** Formats labels as `k=v, k=v` (sorted by key). */
export function formatLabels(labels: Record<string, string>): string {
  return Object.keys(labels)
    .sort()
    .map((key) => `${key}=${labels[key] ?? ''}`)
    .join(', ');
}

/**
 * Clips the longest of `chunks` so that they fit in `max` characters joined by `separator`:
 * every chunk gets an equal share of what the shorter ones leave, so short ones (a runbook
 * link, a source URL) are kept whole and a long annotation is what gets cut.
 */
function fitChunks(chunks: string[], max: number, separator: string): string[] {
  const budget = max - separator.length * Math.max(0, chunks.length - 1);
  if (chunks.reduce((sum, chunk) => sum + chunk.length, 0) <= budget) return chunks;
  const lengths = chunks.map((chunk) => chunk.length).sort((a, b) => a - b);
  let left = budget;
  let cap = 0;
  for (let i = 0; i < lengths.length; i++) {
    const share = Math.floor(left / (lengths.length - i));
    if (lengths[i]! > share) {
      cap = share;
      break;
    }
    left -= lengths[i]!;
  }
  return chunks.map((chunk) => (chunk.length > cap ? clip(chunk, cap) : chunk)).filter((chunk) => chunk !== '');
}

/**
 * Joins the non-empty parts with blank lines, appends a `Labels:` line when there are labels,
 * and keeps the result within 10–4000 characters, cutting the longest parts first.
 */
export function makeDescription(parts: Array<string | undefined | null>, labels: Record<string, string> = {}): string {
  const chunks = parts.map((part) => part?.trim() ?? '').filter((part) => part !== '');
  if (Object.keys(labels).length > 0) chunks.push(`Labels: ${formatLabels(labels)}`);
  let text = clip(fitChunks(chunks, DESCRIPTION_MAX, '\n\n').join('\n\n'), DESCRIPTION_MAX);
  if (text.length < DESCRIPTION_MIN) text = text === '' ? '(no details)' : `${text} (no details)`;
  return text;
}

const serviceLabelKeys = ['service', 'service_name', 'app', 'application', 'job', 'component'] as const;

/**
 * The first of the usual service labels. Not the alert's service (attribution.ts reads that):
 * tool-less fingerprints still hash this value, so alerts stored before attribution keep theirs.
 */
export function serviceFromLabels(labels: Record<string, string | undefined>): string | null {
  for (const key of serviceLabelKeys) {
    const value = labels[key]?.trim();
    if (value) return value;
  }
  return null;
}

/** Validates `body` with `schema`; a mismatch becomes a PayloadError whose details name each bad path. */
export function parseWith<S extends z.ZodType>(schema: S, body: unknown, provider: string): z.output<S> {
  const result = schema.safeParse(body);
  if (result.success) return result.data;
  throw new PayloadError(
    `${provider} payload is invalid`,
    result.error.issues.map((issue) => ({
      path: issue.path.map((segment) => String(segment)).join('.'),
      message: issue.message,
    })),
  );
}

/**
 * Reads a timestamp: ISO-8601 string, or epoch seconds / milliseconds as a number or numeric string.
 * Returns null when it is missing, unparseable, not after 1970 (Alertmanager sends Go's zero time
 * `0001-01-01T00:00:00Z` for "no end"), or past the year 9999.
 */
/** Past it, ISO 8601 needs a 6-digit year, which PostgreSQL refuses (ingested times, api cursors). */
export const LAST_STORABLE_TIME = Date.UTC(10000, 0, 1);

export function toDate(value: unknown): Date | null {
  let date: Date;
  if (value instanceof Date) {
    date = new Date(value.getTime());
  } else if (typeof value === 'number') {
    if (!Number.isFinite(value)) return null;
    date = new Date(Math.abs(value) < 1e11 ? value * 1000 : value);
  } else if (typeof value === 'string') {
    const text = value.trim();
    if (text === '') return null;
    if (/^-?\d+(\.\d+)?$/.test(text)) return toDate(Number(text));
    date = new Date(text);
  } else {
    return null;
  }
  const time = date.getTime();
  if (Number.isNaN(time) || time <= 0 || time >= LAST_STORABLE_TIME) return null;
  return date;
}

/** Like `toDate`, with a fallback for missing or invalid values. */
export function parseTime(value: unknown, fallback: Date): Date {
  return toDate(value) ?? fallback;
}

/** Trims a string and treats empty (or non-string) as absent. */
export function nonEmpty(value: unknown): string | undefined {
  if (typeof value !== 'string') return undefined;
  const trimmed = value.trim();
  return trimmed === '' ? undefined : trimmed;
}

/**
 * A label as one line: control characters (a newline, a tab, an escape sequence's ESC) become
 * spaces, runs of white space one space. What an alert says is kept, never refused (refusing
 * would lose the alert), but a label shown one per line cannot forge or garble a line
 * (as `oneLine` does for what the api accepts).
 */
export function oneLineLabel(text: string): string {
  return text.replace(/[\p{Cc}\s]+/gu, ' ').trim();
}

/** The delivery's events with their one-line labels (title, alert name, service) made one line. */
export function withOneLineLabels(events: NormalizedEvent[]): NormalizedEvent[] {
  return events.map((event) => {
    const service = event.service === null ? null : oneLineLabel(event.service) || null;
    const title = oneLineLabel(event.title) || '(untitled alert)';
    if (event.kind !== 'alert') return { ...event, service, title };
    // `pod:<pod>` carries a label's value.
    const attribution = event.attribution === undefined ? {} : { attribution: oneLineLabel(event.attribution) };
    return { ...event, ...attribution, service, title, alertName: oneLineLabel(event.alertName) };
  });
}
