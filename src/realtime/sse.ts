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
  /** Streams one user may hold open on one api process at once. */
  maxStreamsPerUser: number;
  /** How long a stream token opens the stream (again, for reconnects) and the stream lasts. */
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

type StreamEnd = 'closed' | 'dropped' | 'disconnected';

/**
 * One client's stream: the position sent so far, the events that arrive while the replay runs,
 * the queue bound, the timers, and its one end.
 */
class EventStreamSession {
  readonly stream: ReadableStream<Uint8Array>;
  /**
   * The last position sent (or the client's past when none yet). Positions arrive in order
   * (numbered in commit order, read in order), so anything at or below it is a duplicate.
   */
  sentSeq: number;
  ended = false;
  readonly subscriber: HubSubscriber = {
    deliver: (events) => {
      if (this.ended) return;
      if (this.replaying) {
        this.pending.push(...events);
        return;
      }
      for (const event of events) this.send(event);
    },
    close: () => this.end('closed'),
  };
  private readonly args: EventStreamArgs;
  private controller!: ReadableStreamDefaultController<Uint8Array>;
  private replaying = true;
  private pending: StreamEvent[] = [];
  /** Set once the stream is running, or while the client is past the bounds; `end` clears them. */
  private readonly running: {
    heartbeat?: NodeJS.Timeout;
    overflow?: NodeJS.Timeout;
    expiry?: () => void;
    subscription?: { unsubscribe(): void };
  } = {};
  private readonly onAbort = () => this.end('disconnected');

  constructor(args: EventStreamArgs) {
    this.args = args;
    this.sentSeq = args.lastEventId ?? 0;
    const { settings } = args;
    this.stream = new ReadableStream<Uint8Array>(
      {
        start: (c) => {
          this.controller = c;
        },
        cancel: () => {
          this.end('disconnected');
        },
      },
      // Each message weighs at least bytes/messages, so both bounds hold with one queue.
      {
        highWaterMark: settings.maxQueuedBytes,
        size: (chunk) => Math.max(chunk.byteLength, settings.maxQueuedBytes / settings.maxQueuedMessages),
      },
    );
  }

  /** The client has left more than the bound unread. */
  get backedUp(): boolean {
    return (this.controller.desiredSize ?? 0) < 0;
  }

  /**
   * Takes the hub subscription; unless the client went away meanwhile, greets the client and
   * arms the end at the credential's expiry. False when the stream has already ended.
   */
  begin(subscription: { unsubscribe(): void }): boolean {
    const { args } = this;
    this.running.subscription = subscription;
    if (this.ended || args.signal.aborted) {
      // The client went away while subscribing.
      subscription.unsubscribe();
      this.end('disconnected');
      return false;
    }
    args.signal.addEventListener('abort', this.onAbort);
    this.write(`retry: 2000\n: connected\n\n`);
    const endsAt = args.endsAt;
    if (endsAt)
      this.running.expiry = runAt(endsAt, () => {
        this.write(formatExpired(endsAt));
        this.end('closed');
      });
    return true;
  }

  end(reason: StreamEnd): void {
    if (this.ended) return;
    const { args, running, controller } = this;
    this.ended = true;
    args.onEnd?.();
    clearInterval(running.heartbeat);
    clearTimeout(running.overflow);
    running.expiry?.();
    running.subscription?.unsubscribe();
    args.signal.removeEventListener('abort', this.onAbort);
    if (reason === 'dropped') {
      args.logger.info({ tenantId: args.tenantId, sentSeq: this.sentSeq }, 'slow stream client dropped');
      if (!args.drop?.()) controller.error(new Error('the client fell behind'));
    } else if (reason === 'closed') {
      try {
        controller.close();
      } catch {
        // already closed
      }
    }
  }

  write(text: string | Uint8Array): void {
    if (this.ended) return;
    const bytes = typeof text === 'string' ? encoder.encode(text) : text;
    this.controller.enqueue(bytes);
    if (this.backedUp && !this.running.overflow) {
      this.running.overflow = setTimeout(() => {
        this.running.overflow = undefined;
        if (this.backedUp) this.end('dropped');
      }, this.args.settings.drainGraceMs);
      this.running.overflow.unref();
    }
  }

  send(event: StreamEvent): void {
    if (event.seq <= this.sentSeq) return;
    this.sentSeq = event.seq;
    const { types, hidden } = this.args;
    if ((types && !types.has(event.type)) || hidden?.has(event.type)) return;
    this.write(encodedEvent(event, this.sentSeq));
  }

  /** Sends what arrived during the replay, then the live events as they come, with the heartbeat. */
  goLive(): void {
    this.replaying = false;
    const buffered = this.pending;
    this.pending = [];
    for (const event of buffered) this.send(event);
    if (this.ended) return;
    this.running.heartbeat = setInterval(() => this.write(': ping\n\n'), this.args.settings.heartbeatMs);
    this.running.heartbeat.unref();
  }
}

/**
 * Replays the outbox after the client's position, a page at a time as the client reads, then
 * goes live. `startSeq` is where the live subscription starts.
 */
async function replayThenGoLive(session: EventStreamSession, args: EventStreamArgs, startSeq: number): Promise<void> {
  const { hub, tenantId, logger } = args;
  try {
    // A position beyond the newest event (an id from before a restore, or from elsewhere)
    // resumes at the newest: live events after it are sent, none skipped up to the old id. Only
    // a position past where the live subscription starts can be (another api process may have
    // read further, so that start is not the newest itself).
    if (session.sentSeq > startSeq) {
      const head = await hub.headSeq(tenantId);
      if (session.sentSeq > head) {
        logger.info(
          { tenantId, lastEventId: session.sentSeq, head },
          'stream resumed from beyond the newest event; starting at the newest',
        );
        session.sentSeq = head;
      }
    }
    for (;;) {
      const page = await hub.readEvents(tenantId, session.sentSeq, replayPage);
      for (const event of page) session.send(event);
      if (page.length < replayPage || session.ended) break;
      while (!session.ended && session.backedUp) await new Promise((r) => setTimeout(r, 20));
      if (session.ended) break;
    }
  } catch (err) {
    logger.error({ err, tenantId }, 'replaying events failed');
    session.end('closed');
    return;
  }
  session.goLive();
}

/**
 * Opens a Server-Sent Events stream of the tenant's events. It subscribes to the hub first, then
 * replays the outbox after `lastEventId` (when given), then sends the live events, skipping any
 * position already sent, so there is neither a gap nor a duplicate. The `id:` of each message is
 * the event's position in the tenant's stream (`stream_seq`, numbered in commit order, so a resume
 * after it misses nothing). A client that leaves more than the bound unread for longer than the
 * drain grace is dropped: the stream ends and the client reconnects with `Last-Event-ID`. At
 * `endsAt` (its credential's expiry) the stream sends `stream.expired` and ends (ADR 0247).
 */
export async function openEventStream(args: EventStreamArgs): Promise<ReadableStream<Uint8Array>> {
  const session = new EventStreamSession(args);
  const sub = await args.hub.subscribe(args.tenantId, session.subscriber);
  if (!session.begin(sub)) return session.stream;
  if (args.lastEventId === undefined) {
    session.sentSeq = sub.startSeq;
    session.goLive();
    return session.stream;
  }
  // The replay runs once the stream is handed back, as the client reads: a page past the bound
  // waits for the client to take it, and nothing can read before the response has begun
  // (ADR 0232). A client that does not read holds one page past the bound until it is
  // dropped, not the whole history (ADR 0213).
  void replayThenGoLive(session, args, sub.startSeq);
  return session.stream;
}
