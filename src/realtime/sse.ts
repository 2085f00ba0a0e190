import type { Logger } from 'pino';
import { type HubSubscriber, type RealtimeHub, type StreamEvent } from './hub.js';
import { STREAM_TOKEN_TTL_SECONDS } from './stream-tokens.js';

export interface StreamSettings {
  /** Milliseconds between `: ping` comments. */
  heartbeatMs: number;
  /** Bytes a client may leave unread before it is dropped. */
  maxQueuedBytes: number;
  /** Messages a client may leave unread before it is dropped. */
  maxQueuedMessages: number;
  /** Streams one user may hold open on one api process at once (decision 173). */
  maxStreamsPerUser: number;
  /** How long a stream token opens the stream (again, for reconnects) and the stream lasts (decision 0247). */
  tokenTtlSeconds: number;
  /**
   * How long a client may stay past those bounds before it is dropped. One commit (or one
   * replay page) is fanned out at once, faster than any socket takes it: a client is judged by
   * whether it drains, not by the size of a burst.
   */
  drainGraceMs: number;
}

export const defaultStreamSettings: StreamSettings = {
  heartbeatMs: 15_000,
  maxQueuedBytes: 1024 * 1024,
  maxQueuedMessages: 1000,
  drainGraceMs: 2_000,
  maxStreamsPerUser: 10,
  tokenTtlSeconds: STREAM_TOKEN_TTL_SECONDS,
};

/** The name of the stream's last message when its credential expires: transport, not an outbox event. */
export const STREAM_EXPIRED_EVENT = 'stream.expired';

const replayPage = 1000;
const encoder = new TextEncoder();

function stringField(payload: Record<string, unknown>, key: string): string | null {
  const value = payload[key];
  return typeof value === 'string' ? value : null;
}

/** One line saying what happened, for a notification toast. */
export function summarize(event: StreamEvent): string {
  const p = event.payload;
  const explicit = stringField(p, 'summary') ?? stringField(p, 'title');
  if (explicit) return explicit.slice(0, 200);
  const subject = event.incidentId ?? stringField(p, 'incidentId');
  const what = event.type.replace(/[._]/g, ' ');
  const detail =
    typeof p.from === 'string' && typeof p.to === 'string'
      ? ` (${p.from} → ${p.to})`
      : typeof p.reason === 'string'
        ? ` (${p.reason.slice(0, 100)})`
        : '';
  return `${what}${subject ? ` for ${subject}` : ''}${detail}`;
}

/** The SSE message of one event: `id`, `event` and one `data` line of JSON. */
export function formatEvent(event: StreamEvent, id: number): string {
  const data = {
    type: event.type,
    occurredAt: event.occurredAt.toISOString(),
    incidentId: event.incidentId ?? stringField(event.payload, 'incidentId'),
    remediationId: stringField(event.payload, 'remediationId'),
    approvalId: stringField(event.payload, 'approvalId'),
    summary: summarize(event),
    payload: event.payload,
  };
  return `id: ${id}\nevent: ${event.type}\ndata: ${JSON.stringify(data)}\n\n`;
}

/**
 * The last message of a stream whose credential expired. It has no `id:`, so a client's
 * Last-Event-ID stays the last event's, for the resume with a fresh token.
 */
export function formatExpired(expiresAt: Date): string {
  const data = { type: STREAM_EXPIRED_EVENT, reason: 'token_expired', expiresAt: expiresAt.toISOString() };
  return `event: ${STREAM_EXPIRED_EVENT}\ndata: ${JSON.stringify(data)}\n\n`;
}

/** Runs `then` at `at` (re-armed past setTimeout's 24.8-day bound); returns its cancel. */
function runAt(at: Date, then: () => void): () => void {
  let timer: NodeJS.Timeout;
  const arm = () => {
    const left = at.getTime() - Date.now();
    timer = setTimeout(left > 2 ** 31 - 1 ? arm : then, Math.min(Math.max(left, 0), 2 ** 31 - 1));
    timer.unref();
  };
  arm();
  return () => clearTimeout(timer);
}

/**
 * The encoded message of an event, made once per event and id and shared by every stream the hub
 * fans it out to (the same event object reaches each subscriber): 1,000 clients cost one
 * JSON.stringify, not 1,000. The bytes are never mutated.
 */
const encoded = new WeakMap<StreamEvent, { id: number; bytes: Uint8Array }>();
function encodedEvent(event: StreamEvent, id: number): Uint8Array {
  const hit = encoded.get(event);
  if (hit && hit.id === id) return hit.bytes;
  const bytes = encoder.encode(formatEvent(event, id));
  encoded.set(event, { id, bytes });
  return bytes;
}

export interface EventStreamArgs {
  hub: RealtimeHub;
  tenantId: string;
  lastEventId: number | undefined;
  types: Set<string> | undefined;
  /** Types this client may not see (admin-only events on a member's stream). */
  hidden?: ReadonlySet<string>;
  settings: StreamSettings;
  /** When the caller's credential expires: the stream ends there. */
  endsAt?: Date | undefined;
  signal: AbortSignal;
  logger: Logger;
  /** Called once when the stream ends, however it ends. */
  onEnd?: () => void;
  /**
   * Ends the response at once, discarding what is queued for it (the route destroys its socket);
   * false when it cannot (the response has not begun). The stream then errors instead, which the
   * HTTP server reports on stderr as a failure.
   */
  drop?: () => boolean;
}

