/**
 * The assistant chat: one question in, one answer out, both stored in the caller's session with
 * the answer's sources, tokens and cost, the monthly chat quota counted and the exchange audited,
 * all in one transaction.
 */
import { and, asc, count, desc, eq, gt, or, sql } from 'drizzle-orm';
import type { Logger } from 'pino';
import type { ChatFact, ModelProvider } from '../analysis/types.js';
import type { Db } from '../db/client.js';
import { olderThan } from '../db/keyset.js';
import { appendAudit } from '../db/repositories/audit.js';
import { consumeQuota, usageCount } from '../db/repositories/usage.js';
import { incidents } from '../db/schema/incidents.js';
import { chatMessages, chatSessions, type ChatSource } from '../db/schema/knowledge.js';
import type { TenantRow } from '../db/schema/tenants.js';
import { monthlyQuota, usagePeriod } from '../domain/plans.js';
import { AppError } from '../errors.js';
import { newId } from '../ids.js';
import { retrieve } from './retrieval.js';

export type ChatSessionRow = typeof chatSessions.$inferSelect;
export type ChatMessageRow = typeof chatMessages.$inferSelect;

/** Turns of the conversation the retrieval and the responder see. */
export const HISTORY_MESSAGES = 10;
const TITLE_LENGTH = 80;
const noSuchSession = 'No chat session of yours has that identifier';

export interface ChatRequest {
  tenant: Pick<TenantRow, 'id' | 'plan' | 'settings'>;
  userId: string;
  requestId: string | null;
  message: string;
  sessionId?: string | undefined;
  incidentId?: string | undefined;
}

export interface ChatReply {
  sessionId: string;
  messageId: string;
  reply: string;
  sources: ChatSource[];
  timestamp: string;
}

/** The caller's own session, or 404 (another user's or tenant's session is not disclosed). */
export async function findOwnSession(
  db: Db,
  tenantId: string,
  userId: string,
  sessionId: string,
): Promise<ChatSessionRow> {
  const [row] = await db
    .select()
    .from(chatSessions)
    .where(and(eq(chatSessions.tenantId, tenantId), eq(chatSessions.userId, userId), eq(chatSessions.id, sessionId)));
  if (!row) throw new AppError('not_found', noSuchSession);
  return row;
}

function sessionTitle(message: string): string {
  const line = message.trim().replace(/\s+/g, ' ');
  return line.length <= TITLE_LENGTH ? line : `${line.slice(0, TITLE_LENGTH - 1).trimEnd()}…`;
}

const toSource = (f: ChatFact): ChatSource => ({ type: f.type, id: f.id, title: f.title });

export async function answerChat(
  deps: { db: Db; model: ModelProvider; clock: () => Date; logger: Logger },
  req: ChatRequest,
): Promise<ChatReply> {
  const { db } = deps;
  const tenantId = req.tenant.id;
  const askedAt = deps.clock();
  const message = req.message.trim();

  const session = req.sessionId ? await findOwnSession(db, tenantId, req.userId, req.sessionId) : null;
  if (req.incidentId) {
    const [incident] = await db
      .select({ id: incidents.id })
      .from(incidents)
      .where(and(eq(incidents.tenantId, tenantId), eq(incidents.id, req.incidentId)));
    if (!incident) throw new AppError('not_found', 'No incident has that identifier');
  }
  const anchorIncidentId = req.incidentId ?? session?.incidentId ?? null;

  // Refuse before retrieval and the model when the quota is already spent; the count taken in
  // the transaction below is the one that decides under concurrency.
  const period = usagePeriod(askedAt);
  const limit = monthlyQuota(req.tenant, 'chat_messages');
  const quotaMessage = `The monthly chat quota of ${limit} messages is used up for ${period}`;
  if (limit !== null && (await usageCount(db, { tenantId, period, metric: 'chat_messages' })) >= limit) {
    throw new AppError('quota_exceeded', quotaMessage);
  }

  const history = session
    ? (
        await db
          .select({ role: chatMessages.role, content: chatMessages.content, sources: chatMessages.sources })
          .from(chatMessages)
          .where(and(eq(chatMessages.tenantId, tenantId), eq(chatMessages.sessionId, session.id)))
          .orderBy(desc(chatMessages.createdAt), desc(chatMessages.id))
          .limit(HISTORY_MESSAGES)
      ).reverse()
    : [];

  const retrieval = await retrieve(db, { tenantId, question: message, history, anchorIncidentId, now: askedAt });
  const answer = await deps.model.answer({
    question: message,
    intent: retrieval.intent,
    anchorIncidentId,
    history: history.map((h) => ({ role: h.role, content: h.content })),
    facts: retrieval.facts,
  });
  const sources = answer.output.sources.flatMap((s) =>
    retrieval.facts.filter((f) => f.type === s.type && f.id === s.id).map(toSource),
  );
  deps.logger.debug(
    {
      intent: retrieval.intent.kind,
      terms: retrieval.analysis.terms,
      facts: retrieval.facts.length,
      sources: sources.length,
      model: answer.model,
    },
    'chat answered',
  );

  // Stored in order: the answer is at least a millisecond after the question (ids and keyset order agree).
  const answeredAt = new Date(Math.max(deps.clock().getTime(), askedAt.getTime() + 1));
  const sessionId = session?.id ?? newId('sess', askedAt.getTime());
  const userMessageId = newId('msg', askedAt.getTime());
  const messageId = newId('msg', answeredAt.getTime());

  await db.transaction(async (tx) => {
    if (session) {
      const updated = await tx
        .update(chatSessions)
        .set({
          messageCount: sql`${chatSessions.messageCount} + 2`,
          updatedAt: answeredAt,
          incidentId: anchorIncidentId,
        })
        .where(
          and(
            eq(chatSessions.tenantId, tenantId),
            eq(chatSessions.userId, req.userId),
            eq(chatSessions.id, session.id),
          ),
        )
        .returning({ id: chatSessions.id });
      if (updated.length === 0) throw new AppError('not_found', noSuchSession);
    } else {
      await tx.insert(chatSessions).values({
        id: sessionId,
        tenantId,
        userId: req.userId,
        incidentId: anchorIncidentId,
        title: sessionTitle(message),
        messageCount: 2,
        createdAt: askedAt,
        updatedAt: answeredAt,
      });
    }
    await tx.insert(chatMessages).values([
      {
        id: userMessageId,
        tenantId,
        sessionId,
        role: 'user',
        content: message,
        sources: [],
        model: null,
        createdAt: askedAt,
      },
      {
        id: messageId,
        tenantId,
        sessionId,
        role: 'assistant',
        content: answer.output.reply,
        sources,
        model: answer.model,
        tokensUsed: answer.tokensUsed,
        costUsd: answer.costUsd,
        createdAt: answeredAt,
      },
    ]);
    await appendAudit(tx, {
      tenantId,
      actorType: 'user',
      actorId: req.userId,
      action: 'memory.chat_message',
      targetType: 'chat_session',
      targetId: sessionId,
      incidentId: anchorIncidentId,
      requestId: req.requestId,
      // Never the text of the question or the answer.
      details: { messageId, userMessageId, sourceCount: sources.length, model: answer.model, newSession: !session },
    });
    // Last, so the tenant's counter row stays locked only until commit.
    const used = await consumeQuota(tx, { tenantId, period, metric: 'chat_messages', limit });
    if (used === null) throw new AppError('quota_exceeded', quotaMessage);
  });

  return { sessionId, messageId, reply: answer.output.reply, sources, timestamp: answeredAt.toISOString() };
}

