/**
 * The investigation engine's activities: one specialist agent per role, each reading the
 * tenant's own data and storing evidence items, then the synthesis that ranks hypotheses with
 * the built-in analyzer and records the result. Every write is idempotent: evidence items are
 * deduplicated per incident by `${role}:${source row id}`, outbox events carry idempotency keys,
 * and the investigation row is only written for its current `run`.
 */
import { ApplicationFailure, Context } from '@temporalio/activity';
import { and, asc, desc, eq, gte, inArray, isNull, lte, ne, notInArray, sql } from 'drizzle-orm';
import {
  analyzeInvestigation,
  formatDuration,
  proximity,
  type AlertObservation,
  type ChangeObservation,
  type DependencyObservation,
  type InvestigationInput,
  type RunbookObservation,
  type TopologyObservation,
} from '../analysis/builtin-investigation.js';
import type {
  AgentReport,
  InvestigationActivities,
  InvestigationRequest,
  SynthesisRequest,
  SynthesisResult,
} from '../analysis/investigation-types.js';
import { agentRoles, type AgentRole, type ModelProvider } from '../analysis/types.js';
import type { Db } from '../db/client.js';
import { appendAudit } from '../db/repositories/audit.js';
import { appendEvent } from '../outbox/append.js';
import { setRootCauseUnlessCorrected } from '../db/repositories/incidents.js';
import { findSymptomMatches, incidentSymptoms, type SymptomMatch } from '../db/repositories/patterns.js';
import { nearestOtherAlerts } from '../db/repositories/ingested-events.js';
import { findRunbook, findRunbooksFor } from '../db/repositories/runbooks.js';
import { blastRadius } from '../db/repositories/topology.js';
import { events } from '../db/schema/events.js';
import { incidents, type IncidentRow, type Severity } from '../db/schema/incidents.js';
import { ingestedEvents, type IngestedEventRow } from '../db/schema/ingestion.js';
import {
  evidenceItems,
  evidenceSeverities,
  investigationContext,
  investigations,
  type EvidenceType,
} from '../db/schema/investigation.js';
import { skills } from '../db/schema/skills.js';
import { tenants } from '../db/schema/tenants.js';
import { services } from '../db/schema/topology.js';
import { getPlan } from '../domain/plans.js';
import { newId } from '../ids.js';
import { withoutMarkdownFences } from '../ingest/providers/datadog.js';
import {
  bindSkillInput,
  findingText,
  skillRoles,
  skillsForRole,
  tellingLine,
  type AgentSkill,
  type SkillRole,
} from '../skills/agent-skills.js';
import type { SkillInvoker } from '../skills/invoke.js';
import { whileBeating } from './heartbeat.js';

type EvidenceSeverity = (typeof evidenceSeverities)[number];

/** Deployments and pushes this long before the first alert are examined. */
export const CHANGE_LOOKBACK_MS = 6 * 60 * 60 * 1000;
/** Alerts of other services this long before the first alert (and up to 30 min after) correlate. */
export const CORRELATION_BEFORE_MS = 2 * 60 * 60 * 1000;
export const CORRELATION_AFTER_MS = 30 * 60 * 1000;
/** Dependencies are followed this many hops upstream. */
export const MAX_DEPENDENCY_HOPS = 4;
export const RAW_SNIPPET_MAX = 2000;
const SUMMARY_MAX = 500;
const MAX_OWN_ALERTS = 500;
const MAX_CORRELATED = 300;
const MAX_ITEMS_PER_AGENT = 25;
/** How long the agents of a run share their reads of the scene (see `sharedRead`). */
const SHARED_READ_TTL_MS = 30_000;
/** The window a logs or metrics skill is asked about: this long before the first alert, until now. */
export const SIGNAL_LOOKBACK_MS = 60 * 60 * 1000;
/** Skill findings the synthesis reads, per incident. */
const MAX_SKILL_FINDINGS = 24;

const clip = (text: string, max: number) => (text.length <= max ? text : `${text.slice(0, max - 1)}…`);
const oneLine = (text: string) => text.replace(/\s+/g, ' ').trim();
const iso = (d: Date) => d.toISOString();
const hhmm = (d: Date) => `${iso(d).slice(11, 16)} UTC`;
const lower = (s: string | null | undefined) => (s ?? '').toLowerCase();
const sha7 = (sha: string | null | undefined) => (sha ? sha.slice(0, 7) : null);

function heartbeat(details?: unknown): void {
  Context.current().heartbeat(details);
}

// ---------------------------------------------------------------------------------------------
// Reading the raw payloads (the real formats of src/ingest/providers/*)

type Json = Record<string, unknown>;
const obj = (v: unknown): Json | undefined =>
  v !== null && typeof v === 'object' && !Array.isArray(v) ? (v as Json) : undefined;
const str = (v: unknown): string | undefined =>
  typeof v === 'string' && v.trim() !== '' ? v : typeof v === 'number' ? String(v) : undefined;
const arr = (v: unknown): unknown[] => (Array.isArray(v) ? v : []);

function sentryEvent(raw: unknown): Json | undefined {
  const body = obj(raw);
  return obj(obj(body?.data)?.event) ?? obj(body?.event);
}

