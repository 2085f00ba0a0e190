/**
 * The investigation corpus as data: each incident is the world an on-call engineer would find
 * (topology, runbooks), what the tools sent in time order, and beside it the truth it is graded by.
 * Truth never travels in a payload.
 */
export type IncidentClass =
  /** A change that is not a GitHub deployment_status of a repository named like the service. */
  | 'change'
  /** The alert names the exporter or the tool, not the workload. */
  | 'attribution'
  /** A vendor outage seen only in error text or as a quiet topology node. */
  | 'third_party'
  /** An operational mechanism with its own fix. */
  | 'operational'
  /** Evidence that cannot name one cause: the honest answer is Undetermined or low confidence. */
  | 'calibration';

export const incidentClasses: readonly IncidentClass[] = [
  'change',
  'attribution',
  'third_party',
  'operational',
  'calibration',
];

export type NodeType = 'api' | 'worker' | 'database' | 'cache' | 'queue';

export interface NodeSpec {
  name: string;
  type: NodeType;
  criticality?: number;
  team?: string;
  /** Repositories whose changes are this service's (GitOps and shared repositories); sent when the api accepts it. */
  repositories?: Array<{ repository: string; paths?: string[] }>;
}

export interface RunbookSpec {
  title: string;
  service?: string;
  tags: string[];
  content: string;
}

export interface CorpusWorld {
  nodes: NodeSpec[];
  /** `[source, target]`: source depends on target. */
  edges: Array<[string, string]>;
  runbooks?: RunbookSpec[];
}

export interface Delivery {
  /** The webhook provider of the URL (`/v1/webhooks/{tenant}/{provider}`). */
  provider: string;
  headers?: Record<string, string>;
  body: object;
  /** Minutes relative to the first page (0); negative before it. */
  minute: number;
  /** The delivery whose incident is graded (its 202's `incidentIds[pageAlert ?? 0]`). */
  page?: boolean;
  pageAlert?: number;
  /** What this delivery is in the story (a distractor, the cause's change…), for the reader. */
  note?: string;
}

export interface Truth {
  /**
   * Names that count as naming the cause (case-insensitive, whole words): the service, flag key,
   * job, vendor, short sha… For an undetermined incident, the plausible causes.
   */
  subject: string[];
  /** The mechanism, any of these in the cause statement. */
  mechanism: RegExp[];
  /** Names one hop from the cause (the dependency in between, the paged service). */
  oneHopShort: string[];
  /** Every pattern must match the first recommended action. */
  action: RegExp[];
  /** No cause can be told from the evidence: correct when the engine says Undetermined or leans with low confidence. */
  undetermined?: boolean;
}

export interface CorpusIncident {
  id: string;
  class: IncidentClass;
  title: string;
  /** Two or three lines, as the post-mortem would say it. */
  story: string;
  world: CorpusWorld;
  deliveries: Delivery[];
  truth: Truth;
}
