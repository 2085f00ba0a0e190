import type postgres from 'postgres';
import { groupingLockKey } from '../correlation/grouping.js';
import { webhookCredentialsQuery } from '../db/repositories/api-keys.js';
import type { AlertState, RuleAction, RuleMatch } from '../db/schema/correlation.js';
import { BODY_REPLAY_WINDOW_MS, type IngestRequest, type IngestResult } from './ingest.js';
import type { ParsedAlert } from './types.js';

export const deliveryId = (r: IngestRequest) => `${r.tenantId}\u0000${r.provider}\u0000${r.deliveryKey}`;
export const alertCount = (r: IngestRequest) => r.events.filter((e) => e.kind === 'alert').length;

/** Minutes after an open incident's latest alert in which a related alert joins it, unless set. */
export const DEFAULT_CORRELATION_WINDOW_MINUTES = 10;
/**
 * The most recently active open incidents of a tenant a batch considers joining: an outage's
 * incidents are the ones alerting now, and every batch reads these on the hot path.
 */
const MAX_CANDIDATE_INCIDENTS = 100;
/**
 * An incident is related to by its first alerts: the outage's core. Reading every alert of every
 * candidate on each batch took ingestion from 1,333 to 495 events/s once a storm's incidents held
 * hundreds of alerts, and an incident that grew by its latest members drew in their neighbours.
 */
const CORE_ALERTS_PER_INCIDENT = 30;

/** What the first round trip reads and locks, worked out from the requests alone. */
export interface ReadPlan {
  /** The first request of each delivery key. */
  keyed: IngestRequest[];
  lockKeys: string[];
  /** Tenants whose requests carry alerts, sorted. */
  alertTenants: string[];
  wantedList: Array<{ tenantId: string; fingerprint: string }>;
  namedList: Array<{ tenantId: string; name: string }>;
}

export function planReads(requests: IngestRequest[]): ReadPlan {
  const distinctKeys = new Map<string, IngestRequest>();
  for (const r of requests) if (!distinctKeys.has(deliveryId(r))) distinctKeys.set(deliveryId(r), r);
  const keyed = [...distinctKeys.values()];
  const alertTenants = [...new Set(requests.filter((r) => alertCount(r) > 0).map((r) => r.tenantId))].sort();
  // One lock per tenant with alerts orders the grouping decisions of batches on several api
  // processes (only one batch per process is in flight, so it costs nothing within one).
  const lockKeys = [
    ...new Set([
      ...keyed.map((r) => `delivery:${r.tenantId}:${r.provider}:${r.deliveryKey}`),
      ...alertTenants.map(groupingLockKey),
    ]),
  ].sort();
  const wanted = new Map<string, { tenantId: string; fingerprint: string }>();
  const named = new Map<string, { tenantId: string; name: string }>();
  for (const r of requests) {
    for (const e of r.events) {
      if (e.kind !== 'alert') continue;
      wanted.set(`${r.tenantId}:${e.fingerprint}`, { tenantId: r.tenantId, fingerprint: e.fingerprint });
      if (e.service) named.set(`${r.tenantId}:${e.service}`, { tenantId: r.tenantId, name: e.service });
    }
  }
  return { keyed, lockKeys, alertTenants, wantedList: [...wanted.values()], namedList: [...named.values()] };
}

export type PreviousDelivery = {
  tenant_id: string;
  provider: string;
  delivery_key: string;
  response: IngestResult | null;
  fresh: boolean;
};
/** A tenant's monthly event counter and the event credits bought for the period. */
export type CounterRow = { tenant_id: string; count: number; credits: number };
export type ServiceRow = { id: string; tenant_id: string; name: string; team: string | null; criticality: number };
/** The live record of an alert: grouped in an open incident, held, suppressed or a test. */
export type LiveAlertRow = {
  id: string;
  tenant_id: string;
  fingerprint: string;
  incident_id: string | null;
  state: AlertState;
  status: 'firing' | 'resolved';
  rule_id: string | null;
  origins: string[];
  transitions: string[];
  flapping: boolean;
  first_seen_at: Date;
  last_seen_at: Date;
  occurrence_count: number;
  service: string | null;
  severity: string;
};
/** One of the first alerts of an open incident in the correlation window. */
export type CandidateRow = {
  tenant_id: string;
  incident_id: string;
  alert_id: string;
  service: string | null;
  origins: string[];
  last_seen_ms: string;
};
export type RuleRow = {
  id: string;
  tenant_id: string;
  name: string;
  order: number;
  created_at: Date;
  enabled: boolean;
  match: RuleMatch;
  group_by: string[];
  min_alerts: number;
  for_minutes: number;
  action: RuleAction;
  active_from: Date | null;
  active_until: Date | null;
};
export type VersionRow = { tenant_id: string; version: string };

export interface BatchReads {
  credentialRows: Awaited<ReturnType<typeof webhookCredentialsQuery>>;
  previous: PreviousDelivery[];
  counters: CounterRow[];
  liveRows: LiveAlertRow[];
  serviceRows: ServiceRow[];
  candidateRows: CandidateRow[];
  ruleRows: RuleRow[];
  pendingRows: LiveAlertRow[];
  versionRows: VersionRow[];
}

const liveColumns = (tx: postgres.Sql) =>
  tx`a.id, a.tenant_id, a.fingerprint, a.incident_id, a.state, a.status, a.rule_id, a.origins, a.transitions, a.flapping,
     a.first_seen_at, a.last_seen_at, a.occurrence_count, a.service, a.severity`;

