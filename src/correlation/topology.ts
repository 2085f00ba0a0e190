/** How far apart two services may be in the dependency graph and still be one outage. */
export const MAX_HOPS = 3;

/**
 * A tenant's dependency graph by service name (`source` depends on `target`), for grouping. Two
 * services are related when one depends on the other within MAX_HOPS, either way, or when both
 * depend directly on one service that few others use (2 hops): a shared database failing shows
 * first in its dependents, often before it alerts itself. A dependency of most services (an
 * auth service, the cluster) says nothing about two of them failing together, so it does not
 * relate them. How grouping weighs each direction is in grouping.ts.
 */
export class TopologyGraph {
  private readonly dependsOn = new Map<string, Set<string>>();
  private readonly usedBy = new Map<string, Set<string>>();
  private readonly reach = new Map<string, Map<string, number>>();
  private readonly hubLimit: number;

  constructor(edges: ReadonlyArray<{ source: string; target: string }>) {
    for (const { source, target } of edges) {
      add(this.dependsOn, source, target);
      add(this.usedBy, target, source);
    }
    const services = new Set([...this.dependsOn.keys(), ...this.usedBy.keys()]).size;
    this.hubLimit = Math.max(8, Math.ceil(services / 2));
  }

  get size(): number {
    return this.dependsOn.size + this.usedBy.size;
  }

  /** Hops between two services (0 for the same one), or undefined when they are not related. */
  hops(a: string, b: string): number | undefined {
    if (a === b) return 0;
    const down = this.dependsWithin(a, b);
    const up = this.dependsWithin(b, a);
    const best = down === undefined ? up : up === undefined ? down : Math.min(up, down);
    return best !== undefined && best <= 2 ? best : (this.sharedDependency(a, b) ?? best);
  }

  /** Hops from `a` down to `b` when `a` depends on `b` within MAX_HOPS: a failing `b` explains `a`. */
  dependsWithin(a: string, b: string): number | undefined {
    return a === b ? 0 : this.distances(a, this.dependsOn).get(b);
  }

  /** 2 when both depend directly on one service that is not a dependency of most services. */
  sharedDependency(a: string, b: string): number | undefined {
    for (const shared of this.dependsOn.get(a) ?? []) {
      if ((this.usedBy.get(shared)?.size ?? 0) > this.hubLimit) continue;
      if (this.dependsOn.get(b)?.has(shared)) return 2;
    }
    return undefined;
  }

  /** Breadth-first distances from `from` along one direction, up to MAX_HOPS; memoised. */
  private distances(from: string, next: Map<string, Set<string>>): Map<string, number> {
    const key = `${next === this.dependsOn ? 'd' : 'u'}:${from}`;
    const known = this.reach.get(key);
    if (known) return known;
    const found = new Map<string, number>();
    let frontier = [from];
    for (let hop = 1; hop <= MAX_HOPS && frontier.length > 0; hop++) {
      const following: string[] = [];
      for (const service of frontier) {
        for (const neighbour of next.get(service) ?? []) {
          if (neighbour === from || found.has(neighbour)) continue;
          found.set(neighbour, hop);
          following.push(neighbour);
        }
      }
      frontier = following;
    }
    this.reach.set(key, found);
    return found;
  }
}

function add(map: Map<string, Set<string>>, from: string, to: string) {
  const set = map.get(from);
  if (set) set.add(to);
  else map.set(from, new Set([to]));
}

/** Graphs by tenant, kept while the tenant's topology version stays the same. */
export class TopologyCache {
  private readonly graphs = new Map<string, { version: number; graph: TopologyGraph }>();

  constructor(private readonly maxTenants = 1000) {}

  get(tenantId: string, version: number): TopologyGraph | undefined {
    const cached = this.graphs.get(tenantId);
    return cached && cached.version === version ? cached.graph : undefined;
  }

  set(tenantId: string, version: number, graph: TopologyGraph): void {
    if (this.graphs.size >= this.maxTenants && !this.graphs.has(tenantId)) {
      const oldest = this.graphs.keys().next().value;
      if (oldest !== undefined) this.graphs.delete(oldest);
    }
    this.graphs.set(tenantId, { version, graph });
  }
}
