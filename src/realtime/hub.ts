import type { Logger } from 'pino';
import type postgres from 'postgres';
import { eventsChannel } from '../outbox/append.js';

/** One outbox event as the stream delivers it. */
export interface StreamEvent {
  seq: number;
  type: string;
  incidentId: string | null;
  payload: Record<string, unknown>;
  occurredAt: Date;
}

/** Receives a tenant's events; `deliver` may be called with a seq already seen (dedupe there). */
export interface HubSubscriber {
  deliver(events: StreamEvent[]): void;
  /** The hub is closing: end the stream. */
  close(): void;
}

export interface Subscription {
  /** The tenant's newest seq the hub had read when the subscription started (the live start). */
  startSeq: number;
  unsubscribe(): void;
}

export interface RealtimeHub {
  /** Registers a subscriber for the tenant's live events (after LISTEN is active). */
  subscribe(tenantId: string, subscriber: HubSubscriber): Promise<Subscription>;
  /** Events of the tenant with seq > afterSeq, in seq order, at most `limit`. */
  readEvents(tenantId: string, afterSeq: number, limit: number): Promise<StreamEvent[]>;
  /** The tenant's newest committed position (0 when it has no event). */
  headSeq(tenantId: string): Promise<number>;
  /** Number of subscribers (all tenants). */
  size(): number;
  close(): Promise<void>;
}

interface TenantChannel {
  subscribers: Set<HubSubscriber>;
  /** The highest seq read for this tenant. */
  cursor: number;
  /** A read is running; `again` asks for one more after it. */
  reading: boolean;
  again: boolean;
}

const readPage = 1000;

interface EventDbRow {
  seq: string | number;
  type: string;
  incident_id: string | null;
  payload: Record<string, unknown>;
  /** A string: drizzle's postgres.js client leaves timestamps unparsed. */
  occurred_at: Date | string;
}

function toEvent(row: EventDbRow): StreamEvent {
  return {
    seq: Number(row.seq),
    type: row.type,
    incidentId: row.incident_id,
    payload: row.payload,
    occurredAt: new Date(row.occurred_at),
  };
}

/**
 * One `LISTEN incident_events` connection per api process (opened by the first subscription),
 * fanning events out in memory to the subscribers of each tenant. A notification
 * `tenantId:streamSeq` makes one read of that tenant's events after the last position read
 * (coalesced while a read runs), pushed to every subscriber of the tenant in order. A stream's
 * positions (`seq` here) are the events' `stream_seq`, assigned at commit under the tenant's
 * commit-head lock: an event never becomes visible after a later position of its tenant, so a
 * read after the cursor, and a resume after `Last-Event-ID`, can never miss one.
 */
export function createRealtimeHub(deps: { sql: postgres.Sql; logger: Logger }): RealtimeHub {
  const { sql, logger } = deps;
  const tenants = new Map<string, TenantChannel>();
  let listening: Promise<postgres.ListenMeta> | undefined;
  let closed = false;

  async function readEvents(tenantId: string, afterSeq: number, limit: number): Promise<StreamEvent[]> {
    const rows = await sql<EventDbRow[]>`
      select stream_seq as seq, type, incident_id, payload, occurred_at from events
      where tenant_id = ${tenantId} and stream_seq > ${afterSeq}
      order by stream_seq limit ${limit}`;
    return rows.map(toEvent);
  }

  async function pump(tenantId: string, channel: TenantChannel): Promise<void> {
    if (channel.reading) {
      channel.again = true;
      return;
    }
    channel.reading = true;
    try {
      do {
        channel.again = false;
        for (;;) {
          const batch = await readEvents(tenantId, channel.cursor, readPage);
          if (batch.length === 0) break;
          channel.cursor = batch[batch.length - 1]!.seq;
          fanOut(channel, batch);
          if (batch.length < readPage) break;
        }
      } while (channel.again && channel.subscribers.size > 0);
    } catch (err) {
      logger.error({ err, tenantId }, 'reading events for the stream failed');
    } finally {
      channel.reading = false;
    }
    if (channel.again && channel.subscribers.size > 0) void pump(tenantId, channel);
    else dropIfIdle(tenantId, channel);
  }

  /**
   * Forgets a tenant's channel once it has no subscriber and no read in flight. A channel kept
   * without subscribers stops following notifications, so its cursor would fall behind and the
   * next subscriber would be handed every event since as if live.
   */
  function dropIfIdle(tenantId: string, channel: TenantChannel): void {
    if (channel.subscribers.size === 0 && !channel.reading && tenants.get(tenantId) === channel)
      tenants.delete(tenantId);
  }

  function fanOut(channel: TenantChannel, batch: StreamEvent[]): void {
    for (const subscriber of [...channel.subscribers]) {
      try {
        subscriber.deliver(batch);
      } catch (err) {
        logger.error({ err }, 'delivering to a stream failed');
      }
    }
  }

  function onNotify(payload: string): void {
    const colon = payload.lastIndexOf(':');
    if (colon <= 0) return;
    const tenantId = payload.slice(0, colon);
    const seq = Number(payload.slice(colon + 1));
    const channel = tenants.get(tenantId);
    if (!channel || channel.subscribers.size === 0) return;
    if (Number.isFinite(seq) && seq <= channel.cursor) return; // already read
    void pump(tenantId, channel);
  }

  function ensureListening(): Promise<postgres.ListenMeta> {
    listening ??= sql.listen(eventsChannel, onNotify, () => {
      // (Re)connected: catch up on whatever was committed while the connection was down.
      for (const [tenantId, channel] of tenants) if (channel.subscribers.size > 0) void pump(tenantId, channel);
    });
    listening.catch(() => {
      listening = undefined;
    });
    return listening;
  }

  async function headSeq(tenantId: string): Promise<number> {
    const [row] = await sql<Array<{ max: string | number | null }>>`
      select max(stream_seq) as max from events where tenant_id = ${tenantId}`;
    return Number(row?.max ?? 0);
  }

  return {
    readEvents,
    headSeq,
    async subscribe(tenantId, subscriber) {
      if (closed) throw new Error('the realtime hub is closed');
      await ensureListening();
      let channel = tenants.get(tenantId);
      if (!channel) {
        const head = await headSeq(tenantId);
        // Another subscriber may have created it while we read.
        channel = tenants.get(tenantId);
        if (!channel) {
          channel = { subscribers: new Set(), cursor: head, reading: false, again: false };
          tenants.set(tenantId, channel);
        }
      }
      channel.subscribers.add(subscriber);
      const current = channel;
      return {
        startSeq: current.cursor,
        unsubscribe() {
          current.subscribers.delete(subscriber);
          dropIfIdle(tenantId, current); // a read in flight drops it when it ends
        },
      };
    },
    size() {
      let n = 0;
      for (const channel of tenants.values()) n += channel.subscribers.size;
      return n;
    },
    async close() {
      closed = true;
      for (const channel of tenants.values()) for (const subscriber of [...channel.subscribers]) subscriber.close();
      tenants.clear();
      const meta = await listening?.catch(() => undefined);
      listening = undefined;
      await meta?.unlisten().catch(() => undefined);
    },
  };
}
