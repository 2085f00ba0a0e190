/** Loading the scene every agent starts from, its dependencies and changes, and the agents' shared reads. */
import { ApplicationFailure } from '@temporalio/activity';
import type { InvestigationRequest } from '../../analysis/investigation-types.js';
import type { ChangeMatch } from '../../analysis/investigation/index.js';
import {
  changeCandidates,
  dependenciesOf as readDependencies,
  eventsById,
  incidentAlerts,
  nodeRepositories,
  sceneIncident,
  sceneNode,
  tenantNodes,
} from '../../db/repositories/investigation-scene.js';
import { nearestOtherAlerts } from '../../db/repositories/ingested-events.js';
import type { IngestedEventRow } from '../../db/schema/ingestion.js';
import { canonicalName, changeMatcher, type ChangeTarget, type ChangeTie } from './change-ties.js';
import { rememberMatch } from './observations.js';
import {
  CHANGE_LOOKBACK_MS,
  CORRELATION_AFTER_MS,
  CORRELATION_BEFORE_MS,
  lower,
  MAX_CORRELATED,
  MAX_DEPENDENCY_HOPS,
  MAX_OWN_ALERTS,
  SHARED_READ_TTL_MS,
  type Dependency,
  type InvestigationContext,
  type Scene,
  type SharedRead,
} from './common.js';

export async function loadScene(ctx: InvestigationContext, req: InvestigationRequest): Promise<Scene> {
  const incident = await sceneIncident(ctx.db, req.tenantId, req.incidentId);
  if (!incident)
    throw ApplicationFailure.nonRetryable(`incident ${req.incidentId} has no projection`, 'IncidentMissing');
  const ownAlerts = await incidentAlerts(ctx.db, req.tenantId, req.incidentId, MAX_OWN_ALERTS);
  const firing = ownAlerts.filter((a) => a.status !== 'resolved');
  const firstAlertAt = firing[0]?.occurredAt ?? ownAlerts[0]?.occurredAt ?? incident.createdAt;
  const service = incident.service;
  let node: Scene['node'] = null;
  if (incident.serviceId || service) {
    node = await sceneNode(ctx.db, req.tenantId, incident.serviceId ? { id: incident.serviceId } : { name: service! });
  } else {
    node = await namedNode(ctx, req.tenantId, [
      incident.title,
      ...ownAlerts.map((a) => `${a.title}\n${a.description}`),
    ]);
  }
  const dependencies = node ? await dependenciesOf(ctx, req.tenantId, node.id) : [];
  return { req, incident, service: node?.name ?? service, ownAlerts, firstAlertAt, node, dependencies };
}

/**
 * An incident no alert attributed to a service (a business KPI rule, a Grafana NoData): the
 * topology node its alerts name (`Checkout conversion…` → checkout-api), the longest name first.
 */
async function namedNode(ctx: InvestigationContext, tenantId: string, texts: string[]): Promise<Scene['node']> {
  const nodes = await tenantNodes(ctx.db, tenantId, 1000);
  const text = texts.join('\n').toLowerCase();
  const says = (word: string) =>
    word.length >= 4 &&
    new RegExp(`(^|[^a-z0-9-])${word.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}($|[^a-z0-9])`).test(text);
  const byName = [...nodes].sort((a, b) => b.name.length - a.name.length);
  return byName.find((n) => says(lower(n.name))) ?? byName.find((n) => says(canonicalName(n.name))) ?? null;
}

/**
 * The agents of one run start together and read the same scene and correlated alerts: in this
 * worker they share one read of each (kept SHARED_READ_TTL_MS, dropped when it fails, so a
 * retry reads afresh). Synthesis reads afresh, after the agents. Nothing here is mutated.
 */
export function sharedRead(ctx: InvestigationContext, req: InvestigationRequest): SharedRead {
  const now = Date.now();
  for (const [key, entry] of ctx.sharedReads) {
    if (now - entry.at <= SHARED_READ_TTL_MS) break; // insertion order is age order
    ctx.sharedReads.delete(key);
  }
  const key = `${req.tenantId}\u0000${req.incidentId}\u0000${req.run}`;
  let entry = ctx.sharedReads.get(key);
  if (!entry) {
    const fresh: SharedRead = { at: now, scene: loadScene(ctx, req) };
    fresh.scene.catch(() => {
      if (ctx.sharedReads.get(key) === fresh) ctx.sharedReads.delete(key);
    });
    ctx.sharedReads.set(key, fresh);
    entry = fresh;
  }
  return entry;
}
export const agentScene = (ctx: InvestigationContext, req: InvestigationRequest): Promise<Scene> =>
  sharedRead(ctx, req).scene;
export function agentCorrelated(ctx: InvestigationContext, scene: Scene): Promise<IngestedEventRow[]> {
  const entry = sharedRead(ctx, scene.req);
  if (!entry.correlated) {
    const read = correlatedAlerts(ctx, scene);
    read.catch(() => {
      if (entry.correlated === read) delete entry.correlated;
    });
    entry.correlated = read;
  }
  return entry.correlated;
}

/**
 * The change agents of one run share one read of the tied changes (both kinds, filtered here):
 * tying reads up to MAX_CHANGE_CANDIDATES label rows, which is worth doing once, not per agent.
 */
