import type postgres from 'postgres';
import { credentialsInOrder, webhookCredentialsQuery, type WebhookCredential } from '../db/repositories/api-keys.js';
import { ownershipOf, ownershipPayload, type Ownership } from '../domain/ownership.js';
import { monthlyQuota, quotaWarningKey, quotaWarningsCrossed, usagePeriod } from '../domain/plans.js';
import { AppError } from '../errors.js';
import { newId } from '../ids.js';
import { DEPENDENCY_UNAVAILABLE_MESSAGE, isDependencyUnavailable } from '../dependency-failures.js';
import type { ParsedAlert, ParsedEvent } from './types.js';

/** The channel the dispatcher listens on: something waits for a workflow start or signal. */
export const dispatchChannel = 'incident_dispatch';

/** A delivery retried with the same body within this window gets the first answer. */
export const BODY_REPLAY_WINDOW_MS = 10 * 60 * 1000;

/**
 * A delivery retried with the same delivery id within this long gets the first answer; after
 * it, the record is purged and the id is judged afresh. It covers every tool's own retries and
 * GitHub's manual redelivery (up to 3 days back).
 */
export const DELIVERY_ID_RETENTION_MS = 7 * 24 * 60 * 60 * 1000;

export interface IngestResult {
  eventIds: string[];
  incidentIds: string[];
  /** True when every alert attached to an incident that was already open (none opened one). */
  deduplicated: boolean;
  ignored?: string;
}

export interface IngestRequest {
  tenantId: string;
  /** SHA-256 of the presented API key: the batch looks the key up in its first round trip. */
  keyHash: string;
  /**
   * Judges the key found for this tenant (undefined: no active key with that hash) before
   * anything of the delivery is written or replayed: returns it to admit the delivery, or throws
   * the AppError that refuses it.
   */
  authorize: (credential: WebhookCredential | undefined) => WebhookCredential;
  provider: string;
  /** `id:<tool delivery id>` or `body:<sha256 of the raw body>`. */
  deliveryKey: string;
  events: ParsedEvent[];
  ignored?: string;
  requestId: string;
  /** The size of the delivery's body, held in memory until it is answered (the byte bound). */
  bytes?: number;
}

export type IngestOutcome = { result: IngestResult; replayed: boolean };


interface Pending {
  request: IngestRequest;
  /** When it was submitted (`performance.now()`): a delivery waits for a batch `timeoutMs` at most. */
  submittedAt: number;
  resolve: (outcome: IngestOutcome) => void;
  reject: (err: unknown) => void;
}

interface IncidentChange {
  id: string;
  isNew: boolean;
  tenantId: string;
  fingerprint: string;
  first?: ParsedAlert;
  firstEventId?: string;
  keyId?: string;
  requestId?: string;
  provider?: string;
  occurrences: number;
  lastSeenAt: Date | null;
  /** What the latest alert of this batch says of recovery: undefined = unchanged. */
  recovery?: { recoveredAt: Date | null };
}

const deliveryId = (r: IngestRequest) => `${r.tenantId}\u0000${r.provider}\u0000${r.deliveryKey}`;
const iso = (d: Date | null | undefined) => (d ? d.toISOString() : null);

export interface IngestBatcherLimits {
  /** Deliveries and events per batch. */
  maxDeliveries: number;
  maxEvents: number;
  /**
   * How long a batch may take before its deliveries are answered 503: the database is then
   * unreachable or stuck, and the next batch goes ahead on another connection. The stuck
   * transaction may still commit; the tool's retry of the delivery is then answered with its
   * stored result, so nothing is lost or stored twice. GitHub waits 10 s for an answer.
   */
  timeoutMs: number;
  /** Deliveries waiting for a batch beyond which new ones are refused at once (503). */
  maxQueued: number;
  /**
   * Body bytes of the deliveries waiting or being written beyond which new ones are refused at
   * once (503); a delivery alone is always taken. Webhook bodies may be 4 MiB (decision 219).
   */
  maxHeldBytes: number;
}