/** `Type: value` of each exception, with its innermost in-app frame. */
function sentryExceptions(event: Json | undefined): string[] {
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
function promExpression(url: string | undefined): string | undefined {
  if (!url) return undefined;
  try {
    return new URL(url).searchParams.get('g0.expr') ?? undefined;
  } catch {
    return undefined;
  }
}

/** Log-like and metric-like details hidden in the raw payload (beyond the normalised description). */
function rawDetails(row: IngestedEventRow): { logs: string[]; metric: string | undefined } {
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

function searchText(row: IngestedEventRow): string {
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

function toAlertObservation(row: IngestedEventRow): AlertObservation {
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

function toChangeObservation(row: IngestedEventRow, hops: number): ChangeObservation {
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
  return {
    eventId: row.id,
    kind: row.kind === 'deployment' ? 'deployment' : 'code_change',
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
function logLine(row: IngestedEventRow): string | undefined {
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

const METRIC_TEXT =
  /(\d+(\.\d+)?\s?(%|ms|s\b|gib|mib|gb|mb|rps|rpm|qps|x\b|req)|threshold|above|below|p9\d|rate|usage|utili[sz]ation|latency|saturation)/i;

function metricLine(row: IngestedEventRow): string | undefined {
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

const alertSeverity = (s: string | null): EvidenceSeverity =>
  (evidenceSeverities as readonly string[]).includes(s ?? '') ? (s as EvidenceSeverity) : 'medium';

function changeRelevance(minutesBefore: number, hops: number, failed: boolean): EvidenceSeverity {
  const p = proximity(minutesBefore);
  if (failed) return 'low';
  if (hops === 0) return p >= 0.8 ? 'critical' : p >= 0.6 ? 'high' : p >= 0.3 ? 'medium' : 'low';
  return p >= 0.8 ? 'high' : p >= 0.6 ? 'medium' : 'low';
}

/** The first row of each alert fingerprint (stable across retries, so its dedupe key is too). */
function firstPerFingerprint(rows: IngestedEventRow[]): Array<{ first: IngestedEventRow; rows: IngestedEventRow[] }> {
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

// ---------------------------------------------------------------------------------------------

interface Dependency {
  id: string;
  name: string;
  type: string;
  hops: number;
}

/** What every agent starts from: the incident, its alerts, its first alert and its place in the graph. */
interface Scene {
  req: InvestigationRequest;
  incident: IncidentRow;
  service: string | null;
  ownAlerts: IngestedEventRow[];
  firstAlertAt: Date;
  node: { id: string; name: string; type: string } | null;
  dependencies: Dependency[];
}

interface EvidenceDraft {
  sourceId: string;
  type: EvidenceType;
  source: string;
  summary: string;
  severity: EvidenceSeverity;
  occurredAt: Date;
  rawSnippet: string;
}

/** The engine's part of the activities the workflow proxies (`beginInvestigation` lives in investigation-lifecycle.ts). */
export type InvestigationEngineActivities = Omit<InvestigationActivities, 'beginInvestigation' | 'latestInvestigation'>;

/**
 * `model` is the configured provider: the built-in analyzer ranks the hypotheses either way; a
 * configured model then writes the conclusion from them (falling back to the built-in one).
 * `skills` calls the tenant's skills the agents consult (none when absent).
 */
export function createInvestigationActivities(deps: {
  db: Db;
  model: ModelProvider;
  skills?: SkillInvoker;
}): InvestigationEngineActivities {
  const { db, model } = deps;

  async function loadScene(req: InvestigationRequest): Promise<Scene> {
    const [incident] = await db
      .select()
      .from(incidents)
      .where(and(eq(incidents.tenantId, req.tenantId), eq(incidents.id, req.incidentId)));
    if (!incident)
      throw ApplicationFailure.nonRetryable(`incident ${req.incidentId} has no projection`, 'IncidentMissing');
    const ownAlerts = await db
      .select()
      .from(ingestedEvents)
      .where(
        and(
          eq(ingestedEvents.tenantId, req.tenantId),
          eq(ingestedEvents.incidentId, req.incidentId),
          eq(ingestedEvents.kind, 'alert'),
        ),
      )
      .orderBy(asc(ingestedEvents.occurredAt), asc(ingestedEvents.id))
      .limit(MAX_OWN_ALERTS);
    const firing = ownAlerts.filter((a) => a.status !== 'resolved');
    const firstAlertAt = firing[0]?.occurredAt ?? ownAlerts[0]?.occurredAt ?? incident.createdAt;
    const service = incident.service;
    let node: Scene['node'] = null;
    if (incident.serviceId || service) {
      const [row] = await db
        .select({ id: services.id, name: services.name, type: services.type })
        .from(services)
        .where(
          and(
            eq(services.tenantId, req.tenantId),
            incident.serviceId ? eq(services.id, incident.serviceId) : eq(services.name, service!),
          ),
        );
      node = row ?? null;
    }
    const dependencies = node ? await dependenciesOf(req.tenantId, node.id) : [];
    return { req, incident, service: node?.name ?? service, ownAlerts, firstAlertAt, node, dependencies };
  }

  /**
   * The agents of one run start together and read the same scene and correlated alerts: in this
   * worker they share one read of each (kept SHARED_READ_TTL_MS, dropped when it fails, so a
   * retry reads afresh). Synthesis reads afresh, after the agents. Nothing here is mutated.
   */
  type SharedRead = {
    at: number;
    scene: Promise<Scene>;
    correlated?: Promise<IngestedEventRow[]>;
    skills?: Promise<AgentSkill[]>;
  };
  const sharedReads = new Map<string, SharedRead>();
  function sharedRead(req: InvestigationRequest): SharedRead {
    const now = Date.now();
    for (const [key, entry] of sharedReads) {
      if (now - entry.at <= SHARED_READ_TTL_MS) break; // insertion order is age order
      sharedReads.delete(key);
    }
    const key = `${req.tenantId}\u0000${req.incidentId}\u0000${req.run}`;
    let entry = sharedReads.get(key);
    if (!entry) {
      const fresh: SharedRead = { at: now, scene: loadScene(req) };
      fresh.scene.catch(() => {
        if (sharedReads.get(key) === fresh) sharedReads.delete(key);
      });
      sharedReads.set(key, fresh);
      entry = fresh;
    }
    return entry;
  }
  const agentScene = (req: InvestigationRequest): Promise<Scene> => sharedRead(req).scene;
  function agentCorrelated(scene: Scene): Promise<IngestedEventRow[]> {
    const entry = sharedRead(scene.req);
    if (!entry.correlated) {
      const read = correlatedAlerts(scene);
      read.catch(() => {
        if (entry.correlated === read) delete entry.correlated;
      });
      entry.correlated = read;
    }
    return entry.correlated;
  }

  /** The tenant's skills the agents may consult: enabled http skills, on a plan with custom skills. */
  async function readAgentSkills(tenantId: string): Promise<AgentSkill[]> {
    const rows = await db
      .select({
        plan: tenants.plan,
        id: skills.id,
        name: skills.name,
        description: skills.description,
        config: skills.config,
        inputSchema: skills.inputSchema,
      })
      .from(skills)
      .innerJoin(tenants, eq(tenants.id, skills.tenantId))
      .where(and(eq(skills.tenantId, tenantId), eq(skills.enabled, true), eq(skills.type, 'http')));
    return rows
      .filter((r) => getPlan(r.plan).features.customSkills)
      .map((r) => ({
        id: r.id,
        name: r.name,
        description: r.description,
        method: String(r.config.method ?? ''),
        inputSchema: r.inputSchema ?? null,
      }));
  }
  function agentSkills(scene: Scene): Promise<AgentSkill[]> {
    const entry = sharedRead(scene.req);
    if (!entry.skills) {
      const read = readAgentSkills(scene.req.tenantId);
      read.catch(() => {
        if (entry.skills === read) delete entry.skills;
      });
      entry.skills = read;
    }
    return entry.skills;
  }

  /**
   * Calls the tenant's skills routed to `role` (skills/agent-skills.ts), in parallel, each once
   * per run: its idempotency key makes a retried agent get the recorded outcome instead of a
   * second call. Each answer becomes one evidence draft; a failure, an empty answer or a skill
   * whose required input the agent cannot fill becomes a note in the agent's report.
   */
  async function consultSkills(
    req: InvestigationRequest,
    role: SkillRole,
    scene: Scene,
    lookbackMs: number,
  ): Promise<{ drafts: EvidenceDraft[]; notes: string[] }> {
    const invoker = deps.skills;
    if (!invoker) return { drafts: [], notes: [] };
    const chosen = await agentSkills(scene).then((all) => skillsForRole(all, role));
    if (chosen.length === 0) return { drafts: [], notes: [] };
    const type = skillRoles.find((r) => r.role === role)!.type;
    const facts = {
      incidentId: scene.incident.id,
      service: scene.service,
      severity: scene.incident.severity,
      alertName: scene.ownAlerts[0]?.alertName ?? null,
      since: new Date(scene.firstAlertAt.getTime() - lookbackMs),
      until: new Date(),
    };
    // Heartbeats while the skills run (the agents' heartbeat timeout is 20 s).
    const results = await whileBeating(
      () =>
        Promise.all(
          chosen.map(async (skill): Promise<{ note: string; draft?: EvidenceDraft }> => {
            const bound = bindSkillInput(skill.inputSchema, facts);
            if (!bound.ok)
              return {
                note: `${skill.name} not called (it requires ${bound.missing.join(', ')}, which the agent cannot fill)`,
              };
            const outcome = await invoker.invoke({
              tenantId: req.tenantId,
              skillId: skill.id,
              input: bound.input,
              idempotencyKey: `investigation:${req.incidentId}:${req.run}:${role}:${skill.id}`,
            });
            if (!outcome.ok)
              return {
                note: `${skill.name} failed (${outcome.error.code}: ${clip(oneLine(outcome.error.message), 160)})`,
              };
            const text = findingText(outcome.output);
            if (text === '') return { note: `${skill.name} returned nothing` };
            const { line, alarming } = tellingLine(text);
            const summary = `${skill.name}${scene.service ? ` for ${scene.service}` : ''}: ${oneLine(line)}`;
            const draft: EvidenceDraft = {
              sourceId: `skill:${skill.id}:${req.run}`,
              type,
              source: `skill:${skill.name}`,
              summary,
              severity: alarming ? 'high' : 'info',
              occurredAt: new Date(),
              rawSnippet: text,
            };
            return { note: clip(summary, 240), draft };
          }),
        ),
      () => ({ step: 'skills' }),
    );
    return {
      drafts: results.flatMap((r) => (r.draft ? [r.draft] : [])),
      notes: results.map((r) => r.note),
    };
  }
  /** The agent's findings with what its skills said appended. */
  const withSkillNotes = (content: string, notes: string[]) =>
    notes.length > 0 ? `${content} Skills: ${notes.join(' | ')}.` : content;

  /** Services `serviceId` depends on, directly or transitively (edges source → target), with the shortest hops. */
  async function dependenciesOf(tenantId: string, serviceId: string): Promise<Dependency[]> {
    const rows = await db.execute<{ id: string; name: string; type: string; hops: number }>(sql`
      with recursive walk(frontier, visited, hops) as (
        select array[s.id], array[s.id], 0 from services s where s.tenant_id = ${tenantId} and s.id = ${serviceId}
        union all
        select next.frontier, w.visited || next.frontier, w.hops + 1
        from walk w
        cross join lateral (
          select array_agg(reached.id) as frontier
          from (
            select e.target_service_id as id from service_edges e
            where e.tenant_id = ${tenantId} and e.source_service_id = any(w.frontier)
            except select unnest(w.visited)
          ) reached
        ) next
        where next.frontier is not null and w.hops < ${MAX_DEPENDENCY_HOPS}
      )
      select s.id, s.name, s.type, w.hops
      from walk w cross join lateral unnest(w.frontier) as f(id)
      join services s on s.tenant_id = ${tenantId} and s.id = f.id
      where w.hops > 0
      order by w.hops, s.name collate "C"
      limit 50`);
    return Array.from(rows).map((r) => ({ id: r.id, name: r.name, type: r.type, hops: Number(r.hops) }));
  }

  /** Alerts of the tenant around the first alert that are not the incident's own (the nearest in time when there are many), oldest first. */
  function correlatedAlerts(scene: Scene): Promise<IngestedEventRow[]> {
    return nearestOtherAlerts(db, {
      tenantId: scene.req.tenantId,
      incidentId: scene.req.incidentId,
      at: scene.firstAlertAt,
      beforeMs: CORRELATION_BEFORE_MS,
      afterMs: CORRELATION_AFTER_MS,
      limit: MAX_CORRELATED,
    });
  }

  /** Deployments and pushes of the service and of its dependencies before the first alert (the latest 200), oldest first. */
  async function recentChanges(
    scene: Scene,
    kind: 'deployment' | 'code_change' | 'both',
  ): Promise<Array<{ row: IngestedEventRow; hops: number }>> {
    const hopsOf = new Map<string, number>();
    if (scene.service) hopsOf.set(lower(scene.service), 0);
    for (const d of scene.dependencies) if (!hopsOf.has(lower(d.name))) hopsOf.set(lower(d.name), d.hops);
    if (hopsOf.size === 0) return [];
    const from = new Date(scene.firstAlertAt.getTime() - CHANGE_LOOKBACK_MS);
    const to = new Date(scene.firstAlertAt.getTime() + 5 * 60 * 1000);
    const rows = await db
      .select()
      .from(ingestedEvents)
      .where(
        and(
          eq(ingestedEvents.tenantId, scene.req.tenantId),
          kind === 'both' ? inArray(ingestedEvents.kind, ['deployment', 'code_change']) : eq(ingestedEvents.kind, kind),
          gte(ingestedEvents.occurredAt, from),
          lte(ingestedEvents.occurredAt, to),
          inArray(sql`lower(${ingestedEvents.service})`, [...hopsOf.keys()]),
        ),
      )
      .orderBy(desc(ingestedEvents.occurredAt), desc(ingestedEvents.id))
      .limit(200);
    return rows.reverse().map((row) => ({ row, hops: hopsOf.get(lower(row.service)) ?? 0 }));
  }

  /** The dependencies with what is failing on them, and which alerting services share each. */
  async function topologyOf(scene: Scene, correlated: IngestedEventRow[]): Promise<TopologyObservation> {
    if (!scene.node) return { known: false, serviceType: null, dependencies: [], dependents: [] };
    const depNames = scene.dependencies.map((d) => d.name);
    const openIncidents =
      depNames.length > 0
        ? await db
            .select({
              id: incidents.id,
              service: incidents.service,
              title: incidents.title,
              createdAt: incidents.createdAt,
            })
            .from(incidents)
            .where(
              and(
                eq(incidents.tenantId, scene.req.tenantId),
                ne(incidents.id, scene.req.incidentId),
                notInArray(incidents.status, ['resolved', 'closed']),
                isNull(incidents.recoveredAt),
                inArray(incidents.service, depNames),
              ),
            )
            .limit(100)
        : [];
    const alerting = new Set<string>();
    if (scene.service && scene.ownAlerts.some((a) => a.status !== 'resolved')) alerting.add(lower(scene.service));
    const firingBy = new Map<string, IngestedEventRow[]>();
    for (const a of correlated) {
      if (a.status === 'resolved' || !a.service) continue;
      alerting.add(lower(a.service));
      firingBy.set(lower(a.service), [...(firingBy.get(lower(a.service)) ?? []), a]);
    }
    for (const i of openIncidents) if (i.service) alerting.add(lower(i.service));

    // Services downstream of the incident's own fail because of it: they do not make a dependency "common".
    const radius = await blastRadius(db, scene.req.tenantId, scene.node.id);
    const downstream = new Set((radius?.affectedServices ?? []).map((s) => lower(s.name)));
    const dependencies: DependencyObservation[] = [];
    for (const dep of scene.dependencies) {
      heartbeat({ step: 'topology', dependency: dep.name });
      const depAlerts = firingBy.get(lower(dep.name)) ?? [];
      const depIncidents = openIncidents.filter((i) => lower(i.service) === lower(dep.name));
      const depRadius = dep.hops <= 3 ? await blastRadius(db, scene.req.tenantId, dep.id) : undefined;
      const dependents = [
        ...(depRadius?.affectedServices.map((s) => s.name) ?? []),
        ...(scene.service ? [scene.service] : []),
      ];
      const alertingDependents = [...new Set(dependents)]
        .filter((n) => alerting.has(lower(n)) && !downstream.has(lower(n)))
        .sort();
      // Open incidents the correlated alerts already stand for count once.
      const alertIncidents = new Set(depAlerts.map((a) => a.incidentId));
      const otherIncidents = depIncidents.filter((i) => !alertIncidents.has(i.id));
      const times = [
        ...depAlerts.map((a) => a.occurredAt.getTime()),
        ...otherIncidents.map((i) => i.createdAt.getTime()),
      ];
      dependencies.push({
        name: dep.name,
        type: dep.type,
        hops: dep.hops,
        alerting: depAlerts.length > 0 || otherIncidents.length > 0,
        alertCount: depAlerts.length + otherIncidents.length,
        firstAlertAt: times.length > 0 ? new Date(Math.min(...times)).toISOString() : null,
        alertNames: [
          ...new Set([...depAlerts.map((a) => a.alertName ?? a.title), ...otherIncidents.map((i) => i.title)]),
        ],
        alertTexts: depAlerts.slice(0, 5).map((a) => clip(searchText(a), 400)),
        alertingDependents,
      });
    }
    return {
      known: true,
      serviceType: scene.node.type,
      dependencies,
      dependents: (radius?.affectedServices ?? []).map((s) => ({ name: s.name, hops: s.hops, impact: s.impact })),
    };
  }

  const RUNBOOK_VOCABULARY = [
    'postgres',
    'postgresql',
    'mysql',
    'redis',
    'memcached',
    'kafka',
    'rabbitmq',
    'elasticsearch',
    'dns',
    'certificate',
    'tls',
    'ssl',
    'disk',
    'memory',
    'oom',
    'connection',
    'connections',
    'pool',
    'pgbouncer',
    'cache',
    'deploy',
    'deployment',
    'rollback',
    'traffic',
    'latency',
    'timeout',
    'cpu',
    'queue',
    'replication',
    'failover',
    'flapping',
    'scaling',
    'wal',
    'filesystem',
    'heap',
    'leak',
  ];
  const GENERIC_WORDS = new Set([
    'high',
    'alert',
    'rate',
    'error',
    'errors',
    'down',
    'firing',
    'warning',
    'critical',
    'above',
    'below',
    'total',
  ]);

  /** Keywords of the incident for runbook matching: domain words present in its texts, and its alert names' words. */
  function runbookKeywords(scene: Scene, extraTexts: string[]): string[] {
    const text = lower(
      [scene.incident.title, scene.incident.description, ...scene.ownAlerts.map(searchText), ...extraTexts].join('\n'),
    );
    const vocabulary = RUNBOOK_VOCABULARY.filter((w) => new RegExp(`\\b${w}`).test(text));
    const nameWords = scene.ownAlerts
      .flatMap((a) => (a.alertName ?? '').replace(/([a-z])([A-Z])/g, '$1 $2').split(/[^A-Za-z0-9]+/))
      .map((w) => w.toLowerCase())
      .filter((w) => w.length >= 4 && !GENERIC_WORDS.has(w));
    return [...new Set([...vocabulary, ...nameWords])].slice(0, 30);
  }

  async function matchingRunbooks(
    scene: Scene,
    failingDependencies: string[],
    extraTexts: string[],
  ): Promise<RunbookObservation[]> {
    const keywords = runbookKeywords(scene, extraTexts);
    const targets = [scene.service, ...failingDependencies.slice(0, 3)];
    const found = new Map<string, RunbookObservation>();
    for (const target of targets) {
      if (!target && keywords.length === 0) continue;
      const matches = await findRunbooksFor(db, scene.req.tenantId, { service: target, keywords }, 5);
      for (const m of matches) {
        const seen = found.get(m.runbookId);
        if (!seen || m.score > seen.score) {
          found.set(m.runbookId, {
            runbookId: m.runbookId,
            title: m.title,
            service: m.service,
            tags: m.tags,
            steps: m.steps,
            score: m.score,
            matchedKeywords: m.matchedKeywords,
          });
        }
      }
    }
    return [...found.values()].sort((a, b) => b.score - a.score || a.title.localeCompare(b.title)).slice(0, 5);
  }

  /**
   * Stores an agent's evidence items (once per incident and dedupe key) and, when any is new,
   * one `investigation.evidence_added` event for the agent in the same transaction. Returns the
   * ids of every item the agent found, new or stored by an earlier attempt or run.
   */
  async function storeEvidence(req: InvestigationRequest, role: AgentRole, drafts: EvidenceDraft[]): Promise<string[]> {
    const unique = new Map<string, EvidenceDraft>();
    for (const d of drafts.slice(0, MAX_ITEMS_PER_AGENT)) unique.set(`${role}:${d.sourceId}`, d);
    if (unique.size === 0) return [];
    const keys = [...unique.keys()];
    return db.transaction(async (tx) => {
      const inserted = await tx
        .insert(evidenceItems)
        .values(
          [...unique.entries()].map(([dedupeKey, d]) => ({
            id: newId('evi'),
            tenantId: req.tenantId,
            incidentId: req.incidentId,
            agentRole: role,
            type: d.type,
            source: d.source,
            summary: clip(oneLine(d.summary), SUMMARY_MAX),
            severity: d.severity,
            occurredAt: d.occurredAt,
            rawSnippet: clip(d.rawSnippet, RAW_SNIPPET_MAX),
            dedupeKey,
          })),
        )
        .onConflictDoNothing({ target: [evidenceItems.incidentId, evidenceItems.dedupeKey] })
        .returning({ id: evidenceItems.id, type: evidenceItems.type });
      const stored = await tx
        .select({ id: evidenceItems.id, dedupeKey: evidenceItems.dedupeKey })
        .from(evidenceItems)
        .where(
          and(
            eq(evidenceItems.tenantId, req.tenantId),
            eq(evidenceItems.incidentId, req.incidentId),
            inArray(evidenceItems.dedupeKey, keys),
          ),
        );
      const idOf = new Map(stored.map((s) => [s.dedupeKey, s.id]));
      if (inserted.length > 0) {
        const counts: Record<string, number> = {};
        for (const row of inserted) counts[row.type] = (counts[row.type] ?? 0) + 1;
        await appendEvent(tx, {
          tenantId: req.tenantId,
          type: 'investigation.evidence_added',
          incidentId: req.incidentId,
          payload: {
            incidentId: req.incidentId,
            run: req.run,
            agentRole: role,
            added: inserted.length,
            counts,
            evidenceIds: inserted.map((r) => r.id),
          },
          idempotencyKey: `${req.incidentId}:investigation:${req.run}:evidence_added:${role}`,
        });
      }
      return keys.map((k) => idOf.get(k)).filter((id): id is string => !!id);
    });
  }

  const report = (agentRole: AgentRole, content: string, evidenceIds: string[], found: boolean): AgentReport => ({
    agentRole,
    content: clip(content.replace(/\.{2,}/g, '.').replace(/\.([;|])/g, '$1'), 2000),
    evidenceIds,
    found,
  });
  const serviceName = (scene: Scene) => scene.service ?? 'the affected service';
  const before = (scene: Scene, at: Date) => (scene.firstAlertAt.getTime() - at.getTime()) / 60_000;
  const timing = (minutes: number) =>
    minutes >= 0
      ? `${formatDuration(minutes)} before the first alert`
      : `${formatDuration(-minutes)} after the first alert`;

  // -------------------------------------------------------------------------------------------
  // The agents

  /** Deployments of the service and of its dependencies in the 6 h before the first alert. */
  async function deploymentAgent(req: InvestigationRequest): Promise<AgentReport> {
    const scene = await agentScene(req);
    heartbeat({ step: 'scene' });
    const consulting = consultSkills(req, 'deployment', scene, CHANGE_LOOKBACK_MS);
    consulting.catch(() => undefined); // awaited below; not unhandled if the read fails first
    const rows = await recentChanges(scene, 'deployment');
    heartbeat({ step: 'deployments', count: rows.length });
    // GitHub sends one event per status: keep the latest state of each deployment.
    const latest = new Map<string, { row: IngestedEventRow; hops: number }>();
    for (const r of rows) {
      const c = toChangeObservation(r.row, r.hops);
      const key = c.deploymentId ?? `${c.service}:${c.sha}:${c.environment}`;
      const seen = latest.get(key);
      if (!seen || r.row.occurredAt >= seen.row.occurredAt) latest.set(key, r);
    }
    const drafts: EvidenceDraft[] = [];
    const lines: string[] = [];
    for (const { row, hops } of [...latest.values()].sort(
      (a, b) => b.row.occurredAt.getTime() - a.row.occurredAt.getTime(),
    )) {
      const c = toChangeObservation(row, hops);
      const minutes = before(scene, row.occurredAt);
      const what =
        `Deployment ${c.deploymentId ?? ''} of ${c.service}${c.sha ? ` (sha ${sha7(c.sha)})` : ''} to ${c.environment ?? '?'}: ${c.state ?? 'deployed'}`.replace(
          'Deployment  of',
          'Deployment of',
        );
      const relation =
        hops === 0 ? '' : ` — a dependency of ${serviceName(scene)} (${hops} hop${hops === 1 ? '' : 's'})`;
      drafts.push({
        sourceId: row.id,
        type: 'deployment',
        source: row.provider,
        summary: `${what}, ${timing(minutes)}${relation}${c.description ? `. ${c.description}` : ''}`,
        severity: changeRelevance(minutes, hops, /^(failure|error|inactive)$/i.test(c.state ?? '')),
        occurredAt: row.occurredAt,
        rawSnippet: rawExcerpt(row),
      });
      lines.push(`${what}, ${timing(minutes)}${relation}`);
    }
    const consulted = await consulting;
    const ids = await storeEvidence(req, 'deployment', [...consulted.drafts, ...drafts]);
    const scope =
      scene.dependencies.length > 0
        ? `${serviceName(scene)} or its ${scene.dependencies.length} dependencies`
        : serviceName(scene);
    const content =
      lines.length > 0
        ? `${lines.length} deployment(s) of ${scope} in the 6 h before the first alert (${hhmm(scene.firstAlertAt)}): ${lines.join('; ')}.`
        : `No deployment of ${scope} in the 6 h before the first alert (${hhmm(scene.firstAlertAt)}).`;
    return report(
      'deployment',
      withSkillNotes(content, consulted.notes),
      ids,
      lines.length > 0 || consulted.drafts.length > 0,
    );
  }

  /** Pushes (commits) to the service's and its dependencies' repositories before the first alert. */
  async function codeChangeAgent(req: InvestigationRequest): Promise<AgentReport> {
    const scene = await agentScene(req);
    heartbeat({ step: 'scene' });
    const consulting = consultSkills(req, 'code_change', scene, CHANGE_LOOKBACK_MS);
    consulting.catch(() => undefined); // awaited below; not unhandled if the read fails first
    const rows = await recentChanges(scene, 'code_change');
    heartbeat({ step: 'pushes', count: rows.length });
    const drafts: EvidenceDraft[] = [];
    const lines: string[] = [];
    for (const { row, hops } of [...rows].reverse()) {
      const c = toChangeObservation(row, hops);
      const minutes = before(scene, row.occurredAt);
      const commits = c.commits.filter((m) => !/^merge (pull request|branch)/i.test(m.message));
      const shown = (commits.length > 0 ? commits : c.commits)
        .slice(0, 5)
        .map(
          (m) =>
            `${sha7(m.id)} "${clip(m.message.split('\n', 1)[0]!.trim(), 100)}"${m.files.length > 0 ? ` (${m.files.slice(0, 3).join(', ')})` : ''}`,
        );
      const what = `Push to ${c.repository ?? c.service}${c.ref ? ` ${c.ref.replace(/^refs\/heads\//, '')}` : ''}${c.sha ? ` (head ${sha7(c.sha)})` : ''}, ${timing(minutes)}`;
      const relation = hops === 0 ? '' : ` — a dependency of ${serviceName(scene)}`;
      drafts.push({
        sourceId: row.id,
        type: 'code_change',
        source: row.provider,
        summary: `${what}${relation}: ${shown.join('; ') || 'no commits'}`,
        severity: (() => {
          const s = changeRelevance(minutes, hops, false);
          return s === 'critical' ? 'high' : s;
        })(),
        occurredAt: row.occurredAt,
        rawSnippet: rawExcerpt(row),
      });
      lines.push(`${what}${relation}: ${shown.slice(0, 2).join('; ')}`);
    }
    const consulted = await consulting;
    const ids = await storeEvidence(req, 'code_change', [...consulted.drafts, ...drafts]);
    const content =
      lines.length > 0
        ? `${lines.length} push(es) in the 6 h before the first alert: ${lines.join(' | ')}.`
        : `No code change of ${serviceName(scene)}${scene.dependencies.length > 0 ? ' or its dependencies' : ''} in the 6 h before the first alert.`;
    return report(
      'code_change',
      withSkillNotes(content, consulted.notes),
      ids,
      lines.length > 0 || consulted.drafts.length > 0,
    );
  }

  /** The incident's own alerts and the correlated ones of its service and of dependencies up to 2 hops away. */
  async function alertsNearby(req: InvestigationRequest) {
    const scene = await agentScene(req);
    heartbeat({ step: 'scene' });
    const correlated = await agentCorrelated(scene);
    heartbeat({ step: 'alerts', count: correlated.length });
    const near = new Set([
      lower(scene.service),
      ...scene.dependencies.filter((d) => d.hops <= 2).map((d) => lower(d.name)),
    ]);
    return { scene, candidates: [...scene.ownAlerts, ...correlated.filter((a) => near.has(lower(a.service)))] };
  }

  /** Alerts of the incident and of its dependencies that carry log lines (exceptions, error messages). */
  async function logsAgent(req: InvestigationRequest): Promise<AgentReport> {
    const { scene, candidates } = await alertsNearby(req);
    const consulted = await consultSkills(req, 'logs', scene, SIGNAL_LOOKBACK_MS);
    const drafts: EvidenceDraft[] = [];
    for (const { first } of firstPerFingerprint(candidates)) {
      const line = logLine(first);
      if (!line) continue;
      const own = first.incidentId === req.incidentId;
      drafts.push({
        sourceId: first.id,
        type: 'log',
        source: first.provider,
        summary: `${first.service ?? 'unknown service'} (${first.provider}${own ? '' : ', related'}): ${oneLine(line)}`,
        severity: own ? alertSeverity(first.severity) : 'high',
        occurredAt: first.occurredAt,
        rawSnippet: rawExcerpt(first),
      });
    }
    const ids = await storeEvidence(req, 'logs', [...consulted.drafts, ...drafts]);
    const content =
      drafts.length > 0
        ? `${drafts.length} log excerpt(s) in the alert payloads: ${drafts
            .slice(0, 4)
            .map((d) => d.summary)
            .join(' | ')}.`
        : `No log lines (exceptions, error messages) in the alerts of ${serviceName(scene)} or its dependencies.`;
    return report(
      'logs',
      withSkillNotes(content, consulted.notes),
      ids,
      drafts.length > 0 || consulted.drafts.length > 0,
    );
  }

  /** Metric alerts: thresholds, values, rates and the queries behind them. */
  async function metricsAgent(req: InvestigationRequest): Promise<AgentReport> {
    const { scene, candidates } = await alertsNearby(req);
    const consulted = await consultSkills(req, 'metrics', scene, SIGNAL_LOOKBACK_MS);
    const drafts: EvidenceDraft[] = [];
    for (const { first } of firstPerFingerprint(candidates)) {
      const line = metricLine(first);
      if (!line) continue;
      const own = first.incidentId === req.incidentId;
      drafts.push({
        sourceId: first.id,
        type: 'metric',
        source: first.provider,
        summary: `${first.alertName ?? first.title} on ${first.service ?? 'unknown service'}${own ? '' : ' (related)'}: ${oneLine(line)}`,
        severity: own ? alertSeverity(first.severity) : 'medium',
        occurredAt: first.occurredAt,
        rawSnippet: rawExcerpt(first),
      });
    }
    const ids = await storeEvidence(req, 'metrics', [...consulted.drafts, ...drafts]);
    const content =
      drafts.length > 0
        ? `${drafts.length} metric signal(s): ${drafts
            .slice(0, 4)
            .map((d) => d.summary)
            .join(' | ')}.`
        : `No metric alert (threshold, value or rate) on ${serviceName(scene)} or its dependencies.`;
    return report(
      'metrics',
      withSkillNotes(content, consulted.notes),
      ids,
      drafts.length > 0 || consulted.drafts.length > 0,
    );
  }

  /** The incident's alerts (with their firing/resolved history) and the alerts correlated in time across services. */
  async function alertsAgent(req: InvestigationRequest): Promise<AgentReport> {
    const scene = await agentScene(req);
    heartbeat({ step: 'scene' });
    const correlated = await agentCorrelated(scene);
    heartbeat({ step: 'alerts', count: correlated.length });
    const depHops = new Map(scene.dependencies.map((d) => [lower(d.name), d.hops]));
    const drafts: EvidenceDraft[] = [];
    const ownLines: string[] = [];
    for (const { first, rows } of firstPerFingerprint(scene.ownAlerts)) {
      const firing = rows.filter((r) => r.status !== 'resolved').length;
      const resolved = rows.length - firing;
      const line = `${first.alertName ?? first.title} on ${first.service ?? 'unknown service'} (${first.provider}): fired ${firing}×${resolved > 0 ? `, resolved ${resolved}×` : ''} since ${hhmm(first.occurredAt)}`;
      ownLines.push(line);
      drafts.push({
        sourceId: first.id,
        type: 'alert',
        source: first.provider,
        summary: `${line}. ${first.title}`,
        severity: alertSeverity(first.severity),
        occurredAt: first.occurredAt,
        rawSnippet: rawExcerpt(first),
      });
    }
    const others = firstPerFingerprint(correlated)
      .map(({ first, rows }) => {
        const name = lower(first.service);
        const relation =
          name === lower(scene.service) && name !== ''
            ? 'same service'
            : depHops.has(name)
              ? `dependency, ${depHops.get(name)} hop(s)`
              : 'other service';
        return { first, rows, relation };
      })
      .filter(
        (o) =>
          o.relation !== 'other service' ||
          Math.abs(o.first.occurredAt.getTime() - scene.firstAlertAt.getTime()) <= CORRELATION_AFTER_MS,
      );
    const otherLines: string[] = [];
    for (const { first, rows, relation } of others.slice(0, MAX_ITEMS_PER_AGENT - drafts.length)) {
      const resolvedOnly = rows.every((r) => r.status === 'resolved');
      const line = `${first.alertName ?? first.title} on ${first.service ?? 'unknown service'} (${relation}) at ${hhmm(first.occurredAt)}`;
      otherLines.push(line);
      drafts.push({
        sourceId: first.id,
        type: 'alert',
        source: first.provider,
        summary: `Correlated: ${line}${resolvedOnly ? ', resolved' : ''}. ${first.title}`,
        severity: resolvedOnly ? 'info' : relation === 'other service' ? 'low' : 'high',
        occurredAt: first.occurredAt,
        rawSnippet: rawExcerpt(first),
      });
    }
    const ids = await storeEvidence(req, 'alerts', drafts);
    const content = `${ownLines.length} alert(s) on the incident: ${ownLines.join('; ') || 'none'}. ${
      otherLines.length > 0
        ? `${otherLines.length} correlated alert(s) around ${hhmm(scene.firstAlertAt)}: ${otherLines.slice(0, 6).join('; ')}.`
        : 'No correlated alert on other services around it.'
    }`;
    return report('alerts', content, ids, drafts.length > 0);
  }

  /** Upstream dependencies that are failing themselves (and shared by other alerting services), and the downstream blast radius. */
  async function topologyAgent(req: InvestigationRequest): Promise<AgentReport> {
    const scene = await agentScene(req);
    heartbeat({ step: 'scene' });
    if (!scene.node) {
      return report(
        'topology',
        `${serviceName(scene)} is not in the topology graph: no dependency or blast radius to examine.`,
        [],
        false,
      );
    }
    const correlated = await agentCorrelated(scene);
    const topology = await topologyOf(scene, correlated);
    heartbeat({ step: 'topology' });
    const failing = topology.dependencies.filter((d) => d.alerting || d.alertingDependents.length >= 2);
    const drafts: EvidenceDraft[] = failing.map((d) => {
      const id = scene.dependencies.find((x) => x.name === d.name)!.id;
      const shared =
        d.alertingDependents.length >= 2
          ? `; common dependency of ${d.alertingDependents.length} alerting services (${d.alertingDependents.join(', ')})`
          : '';
      const state = d.alerting
        ? `is failing: ${d.alertCount} alert(s) or open incident(s) (${d.alertNames.slice(0, 3).join(', ')})${d.firstAlertAt ? ` since ${d.firstAlertAt.slice(11, 16)} UTC` : ''}`
        : 'has no alert of its own';
      return {
        sourceId: `dependency:${id}`,
        type: 'alert' as const,
        source: 'topology',
        summary: `${d.name} (${d.type}), which ${serviceName(scene)} depends on (${d.hops} hop${d.hops === 1 ? '' : 's'}), ${state}${shared}`,
        severity: d.alerting && d.alertingDependents.length >= 2 ? 'critical' : 'high',
        occurredAt: d.firstAlertAt ? new Date(d.firstAlertAt) : scene.firstAlertAt,
        rawSnippet: clip(
          JSON.stringify({
            dependency: d.name,
            type: d.type,
            hops: d.hops,
            alerting: d.alerting,
            alerts: d.alertNames,
            alertingDependents: d.alertingDependents,
            path: `${serviceName(scene)} → ${d.name}`,
          }),
          RAW_SNIPPET_MAX,
        ),
      };
    });
    const ids = await storeEvidence(req, 'topology', drafts);
    const deps = topology.dependencies.map((d) => `${d.name} (${d.hops})`).join(', ');
    const radius = topology.dependents
      .slice(0, 8)
      .map((d) => `${d.name} (${d.hops} hop(s), ${d.impact})`)
      .join(', ');
    const content = [
      topology.dependencies.length > 0
        ? `${serviceName(scene)} depends on ${topology.dependencies.length} service(s): ${deps}.`
        : `${serviceName(scene)} depends on nothing in the graph.`,
      failing.length > 0
        ? `Failing upstream: ${drafts.map((d) => d.summary).join(' | ')}.`
        : 'No upstream dependency is failing.',
      topology.dependents.length > 0
        ? `Blast radius: ${topology.dependents.length} service(s) depend on it: ${radius}.`
        : 'Nothing depends on it (no downstream blast radius).',
    ].join(' ');
    return report('topology', content, ids, failing.length > 0);
  }

  /** The tenant's learned patterns whose symptoms (service, alert names) the incident shows, best first. */
  async function matchingPatterns(req: InvestigationRequest): Promise<SymptomMatch[]> {
    const symptoms = await incidentSymptoms(db, req.tenantId, req.incidentId);
    return symptoms ? findSymptomMatches(db, req.tenantId, symptoms) : [];
  }

  /** Learned failure patterns matching the incident: a stable one is strong evidence, an emerging one weak. */
  async function knowledgeAgent(req: InvestigationRequest): Promise<AgentReport> {
    const scene = await agentScene(req);
    heartbeat({ step: 'scene' });
    const found = await matchingPatterns(req);
    heartbeat({ step: 'patterns', count: found.length });
    const drafts: EvidenceDraft[] = found.map(({ pattern: p, sharedAlerts }) => ({
      sourceId: p.id,
      type: 'runbook' as const,
      source: 'knowledge',
      summary: `Learned ${p.status} pattern '${p.title}' (${p.occurrences} occurrence(s), confidence ${p.confidence.toFixed(2)})${sharedAlerts.length > 0 ? ` shares ${sharedAlerts.join(', ')}` : ''}: ${p.rootCause}${p.fix.length > 0 ? ` Fixed before by: ${p.fix.slice(0, 2).join('; ')}` : ''}`,
      severity: p.status === 'stable' ? 'high' : p.confidence >= 0.5 ? 'medium' : 'low',
      occurredAt: p.lastSeenAt,
      rawSnippet: JSON.stringify({
        patternId: p.id,
        title: p.title,
        status: p.status,
        category: p.category,
        confidence: p.confidence,
        occurrences: p.occurrences,
        alertNames: p.alertNames,
        rootCause: p.rootCause,
        fix: p.fix,
      }),
    }));
    const ids = await storeEvidence(req, 'knowledge', drafts);
    const content =
      found.length > 0
        ? `${found.length} learned pattern(s) match ${serviceName(scene)}: ${found.map(({ pattern: p }) => `'${p.title}' (${p.status}, confidence ${p.confidence.toFixed(2)}, seen ${p.occurrences}×)`).join('; ')}.`
        : `No learned pattern matches ${serviceName(scene)} and its alerts.`;
    return report('knowledge', content, ids, found.length > 0);
  }

  /** Runbooks for the service, its failing dependencies, and the incident's keywords, with their steps. */
  async function runbookAgent(req: InvestigationRequest): Promise<AgentReport> {
    const scene = await agentScene(req);
    heartbeat({ step: 'scene' });
    const correlated = await agentCorrelated(scene);
    const failingDeps = scene.dependencies
      .filter((d) => correlated.some((a) => a.status !== 'resolved' && lower(a.service) === lower(d.name)))
      .map((d) => d.name);
    const relatedTexts = correlated
      .filter((a) => failingDeps.some((d) => lower(d) === lower(a.service)))
      .map(searchText);
    const found = await matchingRunbooks(scene, failingDeps, relatedTexts);
    heartbeat({ step: 'runbooks', count: found.length });
    const drafts: EvidenceDraft[] = [];
    for (const r of found) {
      const row = await findRunbook(db, req.tenantId, r.runbookId);
      const steps = r.steps
        .slice(0, 6)
        .map((s) => `${s.number}. ${s.text}`)
        .join(' ');
      const why = [
        r.service ? `service ${r.service}` : '',
        r.matchedKeywords.length > 0 ? `keywords ${r.matchedKeywords.join(', ')}` : '',
      ]
        .filter(Boolean)
        .join('; ');
      drafts.push({
        sourceId: r.runbookId,
        type: 'runbook',
        source: 'runbooks',
        summary: `Runbook '${r.title}' matches (${why || 'service'}; score ${r.score}): ${r.steps.length} step(s) — ${steps}`,
        severity:
          r.service && [scene.service, ...failingDeps].some((s) => lower(s) === lower(r.service))
            ? 'high'
            : r.score >= 4
              ? 'medium'
              : 'low',
        occurredAt: row?.updatedAt ?? scene.firstAlertAt,
        rawSnippet: row?.content ?? steps,
      });
    }
    const ids = await storeEvidence(req, 'runbook', drafts);
    const content =
      found.length > 0
        ? `${found.length} matching runbook(s): ${found.map((r) => `'${r.title}'${r.service ? ` (${r.service})` : ''} with ${r.steps.length} step(s)`).join('; ')}.`
        : `No runbook matches ${serviceName(scene)}${failingDeps.length > 0 ? ` or ${failingDeps.join(', ')}` : ''} or the incident's keywords.`;
    return report('runbook', content, ids, found.length > 0);
  }

  // -------------------------------------------------------------------------------------------
  // Synthesis

  /** Everything the analyzer looks at, read afresh with the same collectors the agents use. */
  async function gatherInput(
    req: InvestigationRequest,
    roles: AgentRole[],
    context: Array<{ seq: number; content: string }>,
  ): Promise<InvestigationInput> {
    const scene = await loadScene(req);
    heartbeat({ step: 'scene' });
    const [correlated, changes, skillFindings] = await Promise.all([
      correlatedAlerts(scene),
      recentChanges(scene, 'both'),
      findingsOfSkills(req),
    ]);
    heartbeat({ step: 'signals' });
    const topology = await topologyOf(scene, correlated);
    heartbeat({ step: 'topology' });
    const failingDeps = topology.dependencies.filter((d) => d.alerting).map((d) => d.name);
    const relatedTexts = topology.dependencies.flatMap((d) => d.alertTexts);
    const runbooks = await matchingRunbooks(scene, failingDeps, relatedTexts);
    const patterns = (await matchingPatterns(req)).map(({ pattern: p, overlap }) => ({
      patternId: p.id,
      title: p.title,
      category: p.category,
      rootCause: p.rootCause,
      fix: p.fix,
      status: p.status,
      confidence: p.confidence,
      occurrences: p.occurrences,
      overlap,
    }));
    return {
      incident: {
        incidentId: scene.incident.id,
        title: scene.incident.title,
        description: scene.incident.description,
        service: scene.service,
        severity: scene.incident.severity,
        firstAlertAt: iso(scene.firstAlertAt),
        occurrenceCount: scene.incident.occurrenceCount,
        recovered: scene.incident.recoveredAt !== null,
      },
      roles,
      alerts: scene.ownAlerts.map(toAlertObservation),
      correlated: correlated.map(toAlertObservation),
      changes: changes.map(({ row, hops }) => toChangeObservation(row, hops)),
      topology,
      runbooks,
      context,
      patterns,
      findings: skillFindings,
    };
  }

  /** What the agents' skills answered for the incident (stored as evidence items), oldest first. */
  async function findingsOfSkills(req: InvestigationRequest): Promise<NonNullable<InvestigationInput['findings']>> {
    const rows = await db
      .select({
        dedupeKey: evidenceItems.dedupeKey,
        agentRole: evidenceItems.agentRole,
        source: evidenceItems.source,
        rawSnippet: evidenceItems.rawSnippet,
        occurredAt: evidenceItems.occurredAt,
      })
      .from(evidenceItems)
      .where(
        and(
          eq(evidenceItems.tenantId, req.tenantId),
          eq(evidenceItems.incidentId, req.incidentId),
          sql`${evidenceItems.dedupeKey} like ${'%:skill:%'}`,
        ),
      )
      .orderBy(asc(evidenceItems.occurredAt), asc(evidenceItems.id))
      .limit(MAX_SKILL_FINDINGS);
    return rows
      .filter((r): r is typeof r & { agentRole: AgentRole } => (agentRoles as readonly string[]).includes(r.agentRole))
      .map((r) => ({
        // The source id the evidence item is stored under, so hypotheses built on it cite it.
        sourceId: r.dedupeKey.slice(r.dedupeKey.indexOf(':') + 1),
        agentRole: r.agentRole,
        skill: r.source.replace(/^skill:/, ''),
        occurredAt: iso(r.occurredAt),
        text: r.rawSnippet,
      }));
  }

  /**
   * Ranks the hypotheses with the built-in analyzer and records the result: the investigation
   * row (only for its current run), the incident's root cause, actions and assigned agents, and
   * `investigation.completed`, in one transaction. Idempotent per run and human-context
   * sequence: a retry after the commit returns what was recorded; context added since makes a
   * new synthesis (and a new event).
   */
  async function synthesizeInvestigation(req: SynthesisRequest): Promise<SynthesisResult> {
    const contextRows = await db
      .select({ seq: investigationContext.seq, content: investigationContext.content })
      .from(investigationContext)
      .where(and(eq(investigationContext.tenantId, req.tenantId), eq(investigationContext.incidentId, req.incidentId)))
      .orderBy(asc(investigationContext.seq));
    const contextSeq = contextRows.length > 0 ? contextRows[contextRows.length - 1]!.seq : 0;
    const key = `${req.incidentId}:investigation:${req.run}:synthesis:${contextSeq}${req.alertsSeen ? `:alerts:${req.alertsSeen}` : ''}`;
    const [done] = await db
      .select({ seq: events.seq })
      .from(events)
      .where(eq(events.idempotencyKey, `${key}:completed`));
    if (done) {
      const [row] = await db
        .select()
        .from(investigations)
        .where(and(eq(investigations.tenantId, req.tenantId), eq(investigations.incidentId, req.incidentId)));
      if (row?.rootCause)
        return { rootCause: row.rootCause, confidence: row.confidence, recommendedActions: row.recommendedActions };
    }

    // Without reports (a workflow that lost them), the findings stored by the last synthesis stand.
    let reportFindings = req.reports.map((r) => ({ agentRole: r.agentRole as string, content: r.content }));
    if (reportFindings.length === 0) {
      const [stored] = await db
        .select({ findings: investigations.findings })
        .from(investigations)
        .where(
          and(
            eq(investigations.tenantId, req.tenantId),
            eq(investigations.incidentId, req.incidentId),
            eq(investigations.run, req.run),
          ),
        );
      reportFindings = (stored?.findings ?? []).filter((f) => f.agentRole !== 'synthesis');
    }
    const ran = reportFindings
      .map((f) => f.agentRole)
      .filter((r): r is AgentRole => (agentRoles as readonly string[]).includes(r));
    const roles: AgentRole[] = ran.length > 0 ? [...new Set(ran)] : [...agentRoles];
    const input = await gatherInput(req, roles, contextRows);
    const analysis = analyzeInvestigation(input);
    heartbeat({ step: 'analysed' });

    // Hypotheses cite the evidence items stored for their source events.
    const evidence = await db
      .select({ id: evidenceItems.id, dedupeKey: evidenceItems.dedupeKey, type: evidenceItems.type })
      .from(evidenceItems)
      .where(and(eq(evidenceItems.tenantId, req.tenantId), eq(evidenceItems.incidentId, req.incidentId)));
    const evidenceOf = (sources: string[]) =>
      evidence.filter((e) => sources.includes(e.dedupeKey.slice(e.dedupeKey.indexOf(':') + 1))).map((e) => e.id);
    const hypotheses = analysis.hypotheses.map((h) => ({
      kind: h.kind,
      statement: h.statement,
      subject: h.subject,
      score: h.score,
      status: h.status,
      reason: h.reason,
      support: h.support,
      against: h.against,
      contextAdjustment: h.contextAdjustment,
      evidenceIds: [...new Set(evidenceOf(h.sources))],
    }));
    const counts: Record<string, number> = {};
    for (const e of evidence) counts[e.type] = (counts[e.type] ?? 0) + 1;
    const findings = [...reportFindings, { agentRole: 'synthesis', content: analysis.summary.slice(0, 4000) }];
    // The built-in analyzer's conclusion, or a configured model's written from the same findings
    // and hypotheses (validated; on any failure the built-in conclusion stands).
    const concluded = await model.synthesize(
      {
        incident: {
          incidentId: input.incident.incidentId,
          title: input.incident.title,
          description: input.incident.description,
          severity: input.incident.severity,
          service: input.incident.service,
        },
        findings,
        hypotheses: analysis.hypotheses.map((h) => ({
          statement: h.statement,
          score: h.score,
          status: h.status,
          reason: h.reason,
        })),
        humanContext: contextRows.map((row) => row.content),
      },
      {
        rootCause: analysis.rootCause,
        confidence: analysis.confidence,
        recommendedActions: analysis.recommendedActions,
      },
    );
    heartbeat({ step: 'concluded' });
    const result: SynthesisResult = concluded.output;

    await db.transaction(async (tx) => {
      const updated = await tx
        .update(investigations)
        .set({
          status: 'completed',
          rootCause: result.rootCause,
          confidence: result.confidence,
          recommendedActions: result.recommendedActions,
          findings,
          hypotheses,
          failure: null,
          model: concluded.model,
          tokensUsed: concluded.tokensUsed,
          costUsd: concluded.costUsd,
          completedAt: sql`now()`,
          updatedAt: sql`now()`,
        })
        .where(
          and(
            eq(investigations.incidentId, req.incidentId),
            eq(investigations.tenantId, req.tenantId),
            eq(investigations.run, req.run),
          ),
        )
        .returning({ run: investigations.run });
      if (updated.length === 0) return; // a newer run owns the investigation: this result is stale
      // A person's correction (feedback correct_rca) outranks a later machine conclusion on the
      // incident; the investigation keeps its own conclusion.
      await setRootCauseUnlessCorrected(tx, req.tenantId, req.incidentId, result.rootCause, {
        recommendedActions: result.recommendedActions,
        assignedAgents: roles,
      });
      const top = analysis.hypotheses[0]!;
      await appendEvent(tx, {
        tenantId: req.tenantId,
        type: 'investigation.completed',
        incidentId: req.incidentId,
        payload: {
          incidentId: req.incidentId,
          run: req.run,
          rootCause: result.rootCause,
          confidence: result.confidence,
          recommendedActions: result.recommendedActions,
          hypothesis: top.kind,
          contextSeq,
          evidenceCounts: counts,
          model: concluded.model,
        },
        idempotencyKey: `${key}:completed`,
      });
      await appendAudit(tx, {
        tenantId: req.tenantId,
        actorType: 'system',
        actorId: 'investigation',
        action: 'investigation.completed',
        targetType: 'incident',
        targetId: req.incidentId,
        incidentId: req.incidentId,
        workflowId: req.workflowId,
        historyEventId: req.historyEventId ?? null,
        details: {
          run: req.run,
          contextSeq,
          hypothesis: top.kind,
          subject: top.subject,
          confidence: result.confidence,
          model: concluded.model,
        },
        idempotencyKey: `${key}:audit`,
      });
    });
    return result;
  }

  /**
   * Records that an investigation run failed for good: status `failed` with the reason (the root
   * cause of an earlier synthesis of the run stays), and `investigation.failed`. Idempotent per
   * run and human-context sequence; an older run's failure is ignored.
   */
  async function recordInvestigationFailure(req: InvestigationRequest & { reason: string }): Promise<void> {
    const reason = req.reason.slice(0, 1000);
    const [last] = await db
      .select({ seq: sql<number>`coalesce(max(${investigationContext.seq}), 0)::int` })
      .from(investigationContext)
      .where(and(eq(investigationContext.tenantId, req.tenantId), eq(investigationContext.incidentId, req.incidentId)));
    const key = `${req.incidentId}:investigation:${req.run}:failed:${last?.seq ?? 0}`;
    await db.transaction(async (tx) => {
      const updated = await tx
        .update(investigations)
        .set({ status: 'failed', failure: reason, completedAt: sql`now()`, updatedAt: sql`now()` })
        .where(
          and(
            eq(investigations.incidentId, req.incidentId),
            eq(investigations.tenantId, req.tenantId),
            eq(investigations.run, req.run),
          ),
        )
        .returning({ run: investigations.run });
      if (updated.length === 0) return;
      await appendEvent(tx, {
        tenantId: req.tenantId,
        type: 'investigation.failed',
        incidentId: req.incidentId,
        payload: { incidentId: req.incidentId, run: req.run, reason },
        idempotencyKey: key,
      });
      await appendAudit(tx, {
        tenantId: req.tenantId,
        actorType: 'system',
        actorId: 'investigation',
        action: 'investigation.failed',
        targetType: 'incident',
        targetId: req.incidentId,
        incidentId: req.incidentId,
        workflowId: req.workflowId,
        historyEventId: req.historyEventId ?? null,
        details: { run: req.run, reason },
        idempotencyKey: `${key}:audit`,
      });
    });
  }

  return {
    deploymentAgent,
    codeChangeAgent,
    logsAgent,
    metricsAgent,
    alertsAgent,
    topologyAgent,
    knowledgeAgent,
    runbookAgent,
    // Heartbeats while it waits on the model (the workflow gives it a heartbeat timeout).
    synthesizeInvestigation: (req: SynthesisRequest) => whileBeating(() => synthesizeInvestigation(req)),
    recordInvestigationFailure,
  };
}
