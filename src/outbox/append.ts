import type { Db } from '../db/client.js';
import { events } from '../db/schema/events.js';
import { newId } from '../ids.js';
import type { NewEvent } from './events.js';

/** The channel NOTIFY wakes for every appended event (payload: `tenantId:streamSeq`, sent at commit by the `events_seal` trigger). */
/** The channel the workflow dispatcher listens on: something waits for a workflow start or signal. */
export const dispatchChannel = 'incident_dispatch';

export const eventsChannel = 'incident_events';

type Executor = Pick<Db, 'insert' | 'execute'>;

/** An `events` row as stored: any type, any payload. */
export interface EventRow {
  tenantId: string;
  type: string;
  incidentId?: string | null;
  payload: Record<string, unknown>;
  idempotencyKey: string;
  occurredAt?: Date;
}

/**
 * Appends an event of the catalogue to the outbox within the caller's transaction, once per
 * idempotency key. Resolves true when it was appended now, false when that key was appended before.
 */
export function appendEvent(tx: Executor, event: NewEvent): Promise<boolean> {
  return appendEventUnchecked(tx, event);
}

/**
 * `appendEvent` without the catalogue's check of type and payload, for tests that write partial
 * payloads or unknown types; the service appends through `appendEvent`.
 */
export async function appendEventUnchecked(tx: Executor, event: EventRow): Promise<boolean> {
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