/** How long deliveries are refused at once after a probe found the database not answering. */
const REFUSE_AFTER_FAILED_PROBE_MS = 2000;

const DEFAULT_INGEST_LIMITS: IngestBatcherLimits = { maxDeliveries: 128, maxEvents: 4000, timeoutMs: 10_000, maxQueued: 2048, maxHeldBytes: 256 * 1024 * 1024 };

/**
 * Stores webhook deliveries with application-level group commit. A delivery that arrives while
 * a batch is being written waits for the next batch; each batch is one transaction of a dozen
 * set-based statements, however many deliveries it holds. So the tenant's quota counter row is
 * locked once per batch, not once per event, and `submit` resolves only after the commit that
 * made its events durable.
 *
 * Per delivery the transaction judges the API key (each request its own: key, tenant,
 * signature, rate limit), then records the delivery with its answer (retries get it; an
 * advisory lock on the delivery key orders concurrent copies), every event, the incidents it
 * opens or the open incidents it attaches to (per-fingerprint advisory locks; all locks are
 * taken in one sorted set), outbox events, audit rows and the monthly event count, which
 * refuses a whole delivery that does not fit. The dispatcher (woken by NOTIFY) then starts or
 * signals the workflows.
 */
export class IngestBatcher {
  private queue: Pending[] = [];
  /** Body bytes of the deliveries submitted and not yet answered. */
  private heldBytes = 0;
  /** The batch being written, until it settles or is abandoned for taking too long. */
  private current: InFlightBatch | null = null;
  private watchdog: NodeJS.Timeout | null = null;
  private readonly limits: IngestBatcherLimits;
  /**
   * After a batch was abandoned, the database is in doubt until `probe` says it answers: nothing
   * is sent meanwhile (decision 240). `probing` while a probe runs (deliveries wait for it);
   * until `refuseUntil` after a failed one, deliveries are refused at once.
   */
  private inDoubt = false;
  private probing = false;
  private refuseUntil = 0;

  /** `probe`: whether PostgreSQL answers a fresh connection (none: the next batch just goes ahead). */
  constructor(
    private readonly sql: postgres.Sql,
    private readonly clock: () => Date,
    limits: Partial<IngestBatcherLimits> = {},
    private readonly probe?: () => Promise<boolean>,
  ) {
    this.limits = { ...DEFAULT_INGEST_LIMITS, ...limits };
  }

  submit(request: IngestRequest): Promise<IngestOutcome> {
    const bytes = request.bytes ?? 0;
    if (this.inDoubt && !this.probing) {
      // Refused without being sent, so nothing of it is stored; past the window, a probe again.
      if (performance.now() < this.refuseUntil) return Promise.reject(new AppError('service_unavailable', DEPENDENCY_UNAVAILABLE_MESSAGE));
      this.checkDatabase();
    }
    if (this.queue.length >= this.limits.maxQueued || (this.heldBytes > 0 && this.heldBytes + bytes > this.limits.maxHeldBytes)) {
      // The database is not keeping up (or not answering): refuse now rather than hold more
      // requests, and their bodies, in memory. The tool retries.
      return Promise.reject(new AppError('service_unavailable', 'Too many deliveries are waiting to be stored; retry shortly'));
    }
    this.heldBytes += bytes;
    let held = true;
    const release = () => {
      if (held) this.heldBytes -= bytes;
      held = false;
    };
    return new Promise((resolve, reject) => {
      this.queue.push({
        request,
        submittedAt: performance.now(),
        resolve: (outcome) => {
          release();
          resolve(outcome);
        },
        reject: (err) => {
          release();
          reject(err);
        },
      });
      if (!this.current && !this.inDoubt) this.flush();
    });
  }

