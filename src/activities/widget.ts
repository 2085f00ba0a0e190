/**
 * The widget session workflow's activities: who to push an event to, one push (its delivery row,
 * the signed request, and the subscription disabled once its attempts are spent), the expiry
 * warning and the expiry itself. Each is idempotent or safe to repeat.
 */
import { ApplicationFailure, Context } from '@temporalio/activity';
import type { Logger } from 'pino';
import type { Db } from '../db/client.js';
import {
  appendWidgetEvent,
  beginWidgetDelivery,
  disableWidgetSubscription,
  endWidgetSession,
  findWidgetEvent,
  findWidgetSession,
  findWidgetSubscription,
  finishWidgetDelivery,
  subscribersOf,
} from '../db/repositories/widget.js';
import type { WidgetPushEventType } from '../db/schema/widget.js';
import type { SkillRuntime } from '../skills/invoke.js';
import { OutboundError } from '../skills/ssrf.js';
import { newId } from '../ids.js';
import { secretContext } from '../widget/credentials.js';
import { sendPush } from '../widget/push.js';
import type { WidgetPushTarget } from '../widget/session-messages.js';

export interface WidgetActivitySettings {
  /** Per push attempt (default 10 s). */
  timeoutMs?: number;
  /** Extra trusted certificate authorities (PEM) for receivers with a private CA. */
  ca?: string;
}

const pushable = (type: string): type is WidgetPushEventType =>
  type === 'message.complete' || type === 'session.expiry_warning';

export function createWidgetActivities(deps: {
  db: Db;
  skills: SkillRuntime;
  logger?: Logger;
  widget?: WidgetActivitySettings;
  clock?: () => Date;
}) {
  const { db } = deps;
  const clock = deps.clock ?? (() => new Date());
  const transport = {
    allowlist: deps.skills.allowlist,
    resolver: deps.skills.resolver,
    timeoutMs: deps.widget?.timeoutMs ?? 10_000,
    ...(deps.widget?.ca ? { ca: deps.widget.ca } : {}),
  };

  return {
    async widgetPushTargets(args: { tenantId: string; sessionId: string; eventId: number }): Promise<string[]> {
      const event = await findWidgetEvent(db, args.tenantId, args.eventId);
      if (!event || !pushable(event.type)) return [];
      const subs = await subscribersOf(db, { tenantId: args.tenantId, sessionId: args.sessionId, type: event.type });
      return subs.map((s) => s.id);
    },

    async deliverWidgetPush(args: WidgetPushTarget): Promise<{ delivered: boolean }> {
      const [sub, event] = await Promise.all([
        findWidgetSubscription(db, args.tenantId, args.subscriptionId),
        findWidgetEvent(db, args.tenantId, args.eventId),
      ]);
      if (!sub || sub.status !== 'active' || !event || !pushable(event.type)) return { delivered: false };
      const delivery = await beginWidgetDelivery(db, {
        id: newId('wdel'),
        tenantId: args.tenantId,
        subscriptionId: sub.id,
        eventId: event.id,
        eventType: event.type,
      });
      if (delivery.status === 'delivered') return { delivered: true }; // a retried activity after its success
      const rawBody = JSON.stringify({
        deliveryId: delivery.id,
        event: event.type,
        sessionId: sub.sessionId,
        occurredAt: event.createdAt.toISOString(),
        data: event.data,
      });
      const secret = sub.secretCiphertext
        ? deps.skills.cipher.decrypt(sub.secretCiphertext, secretContext(args.tenantId, sub.id))
        : null;
      let failure: OutboundError;
      let statusCode: number | null = null;
      try {
        statusCode = await sendPush(transport, {
          url: sub.url,
          deliveryId: delivery.id,
          eventType: event.type,
          rawBody,
          secret,
        });
        if (statusCode >= 200 && statusCode < 300) {
          await finishWidgetDelivery(db, {
            tenantId: args.tenantId,
            deliveryId: delivery.id,
            status: 'delivered',
            statusCode,
            error: null,
            now: clock(),
          });
          return { delivered: true };
        }
        failure = new OutboundError('http_error', `the receiver answered ${statusCode}`, true);
      } catch (err) {
        failure = err instanceof OutboundError ? err : new OutboundError('network_error', String(err), true);
      }
      const attempt = Context.current().info.attempt;
      const last = !failure.retryable || attempt >= args.maxAttempts;
      await finishWidgetDelivery(db, {
        tenantId: args.tenantId,
        deliveryId: delivery.id,
        status: last ? 'failed' : 'pending',
        statusCode,
        error: failure.message,
        now: clock(),
      });
      if (last) {
        const reason = failure.retryable
          ? `${attempt} attempts failed; the last: ${failure.message}`
          : `refused: ${failure.message}`;
        await disableWidgetSubscription(db, { tenantId: args.tenantId, subscriptionId: sub.id, reason, now: clock() });
        deps.logger?.warn({ subscriptionId: sub.id, reason }, 'widget push subscription disabled');
        return { delivered: false };
      }
      throw ApplicationFailure.retryable(failure.message, failure.code);
    },

    /** Appends the warning while the session is open with this deadline; its event id, or null. */
    async recordWidgetExpiryWarning(args: { tenantId: string; sessionId: string; expiresAt: string }) {
      const session = await findWidgetSession(db, args.tenantId, args.sessionId);
      if (!session || session.status !== 'open' || session.expiresAt.toISOString() !== args.expiresAt) return null;
      const now = clock();
      // A transaction: its open streams are notified at the commit that makes the event visible.
      const event = await db.transaction((tx) =>
        appendWidgetEvent(tx, {
          tenantId: args.tenantId,
          sessionId: args.sessionId,
          type: 'session.expiry_warning',
          data: {
            sessionId: args.sessionId,
            expiresAt: args.expiresAt,
            secondsLeft: Math.max(0, Math.round((session.expiresAt.getTime() - now.getTime()) / 1000)),
          },
          now,
        }),
      );
      return event.id;
    },

    /** Ends the session at its deadline; when a message moved the deadline meanwhile, says the new one. */
    async expireWidgetSession(args: { tenantId: string; sessionId: string }) {
      const session = await findWidgetSession(db, args.tenantId, args.sessionId);
      const now = clock();
      if (session && session.status === 'open' && session.expiresAt > now)
        return { ended: false, expiresAt: session.expiresAt.toISOString() };
      if (
        session?.status === 'open' &&
        !(await endWidgetSession(db, { ...args, status: 'expired', reason: 'inactivity', now }))
      ) {
        const moved = await findWidgetSession(db, args.tenantId, args.sessionId);
        if (moved?.status === 'open') return { ended: false, expiresAt: moved.expiresAt.toISOString() };
      }
      return { ended: true, expiresAt: (session?.expiresAt ?? now).toISOString() };
    },
  };
}

export type WidgetActivities = ReturnType<typeof createWidgetActivities>;
