/**
 * Widget sessions: opened (row + workflow), asked (the assistant chat of /v1/memory/chat, then
 * the deadline moved and `message.complete` recorded and signalled), closed, and subscribed to.
 */
import type { Logger } from 'pino';
import type { ModelProvider } from '../analysis/types.js';
import { answerChat } from '../assistant/chat.js';
import type { Db } from '../db/client.js';
import {
  appendWidgetEvent,
  endWidgetSession,
  extendWidgetSession,
  insertWidgetSession,
  insertWidgetSubscription,
  widgetTiming,
  type WidgetSessionRow,
  type WidgetSubscriptionRow,
} from '../db/repositories/widget.js';
import type { WidgetPushEventType } from '../db/schema/widget.js';
import type { TenantRow } from '../db/schema/tenants.js';
import { AppError } from '../errors.js';
import type { SkillRuntime } from '../skills/invoke.js';
import { OutboundError, outboundUrlRefusal, resolveTarget } from '../skills/ssrf.js';
import { newId } from '../ids.js';
import { newSessionToken, secretContext } from './credentials.js';
import type { WidgetPushPolicy } from './session-messages.js';
import type { WidgetSessionPort } from './workflow-port.js';

export interface WidgetApiSettings {
  /** The shortest inactivity a tenant may set (60 s; the tests lower it to run the timers in seconds). */
  minInactivitySeconds: number;
  /**
   * How many sessions one publishable key may have open at once (default 1000): the key is public,
   * so this bounds the workflows and the tenant's rate limit one copied key can hold (ADR 0293).
   */
  maxOpenSessionsPerKey: number;
  push: WidgetPushPolicy;
  /**
   * The quiet an open stream ends with a heartbeat comment; also how often it reads when no
   * notification wakes it (one lost while the LISTEN connection was down).
   */
  streamHeartbeatMs: number;
}

export const defaultWidgetApiSettings: WidgetApiSettings = {
  minInactivitySeconds: 60,
  maxOpenSessionsPerKey: 1000,
  push: { maxAttempts: 5, initialIntervalMs: 1000, maximumIntervalMs: 60_000 },
  streamHeartbeatMs: 15_000,
};

/** What the widget routes need beyond the api's deps: the session workflows and the settings. */
export interface WidgetApiDeps {
  sessions: WidgetSessionPort;
  settings: WidgetApiSettings;
}

export interface WidgetServiceDeps {
  db: Db;
  clock: () => Date;
  model: ModelProvider;
  skills: SkillRuntime;
  widget: WidgetApiDeps;
}

/** Each subscription is one more outbound request per event: a session's are bounded (ADR 0293). */
export const MAX_PUSH_SUBSCRIPTIONS_PER_SESSION = 5;

const notFound = () => new AppError('session_not_found', 'No open widget session has that identifier');

export async function openWidgetSession(
  deps: WidgetServiceDeps,
  args: { tenant: TenantRow; keyId: string | null; userId: string | null; origin: string | null },
): Promise<{ sessionId: string; token: string; expiresAt: string }> {
  const now = deps.clock();
  const timing = await widgetTiming(deps.db, args.tenant.id);
  const expiresAt = new Date(now.getTime() + timing.inactivitySeconds * 1000);
  const { token, hash } = newSessionToken();
  const maxOpen = deps.widget.settings.maxOpenSessionsPerKey;
  const session = await insertWidgetSession(
    deps.db,
    {
      id: newId('wsess', now.getTime()),
      tenantId: args.tenant.id,
      tokenHash: hash,
      keyId: args.keyId,
      userId: args.userId,
      origin: args.origin,
      inactivitySeconds: timing.inactivitySeconds,
      expiryWarningSeconds: timing.expiryWarningSeconds,
      lastActivityAt: now,
      expiresAt,
      createdAt: now,
    },
    maxOpen,
  );
  if (!session)
    throw new AppError(
      'rate_limit_exceeded',
      `This widget key has ${maxOpen} open sessions, its most at once; retry when one is closed or has expired`,
    );
  try {
    await deps.widget.sessions.start({
      tenantId: args.tenant.id,
      sessionId: session.id,
      expiresAt: expiresAt.toISOString(),
      expiryWarningMs: Math.min(timing.expiryWarningSeconds, timing.inactivitySeconds) * 1000,
      push: deps.widget.settings.push,
    });
  } catch (err) {
    // A session without its workflow would never expire: it is closed before the error is answered.
    await endWidgetSession(deps.db, {
      tenantId: args.tenant.id,
      sessionId: session.id,
      status: 'closed',
      reason: 'workflow_unavailable',
      now: deps.clock(),
    });
    throw err;
  }
  return { sessionId: session.id, token, expiresAt: expiresAt.toISOString() };
}

