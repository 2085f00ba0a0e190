/**
 * Replays a storm scenario into a fresh tenant of a running service over real HTTP (topology,
 * then every delivery on its schedule, concurrently as tools send them), waits for the service to
 * settle, and reads back what it made of it: the grouping, incidents, approvals, notifications.
 */
import type postgres from 'postgres';
import { scoreGrouping, type ScenarioScore } from './score.js';
import { alertsOf, truthOf } from './truth.js';
import type { ScenarioDefinition, StormDelivery, StormScenario, Truth } from './types.js';

export interface StormTenant {
  tenantId: string;
  /** Admin tokens (each a different person), then a member's. */
  admins: string[];
  member: string;
}

export interface StormTarget {
  baseUrl: string;
  /** A tenant of its own for one scenario, with quotas no scenario reaches. */
  newTenant(label: string): Promise<StormTenant>;
  /** The service's database, read when the api does not list alerts yet. */
  sql?: postgres.Sql;
}

export interface ReplayOptions {
  /** How much faster than the scenario's own clock deliveries are sent (default 10). */
  speed?: number;
  /** The longest wait for triage and investigations to finish after the last delivery (default 120 s). */
  settleMs?: number;
  log?: (line: string) => void;
}

export type GroupingSource = 'GET /v1/alerts' | 'alerts table' | 'ingested events' | 'webhook answers';

/** One alert as the service grouped it, for reading what went wrong. */
export interface GroupedAlert {
  fingerprint: string;
  name: string;
  service: string | null;
  truth: Truth;
  incidentId: string | null;
  /** `reason` (and `hops`) of the alert's correlation, when the api says. */
  why: string;
}

export interface ScenarioResult {
  name: string;
  title: string;
  score: ScenarioScore;
  alerts: GroupedAlert[];
  source: GroupingSource;
  /** Incidents the tenant has at the end (every one was opened by the storm). */
  incidentsOpened: number;
  approvals: number;
  notificationsPerAdmin: number[];
  deliveries: { sent: number; statuses: Record<string, number>; p50: number; p99: number };
  settled: boolean;
  settleSeconds: number;
}

interface Answer {
  status: number;
  body: any;
}

export async function call(
  baseUrl: string,
  method: string,
  path: string,
  options: { token?: string; body?: unknown; raw?: string; headers?: Record<string, string> } = {},
): Promise<Answer> {
  const headers: Record<string, string> = { ...options.headers };
  if (options.token) headers.authorization = `Bearer ${options.token}`;
  if (options.body !== undefined || options.raw !== undefined) headers['content-type'] = 'application/json';
  const res = await fetch(`${baseUrl}${path}`, {
    method,
    headers,
    ...(options.raw !== undefined
      ? { body: options.raw }
      : options.body !== undefined
        ? { body: JSON.stringify(options.body) }
        : {}),
  });
  const text = await res.text();
  let body: unknown = text;
  try {
    body = text === '' ? null : JSON.parse(text);
  } catch {
    // not JSON: kept as text
  }
  return { status: res.status, body };
}

function must(answer: Answer, status: number, what: string): any {
  if (answer.status !== status) throw new Error(`${what}: ${answer.status} ${JSON.stringify(answer.body)}`);
  return answer.body;
}

/** Posts the scenario's graph; nodes one by one (names are unique per tenant), then the edges. */
export async function postTopology(
  baseUrl: string,
  token: string,
  scenario: Pick<StormScenario, 'services' | 'edges'>,
): Promise<void> {
  const ids = new Map<string, string>();
  for (const service of scenario.services) {
    const { name, type, team, criticality } = service;
    const node = { name, type, ...(team ? { team } : {}), ...(criticality ? { criticality } : {}) };
    const body = must(await call(baseUrl, 'POST', '/v1/graph/nodes', { token, body: node }), 201, 'node');
    ids.set(service.name, body.serviceId);
  }
  await Promise.all(
    scenario.edges.map(async ([source, target]) =>
      must(
        await call(baseUrl, 'POST', '/v1/graph/edges', {
          token,
          body: { sourceServiceId: ids.get(source), targetServiceId: ids.get(target) },
        }),
        201,
        `edge ${source} → ${target}`,
      ),
    ),
  );
}

