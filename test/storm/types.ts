/**
 * A storm scenario: an outage (or several) as an SRE lives it. The topology the tenant posted, and
 * a timeline of real-format webhook deliveries, each alert of each delivery labelled with the
 * outage it belongs to. The labels live here, beside the payload, never in it.
 */

/** `noise`: an alert of no outage (each its own problem). `test`: a test notification or heartbeat. */
export type Truth = string;
export const NOISE = 'noise';
export const TEST = 'test';

export type ServiceType = 'api' | 'worker' | 'database' | 'cache' | 'queue';

export interface StormService {
  name: string;
  type: ServiceType;
  team?: string;
  criticality?: number;
}

export type StormProvider = 'alertmanager' | 'grafana' | 'datadog' | 'sentry' | 'generic' | 'github';

export interface StormDelivery {
  /** Seconds from the scenario's start. */
  at: number;
  provider: StormProvider;
  body: unknown;
  headers?: Record<string, string>;
  /** One per alert of the body, in its order (none for a change event). */
  truth: Truth[];
}

export interface StormScenario {
  name: string;
  title: string;
  /** What happened, as the on-call engineer would tell it. */
  description: string;
  services: StormService[];
  /** `[dependent, dependency]`: the first depends on the second (POST /v1/graph/edges source → target). */
  edges: Array<[string, string]>;
  /** Each outage's root service and what went wrong. */
  outages: Record<string, { root: string; summary: string }>;
  deliveries: StormDelivery[];
}

export interface ScenarioDefinition {
  name: string;
  /** Seconds from the first delivery to the last. */
  durationSeconds: number;
  /** Builds the scenario with its payload times: `time(at)` is the wall-clock time of second `at`. */
  build(time: (at: number) => Date): StormScenario;
}
