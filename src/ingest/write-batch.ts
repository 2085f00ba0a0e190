import type postgres from 'postgres';
import { credentialsInOrder, type WebhookCredential } from '../db/repositories/api-keys.js';
import { TopologyCache, TopologyGraph } from '../correlation/topology.js';
import { ownershipOf, type Ownership } from '../domain/ownership.js';
import { monthlyQuota, usagePeriod } from '../domain/plans.js';
import { AppError } from '../errors.js';
import { newId } from '../ids.js';
import { AlertDecider } from './alert-decisions.js';
import {
  alertCount,
  deliveryId,
  planReads,
  readAndLock,
  readEdges,
  type BatchReads,
  type PreviousDelivery,
} from './batch-reads.js';
import { queueBatchWrites, type QuotaCounter } from './batch-writes.js';
import type { IncidentChange } from './changes.js';
import type { IngestOutcome, IngestRequest } from './ingest.js';

/** One answer per request of the batch: undefined until a step decides it. */
type Outcomes = Array<IngestOutcome | AppError | undefined>;

/** Tenants' dependency graphs, shared by the batches of this process. */
const topologyCache = new TopologyCache();

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
    const reads = await readAndLock(tx, requests, plan, period, now);
    const known = knownState(reads);
    const decider = new AlertDecider(reads, await graphsOf(tx, reads), now);
    const { admitted, firstOfKey } = judgeCredentials(requests, reads.credentialRows, outcomes);
    const toWrite = answerReplayed(reads.previous, firstOfKey, outcomes);
    const accepted = applyQuotas(requests, toWrite, admitted, known, decider, period, outcomes);
    const eventRows = decideEvents(requests, accepted, admitted, decider, now, outcomes);
    const ownershipFor = (c: IncidentChange) =>
      c.first!.service ? known.ownerships.get(`${c.tenantId}:${c.first!.service}`) : undefined;
    const writes = queueBatchWrites(tx, {
      requests,
      accepted,
      outcomes,
      changes: decider.changes,
      alerts: decider.records(),
      released: decider.released,
      ruleMatches: decider.ruleMatches,
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

/**
 * The dependency graph of each tenant with alerts, from the cache while its topology version
 * stands; the edges of the others are read in one more statement of the transaction.
 */
async function graphsOf(tx: postgres.Sql, reads: BatchReads): Promise<Map<string, TopologyGraph>> {
  const graphs = new Map<string, TopologyGraph>();
  const stale: Array<{ tenantId: string; version: number }> = [];
  for (const row of reads.versionRows) {
    const version = Number(row.version);
    const cached = topologyCache.get(row.tenant_id, version);
    if (cached) graphs.set(row.tenant_id, cached);
    else stale.push({ tenantId: row.tenant_id, version });
  }
  if (stale.length === 0) return graphs;
  const edges = await readEdges(
    tx,
    stale.map((s) => s.tenantId),
  );
  for (const { tenantId, version } of stale) {
    const graph = new TopologyGraph(edges.filter((e) => e.tenant_id === tenantId));
    topologyCache.set(tenantId, version, graph);
    graphs.set(tenantId, graph);
  }
  return graphs;
}

/** What the batch knows of the stored state after the first round trip; the later steps update it. */
interface KnownState {
  /** By `tenantId:service name`. */
  ownerships: Map<string, Ownership>;
  /** Each tenant's monthly event counter. */
  used: Map<string, QuotaCounter>;
  /** Each tenant's event credits bought for the period, read under the counter's row lock. */
  credits: Map<string, number>;
}

function knownState(reads: BatchReads): KnownState {
  const ownerships = new Map<string, Ownership>();
  for (const row of reads.serviceRows) ownerships.set(`${row.tenant_id}:${row.name}`, ownershipOf(row));
  const used = new Map<string, QuotaCounter>();
  const credits = new Map<string, number>();
  for (const row of reads.counters) {
    used.set(row.tenant_id, { before: row.count, after: row.count, limit: null });
    credits.set(row.tenant_id, row.credits);
  }
  return { ownerships, used, credits };
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
  decider: AlertDecider,
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
        ? firingAlerts.filter((e) => !decider.isGrouped(request.tenantId, e.fingerprint)).length
        : firingAlerts.length;
      // Credits are used once the quota is (ADR 0289); `limit` stays the plan's for the warnings.
      const credits = known.credits.get(request.tenantId) ?? 0;
      if (counter.limit !== null && firing > 0 && counter.after + firing > counter.limit + credits) {
        outcomes[i] = quotaRefusal(counter.limit, credits, counter.after, firing, period);
        continue;
      }
      counter.after += alerts.length;
    }
    accepted.push(i);
  }
  return accepted;
}

