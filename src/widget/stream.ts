/**
 * A widget session's Server-Sent Events: its event log from after `Last-Event-ID` (each event's
 * `id` is its row's), then new events as they are written, a heartbeat comment between them,
 * and the end of the stream after `session.closed`.
 */
import type { Db } from '../db/client.js';
import { findWidgetSession, widgetEventsAfter, type WidgetEventRow } from '../db/repositories/widget.js';

const PAGE = 100;
/** What a disconnected EventSource waits before reconnecting (it then sends Last-Event-ID). */
const RECONNECT_MS = 2000;

export const formatWidgetEvent = (e: WidgetEventRow): string =>
  `id: ${e.id}\nevent: ${e.type}\ndata: ${JSON.stringify({ type: e.type, createdAt: e.createdAt.toISOString(), ...e.data })}\n\n`;

export function widgetEventStream(args: {
  db: Db;
  tenantId: string;
  sessionId: string;
  afterId: number;
  pollMs: number;
  heartbeatMs: number;
}): ReadableStream<Uint8Array> {
  const encoder = new TextEncoder();
  let stopped = false;
  let wake: (() => void) | undefined;
  const pause = (ms: number) =>
    new Promise<void>((resolve) => {
      const timer = setTimeout(resolve, ms);
      wake = () => {
        clearTimeout(timer);
        resolve();
      };
    });

  return new ReadableStream<Uint8Array>({
    async start(controller) {
      const send = (text: string) => controller.enqueue(encoder.encode(text));
      send(`retry: ${RECONNECT_MS}\n\n`);
      let lastId = args.afterId;
      let lastSent = Date.now();
      try {
        while (!stopped) {
          const events = await widgetEventsAfter(args.db, { ...args, afterId: lastId, limit: PAGE });
          for (const event of events) {
            send(formatWidgetEvent(event));
            lastId = event.id;
            lastSent = Date.now();
            if (event.type === 'session.closed') stopped = true;
          }
          if (stopped) break;
          if (events.length === PAGE) continue;
          if (events.length === 0) {
            // Ended without its closing event in reach (written before this stream's Last-Event-ID).
            const session = await findWidgetSession(args.db, args.tenantId, args.sessionId);
            if (!session || session.status !== 'open') break;
          }
          if (Date.now() - lastSent >= args.heartbeatMs) {
            send(': heartbeat\n\n');
            lastSent = Date.now();
          }
          await pause(args.pollMs);
        }
        controller.close();
      } catch (err) {
        if (!stopped) controller.error(err);
      }
    },
    cancel() {
      stopped = true;
      wake?.();
    },
  });
}
