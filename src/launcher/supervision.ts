/**
 * What `npm start` is told when a part it supervises (the Temporal dev server, the embedded
 * PostgreSQL) exits on its own, and the delays between its restarts.
 */
export interface Supervision<Exit = object> {
  exited(how: { code: number | null; signal: NodeJS.Signals | null; restartInMs: number } & Exit): void;
  restarted(pid: number | undefined): void;
  /** True once the launcher is stopping: a terminal's Ctrl-C stops the part before the launcher does. */
  shuttingDown(): boolean;
}

/**
 * The delay before each restart: 1 s, doubling to 30 s while the part keeps failing; back to 1 s
 * after it ran for more than a minute (`ranForMs`), which is no crash loop.
 */
export function restartDelays(): (ranForMs?: number) => number {
  let delay = 1_000;
  return (ranForMs) => {
    if (ranForMs !== undefined && ranForMs > 60_000) delay = 1_000;
    const next = delay;
    delay = Math.min(delay * 2, 30_000);
    return next;
  };
}
