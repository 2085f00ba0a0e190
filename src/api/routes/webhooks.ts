import { createRoute, z, type OpenAPIHono } from '@hono/zod-openapi';
import type { Context } from 'hono';
import { hashApiKey, presentedApiKey } from '../../auth/api-keys.js';
import { checkWebhookSignature } from '../../auth/webhook-signatures.js';
import { Coalescer } from '../../db/coalescer.js';
import {
  findActiveWebhookKeys,
  findWebhookCredentials,
  touchApiKey,
  type WebhookCredential,
} from '../../db/repositories/api-keys.js';
import { AppError } from '../../errors.js';
import { IngestBatcher } from '../../ingest/batcher.js';
import { createDeliveryParser, DEFAULT_PARSER_SETTINGS } from '../../ingest/parse-pool.js';
import { findProvider, providers } from '../../ingest/providers/index.js';
import type { AppDeps, AppEnv } from '../context.js';
import { clientAddress } from '../middleware/client-address.js';
import { createWebhookKeyGate, type WebhookKeyGate } from '../middleware/webhook-key-gate.js';
import { applyRateLimit } from '../middleware/rate-limit.js';
import { errorResponses } from '../schemas/common.js';

const IngestResponse = z
  .object({
    eventIds: z.array(z.string()),
    incidentIds: z.array(z.string().nullable()).openapi({
      description:
        'One per alert of the delivery, in order: the incident the alert opened or joined, or null when it is in none (a test or heartbeat, suppressed or held by a correlation rule, or a recovery of an alert with no open incident).',
    }),
    alertIds: z.array(z.string().nullable()).optional().openapi({
      description: 'One per alert, in order: its alert record (alt_…), or null for a recovery of nothing recorded.',
    }),
    deduplicated: z.boolean(),
    ignored: z.string().optional(),
  })
  .openapi('IngestResult');

/** Webhook requests with a refused key one address may send a tenant path a minute before 429. */
const DEFAULT_KEY_FAILURES_PER_MINUTE = 600;

/** The webhook key gate (ADR 0252), one per api process: keys judged before bodies are read. */
export function createWebhookKeyGateOf(deps: AppDeps): WebhookKeyGate {
  const lookups = new Coalescer((keys: Array<{ tenantId: string; keyHash: string }>) =>
    findActiveWebhookKeys(deps.relaxedSql, keys),
  );
  return createWebhookKeyGate({
    limitPerMinute: deps.config.webhookKeyFailuresPerMinute ?? DEFAULT_KEY_FAILURES_PER_MINUTE,
    clock: deps.clock,
    lookup: async (keys) => Promise.all(keys.map((key) => lookups.submit(key))),
  });
}

const ingestRoute = createRoute({
  method: 'post',
  path: '/v1/webhooks/{tenantId}/{provider}',
  tags: ['ingestion'],
  summary: 'Ingest a monitoring, CI or VCS webhook (API key; optional HMAC signature)',
  description: `Providers: ${Object.keys(providers).join(', ')}. Authenticate with \`Authorization: Bearer flo_…\` or \`X-API-Key\` (for a tool that takes only a URL: Basic credentials holding the key, or the \`api_key\` query parameter); when \`X-Webhook-Signature: sha256=<hex>\` is sent it must be the HMAC-SHA256 with the key's signing secret of \`<X-Webhook-Timestamp>.<raw body>\` (Unix seconds, within 5 minutes; required when the tenant requires signatures) or of the raw body alone; GitHub's \`X-Hub-Signature-256\` and Grafana's \`X-Grafana-Alerting-Signature\` are verified too.`,
  security: [{ apiKey: [] }],
  request: {
    params: z.object({
      tenantId: z
        .string()
        .min(1)
        .max(64)
        .openapi({ param: { name: 'tenantId', in: 'path' } }),
      // Any name reaches the handler, which answers 404 for an unknown one; the document lists the known.
      provider: z
        .string()
        .min(1)
        .max(40)
        .openapi({ param: { name: 'provider', in: 'path' }, enum: Object.keys(providers) }),
    }),
  },
  responses: {
    202: {
      description: 'Stored; workflows are started or signalled right after',
      content: { 'application/json': { schema: IngestResponse } },
    },
    ...errorResponses(400, 401, 404, 413, 429, 503),
  },
});

