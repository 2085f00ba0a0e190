/**
 * The reads an investigation's scene is made of: the incident and its alerts, the service's node
 * and what it depends on, and the tenant's changes in a window. Every query is scoped to the
 * tenant; the activities decide what to make of the rows.
 */
import { and, asc, desc, eq, gte, inArray, lte, sql } from 'drizzle-orm';
import type { Db } from '../client.js';
import { incidents } from '../schema/incidents.js';
import { ingestedEvents } from '../schema/ingestion.js';
import { services, type ServiceRepository } from '../schema/topology.js';

export interface SceneNode {
  id: string;
  name: string;
  type: string;
}

export async function sceneIncident(db: Db, tenantId: string, incidentId: string) {
  const [incident] = await db
    .select()
    .from(incidents)
    .where(and(eq(incidents.tenantId, tenantId), eq(incidents.id, incidentId)));
  return incident;
}

/** The incident's own alerts, oldest first (bounded). */
export function incidentAlerts(db: Db, tenantId: string, incidentId: string, limit: number) {
  return db
    .select()
    .from(ingestedEvents)
    .where(
      and(
        eq(ingestedEvents.tenantId, tenantId),
        eq(ingestedEvents.incidentId, incidentId),
        eq(ingestedEvents.kind, 'alert'),
      ),
    )
    .orderBy(asc(ingestedEvents.occurredAt), asc(ingestedEvents.id))
    .limit(limit);
}

/** A topology node by its id, else by its name. */
export async function sceneNode(
  db: Db,
  tenantId: string,
  by: { id: string } | { name: string },
): Promise<SceneNode | null> {
  const [row] = await db
    .select({ id: services.id, name: services.name, type: services.type })
    .from(services)
    .where(and(eq(services.tenantId, tenantId), 'id' in by ? eq(services.id, by.id) : eq(services.name, by.name)));
  return row ?? null;
}

export function tenantNodes(db: Db, tenantId: string, limit: number): Promise<SceneNode[]> {
  return db
    .select({ id: services.id, name: services.name, type: services.type })
    .from(services)
    .where(eq(services.tenantId, tenantId))
    .limit(limit);
}

/** Services `serviceId` depends on, directly or transitively (edges source → target), with the shortest hops. */
export async function dependenciesOf(
  db: Db,
  tenantId: string,
  serviceId: string,
  maxHops: number,
): Promise<Array<{ id: string; name: string; type: string; hops: number }>> {
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
      where next.frontier is not null and w.hops < ${maxHops}
    )
    select s.id, s.name, s.type, w.hops
    from walk w cross join lateral unnest(w.frontier) as f(id)
    join services s on s.tenant_id = ${tenantId} and s.id = f.id
    where w.hops > 0
    order by w.hops, s.name collate "C"
    limit 50`);
  return Array.from(rows).map((r) => ({ id: r.id, name: r.name, type: r.type, hops: Number(r.hops) }));
}

/** The repositories the given nodes list, by node id. */
export async function nodeRepositories(
  db: Db,
  tenantId: string,
  ids: string[],
): Promise<Map<string, ServiceRepository[]>> {
  const repos = new Map<string, ServiceRepository[]>();
  if (ids.length === 0) return repos;
  const rows = await db
    .select({ id: services.id, repositories: services.repositories })
    .from(services)
    .where(and(eq(services.tenantId, tenantId), inArray(services.id, ids)));
  for (const r of rows) repos.set(r.id, r.repositories);
  return repos;
}

/** The tenant's changes in a window, the latest first: only what tying them reads (labels), bounded. */
export function changeCandidates(
  db: Db,
  tenantId: string,
  window: { kind: 'deployment' | 'code_change' | 'both'; from: Date; to: Date; limit: number },
) {
  return db
    .select({ id: ingestedEvents.id, service: ingestedEvents.service, labels: ingestedEvents.labels })
    .from(ingestedEvents)
    .where(
      and(
        eq(ingestedEvents.tenantId, tenantId),
        window.kind === 'both'
          ? inArray(ingestedEvents.kind, ['deployment', 'code_change'])
          : eq(ingestedEvents.kind, window.kind),
        gte(ingestedEvents.occurredAt, window.from),
        lte(ingestedEvents.occurredAt, window.to),
      ),
    )
    .orderBy(desc(ingestedEvents.occurredAt), desc(ingestedEvents.id))
    .limit(window.limit);
}

/** Whole event rows by id, oldest first. */
export function eventsById(db: Db, tenantId: string, ids: string[]) {
  return db
    .select()
    .from(ingestedEvents)
    .where(and(eq(ingestedEvents.tenantId, tenantId), inArray(ingestedEvents.id, ids)))
    .orderBy(asc(ingestedEvents.occurredAt), asc(ingestedEvents.id));
}
