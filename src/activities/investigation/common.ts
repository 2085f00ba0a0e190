/**
 * What every part of the investigation engine shares: its limits, small text helpers, the scene
 * and evidence-draft shapes, and the context object the activities' functions take explicitly.
 */
import { Context } from '@temporalio/activity';
import type { InvestigationRequest } from '../../analysis/investigation-types.js';
import type { ModelProvider } from '../../analysis/types.js';
import type { Db } from '../../db/client.js';
import type { IncidentRow } from '../../db/schema/incidents.js';
import type { IngestedEventRow } from '../../db/schema/ingestion.js';
import type { evidenceSeverities, EvidenceType } from '../../db/schema/investigation.js';
import type { AgentSkill } from '../../skills/agent-skills.js';
import type { SkillInvoker } from '../../skills/invoke.js';

export type EvidenceSeverity = (typeof evidenceSeverities)[number];

/** Deployments and pushes this long before the first alert are examined. */
export const CHANGE_LOOKBACK_MS = 6 * 60 * 60 * 1000;
/** Alerts of other services this long before the first alert (and up to 30 min after) correlate. */
export const CORRELATION_BEFORE_MS = 2 * 60 * 60 * 1000;
export const CORRELATION_AFTER_MS = 30 * 60 * 1000;
/** Dependencies are followed this many hops upstream. */
export const MAX_DEPENDENCY_HOPS = 4;
export const RAW_SNIPPET_MAX = 2000;
export const SUMMARY_MAX = 500;
export const MAX_OWN_ALERTS = 500;
export const MAX_CORRELATED = 300;
export const MAX_ITEMS_PER_AGENT = 25;
/** How long the agents of a run share their reads of the scene (see `sharedRead`). */
export const SHARED_READ_TTL_MS = 30_000;
/** The window a logs or metrics skill is asked about: this long before the first alert, until now. */
export const SIGNAL_LOOKBACK_MS = 60 * 60 * 1000;
/** Skill findings the synthesis reads, per incident. */
export const MAX_SKILL_FINDINGS = 24;

export const clip = (text: string, max: number) => (text.length <= max ? text : `${text.slice(0, max - 1)}…`);
export const oneLine = (text: string) => text.replace(/\s+/g, ' ').trim();
export const iso = (d: Date) => d.toISOString();
export const hhmm = (d: Date) => `${iso(d).slice(11, 16)} UTC`;
export const lower = (s: string | null | undefined) => (s ?? '').toLowerCase();
export const sha7 = (sha: string | null | undefined) => (sha ? sha.slice(0, 7) : null);

export function heartbeat(details?: unknown): void {
  Context.current().heartbeat(details);
}

// ---------------------------------------------------------------------------------------------

export interface Dependency {
  id: string;
  name: string;
  type: string;
  hops: number;
}

/** What every agent starts from: the incident, its alerts, its first alert and its place in the graph. */
export interface Scene {
  req: InvestigationRequest;
  incident: IncidentRow;
  service: string | null;
  ownAlerts: IngestedEventRow[];
  firstAlertAt: Date;
  node: { id: string; name: string; type: string } | null;
  dependencies: Dependency[];
}

export interface EvidenceDraft {
  sourceId: string;
  type: EvidenceType;
  source: string;
  summary: string;
  severity: EvidenceSeverity;
  occurredAt: Date;
  rawSnippet: string;
}

/** One run's reads its agents share in this worker (see `sharedRead` in scene.ts). */
export type SharedRead = {
  at: number;
  scene: Promise<Scene>;
  correlated?: Promise<IngestedEventRow[]>;
  /** The run's tied changes of both kinds, read once for the two change agents. */
  changes?: Promise<Array<{ row: IngestedEventRow; hops: number }>>;
  skills?: Promise<AgentSkill[]>;
};

/** What the engine was created with, and the shared reads its agents keep across activities. */
export interface InvestigationContext {
  db: Db;
  model: ModelProvider;
  /** The caller's deps object: `skills` is read from it on each use, as before the split. */
  deps: { skills?: SkillInvoker };
  sharedReads: Map<string, SharedRead>;
}
