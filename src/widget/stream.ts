/**
 * A widget session's Server-Sent Events: its event log from after `Last-Event-ID` (each event's
 * `id` is its row's), then new events as they are written, a heartbeat comment between them,
 * and the end of the stream after `session.closed`. Between reads the stream waits for a
 * `widget_events` notification of its session (stream-wakeups.ts), or reads anyway at the
 * heartbeat interval in case a notification was lost.
 */
import type { Db } from '../db/client.js';
import {
  endWidgetSession,
  findWidgetSession,
  widgetEventsAfter,
  type WidgetEventRow,
} from '../db/repositories/widget.js';
import type { WidgetStreamWaiter, WidgetStreamWakeups } from './stream-wakeups.js';

const PAGE = 100;
/** What a disconnected EventSource waits before reconnecting (it then sends Last-Event-ID). */
const RECONNECT_MS = 2000;

export const formatWidgetEvent = (e: WidgetEventRow): string =>
  `id: ${e.id}\nevent: ${e.type}\ndata: ${JSON.stringify({ type: e.type, createdAt: e.createdAt.toISOString(), ...e.data })}\n\n`;

export function widgetEventStream(args: {
  db: Db;
  wakeups: WidgetStreamWakeups;
  tenantId: string;
  sessionId: string;
  afterId: number;
  heartbeatMs: number;
  clock: () => Date;
}): ReadableStream<Uint8Array> {
  const encoder = new TextEncoder();
  let stopped = false;
  let waiter: WidgetStreamWaiter | undefined;

  return new ReadableStream<Uint8Array>({
    async start(controller) {
      const send = (text: string) => controller.enqueue(encoder.encode(text));
      send(`retry: ${RECONNECT_MS}\n\n`);
      let lastId = args.afterId;
      let lastSent = Date.now();
      try {
        // Registered (and LISTEN active) before the first read: nothing committed after a read is missed.
        waiter = await args.wakeups.watch(args.sessionId);
        while (!stopped) {
          waiter.arm(); // a notification from here on ends the wait below at once
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
            // Past its deadline while its workflow is late (the worker down or busy): the stream
            // ends it as the workflow would, and reads the `session.closed` it appended (or theirs).
            const now = args.clock();
            if (session.expiresAt <= now) {
              const { tenantId, sessionId } = args;
              await endWidgetSession(args.db, { tenantId, sessionId, status: 'expired', reason: 'inactivity', now });
              continue;
            }
          }
          if (Date.now() - lastSent >= args.heartbeatMs) {
            send(': heartbeat\n\n');
            lastSent = Date.now();
          }
          if (!(await waiter.wait(args.heartbeatMs - (Date.now() - lastSent)))) break; // the api is stopping
        }
        controller.close();
      } catch (err) {
        if (!stopped) controller.error(err);
      } finally {
        waiter?.stop();
      }
    },
    cancel() {
      stopped = true;
      waiter?.wake();
    },
  });
}
