import {
  CandidateIncident,
  chooseIncident,
  incidentOfRuleGroup,
  RULE_ORIGIN_PREFIX,
  SEPARATE_ORIGIN,
} from '../correlation/grouping.js';
import { compileRules, matchingRule, ruleGroupKey, type CompiledRule } from '../correlation/rules.js';
import type { TopologyGraph } from '../correlation/topology.js';
import type { AlertState, Correlation } from '../db/schema/correlation.js';
import type { Severity } from '../db/schema/incidents.js';
import { higherSeverity } from '../domain/severity.js';
import { newId } from '../ids.js';
import type { AlertRecord, IncidentChange } from './changes.js';
import type { BatchReads, LiveAlertRow } from './batch-reads.js';
import type { ParsedAlert } from './types.js';

/** More state changes than this in FLAP_WINDOW_MS mark an alert flapping (fired and recovered over 4 times). */
const FLAP_TRANSITIONS = 8;
const FLAP_WINDOW_MS = 30 * 60_000;
/** A flapping alert is stable again after this long without a state change. */
const FLAP_STABLE_MS = 15 * 60_000;
const TRANSITIONS_KEPT = 12;

/** Who sends the alert being decided, for the incident it may open. */
export interface Sender {
  tenantId: string;
  provider: string;
  keyId: string;
  requestId: string;
  /** The tenant groups related alerts (its correlation window is not 0). */
  grouping: boolean;
}

export interface AlertDecision {
  incidentId: string | null;
  alertId: string | null;
  /** False when the incident's workflow is to hear of this delivery (a signal). */
  delivered: boolean;
  opened: boolean;
  /** A repeat of an alert already recorded. */
  repeat: boolean;
}

export function recordOf(row: LiveAlertRow): AlertRecord {
  return {
    id: row.id,
    tenantId: row.tenant_id,
    fingerprint: row.fingerprint,
    incidentId: row.incident_id,
    state: row.state,
    status: row.status,
    ruleId: row.rule_id,
    origins: row.origins,
    transitions: row.transitions,
    flapping: row.flapping,
    firstSeenAt: new Date(row.first_seen_at),
    lastSeenAt: new Date(row.last_seen_at),
    occurrences: row.occurrence_count,
    service: row.service,
    severity: row.severity as Severity,
    isNew: false,
  };
}

/**
 * Decides, alert by alert in arrival order, what each alert is: a repeat counted on its record,
 * a test, suppressed or held by a rule, a member of an open incident it relates to, or the
 * first alert of a new incident. Holds what the batch knows and changes, for its writes.
 */
export class AlertDecider {
  readonly changes = new Map<string, IncidentChange>();
  /** Held alerts released into an incident: their earlier events move with them. */
  readonly released: AlertRecord[] = [];
  readonly ruleMatches = new Map<string, number>();
  private readonly live = new Map<string, AlertRecord>();
  private readonly touched = new Map<string, AlertRecord>();
  private readonly candidates = new Map<string, Map<string, CandidateIncident>>();
  private readonly rules = new Map<string, CompiledRule[]>();
  /** Held alerts by tenant and rule group. */
  private readonly held = new Map<string, AlertRecord[]>();

  constructor(
    reads: Pick<BatchReads, 'liveRows' | 'candidateRows' | 'ruleRows' | 'pendingRows'>,
    private readonly graphs: Map<string, TopologyGraph>,
    private readonly now: Date,
  ) {
    for (const row of reads.liveRows) this.live.set(`${row.tenant_id}:${row.fingerprint}`, recordOf(row));
    for (const row of reads.candidateRows) {
      const candidate = this.candidate(row.tenant_id, row.incident_id, Number(row.last_seen_ms));
      candidate.add(row.alert_id, row.service, row.origins);
    }
    const byTenant = new Map<string, BatchReads['ruleRows']>();
    for (const row of reads.ruleRows) byTenant.set(row.tenant_id, [...(byTenant.get(row.tenant_id) ?? []), row]);
    for (const [tenantId, rows] of byTenant) {
      this.rules.set(
        tenantId,
        compileRules(
          rows.map((r) => ({
            id: r.id,
            order: r.order,
            createdAt: new Date(r.created_at),
            enabled: r.enabled,
            match: r.match,
            groupBy: r.group_by,
            minAlerts: r.min_alerts,
            forMinutes: r.for_minutes,
            action: r.action,
            activeFrom: r.active_from ? new Date(r.active_from) : null,
            activeUntil: r.active_until ? new Date(r.active_until) : null,
          })),
        ),
      );
    }
    for (const row of reads.pendingRows) {
      const record = this.live.get(`${row.tenant_id}:${row.fingerprint}`) ?? recordOf(row);
      const group = record.origins.find((o) => o.startsWith(RULE_ORIGIN_PREFIX));
      if (group) this.holdIn(`${row.tenant_id}|${group}`, record);
    }
  }

