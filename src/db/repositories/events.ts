import { newId } from '../../ids.js';
import type { Db } from '../client.js';
import { events } from '../schema/events.js';

/** The channel NOTIFY wakes for every appended event (payload: `tenantId:streamSeq`, sent at commit by the `events_seal` trigger). */
export const eventsChannel = 'incident_events';

export interface NewEvent {
  tenantId: string;
  type: string;
  incidentId?: string | null;
  payload: Record<string, unknown>;
  /** Unique per logical event, so a retried write appends it once. */
  idempotencyKey: string;
  occurredAt?: Date;
}

type Executor = Pick<Db, 'insert' | 'execute'>;

/**
 * Appends an event to the outbox within the caller's transaction, once per idempotency key.
 * Resolves true when it was appended now, false when that key was appended before.
 */
export async function appendEvent(tx: Executor, event: NewEvent): Promise<boolean> {
  const inserted = await tx
    .insert(events)
    .values({
      id: newId('oev'),
      tenantId: event.tenantId,
      type: event.type,
      incidentId: event.incidentId ?? null,
      payload: event.payload,
      idempotencyKey: event.idempotencyKey,
      ...(event.occurredAt ? { occurredAt: event.occurredAt } : {}),
    })
    .onConflictDoNothing({ target: events.idempotencyKey })
    .returning({ seq: events.seq });
  // Listeners are notified by the sealing trigger at commit (`tenantId:streamSeq`), so they never
  // see an event that was rolled back.
  return inserted[0] !== undefined;
}
