import { z } from '@hono/zod-openapi';
import { chatSourceTypes } from '../../analysis/types.js';
import { hasVisibleText } from '../../domain/text.js';
import { limitParam } from './common.js';

export const MAX_CHAT_MESSAGE = 4000;

export const ChatBody = z
  .object({
    message: z
      .string({ error: 'message is required' })
      .min(1, 'message must not be empty')
      .max(MAX_CHAT_MESSAGE, `message must be at most ${MAX_CHAT_MESSAGE} characters`)
      .refine(hasVisibleText, 'message must not be empty')
      .openapi({ example: 'What caused the last checkout outage?' }),
    sessionId: z.string().min(1).max(64).optional().openapi({
      description: 'Continue this conversation (one of yours); a new one starts when omitted',
      example: 'sess_01j…',
    }),
    incidentId: z
      .string()
      .min(1)
      .max(64)
      .optional()
      .openapi({ description: 'Anchor the conversation to this incident', example: 'inc_01j…' }),
  })
  .strict()
  .openapi('ChatMessageRequest');

export const ChatSourceSchema = z
  .object({
    type: z.string().openapi({
      description: `One of ${chatSourceTypes.join(', ')}. An investigation's id is its incident's id`,
      example: 'incident',
    }),
    id: z.string(),
    title: z.string(),
  })
  .openapi('ChatSource');

export const ChatReply = z
  .object({
    sessionId: z.string().openapi({ example: 'sess_01j…' }),
    messageId: z.string().openapi({ description: "The assistant message's id", example: 'msg_01j…' }),
    reply: z.string(),
    sources: z
      .array(ChatSourceSchema)
      .openapi({ description: 'Exactly the records the reply used, most important first' }),
    timestamp: z.string(),
  })
  .openapi('ChatReply');

export const ChatSession = z
  .object({
    sessionId: z.string(),
    title: z.string().openapi({ description: 'The first question, shortened' }),
    incidentId: z.string().nullable().openapi({ description: 'The incident the conversation is anchored to' }),
    messageCount: z.number().int(),
    createdAt: z.string(),
    updatedAt: z.string(),
  })
  .openapi('ChatSession');

export const ChatSessionList = z
  .object({ items: z.array(ChatSession), total: z.number().int(), nextCursor: z.string().nullable() })
  .openapi('ChatSessionList');

export const ChatMessage = z
  .object({
    messageId: z.string(),
    role: z.enum(['user', 'assistant']),
    content: z.string(),
    sources: z.array(ChatSourceSchema),
    model: z.string().nullable().openapi({
      description: 'Who wrote an assistant message (the built-in responder or the model); null for the user',
    }),
    tokensUsed: z.number().int(),
    costUsd: z.number(),
    createdAt: z.string(),
  })
  .openapi('ChatMessage');

export const ChatMessageList = z
  .object({
    sessionId: z.string(),
    items: z.array(ChatMessage),
    total: z.number().int(),
    nextCursor: z.string().nullable(),
  })
  .openapi('ChatMessageList');

export const ListSessionsQuery = z.object({
  limit: limitParam(20, 100),
  cursor: z.string().min(1).max(512).optional(),
});

export const ListMessagesQuery = z.object({
  limit: limitParam(50, 200),
  cursor: z.string().min(1).max(512).optional(),
});

export const SessionIdParam = z.object({
  sessionId: z
    .string()
    .min(1)
    .max(64)
    .openapi({ param: { name: 'sessionId', in: 'path' } }),
});
