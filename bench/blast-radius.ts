/**
 * `npm run bench:blast-radius`: latency of `GET /v1/graph/blast-radius/{serviceId}` over real
 * HTTP on a large topology, against the service as `npm start` runs it (child process: embedded
 * PostgreSQL, Temporal dev server, worker, api). The graph is written straight into the database
 * with set-based inserts: BENCH_SERVICES services (10,000) and BENCH_EDGES edges (50,000) for the
 * demo tenant, a layered graph (data stores at the bottom, edge apis at the top, each service
 * depending mostly on the layer below, popular dependencies skewed) plus upward edges that close
 * cycles, drawn from a seeded generator (BENCH_SEED, 42) so every run builds the same graph.
 * Then the call is measured on the most depended-on data stores (the deepest and widest walks)
 * and on a random sample of all services, sequentially and with BENCH_CONCURRENCY (4) callers.
 * Answers are cached per topology version, so it also measures first calls after a graph change
 * (each preceded by an untimed version bump). Prints figures only. Target (issue 4): p99 ≤ 50 ms.
 */
import { Agent, request } from 'node:http';
import { cpus } from 'node:os';
import postgres from 'postgres';
import type { ServiceType } from '../src/db/schema/topology.js';
import { newId } from '../src/ids.js';
import { measure, runBenchmark, startStack } from './stack.js';

const serviceCount = Number(process.env.BENCH_SERVICES ?? 10_000);
const edgeCount = Number(process.env.BENCH_EDGES ?? 50_000);
const seed = Number(process.env.BENCH_SEED ?? 42);
const concurrency = Number(process.env.BENCH_CONCURRENCY ?? 4);
const calls = Number(process.env.BENCH_CALLS ?? 1000);

