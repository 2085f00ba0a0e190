/** Loading the scene every agent starts from, its dependencies and changes, and the agents' shared reads. */
import { ApplicationFailure } from '@temporalio/activity';
import { and, asc, desc, eq, gte, inArray, lte, sql } from 'drizzle-orm';
import type { InvestigationRequest } from '../../analysis/investigation-types.js';
import { nearestOtherAlerts } from '../../db/repositories/ingested-events.js';
import { incidents } from '../../db/schema/incidents.js';
import { ingestedEvents, type IngestedEventRow } from '../../db/schema/ingestion.js';
import { services } from '../../db/schema/topology.js';
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
  const [incident] = await ctx.db
    .select()
    .from(incidents)
    .where(and(eq(incidents.tenantId, req.tenantId), eq(incidents.id, req.incidentId)));
  if (!incident)
    throw ApplicationFailure.nonRetryable(`incident ${req.incidentId} has no projection`, 'IncidentMissing');
  const ownAlerts = await ctx.db
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
    const [row] = await ctx.db
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
  const dependencies = node ? await dependenciesOf(ctx, req.tenantId, node.id) : [];
  return { req, incident, service: node?.name ?? service, ownAlerts, firstAlertAt, node, dependencies };
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

/** Services `serviceId` depends on, directly or transitively (edges source → target), with the shortest hops. */
export async function dependenciesOf(
  ctx: InvestigationContext,
  tenantId: string,
  serviceId: string,
): Promise<Dependency[]> {
  const rows = await ctx.db.execute<{ id: string; name: string; type: string; hops: number }>(sql`
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

/** Deployments and pushes of the service and of its dependencies before the first alert (the latest 200), oldest first. */
export async function recentChanges(
  ctx: InvestigationContext,
  scene: Scene,
  kind: 'deployment' | 'code_change' | 'both',
): Promise<Array<{ row: IngestedEventRow; hops: number }>> {
  const hopsOf = new Map<string, number>();
  if (scene.service) hopsOf.set(lower(scene.service), 0);
  for (const d of scene.dependencies) if (!hopsOf.has(lower(d.name))) hopsOf.set(lower(d.name), d.hops);
  if (hopsOf.size === 0) return [];
  const from = new Date(scene.firstAlertAt.getTime() - CHANGE_LOOKBACK_MS);
  const to = new Date(scene.firstAlertAt.getTime() + 5 * 60 * 1000);
  const rows = await ctx.db
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
