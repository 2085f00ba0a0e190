import { z } from '@hono/zod-openapi';
import { limitParam, oneLine } from './common.js';

export const CreateApiKeyBody = z
  .object({ name: oneLine(100, 'name is required').openapi({ example: 'prometheus-prod' }) })
  .strict()
  .openapi('CreateApiKey');

export const ApiKey = z
  .object({
    keyId: z.string(),
    name: z.string(),
    prefix: z.string().openapi({ description: 'First characters of the key, to recognise it' }),
    createdAt: z.string(),
    lastUsedAt: z.string().nullable(),
    revokedAt: z.string().nullable(),
  })
  .openapi('ApiKey');

export const CreatedApiKey = z
  .object({
    keyId: z.string(),
    name: z.string(),
    key: z.string().openapi({ description: 'flo_… — shown only in this response' }),
    signingSecret: z
      .string()
      .openapi({ description: 'HMAC-SHA256 secret for X-Webhook-Signature — shown only in this response' }),
    prefix: z.string(),
    createdAt: z.string(),
  })
  .openapi('CreatedApiKey');

export const ListApiKeysQuery = z.object({ limit: limitParam(50, 200), cursor: z.string().min(1).max(512).optional() });
export const ApiKeyList = z.object({ items: z.array(ApiKey), nextCursor: z.string().nullable() }).openapi('ApiKeyList');
export const KeyIdParam = z.object({
  keyId: z
    .string()
    .min(1)
    .max(64)
    .openapi({ param: { name: 'keyId', in: 'path' } }),
});
