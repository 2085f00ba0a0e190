import { readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { signBody } from '../../src/auth/api-keys.js';
import type { ApiResponse, TestService } from './service.js';

const fixturesDir = path.join(path.dirname(fileURLToPath(import.meta.url)), '..', 'fixtures', 'webhooks');

export function fixture(name: string): string {
  return readFileSync(path.join(fixturesDir, name), 'utf8');
}

export interface WebhookKey {
  keyId: string;
  key: string;
  signingSecret: string;
}

export async function createKey(svc: TestService, adminToken: string, name = 'monitoring'): Promise<WebhookKey> {
  const res = await svc.api('POST', '/v1/api-keys', { token: adminToken, body: { name } });
  if (res.status !== 201) throw new Error(`key creation failed: ${res.status} ${JSON.stringify(res.body)}`);
  return res.body as WebhookKey;
}

export async function postWebhook(
  svc: TestService,
  tenantId: string,
  provider: string,
  body: string | object,
  options: {
    key?: string;
    sign?: string;
    signature?: string;
    headers?: Record<string, string>;
    via?: 'bearer' | 'x-api-key';
  } = {},
): Promise<ApiResponse> {
  const raw = typeof body === 'string' ? body : JSON.stringify(body);
  const headers: Record<string, string> = { 'content-type': 'application/json', ...options.headers };
  if (options.key) {
    if (options.via === 'x-api-key') headers['x-api-key'] = options.key;
    else headers.authorization = `Bearer ${options.key}`;
  }
  if (options.sign) headers['x-webhook-signature'] = signBody(options.sign, Buffer.from(raw));
  if (options.signature) headers['x-webhook-signature'] = options.signature;
  return svc.api('POST', `/v1/webhooks/${tenantId}/${provider}`, { rawBody: raw, headers });
}

/** Polls until `probe` returns a value that is not undefined, null or false, or fails after `timeoutMs`. */
export async function eventually<T>(
  probe: () => Promise<T | undefined | null | false>,
  timeoutMs = 15_000,
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  let last: unknown;
  while (Date.now() < deadline) {
    try {
      const value = await probe();
      if (value !== undefined && value !== null && value !== false) return value;
    } catch (err) {
      last = err;
    }
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error(`condition not met within ${timeoutMs} ms${last ? `: ${String(last)}` : ''}`);
}