/** mulberry32: a small seeded generator, so the graph is the same on every run. */
function seededRandom(value: number): () => number {
  let state = value >>> 0;
  return () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

interface Graph {
  ids: string[];
  names: string[];
  types: ServiceType[];
  criticality: number[];
  layerOf: number[];
  layers: number[][];
  edges: Array<[number, number]>;
}

/**
 * Seven layers, bottom to top: data stores (3 %), core workers, internal services, …, edge apis
 * (25 %). A dependency goes to the layer below (70 %) or any lower layer, picked with a skew
 * (`u²`) so a few services in each layer are depended on by many. 1 % of the edges go to a peer
 * in the same layer, and 100 rings of three peers (a → b → c → a) make sure there are cycles:
 * services calling each other, as real topologies have them. (Edges from low layers up to high
 * ones would be cycles too, but a few of them put most of the graph in one cycle.)
 */
function buildGraph(random: () => number): Graph {
  const shares = [0.03, 0.07, 0.1, 0.15, 0.2, 0.2, 0.25];
  const layers: number[][] = shares.map(() => []);
  const layerOf: number[] = [];
  const types: ServiceType[] = [];
  let next = 0;
  shares.forEach((share, layer) => {
    const size = layer === shares.length - 1 ? serviceCount - next : Math.round(share * serviceCount);
    for (let i = 0; i < size; i++, next++) {
      layers[layer]!.push(next);
      layerOf.push(layer);
      types.push(
        layer === 0
          ? (['database', 'cache', 'queue'] as const)[i % 3]!
          : layer === shares.length - 1
            ? 'api'
            : i % 2
              ? 'worker'
              : 'api',
      );
    }
  });
  const pick = (layer: number) => {
    const members = layers[layer]!;
    return members[Math.floor(random() * random() * members.length)]!;
  };
  const seen = new Set<number>();
  const edges: Array<[number, number]> = [];
  const add = (source: number, target: number) => {
    const key = source * serviceCount + target;
    if (target === source || seen.has(key)) return;
    seen.add(key);
    edges.push([source, target]);
  };
  const firstAbove = layers[0]!.length;
  for (let ring = 0; ring < 100; ring++) {
    const layer = 1 + (ring % (layers.length - 1));
    const [a, b, c] = [0, 1, 2].map(() => layers[layer]![Math.floor(random() * layers[layer]!.length)]!);
    add(a!, b!);
    add(b!, c!);
    add(c!, a!);
  }
  while (edges.length < edgeCount) {
    const source = firstAbove + Math.floor(random() * (serviceCount - firstAbove)); // layers 1 and up
    const sourceLayer = layerOf[source]!;
    if (random() < 0.01) {
      const peers = layers[sourceLayer]!;
      add(source, peers[Math.floor(random() * peers.length)]!); // a peer: may close a cycle
      continue;
    }
    add(source, pick(random() < 0.7 || sourceLayer === 1 ? sourceLayer - 1 : Math.floor(random() * sourceLayer)));
  }
  return {
    ids: layerOf.map(() => newId('svc')),
    names: layerOf.map(
      (layer, i) => `${['store', 'core', 'internal', 'domain', 'service', 'frontend', 'edge'][layer]}-${i}`,
    ),
    types,
    criticality: layerOf.map(() => 1 + Math.floor(random() * 10)),
    layerOf,
    layers,
    edges,
  };
}

async function main() {
  const random = seededRandom(seed);
  const graph = buildGraph(random);
  const stack = await startStack();
  const sql = postgres(stack.databaseUrl, { max: 1, onnotice: () => undefined });
  // Lift the demo tenant's limits so the benchmark measures the service, not its rate limiter.
  await sql`update tenants set plan = 'plan_enterprise', settings = settings || ${sql.json({ rateLimitPerMinute: 10_000_000 })} where id = ${stack.tenantId}`;
  const loadStarted = performance.now();
  await sql`
    insert into services (id, tenant_id, name, type, criticality)
    select id, ${stack.tenantId}, name, type, criticality
    from unnest(${graph.ids}::text[], ${graph.names}::text[], ${graph.types}::text[], ${graph.criticality.map(String)}::text[]::int[])
      as s(id, name, type, criticality)`;
  await sql`
    insert into service_edges (id, tenant_id, source_service_id, target_service_id)
    select id, ${stack.tenantId}, source, target
    from unnest(${graph.edges.map(() => newId('edg'))}::text[], ${graph.edges.map(([s]) => graph.ids[s]!)}::text[], ${graph.edges.map(([, t]) => graph.ids[t]!)}::text[])
      as e(id, source, target)`;
  await sql`vacuum analyze services, service_edges`; // what autovacuum would do after such a load
  const loadMs = performance.now() - loadStarted;

  // The most depended-on data stores, and a seeded sample of all services.
  const inDegree = new Map<number, number>();
  for (const [, target] of graph.edges) inDegree.set(target, (inDegree.get(target) ?? 0) + 1);
  const hottest = [...graph.layers[0]!].sort((a, b) => (inDegree.get(b) ?? 0) - (inDegree.get(a) ?? 0)).slice(0, 20);
  const sample = Array.from({ length: 200 }, () => Math.floor(random() * serviceCount));

  const agent = new Agent({ keepAlive: true, maxSockets: concurrency });
  const sizes = new Map<number, { affected: number; hops: number }>();
  const get = (service: number): Promise<{ ok: boolean }> =>
    new Promise((resolve, reject) => {
      const url = new URL(`${stack.baseUrl}/v1/graph/blast-radius/${graph.ids[service]}`);
      const req = request(url, { agent, headers: { authorization: `Bearer ${stack.token}` } }, (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (chunk: Buffer) => chunks.push(chunk));
        res.on('end', () => {
          if (res.statusCode === 200 && !sizes.has(service)) {
            const body = JSON.parse(Buffer.concat(chunks).toString()) as {
              totalAffected: number;
              affectedServices: Array<{ hops: number }>;
            };
            sizes.set(service, { affected: body.totalAffected, hops: body.affectedServices.at(-1)?.hops ?? 0 });
          }
          resolve({ ok: res.statusCode === 200 });
        });
      });
      req.on('error', reject);
      req.end();
    });

  console.log(
    `machine: ${process.platform} ${process.arch}, node ${process.version}, ${cpus().length} cpus; service in a child process`,
  );
  console.log(
    `graph: ${serviceCount} services in ${graph.layers.length} layers (${graph.layers.map((l) => l.length).join('/')}), ` +
      `${graph.edges.length} edges (${graph.edges.filter(([s, t]) => graph.layerOf[t] === graph.layerOf[s]).length} between peers of a layer, closing cycles), ` +
      `written in ${(loadMs / 1000).toFixed(1)} s`,
  );
  // Warm-up (JIT, pools, and the cache: one first call per measured service, measured apart below).
  await measure('warm-up', { count: hottest.length + sample.length, parallel: concurrency }, (i) =>
    get(i < hottest.length ? hottest[i]! : sample[i - hottest.length]!),
  );
  const results = [
    await measure('most depended-on stores, sequential', { count: calls, parallel: 1 }, (i) =>
      get(hottest[i % hottest.length]!),
    ),
    await measure(`most depended-on stores, c=${concurrency}`, { count: calls, parallel: concurrency }, (i) =>
      get(hottest[i % hottest.length]!),
    ),
    await measure('random services, sequential', { count: calls, parallel: 1 }, (i) => get(sample[i % sample.length]!)),
    await measure(`random services, c=${concurrency}`, { count: calls, parallel: concurrency }, (i) =>
      get(sample[i % sample.length]!),
    ),
  ];
  // Answers are cached per topology version; these calls each follow a graph change (the
  // version is moved, untimed, before each), so every one runs the recursive query.
  const bump = () => sql`update topology_versions set version = version + 1 where tenant_id = ${stack.tenantId}`;
  const cold = [
    await measure('stores, first call after a graph change', { count: Math.min(calls, 60), parallel: 1 }, async (i) => {
      await bump();
      return get(hottest[i % hottest.length]!);
    }),
    await measure('random, first call after a graph change', { count: Math.min(calls, 60), parallel: 1 }, async (i) => {
      await bump();
      return get(sample[i % sample.length]!);
    }),
  ];
  const describe = (services: number[]) => {
    const affected = services.map((s) => sizes.get(s)?.affected ?? 0).sort((a, b) => a - b);
    const hops = Math.max(...services.map((s) => sizes.get(s)?.hops ?? 0));
    return `affected median ${affected[Math.floor(affected.length / 2)]}, max ${affected.at(-1)}, deepest ${hops} hops`;
  };
  console.log(`most depended-on stores: ${describe(hottest)}; random services: ${describe(sample)}`);
  const worst = Math.max(...results.map((r) => r.p99));
  const worstCold = Math.max(...cold.map((r) => r.p99));
  console.log(
    `result: worst p99 ${worst.toFixed(1)} ms (target ≤ 50) with the graph unchanged; ` +
      `first call after a graph change p99 ${worstCold.toFixed(1)} ms; errors ${[...results, ...cold].reduce((n, r) => n + r.errors, 0)}`,
  );
  agent.destroy();
  await sql.end();
  await stack.stop();
}

runBenchmark(main);
