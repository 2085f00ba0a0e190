import type postgres from 'postgres';
import { credentialsInOrder, webhookCredentialsQuery, type WebhookCredential } from '../db/repositories/api-keys.js';
import { ownershipOf, type Ownership } from '../domain/ownership.js';
import { monthlyQuota, usagePeriod } from '../domain/plans.js';
import { AppError } from '../errors.js';
import { newId } from '../ids.js';
import { queueBatchWrites, type IncidentChange, type QuotaCounter } from './batch-writes.js';
import { BODY_REPLAY_WINDOW_MS, type IngestOutcome, type IngestRequest, type IngestResult } from './ingest.js';
import type { ParsedAlert } from './types.js';

/** One answer per request of the batch: undefined until a step decides it. */
type Outcomes = Array<IngestOutcome | AppError | undefined>;

const deliveryId = (r: IngestRequest) => `${r.tenantId}\u0000${r.provider}\u0000${r.deliveryKey}`;
const alertCount = (r: IngestRequest) => r.events.filter((e) => e.kind === 'alert').length;

/**
 * Writes deliveries in one transaction of two round trips: reads (after the locks) in the
 * first, every write and COMMIT in the second. One outcome (or refusal) per request, in order.
 * Arrays are bound as text[] and cast in SQL: drizzle's postgres.js setup passes date arrays through
 * unserialised, and postgres.js types a boolean or number array by its first element.
 */
export async function writeBatch(
  sql: postgres.Sql,
  requests: IngestRequest[],
  now: Date,
): Promise<Array<IngestOutcome | AppError>> {
  const period = usagePeriod(now);
  const tx = await sql.reserve();
  let open = false;
  try {
    const outcomes: Outcomes = new Array(requests.length);
    const plan = planReads(requests);
    open = true;
    const reads = await readAndLock(tx, requests, plan, period);
    const known = knownState(reads);
    const { admitted, firstOfKey } = judgeCredentials(requests, reads.credentialRows, outcomes);
    const toWrite = answerReplayed(reads.previous, firstOfKey, outcomes);
    const accepted = applyQuotas(requests, toWrite, admitted, known, period, outcomes);
    const { changes, eventRows } = decideEvents(requests, accepted, admitted, known, now, outcomes);
    const ownershipFor = (c: IncidentChange) =>
      c.first!.service ? known.ownerships.get(`${c.tenantId}:${c.first!.service}`) : undefined;
    const writes = queueBatchWrites(tx, {
      requests,
      accepted,
      outcomes,
      changes,
      eventRows,
      used: known.used,
      period,
      now,
      ownershipFor,
    });
    // COMMIT rides in the same round trip: if a write fails, PostgreSQL turns it into a rollback
    // and the failed write rejects here.
    writes.push(tx`commit`);
    await Promise.all(writes);
    open = false;
    return answers(requests, outcomes, firstOfKey);
  } catch (err) {
    if (open) await tx`rollback`.catch(() => undefined);
    throw err;
  } finally {
    tx.release();
  }
}

/** What the first round trip reads and locks, worked out from the requests alone. */
interface ReadPlan {
  /** The first request of each delivery key. */
  keyed: IngestRequest[];
  lockKeys: string[];
  quotaTenants: string[];
  wantedList: Array<{ tenantId: string; fingerprint: string }>;
  namedList: Array<{ tenantId: string; name: string }>;
}

function planReads(requests: IngestRequest[]): ReadPlan {
  const distinctKeys = new Map<string, IngestRequest>();
  for (const r of requests) if (!distinctKeys.has(deliveryId(r))) distinctKeys.set(deliveryId(r), r);
  const keyed = [...distinctKeys.values()];
  const lockKeys = [
    ...new Set([
      ...keyed.map((r) => `delivery:${r.tenantId}:${r.provider}:${r.deliveryKey}`),
      ...requests.flatMap((r) =>
        r.events.filter((e): e is ParsedAlert => e.kind === 'alert').map((a) => `${r.tenantId}:${a.fingerprint}`),
      ),
    ]),
  ].sort();
  const quotaTenants = [...new Set(requests.filter((r) => alertCount(r) > 0).map((r) => r.tenantId))].sort();
  // The open incidents of every fingerprint in the batch (a superset of what is written): read
  // after the locks, in the same round trip.
  const wanted = new Map<string, { tenantId: string; fingerprint: string }>();
  for (const r of requests) {
    for (const e of r.events)
      if (e.kind === 'alert')
        wanted.set(`${r.tenantId}:${e.fingerprint}`, { tenantId: r.tenantId, fingerprint: e.fingerprint });
  }
  // The topology nodes the batch's alerts name, for the ownership of incidents it opens.
  const named = new Map<string, { tenantId: string; name: string }>();
  for (const r of requests) {
    for (const e of r.events)
      if (e.kind === 'alert' && e.service)
        named.set(`${r.tenantId}:${e.service}`, { tenantId: r.tenantId, name: e.service });
  }
  return { keyed, lockKeys, quotaTenants, wantedList: [...wanted.values()], namedList: [...named.values()] };
}