  /**
   * Probes the database before anything more is sent to it: when it answers, the waiting
   * deliveries go in a batch; when not, they are answered 503 unsent, and so are new ones for
   * `REFUSE_AFTER_FAILED_PROBE_MS`.
   */
  private checkDatabase(): void {
    if (this.probing) return;
    this.inDoubt = true;
    this.probing = true;
    const answers = this.probe!().catch(() => false);
    void answers.then((answered) => {
      this.probing = false;
      if (answered) {
        this.inDoubt = false;
        if (!this.current && this.queue.length > 0) this.flush();
        return;
      }
      this.refuseUntil = performance.now() + REFUSE_AFTER_FAILED_PROBE_MS;
      const err = new AppError('service_unavailable', DEPENDENCY_UNAVAILABLE_MESSAGE);
      for (const pending of this.queue.splice(0)) pending.reject(err);
    });
  }

  private flush(): void {
    this.expireQueued();
    const batch: Pending[] = [];
    let events = 0;
    while (this.queue.length > 0 && batch.length < this.limits.maxDeliveries) {
      const next = this.queue[0]!;
      if (batch.length > 0 && events + next.request.events.length > this.limits.maxEvents) break;
      batch.push(this.queue.shift()!);
      events += next.request.events.length;
    }
    if (batch.length === 0) return;
    const current: InFlightBatch = { batch, startedAt: performance.now(), abandoned: false };
    this.current = current;
    this.watch();
    void this.write(current).finally(() => {
      if (this.current !== current) return; // abandoned: the next batch has already gone ahead
      this.current = null;
      if (this.queue.length > 0) this.flush();
    });
  }

  private notStoredInTime(): AppError {
    return new AppError('service_unavailable', `The database did not store the delivery within ${this.limits.timeoutMs / 1000} s; retry it`);
  }

  /**
   * Answers 503 the deliveries that have waited for a batch as long as a batch may take: they
   * were never sent, so nothing of them is stored. Without this, while the database did not
   * answer, the queue drained one abandoned batch per `timeoutMs` and a delivery waited there
   * for a minute and more (decision 237). The queue is in submission order.
   */
  private expireQueued(): void {
    const expiredBefore = performance.now() - this.limits.timeoutMs;
    if (!(this.queue[0] && this.queue[0].submittedAt <= expiredBefore)) return;
    const err = this.notStoredInTime();
    while (this.queue[0] && this.queue[0].submittedAt <= expiredBefore) this.queue.shift()!.reject(err);
  }

  /**
   * One timer for the batcher, not one per batch: it abandons the batch in flight once it has
   * taken longer than the limit, answering its deliveries 503 and letting the next batch go on
   * another connection, and answers the deliveries that waited that long for a batch. The
   * abandoned attempt goes on in the background, its outcome dropped.
   */
  private watch(): void {
    if (this.watchdog) return;
    this.watchdog = setInterval(() => {
      const current = this.current;
      if (!current) {
        clearInterval(this.watchdog!);
        this.watchdog = null;
        return;
      }
      this.expireQueued();
      if (performance.now() - current.startedAt < this.limits.timeoutMs) return;
      current.abandoned = true;
      const err = this.notStoredInTime();
      for (const pending of current.batch) pending.reject(err);
      this.current = null;
      // A database that does not answer would take the next batch too, and commit it, answered
      // 503, when it answers again: it is probed first when it can be.
      if (this.probe) this.checkDatabase();
      else if (this.queue.length > 0) this.flush();
    }, Math.min(1000, this.limits.timeoutMs / 4));
    this.watchdog.unref();
  }

  private async write(current: InFlightBatch): Promise<void> {
    const { batch } = current;
    let outcomes: Array<IngestOutcome | AppError>;
    try {
      outcomes = await writeBatch(this.sql, batch.map((p) => p.request), this.clock());
    } catch (err) {
      await this.recover(current, err);
      return;
    }
    settle(batch, outcomes);
  }

