import { z } from '@hono/zod-openapi';
import { widgetPushEventTypes } from '../../db/schema/widget.js';
import { ChatBody, ChatSourceSchema } from './memory.js';
import { limitParam, oneLine } from './common.js';

export const MAX_ALLOWED_ORIGINS = 20;

export const WidgetSessionOpened = z
  .object({
    sessionId: z.string().openapi({ example: 'wsess_01j…' }),
    token: z.string().openapi({
      description:
        "wst_… — this session's token: `Authorization: Bearer` on its endpoints, or `?token=` on its stream; nowhere else",
    }),
    expiresAt: z.string().openapi({ description: 'The inactivity deadline; each message moves it' }),
  })
  .openapi('WidgetSessionOpened');

export const WidgetMessageBody = ChatBody.pick({ message: true }).strict().openapi('WidgetMessageRequest');

export const WidgetReply = z
  .object({
    sessionId: z.string().openapi({ example: 'wsess_01j…' }),
    messageId: z.string().openapi({ example: 'msg_01j…' }),
    reply: z.string(),
    sources: z.array(ChatSourceSchema),
    timestamp: z.string(),
    expiresAt: z.string().openapi({ description: 'The session’s inactivity deadline after this message' }),
  })
  .openapi('WidgetReply');

const httpsUrl = z
  .string({ error: 'url is required' })
  .max(2048)
  .url('url must be an absolute URL')
  .refine((u) => u.toLowerCase().startsWith('https://'), 'url must be an https URL');

export const WidgetPushBody = z
  .object({
    url: httpsUrl.openapi({ example: 'https://portal.example.com/widget-events' }),
    events: z
      .array(z.enum(widgetPushEventTypes))
      .min(1, 'events must name at least one event')
      .max(widgetPushEventTypes.length)
      .refine((e) => new Set(e).size === e.length, 'events must not repeat an event'),
    secret: z
      .string()
      .min(16, 'secret must be at least 16 characters')
      .max(256)
      .optional()
      .openapi({ description: 'Signs each push: `X-Widget-Signature: sha256=<HMAC-SHA256 of the raw body>`' }),
  })
  .strict()
  .openapi('WidgetPushRequest');

export const WidgetPushSubscription = z
  .object({
    subscriptionId: z.string().openapi({ example: 'wsub_01j…' }),
    sessionId: z.string(),
    url: z.string(),
    events: z.array(z.enum(widgetPushEventTypes)),
    createdAt: z.string(),
  })
  .openapi('WidgetPushSubscription');

export const WidgetSessionParam = z.object({
  sessionId: z
    .string()
    .min(1)
    .max(64)
    .openapi({ param: { name: 'sessionId', in: 'path' }, example: 'wsess_01j…' }),
});

export const WidgetStreamQuery = z.object({
  token: z
    .string()
    .min(1)
    .max(128)
    .optional()
    .openapi({ description: 'The session token, for clients that cannot send a header (EventSource)' }),
  lastEventId: z
    .string()
    .regex(/^[0-9]{1,15}$/, 'lastEventId must be a whole number')
    .optional()
    .openapi({ description: 'Resume after this event (as the Last-Event-ID header does)' }),
});

const origin = z.string().min(1).max(300).openapi({ example: 'https://portal.example.com' });

export const CreateWidgetKeyBody = z
  .object({
    name: oneLine(100, 'name is required').openapi({ example: 'support-portal' }),
    allowedOrigins: z
      .array(origin)
      .min(1, 'allowedOrigins must name at least one origin')
      .max(MAX_ALLOWED_ORIGINS)
      .openapi({
        description: 'Browser origins (https://host[:port]; http only for localhost) the key opens sessions from',
      }),
  })
  .strict()
  .openapi('CreateWidgetKey');

export const WidgetKey = z
  .object({
    keyId: z.string().openapi({ example: 'wkey_01j…' }),
    name: z.string(),
    prefix: z.string().openapi({ description: 'First characters of the key, to recognise it' }),
    allowedOrigins: z.array(z.string()),
    createdAt: z.string(),
    revokedAt: z.string().nullable(),
  })
  .openapi('WidgetKey');

export const CreatedWidgetKey = WidgetKey.extend({
  key: z.string().openapi({ description: 'wpk_… — shown only in this response' }),
}).openapi('CreatedWidgetKey');

export const ListWidgetKeysQuery = z.object({
  limit: limitParam(50, 200),
  cursor: z.string().min(1).max(512).optional(),
});
export const WidgetKeyList = z
  .object({ items: z.array(WidgetKey), nextCursor: z.string().nullable() })
  .openapi('WidgetKeyList');
export const WidgetKeyIdParam = z.object({
  keyId: z
    .string()
    .min(1)
    .max(64)
    .openapi({ param: { name: 'keyId', in: 'path' } }),
});

export const WidgetSettingsSchema = z
  .object({
    sessionInactivitySeconds: z.number().int().openapi({ description: 'Default 1800 (30 minutes)', example: 1800 }),
    expiryWarningSeconds: z
      .number()
      .int()
      .min(0)
      .openapi({ description: 'Default 300 (5 minutes); 0 sends no warning', example: 300 }),
  })
  .strict()
  .openapi('WidgetSettings');