/**
 * The first round trip, pipelined in this order: BEGIN, the API keys presented (each counted in
 * its tenant's webhook rate-limit window), the advisory locks of the batch's delivery keys and
 * tenants (one sorted set, so concurrent batches on several api processes never wait on each
 * other in a cycle), the deliveries seen before, the quota counters (sorted, `for update`), the
 * live alert records of the batch's fingerprints, the services its alerts name, and what grouping
 * needs: the open incidents in each tenant's correlation window, its rules, its held alerts and
 * its topology version. Until the keys are judged this covers every request, authorised or not;
 * it only reads and locks, and nothing of a refused request is written or answered from what it
 * read. A delivery is recorded, with its answer, only in the second round trip: the lock on its
 * key keeps a concurrent batch from answering it meanwhile.
 */
export async function readAndLock(
  tx: postgres.Sql,
  requests: IngestRequest[],
  plan: ReadPlan,
  period: string,
  now: Date,
): Promise<BatchReads> {
  const { keyed, lockKeys, alertTenants, wantedList, namedList } = plan;
  const none = <T>() => Promise.resolve([] as T[]);
  const grouping = alertTenants.length > 0;
  const [
    ,
    credentialRows,
    ,
    previous,
    ,
    counters,
    liveRows,
    serviceRows,
    candidateRows,
    ruleRows,
    pendingRows,
    versionRows,
  ] = await Promise.all([
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
    grouping
      ? tx`
            insert into usage_counters (tenant_id, period, metric, count)
            select t.id, ${period}, 'events', 0 from tenants t where t.id = any(${alertTenants}::text[])
            order by t.id
            on conflict do nothing`
      : none(),
    grouping
      ? tx<CounterRow[]>`
            select tenant_id, count, credits from usage_counters
            where tenant_id = any(${alertTenants}::text[]) and period = ${period} and metric = 'events'
            order by tenant_id for update`
      : none<CounterRow>(),
    wantedList.length > 0
      ? tx<LiveAlertRow[]>`
            select distinct on (a.tenant_id, a.fingerprint) ${liveColumns(tx)}
            from alerts a
            join unnest(${wantedList.map((w) => w.tenantId)}::text[], ${wantedList.map((w) => w.fingerprint)}::text[]) as k(tenant_id, fingerprint)
              on a.tenant_id = k.tenant_id and a.fingerprint = k.fingerprint
            left join incidents i on i.id = a.incident_id
            where (a.state = 'grouped' and i.status not in ('resolved', 'closed')) or a.state in ('pending', 'suppressed', 'test')
            order by a.tenant_id, a.fingerprint, a.last_seen_at desc`
      : none<LiveAlertRow>(),
    namedList.length > 0
      ? tx<ServiceRow[]>`
            select s.id, s.tenant_id, s.name, s.team, s.criticality
            from services s
            join unnest(${namedList.map((n) => n.tenantId)}::text[], ${namedList.map((n) => n.name)}::text[]) as k(tenant_id, name)
              on s.tenant_id = k.tenant_id and s.name = k.name`
      : none<ServiceRow>(),
    grouping
      ? tx<CandidateRow[]>`
            select i.tenant_id, i.id as incident_id, a.id as alert_id, a.service, a.origins,
                   (extract(epoch from i.last_seen_at) * 1000)::bigint::text as last_seen_ms
            from tenants t
            cross join lateral (
              select i.id, i.tenant_id, i.last_seen_at from incidents i
              where i.tenant_id = t.id and i.fingerprint is not null and i.status not in ('resolved', 'closed')
                and i.last_seen_at > ${now.toISOString()}::timestamptz - make_interval(mins =>
                  coalesce((t.settings->>'correlationWindowMinutes')::int, ${DEFAULT_CORRELATION_WINDOW_MINUTES}))
              order by i.last_seen_at desc limit ${MAX_CANDIDATE_INCIDENTS}
            ) i
            cross join lateral (
              select a.id, a.service, a.origins from alerts a
              where a.incident_id = i.id and a.state = 'grouped'
              order by a.first_seen_at, a.id limit ${CORE_ALERTS_PER_INCIDENT}
            ) a
            where t.id = any(${alertTenants}::text[])
              and coalesce((t.settings->>'correlationWindowMinutes')::int, ${DEFAULT_CORRELATION_WINDOW_MINUTES}) > 0`
      : none<CandidateRow>(),
    grouping
      ? tx<RuleRow[]>`
            select id, tenant_id, name, "order", created_at, enabled, match, group_by, min_alerts, for_minutes, action, active_from, active_until
            from correlation_rules where tenant_id = any(${alertTenants}::text[]) and enabled`
      : none<RuleRow>(),
    grouping
      ? tx<LiveAlertRow[]>`
            select ${liveColumns(tx)} from alerts a
            where a.tenant_id = any(${alertTenants}::text[]) and a.state = 'pending'
            order by a.first_seen_at limit 10000`
      : none<LiveAlertRow>(),
    grouping
      ? tx<
          VersionRow[]
        >`select tenant_id, version::text from topology_versions where tenant_id = any(${alertTenants}::text[])`
      : none<VersionRow>(),
  ]);
  return {
    credentialRows,
    previous,
    counters,
    liveRows,
    serviceRows,
    candidateRows,
    ruleRows,
    pendingRows,
    versionRows,
  };
}

/** The dependency edges of tenants whose cached graph is out of date, by service name. */
export function readEdges(tx: postgres.Sql, tenantIds: string[]) {
  return tx<Array<{ tenant_id: string; source: string; target: string }>>`
    select e.tenant_id, s.name as source, t.name as target
    from service_edges e
    join services s on s.id = e.source_service_id
    join services t on t.id = e.target_service_id
    where e.tenant_id = any(${tenantIds}::text[])`;
}

export type { ParsedAlert };
