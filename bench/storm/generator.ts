/**
 * The storm of `npm run bench:storm`: 60 services (three independent clusters of 16 around their
 * own database, a gateway above them, eleven unrelated services), three outages that each start
 * at their cluster's database and cascade up its dependents, and noise and heartbeats beside them.
 * Each tool behaves as it does in a storm: Alertmanager and Grafana re-send a group with all its
 * firing alerts every group interval, Sentry sends every new event of an issue, synthetics re-run,
 * Datadog notifies once per monitor group. Deterministic (seeded), so runs compare.
 */
import {
  alertmanager,
  datadog,
  generic,
  grafana,
  ruleAlert,
  sentry,
  watchdog,
  type RuleAlert,
} from '../../test/storm/payloads.js';
import type { StormDelivery, StormService } from '../../test/storm/types.js';

export const OUTAGES = ['A', 'B', 'C'] as const;

/** A small, fast, seeded PRNG (mulberry32). */
function random(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

interface Node extends StormService {
  /** Outage cluster, or undefined for the gateway and the unrelated services. */
  cluster?: string;
  level: number;
}

export interface StormTopology {
  services: Node[];
  edges: Array<[string, string]>;
}

/** 60 services: per cluster a database, 4 apis on it, 6 services on those, 4 edges on those, a worker. */
export function stormTopology(): StormTopology {
  const services: Node[] = [{ name: 'gateway', type: 'api', team: 'platform', criticality: 9, level: 4 }];
  const edges: Array<[string, string]> = [];
  for (const c of OUTAGES) {
    const k = c.toLowerCase();
    const team = `team-${k}`;
    services.push({ name: `${k}-db`, type: 'database', team, criticality: 9, cluster: c, level: 0 });
    for (let i = 1; i <= 4; i++) {
      services.push({ name: `${k}-api-${i}`, type: 'api', team, criticality: 7, cluster: c, level: 1 });
      edges.push([`${k}-api-${i}`, `${k}-db`]);
    }
    for (let i = 1; i <= 6; i++) {
      services.push({ name: `${k}-svc-${i}`, type: 'api', team, criticality: 5, cluster: c, level: 2 });
      edges.push([`${k}-svc-${i}`, `${k}-api-${((i - 1) % 4) + 1}`]);
      if (i <= 3) edges.push([`${k}-svc-${i}`, `${k}-api-${(i % 4) + 1}`]);
    }
    for (let i = 1; i <= 4; i++) {
      services.push({ name: `${k}-edge-${i}`, type: 'api', team, criticality: 6, cluster: c, level: 3 });
      edges.push([`${k}-edge-${i}`, `${k}-svc-${i}`]);
      edges.push(['gateway', `${k}-edge-${i}`]);
    }
    services.push({ name: `${k}-worker`, type: 'worker', team, criticality: 4, cluster: c, level: 1 });
    edges.push([`${k}-worker`, `${k}-db`]);
  }
  for (let i = 1; i <= 6; i++) {
    services.push({ name: `tool-${i}`, type: 'api', team: 'internal', criticality: 2, level: 1 });
    if (i <= 5) {
      services.push({ name: `tool-${i}-db`, type: 'database', team: 'internal', criticality: 2, level: 0 });
      edges.push([`tool-${i}`, `tool-${i}-db`]);
    }
  }
  return { services, edges };
}

/** Every distinct alert of the storm: its tool, when it starts firing, and its outage (or noise). */
interface Source {
  kind: 'am' | 'grafana' | 'sentry' | 'datadog' | 'synthetic';
  service: string;
  name: string;
  startsAt: number;
  truth: string;
  instance?: string;
}

export interface StormPlan {
  deliveries: StormDelivery[];
  /** Alerts across all deliveries (a group re-sent counts its alerts again). */
  alerts: number;
}

/** The distinct alerts: each outage cascades from its database up the levels over about a minute. */
function sources(topology: StormTopology, seconds: number, rnd: () => number): Source[] {
  const list: Source[] = [];
  OUTAGES.forEach((c, n) => {
    // The cascade takes about a minute of a 3-minute storm, proportionally less of a shorter one.
    const scale = seconds / 180;
    const start = (n * seconds) / 4 + rnd() * 5 * scale;
    for (const node of topology.services.filter((s) => s.cluster === c)) {
      const at = (kind: number) => start + (node.level * 12 + rnd() * 15 + kind * 3) * scale;
      const add = (kind: Source['kind'], name: string, startsAt: number, instance?: string) =>
        list.push({ kind, service: node.name, name, startsAt, truth: c, ...(instance ? { instance } : {}) });
      if (node.type === 'database') {
        add('am', 'PostgresTooManyConnections', at(0), `${node.name}-0`);
        add('am', 'PostgresTooManyConnections', at(0), `${node.name}-1`);
        add('datadog', 'Postgres connection saturation', at(1));
      } else if (node.level === 1) {
        for (const i of [0, 1, 2]) add('am', 'HighErrorRate', at(0), `${node.name}-${i}`);
        for (const i of [0, 1, 2]) add('am', 'HighLatencyP99', at(1), `${node.name}-${i}`);
        add('sentry', 'OperationalError: connection pool exhausted', at(1));
        add('sentry', 'TimeoutError: query exceeded 5s', at(2));
        add('datadog', 'APM error rate above 5%', at(2));
      } else if (node.level === 2) {
        for (const i of [0, 1]) add('am', 'HighErrorRate', at(0), `${node.name}-${i}`);
        add('grafana', 'Service p99 latency', at(1));
        add('sentry', 'UpstreamError: dependency answered 503', at(2));
      } else {
        add('synthetic', 'JourneyFailing', at(0));
        add('grafana', 'Service p99 latency', at(1));
      }
    }
  });
  // Unrelated problems of the internal tools, spread over the run: each tool's latency alert and
  // its exception are one small problem of their own (`noise-tool-<i>`), apart from the outages.
  for (let i = 1; i <= 6; i++) {
    const startsAt = rnd() * seconds * 0.9;
    list.push({
      kind: 'am',
      service: `tool-${i}`,
      name: 'HighLatencyP99',
      startsAt,
      truth: `noise-tool-${i}`,
      instance: `tool-${i}-0`,
    });
    list.push({
      kind: 'sentry',
      service: `tool-${i}`,
      name: `ValueError: bad row ${i}`,
      startsAt: startsAt + rnd() * 20,
      truth: `noise-tool-${i}`,
    });
  }
  return list.sort((a, b) => a.startsAt - b.startsAt);
}

const ruleOf = (s: Source): RuleAlert =>
  ruleAlert(
    s.name,
    s.service,
    s.truth === 'noise' ? 'warning' : 'critical',
    `${s.name} on ${s.service}`,
    s.startsAt,
    s.truth,
    {
      labels: s.instance ? { instance: s.instance } : {},
    },
  );

/**
 * The deliveries for `seconds` of storm; `interval` is the group interval of Alertmanager and
 * Grafana and the re-run period of synthetics and Sentry events, tuned by `planStorm`.
 */
function deliveriesFor(
  list: Source[],
  seconds: number,
  interval: number,
  time: (at: number) => Date,
  seed: number,
): StormDelivery[] {
  const rnd = random(seed + 1);
  const out: StormDelivery[] = [];
  // Rule alerts: one group per (tool, service, rule), re-sent every interval with every alert that fires by then.
  const groups = new Map<string, Source[]>();
  for (const s of list.filter((s) => s.kind === 'am' || s.kind === 'grafana')) {
    const key = `${s.kind}|${s.service}|${s.name}`;
    groups.set(key, [...(groups.get(key) ?? []), s]);
  }
  for (const members of groups.values()) {
    const first = Math.min(...members.map((m) => m.startsAt));
    for (let at = first + 2; at < seconds; at += interval * (0.8 + rnd() * 0.4)) {
      const firing = members.filter((m) => m.startsAt <= at).map(ruleOf);
      out.push(
        members[0]!.kind === 'am'
          ? alertmanager(time, at, firing, { groupBy: ['alertname', 'service'] })
          : grafana(time, at, firing, { folder: members[0]!.service.split('-')[0]!.toUpperCase() }),
      );
    }
  }
  for (const s of list.filter((s) => s.kind === 'sentry' || s.kind === 'synthetic')) {
    for (let at = s.startsAt; at < seconds; at += interval * (0.6 + rnd() * 0.8)) {
      out.push(
        s.kind === 'sentry'
          ? sentry(time, at, {
              project: s.service,
              title: s.name,
              culprit: `${s.service}.handlers in handle`,
              truth: s.truth,
            })
          : generic(time, at, [
              {
                name: s.name,
                service: s.service,
                severity: 'critical',
                summary: `${s.service} journey failing`,
                startsAt: s.startsAt,
                truth: s.truth,
              },
            ]),
      );
    }
  }
  for (const [index, s] of list.entries()) {
    if (s.kind !== 'datadog') continue;
    out.push(
      datadog(time, s.startsAt, {
        monitorId: 7_000_000 + index,
        name: `${s.service}: ${s.name}`,
        service: s.service,
        priority: 'P2',
        metric: 'trace.http.request.errors',
        status: `${s.name} on ${s.service}`,
        message: `${s.service} is failing.`,
        truth: s.truth,
      }),
    );
  }
  for (let at = 0; at < seconds; at += 30) out.push(watchdog(time, at));
  return out.filter((d) => d.at >= 0 && d.at < seconds).sort((a, b) => a.at - b.at);
}

/** A storm of about `alerts` alerts over `seconds`: the interval is searched until the count fits (±3 %). */
export function planStorm(
  alerts: number,
  seconds: number,
  time: (at: number) => Date,
  seed = 36,
): StormPlan & { topology: StormTopology } {
  const topology = stormTopology();
  const list = sources(topology, seconds, random(seed));
  const count = (deliveries: StormDelivery[]) => deliveries.reduce((sum, d) => sum + d.truth.length, 0);
  let low = 1;
  let high = seconds;
  let best = deliveriesFor(list, seconds, high, time, seed);
  for (let i = 0; i < 30; i++) {
    const mid = (low + high) / 2;
    const deliveries = deliveriesFor(list, seconds, mid, time, seed);
    best = deliveries;
    const n = count(deliveries);
    if (Math.abs(n - alerts) <= alerts * 0.03) break;
    if (n > alerts) low = mid;
    else high = mid;
  }
  return { topology, deliveries: best, alerts: count(best) };
}
