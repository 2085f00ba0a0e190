import { createHash, createHmac, randomBytes, timingSafeEqual } from 'node:crypto';

const BASE62 = '0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz';
export const API_KEY_PREFIX = 'flo_';

/** Base62 of the bytes read as one big number, left-padded to the full length. */
export function base62(bytes: Buffer): string {
  const length = Math.ceil((bytes.length * 8) / Math.log2(62));
  let value = BigInt(`0x${bytes.toString('hex') || '0'}`);
  let out = '';
  while (value > 0n) {
    out = BASE62[Number(value % 62n)]! + out;
    value /= 62n;
  }
  return out.padStart(length, '0');
}

export function generateApiKey(): { key: string; keyHash: string; prefix: string } {
  const key = `${API_KEY_PREFIX}${base62(randomBytes(32))}`;
  return { key, keyHash: hashApiKey(key), prefix: key.slice(0, API_KEY_PREFIX.length + 8) };
}

export function generateSigningSecret(): string {
  return `whsec_${base62(randomBytes(32))}`;
}

export function hashApiKey(key: string): string {
  return createHash('sha256').update(key, 'utf8').digest('hex');
}

const KEY_FORM = /^flo_[0-9A-Za-z]{20,64}$/;

/** Where a webhook request may carry its API key. */
export interface PresentedCredentials {
  authorization: string | undefined;
  apiKeyHeader: string | undefined;
  /** The `api_key` query parameter, for tools that take a URL and nothing else. */
  queryKey: string | undefined;
}

/**
 * The presented key: `Authorization: Bearer flo_…` (any case of the scheme, RFC 9110),
 * `X-API-Key: flo_…`, HTTP Basic credentials holding the key as the user or the password (what
 * a tool sends for a URL written `https://flo_…@host/…`, such as GitHub's webhooks), or the
 * `api_key` query parameter (Sentry's webhooks take a URL only). Headers first.
 */
export function presentedApiKey(presented: PresentedCredentials): string | undefined {
  const authorization = presented.authorization?.trim() ?? '';
  const bearer = authorization.match(/^Bearer\s+(\S+)$/i)?.[1];
  const basic = authorization.match(/^Basic\s+([A-Za-z0-9+/=]+)$/i)?.[1];
  const fromBasic = basic
    ? Buffer.from(basic, 'base64')
        .toString('utf8')
        .split(':')
        .find((part) => KEY_FORM.test(part))
    : undefined;
  const candidate = bearer ?? fromBasic ?? presented.apiKeyHeader?.trim() ?? presented.queryKey?.trim();
  return candidate && KEY_FORM.test(candidate) ? candidate : undefined;
}

export function signBody(secret: string, body: Uint8Array): string {
  return `sha256=${createHmac('sha256', secret).update(body).digest('hex')}`;
}

/** Constant-time check of `X-Webhook-Signature: sha256=<hex>` over the raw body. */
export function verifySignature(secret: string, body: Uint8Array, header: string): boolean {
  const match = header.trim().match(/^sha256=([0-9a-fA-F]{64})$/);
  if (!match) return false;
  const expected = createHmac('sha256', secret).update(body).digest();
  const given = Buffer.from(match[1]!, 'hex');
  return given.length === expected.length && timingSafeEqual(given, expected);
}