export async function askInWidgetSession(
  deps: WidgetServiceDeps & { logger: Logger },
  args: { tenant: TenantRow; session: WidgetSessionRow; message: string; requestId: string | null },
) {
  const { session, tenant } = args;
  const reply = await answerChat(
    { db: deps.db, model: deps.model, clock: deps.clock, logger: deps.logger },
    {
      tenant,
      // A session opened by a person is that person's conversation; one opened with a key is its own.
      userId: session.userId ?? session.id,
      requestId: args.requestId,
      message: args.message,
      sessionId: session.chatSessionId ?? undefined,
    },
  );
  const now = deps.clock();
  const expiresAt = new Date(now.getTime() + session.inactivitySeconds * 1000);
  const event = await deps.db.transaction(async (tx) => {
    const extended = await extendWidgetSession(tx, {
      tenantId: tenant.id,
      sessionId: session.id,
      now,
      expiresAt,
      chatSessionId: reply.sessionId,
    });
    if (!extended) throw notFound();
    return appendWidgetEvent(tx, {
      tenantId: tenant.id,
      sessionId: session.id,
      type: 'message.complete',
      data: {
        sessionId: session.id,
        messageId: reply.messageId,
        reply: reply.reply,
        sources: reply.sources,
        timestamp: reply.timestamp,
      },
      now,
    });
  });
  await deps.widget.sessions.activity(session.id, { expiresAt: expiresAt.toISOString(), eventId: event.id });
  return {
    sessionId: session.id,
    messageId: reply.messageId,
    reply: reply.reply,
    sources: reply.sources,
    timestamp: reply.timestamp,
    expiresAt: expiresAt.toISOString(),
  };
}

export async function closeWidgetSession(
  deps: WidgetServiceDeps,
  args: { tenantId: string; sessionId: string },
): Promise<void> {
  const ended = await endWidgetSession(deps.db, { ...args, status: 'closed', reason: 'closed', now: deps.clock() });
  if (!ended) throw notFound();
  await deps.widget.sessions.close(args.sessionId);
}

/** Refused like a skill's URL (literal address when written, every resolved address), https only. */
async function assertPushable(skills: SkillRuntime, url: URL): Promise<void> {
  const refusal = outboundUrlRefusal(url, { allowHttp: false, allowlist: skills.allowlist });
  if (refusal) throw new AppError('validation_error', `url ${refusal.replace('skills and triggers', 'pushes')}`);
  try {
    await resolveTarget(url.hostname, {
      allowlist: skills.allowlist,
      resolver: skills.resolver,
      signal: AbortSignal.timeout(5000),
    });
  } catch (err) {
    if (err instanceof OutboundError)
      throw new AppError('validation_error', `url ${err.message.replace('skills may', 'pushes may')}`);
    throw err;
  }
}

export async function subscribeToWidgetSession(
  deps: WidgetServiceDeps,
  args: {
    tenantId: string;
    sessionId: string;
    url: string;
    events: WidgetPushEventType[];
    secret?: string | undefined;
  },
): Promise<WidgetSubscriptionRow> {
  await assertPushable(deps.skills, new URL(args.url));
  const id = newId('wsub');
  const row = await insertWidgetSubscription(
    deps.db,
    {
      id,
      tenantId: args.tenantId,
      sessionId: args.sessionId,
      url: args.url,
      events: args.events,
      secretCiphertext: args.secret ? deps.skills.cipher.encrypt(args.secret, secretContext(args.tenantId, id)) : null,
      createdAt: deps.clock(),
    },
    MAX_PUSH_SUBSCRIPTIONS_PER_SESSION,
  );
  if (!row)
    throw new AppError(
      'validation_error',
      `A widget session takes at most ${MAX_PUSH_SUBSCRIPTIONS_PER_SESSION} push subscriptions; open another session for more`,
    );
  return row;
}

export const toSubscriptionView = (row: WidgetSubscriptionRow) => ({
  subscriptionId: row.id,
  sessionId: row.sessionId,
  url: row.url,
  events: row.events,
  createdAt: row.createdAt.toISOString(),
});
