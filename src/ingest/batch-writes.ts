import type postgres from 'postgres';
import { ownershipPayload, type Ownership } from '../domain/ownership.js';
import { quotaWarningKey, quotaWarningsCrossed } from '../domain/plans.js';
import type { AppError } from '../errors.js';
import { newId } from '../ids.js';
import type { NewEvent } from '../outbox/events.js';
import { dispatchChannel } from '../outbox/append.js';
import type { AlertRecord, IncidentChange } from './changes.js';
import type { IngestOutcome, IngestRequest } from './ingest.js';

/** Who opens an incident when a rule's held alerts have fired long enough, with no delivery. */
export const HELD_RELEASE_ACTOR = 'correlation-rule';

/** A tenant's monthly event count before and after this batch; `limit` once a request of it is judged. */
export interface QuotaCounter {
  before: number;
  after: number;
  limit: number | null;
}

/** What the batch decided, for its second round trip. */
export interface BatchDecisions {
  requests: IngestRequest[];
  /** The requests written, in arrival order; each has its outcome. */
  accepted: number[];
  outcomes: Array<IngestOutcome | AppError | undefined>;
  changes: Map<string, IncidentChange>;
  /** Alert records created or changed. */
  alerts: AlertRecord[];
  /** Held alerts released into an incident this batch opened. */
  released: AlertRecord[];
  /** Matches per correlation rule. */
  ruleMatches: Map<string, number>;
  eventRows: Array<Record<string, unknown>>;
  used: Map<string, QuotaCounter>;
  period: string;
  now: Date;
  ownershipFor: (c: IncidentChange) => Ownership | undefined;
}

type Writes = Array<Promise<unknown>>;

const iso = (d: Date | null | undefined) => (d ? d.toISOString() : null);

/**
 * The batch's writes, one set-based statement per table, in the order they are sent in one
 * pipelined round trip (the caller adds COMMIT): incidents opened (with their audit rows) and
 * updated, event rows, outbox events, the tenants' commit heads, usage counters, the deliveries
 * with their answers, and the dispatcher's NOTIFY.
 */
export function queueBatchWrites(tx: postgres.Sql, d: BatchDecisions): Writes {
  const writes: Writes = [];
  const created = [...d.changes.values()].filter((c) => c.isNew);
  const updated = [...d.changes.values()].filter((c) => !c.isNew).sort((a, b) => (a.id < b.id ? -1 : 1));
  if (created.length > 0) writes.push(...openIncidents(tx, created, d));
  writes.push(...writeAlerts(tx, d.alerts));
  if (updated.length > 0) writes.push(updateIncidents(tx, updated, d.now));
  if (d.eventRows.length > 0) writes.push(insertEventRows(tx, d.eventRows));
  if (d.released.length > 0) {
    writes.push(tx`
      update ingested_events e set incident_id = r.incident_id
      from unnest(${d.released.map((r) => r.id)}::text[], ${d.released.map((r) => r.incidentId!)}::text[]) as r(alert_id, incident_id)
      where e.alert_id = r.alert_id and e.incident_id is null`);
  }
  if (d.ruleMatches.size > 0) {
    const ids = [...d.ruleMatches.keys()].sort();
    writes.push(tx`
      update correlation_rules c set match_count = c.match_count + m.n, last_matched_at = ${d.now.toISOString()}::timestamptz
      from unnest(${ids}::text[], ${ids.map((id) => String(d.ruleMatches.get(id)))}::text[]::int[]) as m(id, n)
      where c.id = m.id`);
  }
  const outbox = outboxEvents(created, d);
  if (outbox.length > 0) writes.push(insertOutbox(tx, outbox, d.now));
  writes.push(...lockCommitHeads(tx, [...created, ...updated.filter((c) => c.severity !== undefined)], outbox));
  for (const [tenantId, counter] of d.used) {
    if (counter.after !== counter.before) {
      writes.push(
        tx`update usage_counters set count = ${counter.after} where tenant_id = ${tenantId} and period = ${d.period} and metric = 'events'`,
      );
    }
  }
  if (d.accepted.length > 0) writes.push(recordDeliveries(tx, d));
  if (d.changes.size > 0) writes.push(tx`select pg_notify(${dispatchChannel}, '')`);
  return writes;
}

