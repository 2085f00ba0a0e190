import { and, count, desc, eq, or, sql, type SQL } from 'drizzle-orm';
import { olderThan } from '../keyset.js';
import type { Db } from '../client.js';
import { serviceEdges, services, type ServiceEdgeRow, type ServiceRow, type ServiceType } from '../schema/topology.js';

export function toServiceView(row: ServiceRow) {
  return {
    serviceId: row.id,
    name: row.name,
    type: row.type,
    team: row.team,
    criticality: row.criticality,
    repositories: row.repositories.map((r) =>
      r.paths ? { repository: r.repository, paths: r.paths } : { repository: r.repository },
    ),
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

export async function findService(
  db: Pick<Db, 'select'>,
  tenantId: string,
  serviceId: string,
): Promise<ServiceRow | undefined> {
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
  const pageWhere = after ? and(where, olderThan(services.createdAt, services.id, after)) : where;
  const [rows, totals] = await Promise.all([
    db
      .select()
      .from(services)
      .where(pageWhere)
      .orderBy(desc(services.createdAt), desc(services.id))
      .limit(query.limit + 1),
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
    filters.push(
      or(eq(serviceEdges.sourceServiceId, query.serviceId), eq(serviceEdges.targetServiceId, query.serviceId))!,
    );
  }
  const where = and(...filters);
  const { after } = query;
  const pageWhere = after ? and(where, olderThan(serviceEdges.createdAt, serviceEdges.id, after)) : where;
  const [rows, totals] = await Promise.all([
    db
      .select()
      .from(serviceEdges)
      .where(pageWhere)
      .orderBy(desc(serviceEdges.createdAt), desc(serviceEdges.id))
      .limit(query.limit + 1),
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

const impacts: Impact[] = ['high', 'medium', 'low'];

/**
 * Every service a failure of `serviceId` would affect: those that depend on it directly or
 * transitively (edges walked backwards, target → source), each once with its shortest distance
 * in `hops`, ordered by hops, then impact (high first), then name. `undefined` when the tenant has
 * no such service.
 *
 * One recursive CTE, a breadth-first search whose working row is a whole frontier: each step
 * takes the sources of all edges into the frontier (one index scan on `(tenant, target)` for the
 * whole array) and removes every service already visited (a hashed `except`), so each service
 * enters exactly one frontier — the first, which is its shortest distance — and each edge is
 * read at most once. Cycles end the walk instead of looping, and the cost is linear in the edges
 * reached, not in the number of paths: a CTE that carries hops per path (with `CYCLE`, or
 * `UNION` over `(service, hops)` and `min(hops)` after) expands a service again for every
 * distinct distance or path that reaches it. Names and criticality are then read with one index
 * scan over the array of reached ids. The rows are sorted here rather than in SQL: on the
 * 10,000-service benchmark graph that is 3 ms against 10 ms for the same order in PostgreSQL.
 */
export async function blastRadius(
  db: Pick<Db, 'execute'>,
  tenantId: string,
  serviceId: string,
): Promise<BlastRadius | undefined> {
  const rows = await db.execute<{
    service_id: string | null;
    name: string | null;
    hops: number | null;
    impact: number | null;
  }>(sql`
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
    ), reached as (
      select f.id, w.hops
      from walk w
      cross join lateral unnest(w.frontier) as f(id)
      where w.hops > 0
    ), affected as (
      select s.id, s.name, r.hops,
             case when r.hops = 1 or s.criticality >= 8 then 0
                  when r.hops = 2 or s.criticality >= 5 then 1
                  else 2 end as impact
      from reached r
      join services s on s.id = r.id
      where s.tenant_id = ${tenantId} and s.id = any(array(select id from reached))
    )
    select a.id as service_id, a.name, a.hops, a.impact
    from (select from walk where hops = 0) root
    left join affected a on true`);
  // No row: no such service. One row of nulls: the service exists and nothing depends on it.
  const list = Array.from(rows);
  if (list.length === 0) return undefined;
  const affectedServices = list
    .filter((row) => row.service_id !== null)
    .sort((a, b) => a.hops! - b.hops! || a.impact! - b.impact! || (a.name! < b.name! ? -1 : a.name! > b.name! ? 1 : 0))
    .map((row) => ({ serviceId: row.service_id!, name: row.name!, hops: row.hops!, impact: impacts[row.impact!]! }));
  return { serviceId, affectedServices, totalAffected: affectedServices.length };
}
