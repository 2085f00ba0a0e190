import { and, desc, eq, notInArray, sql } from 'drizzle-orm';
import type { Db } from '../db/client.js';
import { appendAudit } from '../db/repositories/audit.js';
import { appendEvent } from '../db/repositories/events.js';
import { consumeQuota, usageCount } from '../db/repositories/usage.js';
import { incidents } from '../db/schema/incidents.js';
import { ingestedEvents, webhookDeliveries } from '../db/schema/ingestion.js';
import type { TenantRow } from '../db/schema/tenants.js';
import { monthlyQuota, usagePeriod } from '../domain/plans.js';
import { AppError } from '../errors.js';
import { newId } from '../ids.js';
import type { NormalizedEvent } from './types.js';

/** The channel the dispatcher listens on: something waits for a workflow start or signal. */
export const dispatchChannel = 'incident_dispatch';

/** A delivery retried with the same body within this window gets the first answer. */
export const BODY_REPLAY_WINDOW_MS = 10 * 60 * 1000;

export interface IngestResult {
  eventIds: string[];
  incidentIds: string[];
  /** True when every alert attached to an incident that was already open (none opened one). */
  deduplicated: boolean;
  ignored?: string;
}

export interface IngestRequest {
  tenant: Pick<TenantRow, 'id' | 'plan' | 'settings'>;
  provider: string;
  keyId: string;
  /** `id:<tool delivery id>` or `body:<sha256 of the raw body>`. */
  deliveryKey: string;
  events: NormalizedEvent[];
  ignored?: string;
  requestId: string;
}

const QUOTA_WARNING_THRESHOLDS = [0.8, 1] as const;

/**
 * Stores one webhook delivery in one transaction: the delivery record (for retries), every event,
 * the incidents it opens or the open incidents it attaches to, outbox events, audit rows and the
 * monthly event count. Returns only after commit, so a 202 means the events are durable. The
 * dispatcher (woken by NOTIFY) then starts or signals the workflows.
 */