/** The incidents the batch opens, and their `incident.created` audit rows in tenant order. */
function openIncidents(tx: postgres.Sql, created: IncidentChange[], d: BatchDecisions): Writes {
  const { now, ownershipFor } = d;
  const audited = [...created].sort((a, b) => (a.tenantId < b.tenantId ? -1 : a.tenantId > b.tenantId ? 1 : 0));
  return [
    tx`
      insert into incidents (id, tenant_id, title, description, severity, status, source, fingerprint, service, occurrence_count, last_seen_at, recovered_at,
                             service_id, owner_team, immediate_attention)
      select id, tenant_id, title, description, severity, 'open', 'automated', fingerprint, service, occurrences, last_seen_at, recovered_at,
             service_id, owner_team, immediate_attention
      from unnest(
        ${created.map((c) => c.id)}::text[], ${created.map((c) => c.tenantId)}::text[], ${created.map((c) => c.first!.title)}::text[],
        ${created.map((c) => c.first!.description)}::text[], ${created.map((c) => c.severity ?? c.first!.severity)}::text[],
        ${created.map((c) => c.fingerprint)}::text[], ${created.map((c) => c.first!.service)}::text[],
        ${created.map((c) => String(c.occurrences))}::text[]::int[], ${created.map((c) => iso(c.lastSeenAt))}::text[]::timestamptz[],
        ${created.map((c) => iso(c.recovery?.recoveredAt))}::text[]::timestamptz[],
        ${created.map((c) => ownershipFor(c)?.serviceId ?? null)}::text[], ${created.map((c) => ownershipFor(c)?.ownerTeam ?? null)}::text[],
        ${created.map((c) => String(ownershipFor(c)?.immediateAttention ?? false))}::text[]::boolean[]
      ) as n(id, tenant_id, title, description, severity, fingerprint, service, occurrences, last_seen_at, recovered_at, service_id, owner_team, immediate_attention)`,
    tx`
      insert into audit_log (id, tenant_id, actor_type, actor_id, action, target_type, target_id, incident_id, request_id, details)
      select a.id, a.tenant_id, a.actor_type, a.actor_id, 'incident.created', 'incident', a.incident_id, a.incident_id, a.request_id, a.details::jsonb
      from unnest(
        ${audited.map(() => newId('aud', now.getTime()))}::text[], ${audited.map((c) => c.tenantId)}::text[],
        ${audited.map((c) => (c.keyId ? 'api_key' : 'system'))}::text[], ${audited.map((c) => c.keyId ?? HELD_RELEASE_ACTOR)}::text[],
        ${audited.map((c) => c.id)}::text[], ${audited.map((c) => c.requestId ?? null)}::text[],
        ${audited.map((c) => JSON.stringify({ provider: c.provider, fingerprint: c.fingerprint, eventId: c.firstEventId }))}::text[]
      ) with ordinality as a(id, tenant_id, actor_type, actor_id, incident_id, request_id, details, ord)
      order by a.ord`,
  ];
}

/**
 * The open incidents the batch's alerts attach to (sorted by id): occurrences, last seen, a
 * severity raised to its highest alert's (with `incident.severity_changed`, reason `alert`), and
 * recovery: recovered once none of its alerts fires (read after this batch's alert records are
 * written, in the same round trip).
 */
function updateIncidents(tx: postgres.Sql, updated: IncidentChange[], now: Date): Promise<unknown> {
  const rank = tx`array['critical', 'high', 'medium', 'low']`;
  return tx`
    with u as (
      select * from unnest(
        ${updated.map((c) => c.id)}::text[], ${updated.map((c) => String(c.occurrences))}::text[]::int[], ${updated.map((c) => iso(c.lastSeenAt))}::text[]::timestamptz[],
        ${updated.map((c) => String(c.recovery !== undefined))}::text[]::boolean[], ${updated.map((c) => iso(c.recovery?.recoveredAt))}::text[]::timestamptz[],
        ${updated.map((c) => c.severity ?? null)}::text[], ${updated.map(() => newId('oev', now.getTime()))}::text[]
      ) as u(id, occurrences, last_seen_at, recovery_known, recovered_at, severity, event_id)
    ),
    before as (select i.id, i.severity from incidents i join u using (id)),
    changed as (
      update incidents i set
        occurrence_count = i.occurrence_count + u.occurrences,
        last_seen_at = coalesce(greatest(i.last_seen_at, u.last_seen_at), i.last_seen_at, u.last_seen_at),
        severity = case when u.severity is not null and array_position(${rank}, u.severity) < array_position(${rank}, i.severity)
          then u.severity else i.severity end,
        recovered_at = case
          when not u.recovery_known then i.recovered_at
          when exists (select 1 from alerts a where a.incident_id = i.id and a.state = 'grouped' and a.status = 'firing') then null
          else coalesce(i.recovered_at, u.recovered_at, now()) end
      from u where i.id = u.id
      returning i.id, i.tenant_id, i.severity, u.event_id
    )
    insert into events (id, tenant_id, type, incident_id, payload, idempotency_key, occurred_at)
    select c.event_id, c.tenant_id, 'incident.severity_changed', c.id,
           jsonb_build_object('incidentId', c.id, 'from', b.severity, 'to', c.severity, 'reason', 'alert'),
           c.id || ':severity_changed:' || c.event_id, ${now.toISOString()}::timestamptz
    from changed c join before b using (id)
    where c.severity <> b.severity
    order by c.tenant_id, c.id
    on conflict (idempotency_key) do nothing`;
}