/**
 * Opens a Server-Sent Events stream of the tenant's events. It subscribes to the hub first, then
 * replays the outbox after `lastEventId` (when given), then sends the live events, skipping any
 * position already sent, so there is neither a gap nor a duplicate. The `id:` of each message is
 * the event's position in the tenant's stream (`stream_seq`, numbered in commit order, so a resume
 * after it misses nothing). A client that leaves more than the bound unread for longer than the
 * drain grace is dropped: the stream ends and the client reconnects with `Last-Event-ID`. At
 * `endsAt` (its credential's expiry) the stream sends `stream.expired` and ends (decision 0247).
 */
export async function openEventStream(args: EventStreamArgs): Promise<ReadableStream<Uint8Array>> {
  const { hub, tenantId, types, hidden, settings, logger } = args;
  let controller!: ReadableStreamDefaultController<Uint8Array>;
  /**
   * The last position sent (or the client's past when none yet). Positions arrive in order
   * (numbered in commit order, read in order), so anything at or below it is a duplicate.
   */
  let sentSeq = args.lastEventId ?? 0;
  let replaying = true;
  let pending: StreamEvent[] = [];
  let ended = false;
  /** Set once the stream is running, or while the client is past the bounds; `end` clears them. */
  const running: {
    heartbeat?: NodeJS.Timeout;
    overflow?: NodeJS.Timeout;
    expiry?: () => void;
    subscription?: { unsubscribe(): void };
  } = {};

  const end = (reason: 'closed' | 'dropped' | 'disconnected') => {
    if (ended) return;
    ended = true;
    args.onEnd?.();
    clearInterval(running.heartbeat);
    clearTimeout(running.overflow);
    running.expiry?.();
    running.subscription?.unsubscribe();
    args.signal.removeEventListener('abort', onAbort);
    if (reason === 'dropped') {
      logger.info({ tenantId, sentSeq }, 'slow stream client dropped');
      if (!args.drop?.()) controller.error(new Error('the client fell behind'));
    } else if (reason === 'closed') {
      try {
        controller.close();
      } catch {
        // already closed
      }
    }
  };
  const onAbort = () => end('disconnected');

  const write = (text: string | Uint8Array) => {
    if (ended) return;
    const bytes = typeof text === 'string' ? encoder.encode(text) : text;
    controller.enqueue(bytes);
    if ((controller.desiredSize ?? 0) < 0 && !running.overflow) {
      running.overflow = setTimeout(() => {
        running.overflow = undefined;
        if ((controller.desiredSize ?? 0) < 0) end('dropped');
      }, settings.drainGraceMs);
      running.overflow.unref();
    }
  };

  const send = (event: StreamEvent) => {
    if (event.seq <= sentSeq) return;
    sentSeq = event.seq;
    if ((types && !types.has(event.type)) || hidden?.has(event.type)) return;
    write(encodedEvent(event, sentSeq));
  };

  const subscriber: HubSubscriber = {
    deliver(events) {
      if (ended) return;
      if (replaying) {
        pending.push(...events);
        return;
      }
      for (const event of events) send(event);
    },
    close: () => end('closed'),
  };

  const stream = new ReadableStream<Uint8Array>(
    {
      start(c) {
        controller = c;
      },
      cancel() {
        end('disconnected');
      },
    },
    // Each message weighs at least bytes/messages, so both bounds hold with one queue.
    {
      highWaterMark: settings.maxQueuedBytes,
      size: (chunk) => Math.max(chunk.byteLength, settings.maxQueuedBytes / settings.maxQueuedMessages),
    },
  );

  const sub = await hub.subscribe(tenantId, subscriber);
  running.subscription = sub;
  if (ended || args.signal.aborted) {
    // The client went away while subscribing.
    sub.unsubscribe();
    end('disconnected');
    return stream;
  }
  args.signal.addEventListener('abort', onAbort);
  write(`retry: 2000\n: connected\n\n`);
  const endsAt = args.endsAt;
  if (endsAt)
    running.expiry = runAt(endsAt, () => {
      write(formatExpired(endsAt));
      end('closed');
    });

  const goLive = () => {
    replaying = false;
    const buffered = pending;
    pending = [];
    for (const event of buffered) send(event);
    if (ended) return;
    running.heartbeat = setInterval(() => write(': ping\n\n'), settings.heartbeatMs);
    running.heartbeat.unref();
  };

  if (args.lastEventId === undefined) {
    sentSeq = sub.startSeq;
    goLive();
    return stream;
  }
  // The replay runs once the stream is handed back, as the client reads: a page past the bound
  // waits for the client to take it, and nothing can read before the response has begun
  // (decision 232). A client that does not read holds one page past the bound until it is
  // dropped, not the whole history (decision 213).
  void (async () => {
    try {
      // A position beyond the newest event (an id from before a restore, or from elsewhere)
      // resumes at the newest: live events after it are sent, none skipped up to the old id. Only
      // a position past where the live subscription starts can be (another api process may have
      // read further, so that start is not the newest itself).
      if (sentSeq > sub.startSeq) {
        const head = await hub.headSeq(tenantId);
        if (sentSeq > head) {
          logger.info(
            { tenantId, lastEventId: sentSeq, head },
            'stream resumed from beyond the newest event; starting at the newest',
          );
          sentSeq = head;
        }
      }
      for (;;) {
        const page = await hub.readEvents(tenantId, sentSeq, replayPage);
        for (const event of page) send(event);
        if (page.length < replayPage || ended) break;
        while (!ended && (controller.desiredSize ?? 0) < 0) await new Promise((r) => setTimeout(r, 20));
        if (ended) break;
      }
    } catch (err) {
      logger.error({ err, tenantId }, 'replaying events failed');
      end('closed');
      return;
    }
    goLive();
  })();
  return stream;
}