type PreviousDelivery = {
  tenant_id: string;
  provider: string;
  delivery_key: string;
  response: IngestResult | null;
  fresh: boolean;
};
type CounterRow = { tenant_id: string; count: number };
type OpenIncidentRow = { id: string; tenant_id: string; fingerprint: string; recovered: boolean };
type ServiceRow = { id: string; tenant_id: string; name: string; team: string | null; criticality: number };

interface BatchReads {
  credentialRows: Awaited<ReturnType<typeof webhookCredentialsQuery>>;
  previous: PreviousDelivery[];
  counters: CounterRow[];
  openRows: OpenIncidentRow[];
  serviceRows: ServiceRow[];
}

/**
 * The first round trip, pipelined in this order: BEGIN, the API keys presented (each counted in
 * its tenant's webhook rate-limit window), the advisory locks of the batch's delivery keys and
 * alert fingerprints (one sorted set, so concurrent batches on several api processes never wait on
 * each other in a cycle), the deliveries seen before, the quota counters (sorted, `for update`),
 * the open incidents of the batch's fingerprints and the services its alerts name. Until the keys
 * are judged this covers every request, authorised or not; it only reads and locks, and nothing of
 * a refused request is written or answered from what it read. A delivery is recorded, with its
 * answer, only in the second round trip: the lock on its key keeps a concurrent batch from
 * answering it meanwhile.
 */
async function readAndLock(
  tx: postgres.Sql,
  requests: IngestRequest[],
  plan: ReadPlan,
  period: string,
): Promise<BatchReads> {
  const { keyed, lockKeys, quotaTenants, wantedList, namedList } = plan;
  const [, credentialRows, , previous, , counters, openRows, serviceRows] = await Promise.all([
    tx`begin`,
    webhookCredentialsQuery(
      tx,
      requests.map((r) => ({ tenantId: r.tenantId, keyHash: r.keyHash })),
    ),
    tx`select pg_advisory_xact_lock(hashtextextended(k, 0)) from unnest(${lockKeys}::text[]) with ordinality as l(k, n) order by n`,
    tx<PreviousDelivery[]>`
      select d.tenant_id, d.provider, d.delivery_key, d.response,
             d.created_at > now() - make_interval(secs => ${BODY_REPLAY_WINDOW_MS / 1000}) as fresh
      from webhook_deliveries d
      join unnest(${keyed.map((r) => r.tenantId)}::text[], ${keyed.map((r) => r.provider)}::text[], ${keyed.map((r) => r.deliveryKey)}::text[])
        as k(tenant_id, provider, delivery_key) using (tenant_id, provider, delivery_key)`,
    quotaTenants.length > 0
      ? tx`
          insert into usage_counters (tenant_id, period, metric, count)
          select t.id, ${period}, 'events', 0 from tenants t where t.id = any(${quotaTenants}::text[])
          order by t.id
          on conflict do nothing`
      : Promise.resolve([]),
    quotaTenants.length > 0
      ? tx<CounterRow[]>`
          select tenant_id, count from usage_counters
          where tenant_id = any(${quotaTenants}::text[]) and period = ${period} and metric = 'events'
          order by tenant_id for update`
      : Promise.resolve([] as CounterRow[]),
    wantedList.length > 0
      ? tx<OpenIncidentRow[]>`
          select distinct on (i.tenant_id, i.fingerprint) i.id, i.tenant_id, i.fingerprint, i.recovered_at is not null as recovered
          from incidents i
          join unnest(${wantedList.map((w) => w.tenantId)}::text[], ${wantedList.map((w) => w.fingerprint)}::text[]) as k(tenant_id, fingerprint)
            on i.tenant_id = k.tenant_id and i.fingerprint = k.fingerprint
          where i.status not in ('resolved', 'closed')
          order by i.tenant_id, i.fingerprint, i.created_at desc`
      : Promise.resolve([] as OpenIncidentRow[]),
    namedList.length > 0
      ? tx<ServiceRow[]>`
          select s.id, s.tenant_id, s.name, s.team, s.criticality
          from services s
          join unnest(${namedList.map((n) => n.tenantId)}::text[], ${namedList.map((n) => n.name)}::text[]) as k(tenant_id, name)
            on s.tenant_id = k.tenant_id and s.name = k.name`
      : Promise.resolve([] as ServiceRow[]),
  ]);
  return { credentialRows, previous, counters, openRows, serviceRows };
}

