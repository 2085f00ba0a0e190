/**
 * The widget's secrets: publishable keys (`wpk_…`, long-lived, per tenant) and session tokens
 * (`wst_…`, one session's). Only their SHA-256 is stored, so a database read discloses neither.
 */
import { createHash, randomBytes } from 'node:crypto';

export const PUBLISHABLE_KEY_PREFIX = 'wpk_';
export const SESSION_TOKEN_PREFIX = 'wst_';

export const hashSecret = (secret: string): string => createHash('sha256').update(secret, 'utf8').digest('hex');

export function newPublishableKey(): { key: string; hash: string; prefix: string } {
  const key = `${PUBLISHABLE_KEY_PREFIX}${randomBytes(24).toString('base64url')}`;
  return { key, hash: hashSecret(key), prefix: key.slice(0, 12) };
}

export function newSessionToken(): { token: string; hash: string } {
  const token = `${SESSION_TOKEN_PREFIX}${randomBytes(32).toString('base64url')}`;
  return { token, hash: hashSecret(token) };
}

/**
 * A browser origin as the `Origin` header sends it (`scheme://host[:port]`, no path), or
 * undefined. Only https, except http for localhost (a developer's page).
 */
export function canonicalOrigin(value: string): string | undefined {
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    return undefined;
  }
  if (url.username || url.password || (url.pathname !== '/' && url.pathname !== '') || url.search || url.hash)
    return undefined;
  if (value.replace(/\/$/, '') !== url.origin) return undefined;
  const local = ['localhost', '127.0.0.1', '[::1]'].includes(url.hostname);
  if (url.protocol !== 'https:' && !(url.protocol === 'http:' && local)) return undefined;
  return url.origin;
}

/** A push subscription's signing secret is sealed by the skills' cipher, bound to its tenant and subscription. */
export const secretContext = (tenantId: string, subscriptionId: string) => ({
  tenantId,
  skillId: subscriptionId,
  header: 'x-widget-signature',
});