/** New alert records, then the changed ones (counts, state, flapping, the incident they joined). */
function writeAlerts(tx: postgres.Sql, records: AlertRecord[]): Writes {
  const created = records.filter((r) => r.isNew);
  const changed = records.filter((r) => !r.isNew).sort((a, b) => (a.id < b.id ? -1 : 1));
  const writes: Writes = [];
  const json = (v: unknown) => (v === undefined ? null : JSON.stringify(v));
  if (created.length > 0) {
    writes.push(tx`
      insert into alerts (id, tenant_id, incident_id, state, provider, fingerprint, name, service, severity, status, title, labels,
                          origins, correlation, rule_id, first_seen_at, last_seen_at, occurrence_count, transitions, flapping)
      select id, tenant_id, incident_id, state, provider, fingerprint, name, service, severity, status, title, labels::jsonb,
             origins::jsonb, correlation::jsonb, rule_id, seen, seen, occurrences, '[]'::jsonb, false
      from unnest(
        ${created.map((r) => r.id)}::text[], ${created.map((r) => r.tenantId)}::text[], ${created.map((r) => r.incidentId)}::text[],
        ${created.map((r) => r.state)}::text[], ${created.map((r) => r.first!.provider)}::text[], ${created.map((r) => r.fingerprint)}::text[],
        ${created.map((r) => r.first!.alertName)}::text[], ${created.map((r) => r.service)}::text[], ${created.map((r) => r.severity!)}::text[],
        ${created.map((r) => r.status)}::text[], ${created.map((r) => r.first!.title)}::text[], ${created.map((r) => JSON.stringify(r.first!.labels))}::text[],
        ${created.map((r) => JSON.stringify(r.origins))}::text[], ${created.map((r) => json(r.correlation))}::text[], ${created.map((r) => r.ruleId)}::text[],
        ${created.map((r) => r.firstSeenAt.toISOString())}::text[]::timestamptz[], ${created.map((r) => String(r.occurrences))}::text[]::int[]
      ) as n(id, tenant_id, incident_id, state, provider, fingerprint, name, service, severity, status, title, labels, origins, correlation, rule_id, seen, occurrences)`);
  }
  if (changed.length > 0) {
    writes.push(tx`
      update alerts a set
        state = c.state, incident_id = c.incident_id, status = c.status, severity = coalesce(c.severity, a.severity),
        occurrence_count = c.occurrences, last_seen_at = c.last_seen_at, transitions = c.transitions::jsonb,
        flapping = c.flapping, correlation = coalesce(c.correlation::jsonb, a.correlation)
      from unnest(
        ${changed.map((r) => r.id)}::text[], ${changed.map((r) => r.state)}::text[], ${changed.map((r) => r.incidentId)}::text[],
        ${changed.map((r) => r.status)}::text[], ${changed.map((r) => r.severity ?? null)}::text[], ${changed.map((r) => String(r.occurrences))}::text[]::int[],
        ${changed.map((r) => r.lastSeenAt.toISOString())}::text[]::timestamptz[], ${changed.map((r) => JSON.stringify(r.transitions))}::text[],
        ${changed.map((r) => String(r.flapping))}::text[]::boolean[], ${changed.map((r) => json(r.correlation))}::text[]
      ) as c(id, state, incident_id, status, severity, occurrences, last_seen_at, transitions, flapping, correlation)
      where a.id = c.id`);
  }
  return writes;
}

function insertEventRows(tx: postgres.Sql, eventRows: Array<Record<string, unknown>>): Promise<unknown> {
  const col = (name: string) => eventRows.map((r) => r[name] as string | null);
  return tx`
    insert into ingested_events (id, tenant_id, provider, kind, status, fingerprint, alert_name, service, attribution, severity, title, description, labels, raw, occurred_at, incident_id, alert_id, delivered_at)
    select id, tenant_id, provider, kind, status, fingerprint, alert_name, service, attribution, severity, title, description, labels::jsonb, raw::jsonb, occurred_at, incident_id, alert_id, delivered_at
    from unnest(
      ${col('id')}::text[], ${col('tenant_id')}::text[], ${col('provider')}::text[], ${col('kind')}::text[], ${col('status')}::text[],
      ${col('fingerprint')}::text[], ${col('alert_name')}::text[], ${col('service')}::text[], ${col('attribution')}::text[], ${col('severity')}::text[],
      ${col('title')}::text[], ${col('description')}::text[], ${col('labels')}::text[], ${col('raw')}::text[],
      ${col('occurred_at')}::text[]::timestamptz[], ${col('incident_id')}::text[], ${col('alert_id')}::text[], ${col('delivered_at')}::text[]::timestamptz[]
    ) as e(id, tenant_id, provider, kind, status, fingerprint, alert_name, service, attribution, severity, title, description, labels, raw, occurred_at, incident_id, alert_id, delivered_at)`;
}