/** What the batch knows of the stored state after the first round trip; the later steps update it. */
interface KnownState {
  /** By `tenantId:service name`. */
  ownerships: Map<string, Ownership>;
  /** The open incident of each `tenantId:fingerprint`. */
  openIncidents: Map<string, string>;
  /** Whether each open incident's alert last said "resolved" (stored state, then this batch's). */
  recovered: Map<string, boolean>;
  /** Each tenant's monthly event counter. */
  used: Map<string, QuotaCounter>;
}

function knownState(reads: BatchReads): KnownState {
  const ownerships = new Map<string, Ownership>();
  for (const row of reads.serviceRows) ownerships.set(`${row.tenant_id}:${row.name}`, ownershipOf(row));
  const openIncidents = new Map<string, string>();
  const recovered = new Map<string, boolean>();
  for (const row of reads.openRows) {
    openIncidents.set(`${row.tenant_id}:${row.fingerprint}`, row.id);
    recovered.set(row.id, row.recovered);
  }
  const used = new Map<string, QuotaCounter>();
  for (const row of reads.counters) used.set(row.tenant_id, { before: row.count, after: row.count, limit: null });
  return { ownerships, openIncidents, recovered, used };
}

/**
 * Each request's key is judged (tenant, revocation, signature, rate limit) before anything else:
 * a refused request is neither written nor answered from a delivery seen before. The first
 * authorised request of each delivery key is the one written.
 */
function judgeCredentials(
  requests: IngestRequest[],
  credentialRows: BatchReads['credentialRows'],
  outcomes: Outcomes,
): { admitted: Map<number, WebhookCredential>; firstOfKey: Map<string, number> } {
  const credentials = credentialsInOrder(credentialRows, requests.length);
  const admitted = new Map<number, WebhookCredential>();
  const firstOfKey = new Map<string, number>();
  requests.forEach((r, i) => {
    try {
      admitted.set(i, r.authorize(credentials[i]));
    } catch (err) {
      if (!(err instanceof AppError)) throw err;
      outcomes[i] = err;
      return;
    }
    if (!firstOfKey.has(deliveryId(r))) firstOfKey.set(deliveryId(r), i);
  });
  return { admitted, firstOfKey };
}

/**
 * A delivery key seen before answers with its first result; the same body after the replay
 * window is a new delivery (its row is overwritten when it is written). Returns the requests
 * left to write, in arrival order.
 */
function answerReplayed(previous: PreviousDelivery[], firstOfKey: Map<string, number>, outcomes: Outcomes): number[] {
  for (const row of previous) {
    const index = firstOfKey.get(`${row.tenant_id}\u0000${row.provider}\u0000${row.delivery_key}`);
    if (index !== undefined && row.response && (row.delivery_key.startsWith('id:') || row.fresh))
      outcomes[index] = { result: row.response, replayed: true };
  }
  return [...firstOfKey.values()].filter((i) => outcomes[i] === undefined).sort((a, b) => a - b);
}

/**
 * Monthly event quota, per tenant, delivery by delivery in arrival order. Every alert counts; a
 * delivery is refused only when its firing alerts do not fit, and one that carries a recovery
 * only when the firing alerts that would open an incident do not fit (Alertmanager sends a
 * group's still-firing alerts with the one that resolved). Refusing recoveries left incidents open
 * that the tool says are over until the month ended (ADR 0218). Returns the accepted requests.
 */
function applyQuotas(
  requests: IngestRequest[],
  toWrite: number[],
  admitted: Map<number, WebhookCredential>,
  known: KnownState,
  period: string,
  outcomes: Outcomes,
): number[] {
  const accepted: number[] = [];
  for (const i of toWrite) {
    const request = requests[i]!;
    const alerts = request.events.filter((e) => e.kind === 'alert');
    if (alerts.length > 0) {
      const counter = known.used.get(request.tenantId)!;
      counter.limit = monthlyQuota(admitted.get(i)!, 'events');
      const firingAlerts = alerts.filter((e) => e.status === 'firing');
      const firing = alerts.some((e) => e.status === 'resolved')
        ? firingAlerts.filter((e) => !known.openIncidents.has(`${request.tenantId}:${e.fingerprint}`)).length
        : firingAlerts.length;
      if (counter.limit !== null && firing > 0 && counter.after + firing > counter.limit) {
        const left = Math.max(0, counter.limit - counter.after);
        outcomes[i] = new AppError(
          'event_quota_exceeded',
          left === 0
            ? `The monthly event quota of ${counter.limit} is reached for ${period}`
            : `The monthly event quota of ${counter.limit} leaves ${left} event(s) for ${period}; this delivery has ${firing} firing alerts`,
        );
        continue;
      }
      counter.after += alerts.length;
    }
    accepted.push(i);
  }
  return accepted;
}

