/**
 * One workflow per widget session (workflow id = sessionId). Its inactivity deadline is a
 * durable timer moved by each message (`widgetActivity`); a warning timer fires
 * `session.expiry_warning` before it; at the deadline the session expires. Every event a
 * subscription asked for is pushed by its own activity, retried with backoff. A long session
 * continues as new when Temporal suggests it, carrying its deadline and warning. Deterministic code only.
 */
import { condition, continueAsNew, patched, proxyActivities, setHandler, workflowInfo } from '@temporalio/workflow';
import type { WidgetActivities } from '../activities/widget.js';
import { widgetActivitySignal, widgetCloseSignal, type WidgetSessionInput } from '../widget/session-messages.js';

const bookkeeping = proxyActivities<WidgetActivities>({
  startToCloseTimeout: '30 seconds',
  retry: { initialInterval: '1 second', backoffCoefficient: 2, maximumInterval: '1 minute' },
});

export async function widgetSessionWorkflow(input: WidgetSessionInput): Promise<void> {
  const { tenantId, sessionId } = input;
  const pusher = proxyActivities<WidgetActivities>({
    startToCloseTimeout: '30 seconds',
    retry: {
      initialInterval: input.push.initialIntervalMs,
      backoffCoefficient: 2,
      maximumInterval: input.push.maximumIntervalMs,
      maximumAttempts: input.push.maxAttempts,
    },
  });
  let deadline = Date.parse(input.expiresAt);
  let closed = false;
  const queued: number[] = [];
  const pushes: Array<Promise<unknown>> = [];
  setHandler(widgetActivitySignal, ({ expiresAt, eventId }) => {
    deadline = Math.max(deadline, Date.parse(expiresAt));
    queued.push(eventId);
  });
  setHandler(widgetCloseSignal, () => {
    closed = true;
  });

  // Each subscriber's push runs on its own: a slow receiver delays neither the timers nor the others.
  const push = (eventId: number) => {
    pushes.push(
      bookkeeping
        .widgetPushTargets({ tenantId, sessionId, eventId })
        .then((subscriptionIds) =>
          Promise.allSettled(
            subscriptionIds.map((subscriptionId) =>
              pusher.deliverWidgetPush({ tenantId, subscriptionId, eventId, maxAttempts: input.push.maxAttempts }),
            ),
          ),
        ),
    );
  };

  // Runs started before this release never continue as new (their replay has no such step).
  const mayContinueAsNew = patched('widget-continue-as-new');
  const historyFull = () => mayContinueAsNew && workflowInfo().continueAsNewSuggested;
  let warnedFor = input.warnedFor ?? -1;
  while (!closed) {
    while (queued.length > 0) push(queued.shift()!);
    if (historyFull()) {
      // The pushes started here finish in this run; a message that arrives meanwhile is pushed first.
      await Promise.allSettled(pushes);
      if (closed || queued.length > 0) continue;
      const next: WidgetSessionInput = { ...input, expiresAt: new Date(deadline).toISOString(), warnedFor };
      await continueAsNew<typeof widgetSessionWorkflow>(next);
    }
    const now = Date.now();
    if (now >= deadline) {
      const outcome = await bookkeeping.expireWidgetSession({ tenantId, sessionId });
      if (outcome.ended) break;
      deadline = Math.max(deadline, Date.parse(outcome.expiresAt)); // a message moved it meanwhile
      continue;
    }
    const warnAt = deadline - input.expiryWarningMs;
    if (input.expiryWarningMs > 0 && warnedFor !== deadline && now >= warnAt) {
      warnedFor = deadline;
      const eventId = await bookkeeping.recordWidgetExpiryWarning({
        tenantId,
        sessionId,
        expiresAt: new Date(deadline).toISOString(),
      });
      if (eventId !== null) push(eventId);
      continue;
    }
    const wakeAt = input.expiryWarningMs > 0 && warnedFor !== deadline ? warnAt : deadline;
    const seen = deadline;
    await condition(() => closed || queued.length > 0 || deadline !== seen || historyFull(), Math.max(1, wakeAt - now));
  }
  while (queued.length > 0) push(queued.shift()!);
  await Promise.allSettled(pushes);
}