export function toSessionView(row: ChatSessionRow) {
  return {
    sessionId: row.id,
    title: row.title,
    incidentId: row.incidentId,
    messageCount: row.messageCount,
    createdAt: row.createdAt.toISOString(),
    updatedAt: row.updatedAt.toISOString(),
  };
}

export function toMessageView(row: ChatMessageRow) {
  return {
    messageId: row.id,
    role: row.role,
    content: row.content,
    sources: row.sources,
    model: row.model,
    tokensUsed: row.tokensUsed,
    costUsd: row.costUsd,
    createdAt: row.createdAt.toISOString(),
  };
}

/** The caller's sessions, newest first. */
export async function listOwnSessions(
  db: Db,
  args: { tenantId: string; userId: string; limit: number; after?: { createdAt: Date; id: string } | undefined },
): Promise<{ rows: ChatSessionRow[]; total: number; hasMore: boolean }> {
  const where = and(eq(chatSessions.tenantId, args.tenantId), eq(chatSessions.userId, args.userId));
  const [rows, totals] = await Promise.all([
    db
      .select()
      .from(chatSessions)
      .where(args.after ? and(where, olderThan(chatSessions.createdAt, chatSessions.id, args.after)) : where)
      .orderBy(desc(chatSessions.createdAt), desc(chatSessions.id))
      .limit(args.limit + 1),
    db.select({ total: count() }).from(chatSessions).where(where),
  ]);
  return { rows: rows.slice(0, args.limit), total: totals[0]?.total ?? 0, hasMore: rows.length > args.limit };
}

/** A session's messages, oldest first (the order a conversation is read in). */
export async function listSessionMessages(
  db: Db,
  args: { tenantId: string; sessionId: string; limit: number; after?: { createdAt: Date; id: string } | undefined },
): Promise<{ rows: ChatMessageRow[]; total: number; hasMore: boolean }> {
  const where = and(eq(chatMessages.tenantId, args.tenantId), eq(chatMessages.sessionId, args.sessionId));
  const newer = args.after
    ? or(
        gt(chatMessages.createdAt, args.after.createdAt),
        and(eq(chatMessages.createdAt, args.after.createdAt), gt(chatMessages.id, args.after.id)),
      )
    : undefined;
  const [rows, totals] = await Promise.all([
    db
      .select()
      .from(chatMessages)
      .where(newer ? and(where, newer) : where)
      .orderBy(asc(chatMessages.createdAt), asc(chatMessages.id))
      .limit(args.limit + 1),
    db.select({ total: count() }).from(chatMessages).where(where),
  ]);
  return { rows: rows.slice(0, args.limit), total: totals[0]?.total ?? 0, hasMore: rows.length > args.limit };
}
