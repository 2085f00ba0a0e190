import { isIP } from 'node:net';
import type { Context } from 'hono';
import { getConnInfo } from '@hono/node-server/conninfo';

/**
 * The caller's address. Behind a proxy (`TRUST_PROXY`), the right-most `X-Forwarded-For` entry:
 * the address the proxy in front of us saw. Entries left of it are whatever the client sent (a
 * proxy appends to the header it received), so taking the left-most let any caller pick its own
 * rate-limit window and audited address. Anything but an IP address there is ignored.
 */
export function clientAddress(c: Context, trustProxy: boolean): string {
  if (trustProxy) {
    const nearest = c.req.header('x-forwarded-for')?.split(',').at(-1)?.trim();
    if (nearest && isIP(nearest)) return nearest;
  }
  try {
    return getConnInfo(c).remote.address ?? 'unknown';
  } catch {
    return 'unknown';
  }
}