/**
 * Decides, event by event in arrival order, the incident each alert opens or attaches to and the
 * event rows; answers each accepted request.
 */
function decideEvents(
  requests: IngestRequest[],
  accepted: number[],
  admitted: Map<number, WebhookCredential>,
  known: KnownState,
  now: Date,
  outcomes: Outcomes,
): { changes: Map<string, IncidentChange>; eventRows: Array<Record<string, unknown>> } {
  const { openIncidents, recovered } = known;
  const changes = new Map<string, IncidentChange>();
  const eventRows: Array<Record<string, unknown>> = [];
  for (const i of accepted) {
    const request = requests[i]!;
    const eventIds: string[] = [];
    const incidentIds: string[] = [];
    let opened = 0;
    let attached = 0;
    for (const event of request.events) {
      const eventId = newId('evt', now.getTime());
      eventIds.push(eventId);
      let incidentId: string | null = null;
      let delivered = true;
      if (event.kind === 'alert') {
        const lockKey = `${request.tenantId}:${event.fingerprint}`;
        const existing = openIncidents.get(lockKey);
        if (existing) {
          incidentId = existing;
          attached++;
          // The workflow hears (through a signal) of what changes the alert's state: a
          // recovery, or firing again after one. A firing repeat of a firing alert changes
          // only the stored occurrence count and last-seen time, so it is not signalled: an
          // alert storm costs Temporal nothing.
          const wasRecovered = recovered.get(existing) ?? false;
          delivered = event.status === 'firing' && !wasRecovered;
          recovered.set(existing, event.status === 'resolved');
          const change = changes.get(existing) ?? {
            id: existing,
            isNew: false,
            tenantId: request.tenantId,
            fingerprint: event.fingerprint,
            occurrences: 0,
            lastSeenAt: null,
          };
          if (event.status === 'firing') {
            change.occurrences++;
            // When the service last saw it firing: a tool repeats an alert with its original
            // start time (Alertmanager, Grafana), so the alert's own time would never move.
            change.lastSeenAt = now;
            change.recovery = { recoveredAt: null };
          } else {
            change.recovery = { recoveredAt: event.occurredAt };
          }
          changes.set(existing, change);
        } else if (event.status === 'firing') {
          incidentId = newId('inc', now.getTime());
          opened++;
          openIncidents.set(lockKey, incidentId);
          recovered.set(incidentId, false);
          changes.set(incidentId, {
            id: incidentId,
            isNew: true,
            tenantId: request.tenantId,
            fingerprint: event.fingerprint,
            first: event,
            firstEventId: eventId,
            keyId: admitted.get(i)!.keyId,
            requestId: request.requestId,
            provider: request.provider,
            occurrences: 1,
            lastSeenAt: now,
          });
        }
        if (incidentId && !incidentIds.includes(incidentId)) incidentIds.push(incidentId);
      }
      eventRows.push({
        id: eventId,
        tenant_id: request.tenantId,
        provider: request.provider,
        kind: event.kind,
        status: event.kind === 'alert' ? event.status : null,
        fingerprint: event.kind === 'alert' ? event.fingerprint : null,
        alert_name: event.kind === 'alert' ? event.alertName : null,
        service: event.service,
        severity: event.kind === 'alert' ? event.severity : null,
        title: event.title,
        description: event.description,
        labels: JSON.stringify(event.labels),
        raw: event.rawJson,
        occurred_at: event.occurredAt.toISOString(),
        incident_id: incidentId,
        delivered_at: delivered ? now.toISOString() : null,
      });
    }
    const alerts = alertCount(request);
    outcomes[i] = {
      result: {
        eventIds,
        incidentIds,
        deduplicated: alerts > 0 && opened === 0 && attached === alerts,
        ...(request.ignored ? { ignored: request.ignored } : {}),
      },
      replayed: false,
    };
  }
  return { changes, eventRows };
}

/** Authorised duplicates of a key within this batch answer like their first. */
function answers(
  requests: IngestRequest[],
  outcomes: Outcomes,
  firstOfKey: Map<string, number>,
): Array<IngestOutcome | AppError> {
  return requests.map((r, i) => {
    const own = outcomes[i];
    if (own) return own;
    const outcome = outcomes[firstOfKey.get(deliveryId(r))!]!;
    return outcome instanceof AppError ? outcome : { result: outcome.result, replayed: true };
  });
}