  /** The records the batch created or changed. */
  records(): AlertRecord[] {
    return [...this.touched.values()];
  }

  /** Whether a firing alert of this fingerprint counts on an open incident already. */
  isGrouped(tenantId: string, fingerprint: string): boolean {
    return this.live.get(`${tenantId}:${fingerprint}`)?.state === 'grouped';
  }

  decide(sender: Sender, event: ParsedAlert, eventId: string): AlertDecision {
    const live = this.live.get(`${sender.tenantId}:${event.fingerprint}`);
    if (live?.state === 'grouped') return this.repeatGrouped(live, event);
    const rule = event.test ? undefined : this.ruleFor(sender, event);
    if (live && (live.state === 'test' || (live.state === 'suppressed' && rule?.id === live.ruleId))) {
      this.count(live, event);
      return { incidentId: null, alertId: live.id, delivered: true, opened: false, repeat: true };
    }
    if (live?.state === 'pending') return this.repeatHeld(sender, live, event, eventId, rule);
    if (event.test) return this.keep(sender, event, 'test', null, []);
    if (rule?.action === 'suppress') return this.keep(sender, event, 'suppressed', rule.id, []);
    // A recovery of an alert with no open incident opens nothing.
    if (event.status === 'resolved')
      return { incidentId: null, alertId: null, delivered: true, opened: false, repeat: false };
    const origins = event.origins ?? [];
    if (rule?.action === 'open_separately') {
      return this.open(
        sender,
        event,
        eventId,
        { reason: 'rule', ruleId: rule.id },
        [...origins, SEPARATE_ORIGIN],
        rule.id,
      );
    }
    if (rule) return this.byRule(sender, event, eventId, rule, origins);
    const choice = !sender.grouping
      ? undefined
      : chooseIncident(
          { service: event.service, origins },
          this.candidatesOf(sender.tenantId).values(),
          this.graphs.get(sender.tenantId),
        );
    if (choice) return this.join(sender, event, choice.incidentId, choice.correlation, origins, null);
    return this.open(sender, event, eventId, { reason: 'fingerprint' }, origins, null);
  }

  private ruleFor(sender: Sender, event: ParsedAlert): CompiledRule | undefined {
    const rules = this.rules.get(sender.tenantId);
    if (!rules || rules.length === 0) return undefined;
    const rule = matchingRule(
      rules,
      {
        provider: sender.provider,
        service: event.service,
        alertName: event.alertName,
        labels: event.labels,
        severity: event.severity,
      },
      this.now,
    );
    if (rule) this.ruleMatches.set(rule.id, (this.ruleMatches.get(rule.id) ?? 0) + 1);
    return rule;
  }

  private ruleKey(rule: CompiledRule, sender: Sender, event: ParsedAlert): string {
    const alert = {
      provider: sender.provider,
      service: event.service,
      alertName: event.alertName,
      labels: event.labels,
      severity: event.severity,
    };
    return `${RULE_ORIGIN_PREFIX}${ruleGroupKey(rule, alert)}`;
  }

  /** A rule groups its alerts by its own key; it holds them until enough have fired for long enough. */
  private byRule(sender: Sender, event: ParsedAlert, eventId: string, rule: CompiledRule, origins: string[]) {
    const key = this.ruleKey(rule, sender, event);
    const withKey = [...origins, key];
    const found = incidentOfRuleGroup(key, this.candidatesOf(sender.tenantId).values());
    if (found) {
      const correlation: Correlation = { reason: 'rule', ruleId: rule.id, relatedAlertId: found.relatedAlertId };
      return this.join(sender, event, found.candidate.incidentId, correlation, withKey, rule.id);
    }
    if (rule.minAlerts <= 1 && rule.forMinutes <= 0) {
      return this.open(sender, event, eventId, { reason: 'rule', ruleId: rule.id }, withKey, rule.id);
    }
    const decision = this.keep(sender, event, 'pending', rule.id, withKey);
    const record = this.touched.get(decision.alertId!)!;
    this.holdIn(`${sender.tenantId}|${key}`, record);
    return this.releaseIfDue(sender, event, eventId, rule, key) ?? decision;
  }

