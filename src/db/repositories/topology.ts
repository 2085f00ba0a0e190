import { and, count, desc, eq, lt, or, sql, type SQL } from 'drizzle-orm';
import type { Db } from '../client.js';
import { serviceEdges, services, type ServiceEdgeRow, type ServiceRow, type ServiceType } from '../schema/topology.js';

export function toServiceView(row: ServiceRow) {
  return {
    serviceId: row.id,
    name: row.name,
    type: row.type,
    team: row.team,
    criticality: row.criticality,
    createdAt: row.createdAt.toISOString(),
    updatedAt: row.updatedAt.toISOString(),
  };
}

export function toEdgeView(row: ServiceEdgeRow) {
  return {
    edgeId: row.id,
    sourceServiceId: row.sourceServiceId,
    targetServiceId: row.targetServiceId,
    createdAt: row.createdAt.toISOString(),
  };
}

interface Page<T> {
  rows: T[];
  total: number;
  hasMore: boolean;
}

type After = { createdAt: Date; id: string };

export async function findService(db: Pick<Db, 'select'>, tenantId: string, serviceId: string): Promise<ServiceRow | undefined> {
  const [row] = await db
    .select()
    .from(services)
    .where(and(eq(services.tenantId, tenantId), eq(services.id, serviceId)));
  return row;
}

/** Newest first, keyset over (created_at, id), plus the total matching count across pages. */
export async function listServices(
  db: Db,
  tenantId: string,
  query: { type?: ServiceType; team?: string; limit: number; after?: After },
): Promise<Page<ServiceRow>> {
  const filters: SQL[] = [eq(services.tenantId, tenantId)];
  if (query.type) filters.push(eq(services.type, query.type));
  if (query.team) filters.push(eq(services.team, query.team));
  const where = and(...filters);
  const { after } = query;
  const pageWhere = after
    ? and(where, or(lt(services.createdAt, after.createdAt), and(eq(services.createdAt, after.createdAt), lt(services.id, after.id))))
    : where;
  const [rows, totals] = await Promise.all([
    db.select().from(services).where(pageWhere).orderBy(desc(services.createdAt), desc(services.id)).limit(query.limit + 1),
    db.select({ total: count() }).from(services).where(where),
  ]);
  return { rows: rows.slice(0, query.limit), total: totals[0]?.total ?? 0, hasMore: rows.length > query.limit };
}

/** Newest first; `serviceId` keeps the edges with that service at either end. */
export async function listEdges(
  db: Db,
  tenantId: string,
  query: { serviceId?: string; limit: number; after?: After },
): Promise<Page<ServiceEdgeRow>> {
  const filters: SQL[] = [eq(serviceEdges.tenantId, tenantId)];
  if (query.serviceId) {
    filters.push(or(eq(serviceEdges.sourceServiceId, query.serviceId), eq(serviceEdges.targetServiceId, query.serviceId))!);
  }
  const where = and(...filters);
  const { after } = query;
  const pageWhere = after
    ? and(
        where,
        or(lt(serviceEdges.createdAt, after.createdAt), and(eq(serviceEdges.createdAt, after.createdAt), lt(serviceEdges.id, after.id))),
      )
    : where;
  const [rows, totals] = await Promise.all([
    db.select().from(serviceEdges).where(pageWhere).orderBy(desc(serviceEdges.createdAt), desc(serviceEdges.id)).limit(query.limit + 1),
    db.select({ total: count() }).from(serviceEdges).where(where),
  ]);
  return { rows: rows.slice(0, query.limit), total: totals[0]?.total ?? 0, hasMore: rows.length > query.limit };
}

export type Impact = 'high' | 'medium' | 'low';

export interface AffectedService {
  serviceId: string;
  name: string;
  hops: number;
  impact: Impact;
}

export interface BlastRadius {
  serviceId: string;
  affectedServices: AffectedService[];
  totalAffected: number;
}

/**
 * Every service a failure of `serviceId` would affect: those that depend on it directly or
 * transitively (edges walked backwards, target → source), each once with its shortest distance
 * in `hops`, ordered by hops, then impact (high first), then name. `undefined` when the tenant has
 * no such service.
 *
 * One recursive CTE, a breadth-first search whose working row is a whole frontier: each step
 * takes the sources of all edges into the frontier and removes every service already visited
 * (a hashed `except`), so each service enters exactly one frontier — the first, which is its
 * shortest distance — and each edge is read at most once. Cycles end the walk instead of
 * looping, and the cost is linear in the edges reached, not in the number of paths (a CTE that
 * carries hops per path, even with `CYCLE` or `min(hops)`, enumerates paths and grows
 * exponentially on dense graphs).
 */
export async function blastRadius(db: Pick<Db, 'execute'>, tenantId: string, serviceId: string): Promise<BlastRadius | undefined> {
  const rows = await db.execute<{ service_id: string | null; name: string | null; hops: number | null; impact: Impact | null }>(sql`
    with recursive walk(frontier, visited, hops) as (
      select array[s.id], array[s.id], 0
      from services s
      where s.tenant_id = ${tenantId} and s.id = ${serviceId}
      union all
      select next.frontier, w.visited || next.frontier, w.hops + 1
      from walk w
      cross join lateral (
        select array_agg(reached.id) as frontier
        from (
          select e.source_service_id as id
          from service_edges e
          where e.tenant_id = ${tenantId} and e.target_service_id = any(w.frontier)
          except
          select unnest(w.visited)
        ) reached
      ) next
      where next.frontier is not null
    ), affected as (
      select s.id, s.name, w.hops,
             case when w.hops = 1 or s.criticality >= 8 then 'high'
                  when w.hops = 2 or s.criticality >= 5 then 'medium'
                  else 'low' end as impact
      from walk w
      cross join lateral unnest(w.frontier) as f(id)
      join services s on s.tenant_id = ${tenantId} and s.id = f.id
      where w.hops > 0
    )
    select a.id as service_id, a.name, a.hops, a.impact
    from (select from walk where hops = 0) root
    left join affected a on true
    order by a.hops, case a.impact when 'high' then 0 when 'medium' then 1 else 2 end, a.name collate "C", a.id`);
  // No row: no such service. One row of nulls: the service exists and nothing depends on it.
  const list = Array.from(rows);
  if (list.length === 0) return undefined;
  const affectedServices = list
    .filter((row) => row.service_id !== null)
    .map((row) => ({ serviceId: row.service_id!, name: row.name!, hops: row.hops!, impact: row.impact! }));
  return { serviceId, affectedServices, totalAffected: affectedServices.length };
}