/** Pages through a list, `cursorField` naming where the next page's cursor is. */
async function listAll(
  baseUrl: string,
  token: string,
  path: string,
  itemsField: string,
  cursorField: string,
): Promise<{ status: number; items: any[] }> {
  const items: any[] = [];
  let cursor: string | null = null;
  for (let page = 0; page < 1000; page++) {
    const sep = path.includes('?') ? '&' : '?';
    const answer = await call(
      baseUrl,
      'GET',
      `${path}${sep}limit=100${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`,
      { token },
    );
    if (answer.status !== 200) return { status: answer.status, items };
    items.push(...(answer.body[itemsField] as any[]));
    cursor = answer.body[cursorField] ?? null;
    if (!cursor) break;
  }
  return { status: 200, items };
}

/** Sends every delivery at its time (scaled), without waiting for the one before: tools send concurrently. */
async function sendDeliveries(
  baseUrl: string,
  tenantId: string,
  key: string,
  deliveries: StormDelivery[],
  speed: number,
): Promise<Array<{ delivery: StormDelivery; answer: Answer; ms: number }>> {
  const first = Math.min(...deliveries.map((d) => d.at));
  const started = Date.now();
  return Promise.all(
    deliveries.map(async (delivery) => {
      const due = started + ((delivery.at - first) * 1000) / speed;
      await new Promise((r) => setTimeout(r, Math.max(0, due - Date.now())));
      const t = performance.now();
      const post = () =>
        call(baseUrl, 'POST', `/v1/webhooks/${tenantId}/${delivery.provider}`, {
          raw: JSON.stringify(delivery.body),
          headers: { authorization: `Bearer ${key}`, ...delivery.headers },
        });
      let answer = await post();
      const ms = performance.now() - t;
      // As the tools do: a 429 or 503 is sent again, a little later.
      for (let retry = 0; retry < 5 && (answer.status === 429 || answer.status === 503); retry++) {
        await new Promise((r) => setTimeout(r, 1000));
        answer = await post();
      }
      return { delivery, answer, ms };
    }),
  );
}

const working = new Set(['open', 'triaging']);

function percentile(sorted: number[], p: number): number {
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))] ?? 0;
}

/**
 * Waits until no incident is being opened or triaged and no investigation runs (an incident whose
 * plan is manual stays `investigating` with its investigation done), then until the admins'
 * notifications stop growing.
 */
async function settle(target: StormTarget, tenant: StormTenant, settleMs: number): Promise<boolean> {
  const deadline = Date.now() + settleMs;
  const token = tenant.admins[0]!;
  while (Date.now() < deadline) {
    const incidents = (await listAll(target.baseUrl, token, '/v1/incidents', 'incidents', 'cursor')).items;
    let busy = incidents.some((i) => working.has(i.status));
    for (const incident of incidents) {
      if (busy) break;
      if (incident.status !== 'investigating') continue;
      const run = await call(target.baseUrl, 'GET', `/v1/investigation/${incident.incidentId}`, { token });
      busy = run.status !== 200 || run.body.status === 'running';
    }
    if (!busy) {
      let last = -1;
      for (let quiet = 0; quiet < 3 && Date.now() < deadline;) {
        const count = (await listAll(target.baseUrl, token, '/v1/notifications', 'items', 'nextCursor')).items.length;
        quiet = count === last ? quiet + 1 : 0;
        last = count;
        await new Promise((r) => setTimeout(r, 700));
      }
      return true;
    }
    await new Promise((r) => setTimeout(r, 1000));
  }
  return false;
}

