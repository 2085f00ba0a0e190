import type { Severity } from '../db/schema/incidents.js';

/** Headers a provider may read (lower-case names). */
export type HeaderReader = (name: string) => string | undefined;

export interface NormalizedAlert {
  kind: 'alert';
  status: 'firing' | 'resolved';
  /** How `service` was read off the alert (`label:deployment`, `datadog:scope`, `none`, …). */
  attribution?: string;
  /** Provider-qualified: `<provider>:<the tool's own fingerprint>` or `<provider>:h:<sha256>`. */
  fingerprint: string;
  alertName: string;
  service: string | null;
  severity: Severity;
  /** 1–200 characters. */
  title: string;
  /** 10–4000 characters. */
  description: string;
  labels: Record<string, string>;
  occurredAt: Date;
  /** The alert's own part of the payload, kept as evidence. */
  raw: unknown;
  /** The tool's own grouping and the deploy or commit the alert names, provider-qualified
   * (`alertmanager:group:<groupKey>`, `deploy:<sha>`); alerts sharing one are of one origin. */
  origins?: string[];
  /** A tool's test notification or heartbeat (Watchdog): recorded, never an incident. */
  test?: boolean;
}

/**
 * A change (deploy, release, merged pull request, GitOps commit, flag flip, …): evidence, never
 * an incident. Labels the investigation reads: `change_type` (analysis ChangeType), `repository`
 * (`owner/name`), `sha`, `ref`, `environment`, `state`, `version`, `flag`, `author`, `paths`
 * (changed paths, newline-separated, bounded) and `services` (comma-separated, when the tool
 * names several).
 */
export interface NormalizedChange {
  kind: 'deployment' | 'code_change';
  service: string | null;
  title: string;
  description: string;
  labels: Record<string, string>;
  occurredAt: Date;
  raw: unknown;
}

export type NormalizedEvent = NormalizedAlert | NormalizedChange;

/** An event ready to store: its raw part already JSON text (it may come from a parse thread). */
export type ParsedAlert = Omit<NormalizedAlert, 'raw'> & { rawJson: string };
export type ParsedEvent = ParsedAlert | (Omit<NormalizedChange, 'raw'> & { rawJson: string });

export interface ParsedDelivery {
  events: NormalizedEvent[];
  /** The tool's own delivery id, when it sends one (retries reuse it). */
  deliveryId?: string;
  /** Set when the delivery is valid but carries nothing we record (e.g. a GitHub ping). */
  ignored?: string;
}

/** A payload that does not match the provider's format. `details` say what is wrong. */
export class PayloadError extends Error {
  constructor(
    message: string,
    readonly details: Array<{ path: string; message: string }> = [],
  ) {
    super(message);
    this.name = 'PayloadError';
  }
}

export interface WebhookProvider {
  name: string;
  parse(body: unknown, header: HeaderReader): ParsedDelivery;
}