  private repeatHeld(
    sender: Sender,
    live: AlertRecord,
    event: ParsedAlert,
    eventId: string,
    rule: CompiledRule | undefined,
  ): AlertDecision {
    this.count(live, event);
    if (event.status === 'resolved') {
      // Held, then recovered before anything opened: it opens nothing.
      live.state = 'dropped';
      return { incidentId: null, alertId: live.id, delivered: true, opened: false, repeat: true };
    }
    const key = live.origins.find((o) => o.startsWith(RULE_ORIGIN_PREFIX));
    const released =
      rule && key && rule.id === live.ruleId ? this.releaseIfDue(sender, event, eventId, rule, key) : undefined;
    return released ?? { incidentId: null, alertId: live.id, delivered: true, opened: false, repeat: true };
  }

  /** Opens the incident of a rule group once its held alerts reach the rule's count and age. */
  private releaseIfDue(sender: Sender, event: ParsedAlert, eventId: string, rule: CompiledRule, key: string) {
    const group = (this.held.get(`${sender.tenantId}|${key}`) ?? []).filter(
      (r) => r.state === 'pending' && r.status === 'firing',
    );
    const count = group.reduce((sum, r) => sum + r.occurrences, 0);
    const oldest = Math.min(...group.map((r) => r.firstSeenAt.getTime()));
    if (group.length === 0 || count < rule.minAlerts || this.now.getTime() - oldest < rule.forMinutes * 60_000) {
      return undefined;
    }
    const incidentId = newId('inc', this.now.getTime());
    let severity: Severity | undefined;
    for (const record of group) {
      record.state = 'grouped';
      record.incidentId = incidentId;
      record.correlation = { reason: 'rule', ruleId: rule.id };
      this.touched.set(record.id, record);
      severity = higherSeverity(severity, (record.severity ?? event.severity) as Severity);
      this.released.push(record);
    }
    const current = this.live.get(`${sender.tenantId}:${event.fingerprint}`)!;
    this.startIncident(sender, event, eventId, incidentId, group, higherSeverity(severity, event.severity));
    return { incidentId, alertId: current.id, delivered: true, opened: true, repeat: false };
  }

  private repeatGrouped(live: AlertRecord, event: ParsedAlert): AlertDecision {
    const changed = live.status !== event.status;
    if (changed) this.transition(live);
    this.count(live, event);
    const incidentId = live.incidentId!;
    const change = this.changeOf(incidentId, live.tenantId, live.fingerprint);
    if (event.status === 'firing') {
      change.occurrences++;
      // When the service last saw it firing: a tool repeats an alert with its original start
      // time (Alertmanager, Grafana), so the alert's own time would never move.
      change.lastSeenAt = this.now;
      change.severity = higherSeverity(change.severity, event.severity);
      change.recovery = { recoveredAt: null };
      this.candidatesOf(live.tenantId).get(incidentId)?.touch(this.now.getTime());
    } else {
      // Whether the incident has recovered (none of its alerts fires) is worked out where it is written.
      change.recovery = { recoveredAt: event.occurredAt };
    }
    // The workflow hears of what changes the alert's state (a recovery, or firing again after
    // one), unless it flaps; a firing repeat changes only counts, so an alert storm costs
    // Temporal nothing.
    const delivered = live.flapping || (event.status === 'firing' && !changed);
    return { incidentId, alertId: live.id, delivered, opened: false, repeat: true };
  }

  /** Counts a state change; marks the alert flapping, or stable again after a quiet spell. */
  private transition(live: AlertRecord) {
    const now = this.now.getTime();
    const previous = live.transitions.at(-1);
    if (live.flapping && previous !== undefined && now - Date.parse(previous) >= FLAP_STABLE_MS) {
      live.flapping = false;
      live.transitions = [];
    }
    live.transitions = [
      ...live.transitions.filter((t) => now - Date.parse(t) < FLAP_WINDOW_MS),
      this.now.toISOString(),
    ];
    live.transitions = live.transitions.slice(-TRANSITIONS_KEPT);
    if (!live.flapping && live.transitions.length > FLAP_TRANSITIONS) live.flapping = true;
  }

  private count(live: AlertRecord, event: ParsedAlert) {
    live.status = event.status;
    if (event.status === 'firing') live.occurrences++;
    live.lastSeenAt = this.now;
    live.severity = event.severity;
    this.touched.set(live.id, live);
  }

