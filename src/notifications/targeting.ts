/**
 * Who is notified of what (ADR 0259): a notification is what a person has to read, so an event
 * reaches only the people it needs, and each person's preferences take more away. The stream
 * still carries every event.
 */
import { and, inArray } from 'drizzle-orm';
import type { Db } from '../db/client.js';
import {
  DEFAULT_PREFERENCES,
  involvedPeople,
  preferencesOf,
  type NotificationPreferences,
} from '../db/repositories/notifications.js';
import { tenantPeople } from '../db/repositories/users.js';
import { incidents, severities, type Severity } from '../db/schema/incidents.js';
import type { notifications } from '../db/schema/remediation.js';
import type { OutboxEvent } from '../outbox/consumer.js';
import { notificationOf, str } from './describe.js';

/**
 * Whom an event is for before preferences: every admin and member, the admins, the people
 * involved with its incident (who acted on it, or were notified of it), or nobody.
 */
export type Audience = 'everyone' | 'admins' | 'involved' | 'nobody';

/** Critical first: a lower rank is more severe. */
const rank = (severity: string): number => {
  const i = (severities as readonly string[]).indexOf(severity);
  return i < 0 ? severities.length : i;
};
const URGENT = rank('high');
const urgent = (severity: unknown): boolean => typeof severity === 'string' && rank(severity) <= URGENT;

/**
 * The rules. Progress the workflow makes on its own (triage, investigation started, evidence, the
 * system's own status moves, approvals decided, remediation approved or completed) is on the
 * stream and the incident, not in anyone's notifications. `approval.requested` is written to the
 * admins by the remediation activity itself, in the proposal's transaction.
 */
export function audienceOf(type: string, payload: Record<string, unknown>): Audience {
  switch (type) {
    case 'incident.created':
      return urgent(payload.severity) ? 'everyone' : 'nobody';
    case 'incident.severity_changed':
      // Raised to critical or high: it now matters as an incident opened there would.
      return urgent(payload.to) && rank(String(payload.to)) < rank(String(payload.from)) ? 'everyone' : 'nobody';
    case 'incident.status_changed':
      // The system's moves are its own progress; a move to resolved is told by incident.resolved.
      return payload.actorType === 'system' || payload.to === 'resolved' ? 'nobody' : 'involved';
    case 'incident.resolved':
    case 'investigation.completed':
    case 'investigation.failed':
    case 'remediation.failed':
      return 'involved';
    case 'approval.expired':
      // Unanswered: the incident is back with people. Other reasons follow a move someone made,
      // or a new proposal on newer evidence.
      return payload.reason === 'deadline' ? 'involved' : 'nobody';
    case 'system.quota_warning':
    case 'system.export_completed':
      return 'admins';
    default:
      return 'nobody';
  }
}

/**
 * Whether one person, in the audience, still gets the event: never what they did themselves,
 * nor a type they switched off, nor an incident below their minimum severity.
 */
export function personWants(
  userId: string,
  event: Pick<OutboxEvent, 'type' | 'payload'>,
  incidentSeverity: string | null,
  prefs: NotificationPreferences,
): boolean {
  if (event.payload.actorType === 'user' && event.payload.actorId === userId) return false;
  if (prefs.disabledTypes.includes(event.type)) return false;
  return incidentSeverity === null || rank(incidentSeverity) <= rank(prefs.minSeverity);
}

/** The severity an event speaks of: what it names (opened at, changed to), else the incident's now. */
function severityOf(row: OutboxEvent, stored: Map<string, Severity>): string | null {
  if (row.type === 'incident.created') return str(row.payload.severity) ?? null;
  if (row.type === 'incident.severity_changed') return str(row.payload.to) ?? null;
  const incidentId = row.incidentId ?? str(row.payload.incidentId);
  return incidentId ? (stored.get(incidentId) ?? null) : null;
}

interface Person {
  tenantId: string;
  userId: string;
  roles: string[];
}

function inAudience(audience: Audience, person: Person, involved: Set<string> | undefined): boolean {
  const admin = person.roles.includes('admin');
  if (!admin && !person.roles.includes('member')) return false;
  if (audience === 'everyone') return true;
  if (audience === 'admins') return admin;
  if (audience === 'involved') return involved?.has(person.userId) === true;
  return false;
}

/**
 * The notifications of a batch of events, one per person each event is for (key
 * `${seq}:${userId}`). Events are taken in order, so a person notified of an incident by one
 * event of the batch is involved with it for the later ones.
 */
export async function targetedNotifications(
  tx: Pick<Db, 'select' | 'selectDistinct'>,
  rows: OutboxEvent[],
): Promise<Array<typeof notifications.$inferInsert>> {
  const audiences = rows.map((r) => audienceOf(r.type, r.payload));
  const wanted = rows.filter((_, i) => audiences[i] !== 'nobody');
  if (wanted.length === 0) return [];
  const tenantIds = [...new Set(wanted.map((r) => r.tenantId))];
  const incidentIds = [
    ...new Set(wanted.map((r) => r.incidentId ?? str(r.payload.incidentId)).filter((id): id is string => !!id)),
  ];
  const [people, prefs, involved, stored] = await Promise.all([
    tenantPeople(tx, tenantIds),
    preferencesOf(tx, tenantIds),
    involvedPeople(tx, tenantIds, incidentIds),
    incidentIds.length === 0
      ? []
      : tx
          .select({ id: incidents.id, severity: incidents.severity })
          .from(incidents)
          .where(and(inArray(incidents.tenantId, tenantIds), inArray(incidents.id, incidentIds))),
  ]);
  const severityNow = new Map(stored.map((r) => [r.id, r.severity]));
  const values: Array<typeof notifications.$inferInsert> = [];
  rows.forEach((row, i) => {
    const audience = audiences[i]!;
    if (audience === 'nobody') return;
    const incidentId = row.incidentId ?? str(row.payload.incidentId) ?? null;
    const severity = severityOf(row, severityNow);
    for (const person of people) {
      if (person.tenantId !== row.tenantId) continue;
      if (!inAudience(audience, person, incidentId ? involved.get(incidentId) : undefined)) continue;
      const mine = prefs.get(`${person.tenantId}:${person.userId}`) ?? DEFAULT_PREFERENCES;
      if (!personWants(person.userId, row, severity, mine)) continue;
      const value = notificationOf(row, person.userId, `${row.seq}:${person.userId}`);
      if (!value) continue;
      values.push(value);
      if (incidentId) {
        let told = involved.get(incidentId);
        if (!told) involved.set(incidentId, (told = new Set()));
        told.add(person.userId);
      }
    }
  });
  return values;
}
