/**
 * Wake-ups for the widget session streams of one api process: one `LISTEN widget_events`
 * connection (opened by the first stream, shared by all), whose notifications (a session id,
 * sent in the transaction that appends the session's event) wake that session's streams, so an
 * open stream reads only when there may be something to read.
 */
import type { Logger } from 'pino';
import type postgres from 'postgres';
import { WIDGET_EVENTS_CHANNEL } from '../db/repositories/widget.js';

/** One stream's registration: armed before each read, so a notification during the read is kept. */
export interface WidgetStreamWaiter {
  /** Forgets wake-ups seen so far: called right before the stream reads. */
  arm(): void;
  /**
   * Resolves at the first wake-up since `arm` (at once when one came meanwhile), or after `ms`;
   * false when the process is shutting down and the stream should end.
   */
  wait(ms: number): Promise<boolean>;
  /** Ends the current wait (the stream was cancelled). */
  wake(): void;
  /** Unregisters the stream. */
  stop(): void;
}

export interface WidgetStreamWakeups {
  /** Registers a stream of the session once LISTEN is active (or has failed: the timer still reads). */
  watch(sessionId: string): Promise<WidgetStreamWaiter>;
  /** Number of registered streams. */
  size(): number;
  /** Ends every wait with false and stops listening. */
  close(): Promise<void>;
}

interface Waiter extends WidgetStreamWaiter {
  notify(): void;
}

export function createWidgetStreamWakeups(deps: { sql: postgres.Sql; logger: Logger }): WidgetStreamWakeups {
  const sessions = new Map<string, Set<Waiter>>();
  let listening: Promise<postgres.ListenMeta> | undefined;
  let closed = false;

  const wakeAll = () => {
    for (const waiters of sessions.values()) for (const w of waiters) w.notify();
  };

  function ensureListening(): Promise<postgres.ListenMeta> {
    if (listening) return listening;
    // onListen runs again after postgres.js reconnects: what was written while it was down is read then.
    const started = deps.sql.listen(
      WIDGET_EVENTS_CHANNEL,
      // After a reconnect postgres.js's unlisten is a no-op (it re-registers its listeners), hence `closed`.
      (sessionId) => {
        if (!closed) for (const w of sessions.get(sessionId) ?? []) w.notify();
      },
      wakeAll,
    );
    listening = started;
    started.catch((err: unknown) => {
      deps.logger.warn({ err }, 'LISTEN widget_events failed; widget streams read at their heartbeat until it works');
      if (listening === started) listening = undefined; // the next wait tries again
    });
    return started;
  }

  function newWaiter(sessionId: string): Waiter {
    let woken = false;
    let resolveWait: ((open: boolean) => void) | undefined;
    let timer: NodeJS.Timeout | undefined;
    const finish = (open: boolean) => {
      if (timer) clearTimeout(timer);
      timer = undefined;
      const resolve = resolveWait;
      resolveWait = undefined;
      resolve?.(open);
    };
    const waiter: Waiter = {
      arm() {
        woken = false;
      },
      wait(ms) {
        if (closed) return Promise.resolve(false);
        if (!listening) void ensureListening().catch(() => undefined); // a failed LISTEN is retried
        if (woken) return Promise.resolve(true);
        return new Promise<boolean>((resolve) => {
          resolveWait = resolve;
          timer = setTimeout(() => finish(!closed), ms);
          timer.unref(); // an open stream never keeps the process alive
        });
      },
      notify() {
        woken = true;
        finish(!closed);
      },
      wake() {
        finish(!closed);
      },
      stop() {
        finish(false);
        const waiters = sessions.get(sessionId);
        waiters?.delete(waiter);
        if (waiters?.size === 0) sessions.delete(sessionId);
      },
    };
    return waiter;
  }

  return {
    async watch(sessionId) {
      if (!closed) await ensureListening().catch(() => undefined);
      const waiter = newWaiter(sessionId);
      let waiters = sessions.get(sessionId);
      if (!waiters) sessions.set(sessionId, (waiters = new Set()));
      waiters.add(waiter);
      return waiter;
    },
    size() {
      let n = 0;
      for (const waiters of sessions.values()) n += waiters.size;
      return n;
    },
    async close() {
      closed = true;
      wakeAll();
      const meta = await listening?.catch(() => undefined);
      listening = undefined;
      await meta?.unlisten().catch(() => undefined);
    },
  };
}

/** The wake-ups of each api (its postgres client): created by its first stream, closed at its shutdown. */
const perClient = new WeakMap<postgres.Sql, WidgetStreamWakeups>();

export function widgetStreamWakeups(sql: postgres.Sql, logger: Logger): WidgetStreamWakeups {
  let wakeups = perClient.get(sql);
  if (!wakeups) perClient.set(sql, (wakeups = createWidgetStreamWakeups({ sql, logger })));
  return wakeups;
}

export async function closeWidgetStreamWakeups(sql: postgres.Sql): Promise<void> {
  await perClient.get(sql)?.close();
  perClient.delete(sql);
}
