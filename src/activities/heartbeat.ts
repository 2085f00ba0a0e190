import { Context } from '@temporalio/activity';

/**
 * Runs `work` while heartbeating the current activity, when its workflow gave it a heartbeat
 * timeout: a worker that dies (killed, out of memory, its host gone) then has its attempt
 * retried elsewhere after that timeout instead of after the whole start-to-close timeout, while
 * a live attempt waiting on a slow model or skill is not cut off. Beats three times per timeout
 * (at most every 5 s); the SDK throttles what it sends to Temporal. Outside an activity (a
 * direct call in a test), or with no heartbeat timeout, it only runs `work`.
 */
export async function whileBeating<T>(work: () => Promise<T>, details?: () => unknown): Promise<T> {
  let ctx: Context;
  try {
    ctx = Context.current();
  } catch {
    return work();
  }
  const timeoutMs = ctx.info.heartbeatTimeoutMs;
  if (!timeoutMs) return work();
  const beat = () => ctx.heartbeat(details?.());
  beat();
  const timer = setInterval(beat, Math.min(5_000, Math.max(500, timeoutMs / 3)));
  try {
    return await work();
  } finally {
    clearInterval(timer);
  }
}
