import { z } from '@hono/zod-openapi';
import { integrationStatuses } from '../../db/schema/identity.js';

export const IntegrationProviderParam = z.object({
  provider: z
    .string()
    .regex(/^[a-z0-9_]{1,64}$/, 'provider is a catalog key, such as github')
    .openapi({ param: { name: 'provider', in: 'path' }, example: 'github' }),
});

export const IntegrationIdParam = z.object({
  integrationId: z
    .string()
    .min(1)
    .max(64)
    .openapi({ param: { name: 'integrationId', in: 'path' }, example: 'int_01jd8k2v3x4y5z6a7b8c9d0e1f' }),
});

export const IntegrationView = z
  .object({
    integrationId: z.string(),
    provider: z.string(),
    status: z.enum(integrationStatuses),
    statusReason: z.string().nullable().openapi({ description: 'Why it is in error' }),
    scopes: z.array(z.string()).openapi({ description: 'Granted (oauth2); empty otherwise' }),
    connectedAt: z.string().nullable(),
    lastUsedAt: z.string().nullable(),
    connectedBy: z.string().openapi({ description: 'The user who connected it' }),
  })
  .openapi('Integration');

export const IntegrationList = z
  .object({ items: z.array(IntegrationView), total: z.number().int() })
  .openapi('IntegrationList');

export const ConnectQuery = z.object({
  subdomain: z
    .string()
    .max(63)
    .optional()
    .openapi({ description: 'Zendesk only: the account subdomain (acme for acme.zendesk.com)' }),
});

export const ConnectInstructions = z
  .object({
    provider: z.string(),
    authType: z.enum(['api_key', 'webhook_only']),
    method: z.literal('POST'),
    connectUrl: z.string(),
    requiredFields: z.array(z.string()).openapi({ description: 'The body POST takes: every field, as a string' }),
  })
  .openapi('IntegrationConnectInstructions');

/** Providers add parameters of their own (Google's `authuser`, Microsoft's `session_state`): ignored. */
export const ConnectCallbackQuery = z.object({
  state: z.string().max(512).optional(),
  code: z.string().max(4096).optional(),
  error: z.string().max(200).optional(),
  error_description: z.string().max(2000).optional(),
});

export const ConnectCallbackResult = z
  .object({ integrationId: z.string(), provider: z.string(), status: z.enum(integrationStatuses) })
  .openapi('IntegrationConnected');

export const ConnectBody = z.record(z.string(), z.unknown()).openapi('IntegrationConnectBody', {
  description:
    "api_key providers: exactly the catalog entry's requiredFields, each a string (credentials are tested against the provider, then stored encrypted). webhook_only providers: an empty object or no body.",
  example: { apiKey: '…', applicationKey: '…', site: 'datadoghq.eu' },
});

export const ConnectedIntegration = IntegrationView.extend({
  webhook: z
    .object({
      url: z.string().openapi({ description: 'Where the tool sends its webhooks' }),
      keyId: z.string(),
      key: z.string().openapi({ description: 'flo_… — shown only in this response' }),
      signingSecret: z
        .string()
        .openapi({ description: 'HMAC-SHA256 secret for X-Webhook-Signature — shown only here' }),
    })
    .optional()
    .openapi({ description: 'webhook_only providers' }),
}).openapi('ConnectedIntegration');