  /** After a batch failed as a whole: answers each of its deliveries, unless it was abandoned. */
  private async recover(current: InFlightBatch, err: unknown): Promise<void> {
    const { batch } = current;
    let failure = err;
    if (isDependencyUnavailable(failure) && !current.abandoned) {
      // A connection lost once (a backend restarted, a socket reset) is retried once as a whole
      // on a fresh connection; an unreachable database then fails every delivery at once.
      try {
        settle(batch, await writeBatch(this.sql, batch.map((p) => p.request), this.clock()));
        return;
      } catch (again) {
        failure = again;
      }
    }
    if (current.abandoned) return;
    if (batch.length === 1 || isDependencyUnavailable(failure)) {
      for (const pending of batch) pending.reject(failure);
      return;
    }
    // Any other failure of the batch as a whole (a deadlock with another process): each
    // delivery is then written on its own, so one cannot fail the others.
    for (const pending of batch) {
      if (current.abandoned) return;
      try {
        const [outcome] = await writeBatch(this.sql, [pending.request], this.clock());
        if (outcome instanceof AppError) pending.reject(outcome);
        else pending.resolve(outcome!);
      } catch (single) {
        pending.reject(single);
      }
    }
  }
}

interface InFlightBatch {
  batch: Pending[];
  startedAt: number;
  abandoned: boolean;
}

function settle(batch: Pending[], outcomes: Array<IngestOutcome | AppError>): void {
  batch.forEach((pending, i) => {
    const outcome = outcomes[i]!;
    if (outcome instanceof AppError) pending.reject(outcome);
    else pending.resolve(outcome);
  });
}

/**
 * Writes deliveries in one transaction of two round trips: reads (after the locks) in the
 * first, every write and COMMIT in the second. One outcome (or refusal) per request, in order.
 * Arrays are bound as text[] and cast in SQL: drizzle's postgres.js setup passes date arrays through
 * unserialised, and postgres.js types a boolean or number array by its first element.
 */
