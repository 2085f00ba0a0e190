import type postgres from 'postgres';
import { groupingLockKey, RULE_ORIGIN_PREFIX } from '../correlation/grouping.js';
import type { Severity } from '../db/schema/incidents.js';
import { highestSeverity } from '../domain/severity.js';
import { ownershipOf } from '../domain/ownership.js';
import { usagePeriod } from '../domain/plans.js';
import { newId } from '../ids.js';
import { recordOf } from './alert-decisions.js';
import type { LiveAlertRow, ServiceRow } from './batch-reads.js';
import { queueBatchWrites } from './batch-writes.js';
import type { AlertRecord, IncidentChange } from './changes.js';
import type { ParsedAlert } from './types.js';

type HeldRow = LiveAlertRow & { provider: string; min_alerts: number; for_minutes: number; rule_active: boolean };
type FirstEventRow = {
  id: string;
  alert_name: string;
  title: string;
  description: string;
  labels: Record<string, string>;
  occurred_at: Date;
};

const MAX_TENANTS_PER_PASS = 50;

/**
 * Opens the incidents of rule groups whose held alerts have fired for the rule's `forMinutes`
 * (and number `minAlerts`) with no delivery since to release them: a tool repeats a firing alert
 * only every few hours. A group whose rule was disabled or deleted opens too. Returns the
 * incidents opened.
 */
export async function releaseHeldAlerts(sql: postgres.Sql, now = new Date()): Promise<number> {
  const due = await sql<Array<{ tenant_id: string }>>`
    select distinct a.tenant_id from alerts a
    left join correlation_rules r on r.id = a.rule_id
    where a.state = 'pending' and a.status = 'firing'
      and (r.id is null or not r.enabled
        or (r.for_minutes > 0 and a.first_seen_at <= ${now.toISOString()}::timestamptz - make_interval(mins => r.for_minutes)))
    limit ${MAX_TENANTS_PER_PASS}`;
  let opened = 0;
  for (const { tenant_id } of due) opened += await releaseTenant(sql, tenant_id, now);
  return opened;
}

/** One tenant's due groups, in one transaction under its grouping lock (as a webhook batch takes). */
async function releaseTenant(sql: postgres.Sql, tenantId: string, now: Date): Promise<number> {
  const tx = await sql.reserve();
  let open = false;
  try {
    open = true;
    const [, , held] = await Promise.all([
      tx`begin`,
      tx`select pg_advisory_xact_lock(hashtextextended(${groupingLockKey(tenantId)}, 0))`,
      tx<HeldRow[]>`
        select a.id, a.tenant_id, a.fingerprint, a.incident_id, a.state, a.status, a.rule_id, a.origins, a.transitions,
               a.flapping, a.first_seen_at, a.last_seen_at, a.occurrence_count, a.service, a.severity, a.provider,
               r.min_alerts, r.for_minutes, coalesce(r.enabled, false) as rule_active
        from alerts a left join correlation_rules r on r.id = a.rule_id
        where a.tenant_id = ${tenantId} and a.state = 'pending' and a.status = 'firing'
        order by a.first_seen_at, a.id`,
    ]);
    const groups = new Map<string, HeldRow[]>();
    for (const row of held) {
      const key = row.origins.find((o) => o.startsWith(RULE_ORIGIN_PREFIX));
      if (key) groups.set(key, [...(groups.get(key) ?? []), row]);
    }
    // A group whose rule was disabled or deleted holds nothing any more: it opens now.
    const due = [...groups.values()].filter((rows) => {
      const rule = rows[0]!;
      if (!rule.rule_active) return true;
      const count = rows.reduce((sum, r) => sum + r.occurrence_count, 0);
      const age = now.getTime() - new Date(rows[0]!.first_seen_at).getTime();
      return count >= rule.min_alerts && age >= rule.for_minutes * 60_000;
    });
    if (due.length === 0) {
      await tx`commit`;
      open = false;
      return 0;
    }
    const firstIds = due.map((rows) => rows[0]!.id);
    const [firstEvents, serviceRows] = await Promise.all([
      tx<Array<FirstEventRow & { alert_id: string }>>`
        select distinct on (alert_id) alert_id, id, alert_name, title, description, labels, occurred_at
        from ingested_events where alert_id = any(${firstIds}::text[])
        order by alert_id, received_at desc, id desc`,
      tx<ServiceRow[]>`
        select id, tenant_id, name, team, criticality from services
        where tenant_id = ${tenantId} and name = any(${[...new Set(due.map((rows) => rows[0]!.service ?? ''))]}::text[])`,
    ]);
    const changes = new Map<string, IncidentChange>();
    const records: AlertRecord[] = [];
    for (const rows of due) {
      const first = firstEvents.find((e) => e.alert_id === rows[0]!.id);
      if (!first) continue;
      const change = incidentOf(rows, first, tenantId, now);
      changes.set(change.id, change);
      for (const row of rows) {
        records.push({
          ...recordOf(row),
          state: 'grouped',
          incidentId: change.id,
          correlation: { reason: 'rule', ruleId: row.rule_id! },
          lastSeenAt: now,
        });
      }
    }
    const ownerships = new Map(serviceRows.map((row) => [row.name, ownershipOf(row)]));
    const writes = queueBatchWrites(tx, {
      requests: [],
      accepted: [],
      outcomes: [],
      changes,
      alerts: records,
      released: records,
      ruleMatches: new Map(),
      eventRows: [],
      used: new Map(),
      period: usagePeriod(now),
      now,
      ownershipFor: (c) => (c.first!.service ? ownerships.get(c.first!.service) : undefined),
    });
    writes.push(tx`commit`);
    await Promise.all(writes);
    open = false;
    return changes.size;
  } catch (err) {
    if (open) await tx`rollback`.catch(() => undefined);
    throw err;
  } finally {
    tx.release();
  }
}

/** The incident a released group opens: its oldest alert's title and text, its highest severity. */
function incidentOf(rows: HeldRow[], first: FirstEventRow, tenantId: string, now: Date): IncidentChange {
  const oldest = rows[0]!;
  const [top, ...rest] = rows.map((r) => r.severity as Severity);
  const severity = highestSeverity(top!, ...rest);
  const alert: ParsedAlert = {
    kind: 'alert',
    status: 'firing',
    fingerprint: oldest.fingerprint,
    alertName: first.alert_name,
    service: oldest.service,
    severity,
    title: first.title,
    description: first.description,
    labels: first.labels,
    occurredAt: new Date(first.occurred_at),
    rawJson: '{}',
  };
  return {
    id: newId('inc', now.getTime()),
    isNew: true,
    tenantId,
    fingerprint: oldest.fingerprint,
    first: alert,
    firstEventId: first.id,
    provider: oldest.provider,
    occurrences: rows.reduce((sum, r) => sum + r.occurrence_count, 0),
    lastSeenAt: now,
    severity,
  };
}
