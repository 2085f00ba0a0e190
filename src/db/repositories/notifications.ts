import { and, eq, inArray, isNotNull, sql } from 'drizzle-orm';
import type postgres from 'postgres';
import type { Db } from '../client.js';
import { auditLog } from '../schema/audit.js';
import { notificationPreferences } from '../schema/correlation.js';
import { severities, type Severity } from '../schema/incidents.js';
import { notifications } from '../schema/remediation.js';
import { deleteOldestInChunks, type PurgeOptions } from './purge.js';
import { tenantPeople } from './users.js';

/**
 * How long a notification is kept, read or not. Events fan out to the people they concern
 * (ADR 0259), so without a bound the table still grows with events × users. A month
 * covers any approval (its deadline is at most 7 days) and a person back from leave; what a
 * notification pointed at (the incident, its timeline, the audit log) lives on.
 */
export const NOTIFICATION_RETENTION_MS = 30 * 24 * 60 * 60 * 1000;

/** Deletes notifications older than `retentionMs`, oldest first, in chunks. */
export function purgeNotifications(
  sql: postgres.Sql,
  retentionMs = NOTIFICATION_RETENTION_MS,
  options: PurgeOptions = {},
): Promise<number> {
  return deleteOldestInChunks(sql, 'notifications', retentionMs, null, options);
}

/** A person's notification preferences; the defaults take nothing away from what the rules send. */
export interface NotificationPreferences {
  /** Event types never notified to the person. */
  disabledTypes: string[];
  /** Incidents below this severity are not notified to the person (approval requests are). */
  minSeverity: Severity;
  /** When they were last saved; null for the defaults. */
  updatedAt: Date | null;
}

export const DEFAULT_PREFERENCES: NotificationPreferences = { disabledTypes: [], minSeverity: 'low', updatedAt: null };

const isSeverity = (v: string): v is Severity => (severities as readonly string[]).includes(v);

function toPreferences(row: typeof notificationPreferences.$inferSelect): NotificationPreferences {
  return {
    disabledTypes: row.disabledTypes,
    minSeverity: isSeverity(row.minSeverity) ? row.minSeverity : DEFAULT_PREFERENCES.minSeverity,
    updatedAt: row.updatedAt,
  };
}

/** The person's stored preferences, or the defaults. */
export async function findPreferences(
  db: Pick<Db, 'select'>,
  tenantId: string,
  userId: string,
): Promise<NotificationPreferences> {
  const [row] = await db
    .select()
    .from(notificationPreferences)
    .where(and(eq(notificationPreferences.tenantId, tenantId), eq(notificationPreferences.userId, userId)));
  return row ? toPreferences(row) : DEFAULT_PREFERENCES;
}

/** Replaces the person's preferences (one row per tenant and user). */
export async function savePreferences(
  db: Pick<Db, 'insert'>,
  tenantId: string,
  userId: string,
  prefs: { disabledTypes: string[]; minSeverity: Severity },
): Promise<NotificationPreferences> {
  const [row] = await db
    .insert(notificationPreferences)
    .values({ tenantId, userId, ...prefs, updatedAt: sql`now()` })
    .onConflictDoUpdate({
      target: [notificationPreferences.tenantId, notificationPreferences.userId],
      set: { ...prefs, updatedAt: sql`now()` },
    })
    .returning();
  return toPreferences(row!);
}

/** The stored preferences of the tenants' people, by `${tenantId}:${userId}` (absent: defaults). */
export async function preferencesOf(
  db: Pick<Db, 'select'>,
  tenantIds: string[],
): Promise<Map<string, NotificationPreferences>> {
  if (tenantIds.length === 0) return new Map();
  const rows = await db
    .select()
    .from(notificationPreferences)
    .where(inArray(notificationPreferences.tenantId, tenantIds));
  return new Map(rows.map((r) => [`${r.tenantId}:${r.userId}`, toPreferences(r)]));
}

/**
 * The admins an approval request goes to: every admin of the tenant (by membership, whether or
 * not they ever called the api, and the admins the api has seen) but those who switched
 * `approval.requested` off. Their minimum severity does not apply: an approval waits on them
 * whatever the incident's severity (ADR 0259).
 */
export async function approvalRecipients(db: Pick<Db, 'select'>, tenantId: string): Promise<{ userId: string }[]> {
  const admins = (await tenantPeople(db, [tenantId])).filter((p) => p.roles.includes('admin'));
  const prefs = await preferencesOf(db, [tenantId]);
  return admins
    .filter((a) => !prefs.get(`${tenantId}:${a.userId}`)?.disabledTypes.includes('approval.requested'))
    .map((a) => ({ userId: a.userId }));
}

/**
 * The people involved with each incident, by incident id: who acted on it as a person (its audit
 * entries: opened it, moved it, investigated it, answered its approval, gave context) and who was
 * notified of it. Within the tenants given.
 */
export async function involvedPeople(
  db: Pick<Db, 'selectDistinct'>,
  tenantIds: string[],
  incidentIds: string[],
): Promise<Map<string, Set<string>>> {
  const involved = new Map<string, Set<string>>();
  if (tenantIds.length === 0 || incidentIds.length === 0) return involved;
  const [acted, told] = await Promise.all([
    db
      .selectDistinct({ incidentId: auditLog.incidentId, userId: auditLog.actorId })
      .from(auditLog)
      .where(
        and(
          inArray(auditLog.tenantId, tenantIds),
          inArray(auditLog.incidentId, incidentIds),
          isNotNull(auditLog.incidentId),
          eq(auditLog.actorType, 'user'),
        ),
      ),
    db
      .selectDistinct({ incidentId: notifications.incidentId, userId: notifications.userId })
      .from(notifications)
      .where(and(inArray(notifications.tenantId, tenantIds), inArray(notifications.incidentId, incidentIds))),
  ]);
  for (const { incidentId, userId } of [...acted, ...told]) {
    if (!incidentId) continue;
    let people = involved.get(incidentId);
    if (!people) involved.set(incidentId, (people = new Set()));
    people.add(userId);
  }
  return involved;
}