export async function writeBatch(sql: postgres.Sql, requests: IngestRequest[], now: Date): Promise<Array<IngestOutcome | AppError>> {
  const period = usagePeriod(now);
  const tx = await sql.reserve();
  let open = false;
  try {
    const outcomes: Array<IngestOutcome | AppError | undefined> = new Array(requests.length);

    // 1. One round trip, pipelined in this order: BEGIN, the API keys presented (each counted in
    //    its tenant's webhook rate-limit window), the advisory locks of the batch's delivery keys
    //    and alert fingerprints (one sorted set, so concurrent batches on several api processes
    //    never wait on each other in a cycle), the deliveries seen before, the quota counters
    //    (sorted), and the open incidents of the batch's fingerprints. Until the keys are judged
    //    this covers every request, authorised or not; it only reads and locks, and nothing of a
    //    refused request is written or answered from what it read. A delivery is recorded, with
    //    its answer, only in the second round trip: the lock on its key keeps a concurrent batch
    //    from answering it meanwhile.
    const distinctKeys = new Map<string, IngestRequest>();
    for (const r of requests) if (!distinctKeys.has(deliveryId(r))) distinctKeys.set(deliveryId(r), r);
    const keyed = [...distinctKeys.values()];
    const lockKeys = [
      ...new Set([
        ...keyed.map((r) => `delivery:${r.tenantId}:${r.provider}:${r.deliveryKey}`),
        ...requests.flatMap((r) => r.events.filter((e): e is ParsedAlert => e.kind === 'alert').map((a) => `${r.tenantId}:${a.fingerprint}`)),
      ]),
    ].sort();
    const alertCount = (r: IngestRequest) => r.events.filter((e) => e.kind === 'alert').length;
    const quotaTenants = [...new Set(requests.filter((r) => alertCount(r) > 0).map((r) => r.tenantId))].sort();
    // The open incidents of every fingerprint in the batch (a superset of what is written): read
    // after the locks, in the same round trip.
    const wanted = new Map<string, { tenantId: string; fingerprint: string }>();
    for (const r of requests) {
      for (const e of r.events) if (e.kind === 'alert') wanted.set(`${r.tenantId}:${e.fingerprint}`, { tenantId: r.tenantId, fingerprint: e.fingerprint });
    }
    const wantedList = [...wanted.values()];
    // The topology nodes the batch's alerts name, for the ownership of incidents it opens.
    const named = new Map<string, { tenantId: string; name: string }>();
    for (const r of requests) {
      for (const e of r.events) if (e.kind === 'alert' && e.service) named.set(`${r.tenantId}:${e.service}`, { tenantId: r.tenantId, name: e.service });
    }
    const namedList = [...named.values()];
    open = true;
    const [, credentialRows, , previous, , counters, openRows, serviceRows] = await Promise.all([
      tx`begin`,
      webhookCredentialsQuery(tx, requests.map((r) => ({ tenantId: r.tenantId, keyHash: r.keyHash }))),
      tx`select pg_advisory_xact_lock(hashtextextended(k, 0)) from unnest(${lockKeys}::text[]) with ordinality as l(k, n) order by n`,
      tx<{ tenant_id: string; provider: string; delivery_key: string; response: IngestResult | null; fresh: boolean }[]>`
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
        ? tx<{ tenant_id: string; count: number }[]>`
            select tenant_id, count from usage_counters
            where tenant_id = any(${quotaTenants}::text[]) and period = ${period} and metric = 'events'
            order by tenant_id for update`
        : Promise.resolve([] as { tenant_id: string; count: number }[]),
      wantedList.length > 0
        ? tx<{ id: string; tenant_id: string; fingerprint: string; recovered: boolean }[]>`
            select distinct on (i.tenant_id, i.fingerprint) i.id, i.tenant_id, i.fingerprint, i.recovered_at is not null as recovered
            from incidents i
            join unnest(${wantedList.map((w) => w.tenantId)}::text[], ${wantedList.map((w) => w.fingerprint)}::text[]) as k(tenant_id, fingerprint)
              on i.tenant_id = k.tenant_id and i.fingerprint = k.fingerprint
            where i.status not in ('resolved', 'closed')
            order by i.tenant_id, i.fingerprint, i.created_at desc`
        : Promise.resolve([] as { id: string; tenant_id: string; fingerprint: string; recovered: boolean }[]),
      namedList.length > 0
        ? tx<{ id: string; tenant_id: string; name: string; team: string | null; criticality: number }[]>`
            select s.id, s.tenant_id, s.name, s.team, s.criticality
            from services s
            join unnest(${namedList.map((n) => n.tenantId)}::text[], ${namedList.map((n) => n.name)}::text[]) as k(tenant_id, name)
              on s.tenant_id = k.tenant_id and s.name = k.name`
        : Promise.resolve([] as { id: string; tenant_id: string; name: string; team: string | null; criticality: number }[]),
    ]);
    const ownerships = new Map<string, Ownership>();
    for (const row of serviceRows) ownerships.set(`${row.tenant_id}:${row.name}`, ownershipOf(row));
    const ownershipFor = (c: IncidentChange) => (c.first!.service ? ownerships.get(`${c.tenantId}:${c.first!.service}`) : undefined);
    const openIncidents = new Map<string, string>();
    // Whether each open incident's alert last said "resolved" (stored state, then this batch's).
    const recovered = new Map<string, boolean>();
    for (const row of openRows) {
      openIncidents.set(`${row.tenant_id}:${row.fingerprint}`, row.id);
      recovered.set(row.id, row.recovered);
    }
    const used = new Map<string, { before: number; after: number; limit: number | null }>();
    for (const row of counters) used.set(row.tenant_id, { before: row.count, after: row.count, limit: null });

    // 2. Each request's key is judged (tenant, revocation, signature, rate limit) before anything
    //    else: a refused request is neither written nor answered from a delivery seen before.
    //    The first authorised request of each delivery key is the one written; a delivery key
    //    seen before answers with its first result; the same body after the replay window is a
    //    new delivery (its row is overwritten when it is written).
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
    for (const row of previous) {
      const index = firstOfKey.get(`${row.tenant_id}\u0000${row.provider}\u0000${row.delivery_key}`);
      if (index !== undefined && row.response && (row.delivery_key.startsWith('id:') || row.fresh)) outcomes[index] = { result: row.response, replayed: true };
    }
    const toWrite = [...firstOfKey.values()].filter((i) => outcomes[i] === undefined).sort((a, b) => a - b);

    // 3. Monthly event quota, per tenant, delivery by delivery in arrival order. Every alert
    //    counts; a delivery is refused only when its firing alerts do not fit, and one that
    //    carries a recovery only when the firing alerts that would open an incident do not fit
    //    (Alertmanager sends a group's still-firing alerts with the one that resolved). Refusing
    //    recoveries left incidents open that the tool says are over until the month ended
    //    (decision 218).
    const accepted: number[] = [];
    for (const i of toWrite) {
      const request = requests[i]!;
      const alerts = request.events.filter((e) => e.kind === 'alert');
      if (alerts.length > 0) {
        const counter = used.get(request.tenantId)!;
        counter.limit = monthlyQuota(admitted.get(i)!, 'events');
        const firingAlerts = alerts.filter((e) => e.status === 'firing');
        const firing = alerts.some((e) => e.status === 'resolved')
          ? firingAlerts.filter((e) => !openIncidents.has(`${request.tenantId}:${e.fingerprint}`)).length
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
    const writes: Array<Promise<unknown>> = [];

    // 5. Decide, event by event in arrival order.
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
            const change =
              changes.get(existing) ??
              { id: existing, isNew: false, tenantId: request.tenantId, fingerprint: event.fingerprint, occurrences: 0, lastSeenAt: null };
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

    // 6. Write it all in one pipelined round trip, one statement per table.
    const created = [...changes.values()].filter((c) => c.isNew);
    const updated = [...changes.values()].filter((c) => !c.isNew).sort((a, b) => (a.id < b.id ? -1 : 1));
    if (created.length > 0) {
      writes.push(tx`
        insert into incidents (id, tenant_id, title, description, severity, status, source, fingerprint, service, occurrence_count, last_seen_at, recovered_at,
                               service_id, owner_team, immediate_attention)
        select id, tenant_id, title, description, severity, 'open', 'automated', fingerprint, service, occurrences, last_seen_at, recovered_at,
               service_id, owner_team, immediate_attention
        from unnest(
          ${created.map((c) => c.id)}::text[], ${created.map((c) => c.tenantId)}::text[], ${created.map((c) => c.first!.title)}::text[],
          ${created.map((c) => c.first!.description)}::text[], ${created.map((c) => c.first!.severity)}::text[],
          ${created.map((c) => c.fingerprint)}::text[], ${created.map((c) => c.first!.service)}::text[],
          ${created.map((c) => String(c.occurrences))}::text[]::int[], ${created.map((c) => iso(c.lastSeenAt))}::text[]::timestamptz[],
          ${created.map((c) => iso(c.recovery?.recoveredAt))}::text[]::timestamptz[],
          ${created.map((c) => ownershipFor(c)?.serviceId ?? null)}::text[], ${created.map((c) => ownershipFor(c)?.ownerTeam ?? null)}::text[],
          ${created.map((c) => String(ownershipFor(c)?.immediateAttention ?? false))}::text[]::boolean[]
        ) as n(id, tenant_id, title, description, severity, fingerprint, service, occurrences, last_seen_at, recovered_at, service_id, owner_team, immediate_attention)`);
      const audited = [...created].sort((a, b) => (a.tenantId < b.tenantId ? -1 : a.tenantId > b.tenantId ? 1 : 0));
      writes.push(tx`
        insert into audit_log (id, tenant_id, actor_type, actor_id, action, target_type, target_id, incident_id, request_id, details)
        select a.id, a.tenant_id, 'api_key', a.actor_id, 'incident.created', 'incident', a.incident_id, a.incident_id, a.request_id, a.details::jsonb
        from unnest(
          ${audited.map(() => newId('aud', now.getTime()))}::text[], ${audited.map((c) => c.tenantId)}::text[], ${audited.map((c) => c.keyId!)}::text[],
          ${audited.map((c) => c.id)}::text[], ${audited.map((c) => c.requestId!)}::text[],
          ${audited.map((c) => JSON.stringify({ provider: c.provider, fingerprint: c.fingerprint, eventId: c.firstEventId }))}::text[]
        ) with ordinality as a(id, tenant_id, actor_id, incident_id, request_id, details, ord)
        order by a.ord`);
    }
    if (updated.length > 0) {
      writes.push(tx`
        update incidents i set
          occurrence_count = i.occurrence_count + u.occurrences,
          last_seen_at = coalesce(greatest(i.last_seen_at, u.last_seen_at), i.last_seen_at, u.last_seen_at),
          recovered_at = case when u.recovery_known then u.recovered_at else i.recovered_at end
        from unnest(
          ${updated.map((c) => c.id)}::text[], ${updated.map((c) => String(c.occurrences))}::text[]::int[], ${updated.map((c) => iso(c.lastSeenAt))}::text[]::timestamptz[],
          ${updated.map((c) => String(c.recovery !== undefined))}::text[]::boolean[], ${updated.map((c) => iso(c.recovery?.recoveredAt))}::text[]::timestamptz[]
        ) as u(id, occurrences, last_seen_at, recovery_known, recovered_at)
        where i.id = u.id`);
    }
    if (eventRows.length > 0) {
      const col = (name: string) => eventRows.map((r) => r[name] as string | null);
      writes.push(tx`
        insert into ingested_events (id, tenant_id, provider, kind, status, fingerprint, alert_name, service, severity, title, description, labels, raw, occurred_at, incident_id, delivered_at)
        select id, tenant_id, provider, kind, status, fingerprint, alert_name, service, severity, title, description, labels::jsonb, raw::jsonb, occurred_at, incident_id, delivered_at
        from unnest(
          ${col('id')}::text[], ${col('tenant_id')}::text[], ${col('provider')}::text[], ${col('kind')}::text[], ${col('status')}::text[],
          ${col('fingerprint')}::text[], ${col('alert_name')}::text[], ${col('service')}::text[], ${col('severity')}::text[],
          ${col('title')}::text[], ${col('description')}::text[], ${col('labels')}::text[], ${col('raw')}::text[],
          ${col('occurred_at')}::text[]::timestamptz[], ${col('incident_id')}::text[], ${col('delivered_at')}::text[]::timestamptz[]
        ) as e(id, tenant_id, provider, kind, status, fingerprint, alert_name, service, severity, title, description, labels, raw, occurred_at, incident_id, delivered_at)`);
    }

    // Outbox: incident.created for each opened incident, and quota warnings once per month.
    // The set-based twin of appendEvent (src/db/repositories/events.ts), for the hot path: keep
    // the two in step (columns, idempotency key).
    const outbox: Array<{ tenantId: string; type: string; incidentId: string | null; payload: Record<string, unknown>; key: string }> = created.map((c) => ({
      tenantId: c.tenantId,
      type: 'incident.created',
      incidentId: c.id,
      payload: {
        incidentId: c.id,
        title: c.first!.title,
        severity: c.first!.severity,
        source: 'automated',
        provider: c.provider,
        ...ownershipPayload(c.first!.service, ownershipFor(c)),
      },
      key: `${c.id}:incident.created`,
    }));
    for (const [tenantId, counter] of used) {
      if (counter.limit === null) continue;
      for (const percent of quotaWarningsCrossed(counter.before, counter.after, counter.limit)) {
        outbox.push({
          tenantId,
          type: 'system.quota_warning',
          incidentId: null,
          payload: { metric: 'events', period, used: counter.after, limit: counter.limit, percent },
          key: quotaWarningKey(tenantId, period, 'events', percent),
        });
      }
    }
    if (outbox.length > 0) {
      // Listeners are notified at commit by the sealing trigger (`tenantId:streamSeq`).
      writes.push(tx`
        insert into events (id, tenant_id, type, incident_id, payload, idempotency_key, occurred_at)
        select id, tenant_id, type, incident_id, payload::jsonb, idempotency_key, ${now.toISOString()}::timestamptz
        from unnest(
          ${outbox.map(() => newId('oev', now.getTime()))}::text[], ${outbox.map((o) => o.tenantId)}::text[], ${outbox.map((o) => o.type)}::text[],
          ${outbox.map((o) => o.incidentId)}::text[], ${outbox.map((o) => JSON.stringify(o.payload))}::text[], ${outbox.map((o) => o.key)}::text[]
        ) as o(id, tenant_id, type, incident_id, payload, idempotency_key)
        on conflict (idempotency_key) do nothing`);
    }
    // The sealing triggers (audit chain, event stream) lock each tenant's commit head at commit.
    // A batch spanning tenants takes those locks here first, in tenant order, so two batches
    // (on two api processes) never wait on each other in a cycle.
    const sealed = [...new Set([...created.map((c) => c.tenantId), ...outbox.map((o) => o.tenantId)])].sort();
    if (sealed.length > 1) {
      writes.push(tx`
        insert into audit_chain_heads (tenant_id, last_seq, last_hash)
        select t, 0, repeat('0', 64) from unnest(${sealed}::text[]) with ordinality as h(t, n) order by n
        on conflict (tenant_id) do nothing`);
      writes.push(tx`select 1 from audit_chain_heads where tenant_id = any(${sealed}::text[]) order by tenant_id for update`);
    }

    for (const [tenantId, counter] of used) {
      if (counter.after !== counter.before) {
        writes.push(tx`update usage_counters set count = ${counter.after} where tenant_id = ${tenantId} and period = ${period} and metric = 'events'`);
      }
    }
    // The deliveries written, each with the answer a retry gets. Refused ones leave nothing, so
    // the tool's retry is judged afresh.
    const written = accepted.map((i) => requests[i]!);
    if (written.length > 0) {
      writes.push(tx`
        insert into webhook_deliveries (tenant_id, provider, delivery_key, response)
        select tenant_id, provider, delivery_key, response::jsonb
        from unnest(
          ${written.map((r) => r.tenantId)}::text[], ${written.map((r) => r.provider)}::text[], ${written.map((r) => r.deliveryKey)}::text[],
          ${accepted.map((i) => JSON.stringify((outcomes[i] as IngestOutcome).result))}::text[]
        ) as r(tenant_id, provider, delivery_key, response)
        on conflict (tenant_id, provider, delivery_key) do update set response = excluded.response, created_at = now()`);
    }
    if (changes.size > 0) writes.push(tx`select pg_notify(${dispatchChannel}, '')`);
    // COMMIT rides in the same round trip: if a write fails, PostgreSQL turns it into a rollback
    // and the failed write rejects here.
    writes.push(tx`commit`);
    await Promise.all(writes);
    open = false;

    // Authorised duplicates of a key within this batch answer like their first.
    return requests.map((r, i) => {
      const own = outcomes[i];
      if (own) return own;
      const outcome = outcomes[firstOfKey.get(deliveryId(r))!]!;
      return outcome instanceof AppError ? outcome : { result: outcome.result, replayed: true };
    });
  } catch (err) {
    if (open) await tx`rollback`.catch(() => undefined);
    throw err;
  } finally {
    tx.release();
  }
}