/** Fingerprint → incident, from the best source the service offers. */
async function readGrouping(
  target: StormTarget,
  tenant: StormTenant,
  answers: Array<{ delivery: StormDelivery; answer: Answer }>,
): Promise<{ source: GroupingSource; incidentOf: Map<string, string>; why: Map<string, string> }> {
  const incidentOf = new Map<string, string>();
  const why = new Map<string, string>();
  const note = (fingerprint: string, incidentId: string | null | undefined) => {
    if (incidentId && !incidentOf.has(fingerprint)) incidentOf.set(fingerprint, incidentId);
  };
  const listed = await listAll(target.baseUrl, tenant.member, '/v1/alerts', 'items', 'nextCursor');
  if (listed.status === 200 && listed.items.length > 0) {
    const oldestFirst = [...listed.items].sort((a, b) => String(a.firstSeenAt).localeCompare(String(b.firstSeenAt)));
    for (const alert of oldestFirst) {
      note(alert.fingerprint, alert.incidentId);
      const c = alert.correlation;
      if (!why.has(alert.fingerprint))
        why.set(alert.fingerprint, c ? `${c.reason}${c.hops !== undefined ? ` ${c.hops} hops` : ''}` : alert.state);
    }
    return { source: 'GET /v1/alerts', incidentOf, why };
  }
  if (target.sql) {
    const rows = await target.sql<{ fingerprint: string; incident_id: string | null }[]>`
      select fingerprint, incident_id from alerts where tenant_id = ${tenant.tenantId} order by first_seen_at, id`;
    if (rows.length > 0) {
      for (const row of rows) note(row.fingerprint, row.incident_id);
      return { source: 'alerts table', incidentOf, why };
    }
    const events = await target.sql<{ fingerprint: string; incident_id: string | null }[]>`
      select fingerprint, incident_id from ingested_events
      where tenant_id = ${tenant.tenantId} and kind = 'alert' order by received_at, id`;
    for (const row of events) note(row.fingerprint, row.incident_id);
    return { source: 'ingested events', incidentOf, why };
  }
  for (const { delivery, answer } of answers) {
    const ids: Array<string | null> = answer.body?.incidentIds ?? [];
    alertsOf(delivery).forEach((alert, i) => note(alert.fingerprint, ids[i]));
  }
  return { source: 'webhook answers', incidentOf, why };
}

/** One scenario, end to end, into a tenant of its own. */
export async function replayScenario(
  target: StormTarget,
  definition: ScenarioDefinition,
  options: ReplayOptions = {},
): Promise<ScenarioResult> {
  const speed = options.speed ?? 10;
  const log = options.log ?? (() => undefined);
  const tenant = await target.newTenant(`storm ${definition.name}`);
  const { baseUrl } = target;
  // People are notified once the api has seen them.
  for (const token of [...tenant.admins, tenant.member]) await call(baseUrl, 'GET', '/v1/notifications', { token });
  const key = must(
    await call(baseUrl, 'POST', '/v1/api-keys', { token: tenant.admins[0], body: { name: 'storm' } }),
    201,
    'api key',
  ).key as string;
  const replayStart = Date.now();
  const replayEnd = replayStart + (definition.durationSeconds * 1000) / speed;
  // Payload times span the scenario's own minutes and end when its replay ends.
  const scenario = definition.build((at) => new Date(replayEnd - (definition.durationSeconds - at) * 1000));
  const alertTruths = truthOf(scenario);
  const truth = new Map<string, Truth>([...alertTruths].map(([fingerprint, t]) => [fingerprint, t.truth]));
  await postTopology(baseUrl, tenant.admins[0]!, scenario);
  log(`${scenario.name}: ${scenario.deliveries.length} deliveries, ${truth.size} alerts, speed ×${speed}`);

  const answers = await sendDeliveries(baseUrl, tenant.tenantId, key, scenario.deliveries, speed);
  const statuses: Record<string, number> = {};
  for (const { answer } of answers) statuses[answer.status] = (statuses[answer.status] ?? 0) + 1;
  const latencies = answers.map((a) => a.ms).sort((a, b) => a - b);

  const settleStarted = Date.now();
  const settled = await settle(target, tenant, options.settleMs ?? 120_000);
  const settleSeconds = (Date.now() - settleStarted) / 1000;
  const { source, incidentOf, why } = await readGrouping(target, tenant, answers);
  const incidents = await listAll(baseUrl, tenant.admins[0]!, '/v1/incidents', 'incidents', 'cursor');
  const approvals = await call(baseUrl, 'GET', '/v1/approvals?limit=1', { token: tenant.member });
  const notificationsPerAdmin: number[] = [];
  for (const token of tenant.admins) {
    notificationsPerAdmin.push(
      (await listAll(baseUrl, token, '/v1/notifications', 'items', 'nextCursor')).items.length,
    );
  }
  return {
    name: scenario.name,
    title: scenario.title,
    score: scoreGrouping(truth, incidentOf),
    alerts: [...alertTruths.values()].map((a) => ({
      fingerprint: a.fingerprint,
      name: a.name,
      service: a.service,
      truth: a.truth,
      incidentId: incidentOf.get(a.fingerprint) ?? null,
      why: why.get(a.fingerprint) ?? '',
    })),
    source,
    incidentsOpened: incidents.items.length,
    approvals: approvals.status === 200 ? Number(approvals.body.total) : NaN,
    notificationsPerAdmin,
    deliveries: { sent: answers.length, statuses, p50: percentile(latencies, 50), p99: percentile(latencies, 99) },
    settled,
    settleSeconds,
  };
}