export function registerWebhookRoutes(app: OpenAPIHono<AppEnv>, deps: AppDeps, keyGate: WebhookKeyGate): void {
  const parser = createDeliveryParser(deps.webhookParse);
  // Large deliveries are written in a lane of their own, so a normal alert never waits behind a
  // batch that stores megabytes (ADR 0252). The batch is safe beside another, as across replicas.
  const lanes = {
    normal: new IngestBatcher(deps.sql, deps.clock, deps.ingest, deps.databaseWatch?.answers),
    large: new IngestBatcher(deps.sql, deps.clock, { maxDeliveries: 8, ...deps.ingest }, deps.databaseWatch?.answers),
  };
  const laneOf = (bytes: number) =>
    bytes >= (deps.webhookParse?.offThreadFromBytes ?? DEFAULT_PARSER_SETTINGS.offThreadFromBytes)
      ? lanes.large
      : lanes.normal;
  // Only for a payload that is refused before it reaches a batch (which judges keys itself).
  const credentials = new Coalescer((lookups: Array<{ tenantId: string; keyHash: string }>) =>
    findWebhookCredentials(deps.relaxedSql, lookups),
  );
  app.openapi(ingestRoute, async (c) => {
    const { tenantId, provider: providerName } = c.req.valid('param');
    const provider = findProvider(providerName);
    if (!provider)
      throw new AppError('not_found', `Unknown provider ${providerName}; one of ${Object.keys(providers).join(', ')}`);
    const presented = await admitPresentedKey(c, deps, keyGate, tenantId);
    const { keyHash } = presented;
    try {
      const rawBody = new Uint8Array(await c.req.arrayBuffer());
      const admit = admitterOf(c, deps, provider.name, rawBody);
      let parsed;
      try {
        parsed = await parser.parse({ provider: provider.name, body: rawBody, headers: c.req.header() });
      } catch (err) {
        // What is wrong with a payload is told only to a caller whose key is good: the key is
        // judged on its own first (a valid payload has its key judged in the batch instead).
        if (err instanceof AppError && err.code === 'validation_error')
          admit(await credentials.submit({ tenantId, keyHash }));
        throw err;
      }
      let credential: WebhookCredential | undefined;
      const { result, replayed } = await laneOf(rawBody.byteLength).submit({
        tenantId,
        keyHash,
        authorize: (found) => (credential = admit(found)),
        provider: provider.name,
        deliveryKey: parsed.deliveryKey,
        events: parsed.events,
        ...(parsed.ignored ? { ignored: parsed.ignored } : {}),
        requestId: c.get('requestId'),
        bytes: rawBody.byteLength,
      });
      if (credential?.touchDue) {
        touchApiKey(deps.db, credential.keyId).catch((err: unknown) =>
          c.get('logger').warn({ err }, 'could not record key use'),
        );
      }
      if (replayed) c.header('Idempotent-Replayed', 'true');
      keyGate.accepted(tenantId, keyHash);
      return c.json(result, 202);
    } catch (err) {
      if (err instanceof AppError && err.code === 'unauthorized') keyGate.refused(presented);
      throw err;
    }
  });
}

/**
 * The presented key, judged from the headers before the body is read (ADR 0252): 401 without
 * one, 401 or 429 from the gate, and then the connection closes instead of draining the body.
 */
async function admitPresentedKey(c: Context<AppEnv>, deps: AppDeps, keyGate: WebhookKeyGate, tenantId: string) {
  const key = presentedApiKey({
    authorization: c.req.header('authorization'),
    apiKeyHeader: c.req.header('x-api-key'),
    queryKey: c.req.query('api_key'),
  });
  if (!key) {
    throw new AppError(
      'unauthorized',
      'An API key (flo_…) is required: Authorization: Bearer, X-API-Key, Basic credentials or the api_key query parameter',
    );
  }
  const presented = { address: clientAddress(c, deps.config.trustProxy), tenantId, keyHash: hashApiKey(key) };
  try {
    await keyGate.admit(presented);
  } catch (err) {
    if (err instanceof AppError && err.code === 'rate_limit_exceeded')
      c.header('Retry-After', String(keyGate.retryAfter()));
    c.header('Connection', 'close');
    throw err;
  }
  return presented;
}

/**
 * Judges the key found for this tenant in the batch: 401 for none, a suspended tenant or a bad or
 * missing signature, 429 past the rate limit (with the X-RateLimit headers either way).
 */
function admitterOf(c: Context<AppEnv>, deps: AppDeps, provider: string, rawBody: Uint8Array) {
  return (credential: WebhookCredential | undefined): WebhookCredential => {
    if (!credential || credential.tenantStatus !== 'active') {
      throw new AppError('unauthorized', 'The API key is invalid, revoked, or not for this tenant');
    }
    c.set('apiKeyId', credential.keyId);
    const refusal = checkWebhookSignature({
      provider,
      header: (name) => c.req.header(name),
      rawBody,
      signingSecret: credential.signingSecret,
      requireSignature: credential.settings.requireWebhookSignature ?? false,
      now: deps.clock(),
    });
    if (refusal) throw new AppError('unauthorized', refusal);
    const limit = deps.config.webhookRateLimitPerMinute;
    applyRateLimit(
      c,
      {
        allowed: credential.windowCount <= limit,
        limit,
        remaining: Math.max(0, limit - credential.windowCount),
        resetAt: credential.windowReset,
      },
      deps.clock(),
    );
    return credential;
  };
}