/** `incident.created` for each opened incident, and quota warnings once per month. */
function outboxEvents(created: IncidentChange[], d: BatchDecisions): NewEvent[] {
  const outbox: NewEvent[] = created.map((c) => ({
    tenantId: c.tenantId,
    type: 'incident.created',
    incidentId: c.id,
    payload: {
      incidentId: c.id,
      title: c.first!.title,
      severity: c.severity ?? c.first!.severity,
      source: 'automated',
      provider: c.provider,
      ...ownershipPayload(c.first!.service, d.ownershipFor(c)),
    },
    idempotencyKey: `${c.id}:incident.created`,
  }));
  for (const [tenantId, counter] of d.used) {
    if (counter.limit === null) continue;
    for (const percent of quotaWarningsCrossed(counter.before, counter.after, counter.limit)) {
      outbox.push({
        tenantId,
        type: 'system.quota_warning',
        incidentId: null,
        payload: { metric: 'events', period: d.period, used: counter.after, limit: counter.limit, percent },
        idempotencyKey: quotaWarningKey(tenantId, d.period, 'events', percent),
      });
    }
  }
  return outbox;
}

/**
 * The set-based twin of appendEvent (src/outbox/append.ts), for the hot path: keep the two in
 * step (columns, idempotency key). Listeners are notified at commit by the sealing trigger
 * (`tenantId:streamSeq`).
 */
function insertOutbox(tx: postgres.Sql, outbox: NewEvent[], now: Date): Promise<unknown> {
  return tx`
    insert into events (id, tenant_id, type, incident_id, payload, idempotency_key, occurred_at)
    select id, tenant_id, type, incident_id, payload::jsonb, idempotency_key, ${now.toISOString()}::timestamptz
    from unnest(
      ${outbox.map(() => newId('oev', now.getTime()))}::text[], ${outbox.map((o) => o.tenantId)}::text[], ${outbox.map((o) => o.type)}::text[],
      ${outbox.map((o) => o.incidentId ?? null)}::text[], ${outbox.map((o) => JSON.stringify(o.payload))}::text[], ${outbox.map((o) => o.idempotencyKey)}::text[]
    ) as o(id, tenant_id, type, incident_id, payload, idempotency_key)
    on conflict (idempotency_key) do nothing`;
}

/**
 * The sealing triggers (audit chain, event stream) lock each tenant's commit head at commit. A
 * batch spanning tenants takes those locks here first, in tenant order, so two batches (on two api
 * processes) never wait on each other in a cycle.
 */
function lockCommitHeads(tx: postgres.Sql, created: IncidentChange[], outbox: NewEvent[]): Writes {
  const sealed = [...new Set([...created.map((c) => c.tenantId), ...outbox.map((o) => o.tenantId)])].sort();
  if (sealed.length <= 1) return [];
  return [
    tx`
      insert into audit_chain_heads (tenant_id, last_seq, last_hash)
      select t, 0, repeat('0', 64) from unnest(${sealed}::text[]) with ordinality as h(t, n) order by n
      on conflict (tenant_id) do nothing`,
    tx`select 1 from audit_chain_heads where tenant_id = any(${sealed}::text[]) order by tenant_id for update`,
  ];
}

/**
 * The deliveries written, each with the answer a retry gets. Refused ones leave nothing, so the
 * tool's retry is judged afresh.
 */
function recordDeliveries(tx: postgres.Sql, d: BatchDecisions): Promise<unknown> {
  const written = d.accepted.map((i) => d.requests[i]!);
  return tx`
    insert into webhook_deliveries (tenant_id, provider, delivery_key, response)
    select tenant_id, provider, delivery_key, response::jsonb
    from unnest(
      ${written.map((r) => r.tenantId)}::text[], ${written.map((r) => r.provider)}::text[], ${written.map((r) => r.deliveryKey)}::text[],
      ${d.accepted.map((i) => JSON.stringify((d.outcomes[i] as IngestOutcome).result))}::text[]
    ) as r(tenant_id, provider, delivery_key, response)
    on conflict (tenant_id, provider, delivery_key) do update set response = excluded.response, created_at = now()`;
}