export async function ingestDelivery(db: Db, request: IngestRequest, now: Date): Promise<{ result: IngestResult; replayed: boolean }> {
  const tenantId = request.tenant.id;
  const alerts = request.events.filter((e) => e.kind === 'alert');
  const period = usagePeriod(now);
  const limit = monthlyQuota(request.tenant, 'events');

  // Cheap early refusal without locks; the authoritative count is taken at the end.
  if (limit !== null && alerts.length > 0) {
    const used = await usageCount(db, { tenantId, period, metric: 'events' });
    if (used + alerts.length > limit) throw quotaExceeded(limit, period);
  }

  return db.transaction(async (tx) => {
    const claimed = await tx
      .insert(webhookDeliveries)
      .values({ tenantId, provider: request.provider, deliveryKey: request.deliveryKey })
      .onConflictDoNothing()
      .returning({ createdAt: webhookDeliveries.createdAt });
    if (claimed.length === 0) {
      const [previous] = await tx
        .select()
        .from(webhookDeliveries)
        .where(
          and(
            eq(webhookDeliveries.tenantId, tenantId),
            eq(webhookDeliveries.provider, request.provider),
            eq(webhookDeliveries.deliveryKey, request.deliveryKey),
          ),
        )
        .for('update');
      const fresh = request.deliveryKey.startsWith('id:') || previous!.createdAt.getTime() > now.getTime() - BODY_REPLAY_WINDOW_MS;
      if (previous!.response && fresh) return { result: previous!.response as unknown as IngestResult, replayed: true };
      await tx
        .update(webhookDeliveries)
        .set({ createdAt: sql`now()`, response: null })
        .where(
          and(
            eq(webhookDeliveries.tenantId, tenantId),
            eq(webhookDeliveries.provider, request.provider),
            eq(webhookDeliveries.deliveryKey, request.deliveryKey),
          ),
        );
    }

    // One lock per fingerprint, taken in a fixed order so concurrent deliveries never deadlock:
    // two deliveries of the same alert cannot both open an incident.
    const fingerprints = [...new Set(alerts.map((a) => a.fingerprint))].sort();
    for (const fingerprint of fingerprints) {
      await tx.execute(sql`select pg_advisory_xact_lock(hashtextextended(${`${tenantId}:${fingerprint}`}, 0))`);
    }

    const eventIds: string[] = [];
    const incidentIds: string[] = [];
    let opened = 0;
    let attached = 0;
    let needsDispatch = false;
    for (const event of request.events) {
      const eventId = newId('evt', now.getTime());
      let incidentId: string | null = null;
      let delivered = true;
      if (event.kind === 'alert') {
        const [open] = await tx
          .select({ id: incidents.id })
          .from(incidents)
          .where(
            and(
              eq(incidents.tenantId, tenantId),
              eq(incidents.fingerprint, event.fingerprint),
              notInArray(incidents.status, ['resolved', 'closed']),
            ),
          )
          .orderBy(desc(incidents.createdAt))
          .limit(1);
        if (open) {
          incidentId = open.id;
          attached++;
          delivered = false; // the workflow hears of it through a signal
          await tx
            .update(incidents)
            .set(
              event.status === 'firing'
                ? { occurrenceCount: sql`${incidents.occurrenceCount} + 1`, lastSeenAt: event.occurredAt, recoveredAt: null }
                : { recoveredAt: event.occurredAt },
            )
            .where(eq(incidents.id, open.id));
        } else if (event.status === 'firing') {
          incidentId = newId('inc', now.getTime());
          opened++;
          await tx.insert(incidents).values({
            id: incidentId,
            tenantId,
            title: event.title,
            description: event.description,
            severity: event.severity,
            status: 'open',
            source: 'automated',
            fingerprint: event.fingerprint,
            service: event.service,
            occurrenceCount: 1,
            lastSeenAt: event.occurredAt,
          });
          await appendEvent(tx, {
            tenantId,
            type: 'incident.created',
            incidentId,
            payload: { incidentId, title: event.title, severity: event.severity, source: 'automated', provider: request.provider, service: event.service },
            idempotencyKey: `${incidentId}:incident.created`,
          });
          await appendAudit(tx, {
            tenantId,
            actorType: 'api_key',
            actorId: request.keyId,
            action: 'incident.created',
            targetType: 'incident',
            targetId: incidentId,
            incidentId,
            requestId: request.requestId,
            details: { provider: request.provider, fingerprint: event.fingerprint, eventId },
          });
        }
        if (incidentId && !incidentIds.includes(incidentId)) incidentIds.push(incidentId);
        if (incidentId) needsDispatch = true;
      }
      await tx.insert(ingestedEvents).values({
        id: eventId,
        tenantId,
        provider: request.provider,
        kind: event.kind,
        status: event.kind === 'alert' ? event.status : null,
        fingerprint: event.kind === 'alert' ? event.fingerprint : null,
        alertName: event.kind === 'alert' ? event.alertName : null,
        service: event.service,
        severity: event.kind === 'alert' ? event.severity : null,
        title: event.title,
        description: event.description,
        labels: event.labels,
        raw: event.raw ?? {},
        occurredAt: event.occurredAt,
        incidentId,
        deliveredAt: delivered ? now : null,
      });
      eventIds.push(eventId);
    }

    if (alerts.length > 0) {
      // Last, so the tenant's counter row stays locked only until commit.
      const used = await consumeQuota(tx, { tenantId, period, metric: 'events', limit, amount: alerts.length });
      if (used === null) throw quotaExceeded(limit!, period);
      if (limit !== null) {
        for (const threshold of QUOTA_WARNING_THRESHOLDS) {
          const mark = Math.ceil(limit * threshold);
          if (used >= mark && used - alerts.length < mark) {
            await appendEvent(tx, {
              tenantId,
              type: 'system.quota_warning',
              payload: { metric: 'events', period, used, limit, percent: Math.round(threshold * 100) },
              idempotencyKey: `${tenantId}:${period}:events:quota:${Math.round(threshold * 100)}`,
            });
          }
        }
      }
    }

    const result: IngestResult = {
      eventIds,
      incidentIds,
      deduplicated: alerts.length > 0 && opened === 0 && attached > 0,
      ...(request.ignored ? { ignored: request.ignored } : {}),
    };
    await tx
      .update(webhookDeliveries)
      .set({ response: result as unknown as Record<string, unknown> })
      .where(
        and(
          eq(webhookDeliveries.tenantId, tenantId),
          eq(webhookDeliveries.provider, request.provider),
          eq(webhookDeliveries.deliveryKey, request.deliveryKey),
        ),
      );
    if (needsDispatch) await tx.execute(sql`select pg_notify(${dispatchChannel}, ${tenantId})`);
    return { result, replayed: false };
  });
}

function quotaExceeded(limit: number, period: string): AppError {
  return new AppError('event_quota_exceeded', `The monthly event quota of ${limit} is reached for ${period}`);
}