/** The refusal of a delivery whose firing alerts do not fit in what is left of quota and credits. */
function quotaRefusal(limit: number, credits: number, used: number, firing: number, period: string): AppError {
  const left = Math.max(0, limit + credits - used);
  const allowance =
    credits > 0
      ? `The monthly event quota of ${limit} and the ${credits} credit(s) bought`
      : `The monthly event quota of ${limit}`;
  if (left === 0)
    return new AppError(
      'event_quota_exceeded',
      `${allowance} ${credits > 0 ? 'are used up' : 'is reached'} for ${period}`,
    );
  return new AppError(
    'event_quota_exceeded',
    `${allowance} ${credits > 0 ? 'leave' : 'leaves'} ${left} event(s) for ${period}; this delivery has ${firing} firing alerts`,
  );
}

/**
 * Decides, event by event in arrival order, what each alert is (see AlertDecider) and the event
 * rows; answers each accepted request with one incident id (or null) and one alert id per alert.
 */
function decideEvents(
  requests: IngestRequest[],
  accepted: number[],
  admitted: Map<number, WebhookCredential>,
  decider: AlertDecider,
  now: Date,
  outcomes: Outcomes,
): Array<Record<string, unknown>> {
  const eventRows: Array<Record<string, unknown>> = [];
  for (const i of accepted) {
    const request = requests[i]!;
    const sender = {
      tenantId: request.tenantId,
      provider: request.provider,
      keyId: admitted.get(i)!.keyId,
      requestId: request.requestId,
      grouping: admitted.get(i)!.settings.correlationWindowMinutes !== 0,
    };
    const eventIds: string[] = [];
    const incidentIds: Array<string | null> = [];
    const alertIds: Array<string | null> = [];
    let opened = 0;
    let repeats = 0;
    for (const event of request.events) {
      const eventId = newId('evt', now.getTime());
      eventIds.push(eventId);
      let incidentId: string | null = null;
      let alertId: string | null = null;
      let delivered = true;
      if (event.kind === 'alert') {
        const decision = decider.decide(sender, event, eventId);
        ({ incidentId, alertId, delivered } = decision);
        if (decision.opened) opened++;
        if (decision.repeat) repeats++;
        incidentIds.push(incidentId);
        alertIds.push(alertId);
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
        attribution: event.kind === 'alert' ? (event.attribution ?? null) : null,
        severity: event.kind === 'alert' ? event.severity : null,
        title: event.title,
        description: event.description,
        labels: JSON.stringify(event.labels),
        raw: event.rawJson,
        occurred_at: event.occurredAt.toISOString(),
        incident_id: incidentId,
        alert_id: alertId,
        delivered_at: delivered ? now.toISOString() : null,
      });
    }
    const alerts = alertCount(request);
    outcomes[i] = {
      result: {
        eventIds,
        incidentIds,
        alertIds,
        deduplicated: alerts > 0 && opened === 0 && repeats === alerts,
        ...(request.ignored ? { ignored: request.ignored } : {}),
      },
      replayed: false,
    };
  }
  return eventRows;
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