export async function agentChanges(
  ctx: InvestigationContext,
  scene: Scene,
  kind: 'deployment' | 'code_change',
): Promise<TiedChange[]> {
  const entry = sharedRead(ctx, scene.req);
  if (!entry.changes) {
    const read = recentChanges(ctx, scene, 'both');
    read.catch(() => {
      if (entry.changes === read) delete entry.changes;
    });
    entry.changes = read;
  }
  return ((await entry.changes) as TiedChange[]).filter((c) => c.row.kind === kind);
}

/** Services `serviceId` depends on, directly or transitively (edges source → target), with the shortest hops. */
export function dependenciesOf(ctx: InvestigationContext, tenantId: string, serviceId: string): Promise<Dependency[]> {
  return readDependencies(ctx.db, tenantId, serviceId, MAX_DEPENDENCY_HOPS);
}

/** Alerts of the tenant around the first alert that are not the incident's own (the nearest in time when there are many), oldest first. */
export function correlatedAlerts(ctx: InvestigationContext, scene: Scene): Promise<IngestedEventRow[]> {
  return nearestOtherAlerts(ctx.db, {
    tenantId: scene.req.tenantId,
    incidentId: scene.req.incidentId,
    at: scene.firstAlertAt,
    beforeMs: CORRELATION_BEFORE_MS,
    afterMs: CORRELATION_AFTER_MS,
    limit: MAX_CORRELATED,
  });
}

/** Changes read per investigation, before they are tied to services (the latest in the window). */
export const MAX_CHANGE_CANDIDATES = 2000;
/** Changes kept once tied, the latest. */
export const MAX_TIED_CHANGES = 200;

/**
 * The tenant's changes in the 6 h before the first alert (and 5 min after) that concern the
 * incident's service (hops 0) or a dependency (hops ≥ 1), the latest 200, oldest first, each
 * with how it was tied (ADR 0266): its service or services name it; its repository is one the
 * node lists (and a changed path matches the entry's globs, when it has some); a changed path
 * names it by convention (`apps/<svc>/`, `charts/<svc>/`, `terraform/…/<svc>/`…), or it deploys
 * a commit so tied; or its flag key or service is mentioned in the incident's own alerts.
 */
export async function recentChanges(
  ctx: InvestigationContext,
  scene: Scene,
  kind: 'deployment' | 'code_change' | 'both',
): Promise<TiedChange[]> {
  const targets = await changeTargets(ctx, scene);
  if (targets.length === 0) return [];
  const from = new Date(scene.firstAlertAt.getTime() - CHANGE_LOOKBACK_MS);
  const to = new Date(scene.firstAlertAt.getTime() + 5 * 60 * 1000);
  const tenantId = scene.req.tenantId;
  // The labels say how a change is tied; its payload is read only for the ones kept.
  const candidates = await changeCandidates(ctx.db, tenantId, { kind, from, to, limit: MAX_CHANGE_CANDIDATES });
  const alertServices = [...new Set(scene.ownAlerts.map((a) => a.service).filter((n): n is string => !!n))];
  const matcher = changeMatcher(targets, alertTexts(scene), alertServices);
  const tied = new Map<string, ChangeTie>();
  const byCommit = new Map<string, ChangeTie>();
  for (const c of candidates) {
    if (tied.size >= MAX_TIED_CHANGES) break;
    const tie = matcher(c);
    if (!tie) continue;
    tied.set(c.id, tie);
    const sha = lower(c.labels.sha);
    if (sha && tie.matchedBy === 'path' && !byCommit.has(sha)) byCommit.set(sha, tie);
  }
  // A deploy of a commit whose paths are the service's (a monorepo's, a config repo's) carried
  // that change: it is tied as the commit is.
  for (const c of candidates) {
    if (tied.size >= MAX_TIED_CHANGES) break;
    const tie = byCommit.get(lower(c.labels.sha));
    if (tie && !tied.has(c.id)) tied.set(c.id, tie);
  }
  if (tied.size === 0) return [];
  const rows = await eventsById(ctx.db, tenantId, [...tied.keys()]);
  return rows.map((row) => {
    const tie = tied.get(row.id)!;
    rememberMatch(row, tie.matchedBy);
    return { row, hops: tie.hops, matchedBy: tie.matchedBy };
  });
}

export interface TiedChange {
  row: IngestedEventRow;
  hops: number;
  matchedBy: ChangeMatch;
}

/** The incident's service and its dependencies, with the repositories their nodes list. */
async function changeTargets(ctx: InvestigationContext, scene: Scene): Promise<ChangeTarget[]> {
  const named = [
    ...(scene.service ? [{ id: scene.node?.id, name: scene.service, hops: 0 }] : []),
    ...scene.dependencies.map((d) => ({ id: d.id, name: d.name, hops: d.hops })),
  ];
  const ids = named.map((t) => t.id).filter((id): id is string => id !== undefined);
  const repos = await nodeRepositories(ctx.db, scene.req.tenantId, ids);
  return named.map((t) => ({ name: t.name, hops: t.hops, repositories: (t.id && repos.get(t.id)) || [] }));
}

/** What the incident's own alerts say, lower-cased, for mentions of a flag or a service. */
function alertTexts(scene: Scene): string {
  return scene.ownAlerts
    .slice(0, 50)
    .map((a) => [a.title, a.alertName ?? '', a.description.slice(0, 2000), ...Object.values(a.labels)].join('\n'))
    .join('\n')
    .toLowerCase();
}