  /** A new record that is in no incident: a test, suppressed or held. */
  private keep(sender: Sender, event: ParsedAlert, state: AlertState, ruleId: string | null, origins: string[]) {
    const record = this.newRecord(sender, event, state, null, ruleId, origins);
    return { incidentId: null, alertId: record.id, delivered: true, opened: false, repeat: false };
  }

  private join(
    sender: Sender,
    event: ParsedAlert,
    incidentId: string,
    correlation: Correlation,
    origins: string[],
    ruleId: string | null,
  ): AlertDecision {
    const record = this.newRecord(sender, event, 'grouped', incidentId, ruleId, origins);
    record.correlation = correlation;
    const candidate = this.candidatesOf(sender.tenantId).get(incidentId)!;
    candidate.add(record.id, event.service, origins);
    candidate.touch(this.now.getTime());
    const change = this.changeOf(incidentId, sender.tenantId, event.fingerprint);
    change.occurrences++;
    change.lastSeenAt = this.now;
    change.severity = higherSeverity(change.severity, event.severity);
    change.recovery = { recoveredAt: null };
    return { incidentId, alertId: record.id, delivered: false, opened: false, repeat: false };
  }

  private open(
    sender: Sender,
    event: ParsedAlert,
    eventId: string,
    correlation: Correlation,
    origins: string[],
    ruleId: string | null,
  ): AlertDecision {
    const incidentId = newId('inc', this.now.getTime());
    const record = this.newRecord(sender, event, 'grouped', incidentId, ruleId, origins);
    record.correlation = correlation;
    this.startIncident(sender, event, eventId, incidentId, [record], event.severity);
    return { incidentId, alertId: record.id, delivered: true, opened: true, repeat: false };
  }

  private startIncident(
    sender: Sender,
    event: ParsedAlert,
    eventId: string,
    incidentId: string,
    members: AlertRecord[],
    severity: Severity,
  ) {
    const candidate = this.candidate(sender.tenantId, incidentId, this.now.getTime());
    for (const member of members) candidate.add(member.id, member.service, member.origins);
    this.changes.set(incidentId, {
      id: incidentId,
      isNew: true,
      tenantId: sender.tenantId,
      fingerprint: event.fingerprint,
      first: event,
      firstEventId: eventId,
      keyId: sender.keyId,
      requestId: sender.requestId,
      provider: sender.provider,
      occurrences: members.reduce((sum, r) => sum + Math.max(1, r.occurrences), 0),
      lastSeenAt: this.now,
      severity,
    });
  }

  private newRecord(
    sender: Sender,
    event: ParsedAlert,
    state: AlertState,
    incidentId: string | null,
    ruleId: string | null,
    origins: string[],
  ): AlertRecord {
    const record: AlertRecord = {
      id: newId('alt', this.now.getTime()),
      tenantId: sender.tenantId,
      fingerprint: event.fingerprint,
      incidentId,
      state,
      status: event.status,
      ruleId,
      origins,
      transitions: [],
      flapping: false,
      firstSeenAt: this.now,
      lastSeenAt: this.now,
      occurrences: 1,
      service: event.service,
      isNew: true,
      first: { ...event, provider: sender.provider },
      severity: event.severity,
    };
    this.live.set(`${sender.tenantId}:${event.fingerprint}`, record);
    this.touched.set(record.id, record);
    return record;
  }

  private holdIn(groupKey: string, record: AlertRecord) {
    const group = this.held.get(groupKey) ?? [];
    if (!group.includes(record)) group.push(record);
    this.held.set(groupKey, group);
  }

  private candidatesOf(tenantId: string): Map<string, CandidateIncident> {
    let map = this.candidates.get(tenantId);
    if (!map) this.candidates.set(tenantId, (map = new Map()));
    return map;
  }

  private candidate(tenantId: string, incidentId: string, lastSeenAt: number): CandidateIncident {
    const map = this.candidatesOf(tenantId);
    let candidate = map.get(incidentId);
    if (!candidate) map.set(incidentId, (candidate = new CandidateIncident(incidentId, lastSeenAt)));
    return candidate;
  }

  private changeOf(incidentId: string, tenantId: string, fingerprint: string): IncidentChange {
    let change = this.changes.get(incidentId);
    if (!change) {
      change = { id: incidentId, isNew: false, tenantId, fingerprint, occurrences: 0, lastSeenAt: null };
      this.changes.set(incidentId, change);
    }
    return change;
  }
}
