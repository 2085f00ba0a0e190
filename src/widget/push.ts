/**
 * One push to a subscriber: HTTPS only, the host resolved and every address judged by the skills'
 * SSRF rules and the operator's network allow-list, the connection pinned to the judged address,
 * no redirect followed. Signed `X-Widget-Signature: sha256=<hex>` (HMAC-SHA256 over the raw body)
 * when the subscription has a secret.
 */
import { createHmac } from 'node:crypto';
import https from 'node:https';
import type { NetworkAllowlist } from '../skills/networks.js';
import { OutboundError, pinnedLookup, resolveTarget, type HostResolver } from '../skills/ssrf.js';

export const DELIVERY_HEADER = 'X-Widget-Delivery';
export const EVENT_HEADER = 'X-Widget-Event';
export const SIGNATURE_HEADER = 'X-Widget-Signature';

export const widgetSignature = (secret: string, rawBody: string): string =>
  `sha256=${createHmac('sha256', secret).update(rawBody, 'utf8').digest('hex')}`;

export interface PushTransport {
  allowlist: NetworkAllowlist;
  resolver: HostResolver;
  timeoutMs: number;
  /** Extra trusted certificate authorities (PEM), beside the system's; none by default. */
  ca?: string;
}

export interface PushRequest {
  url: string;
  deliveryId: string;
  eventType: string;
  rawBody: string;
  secret: string | null;
}

/** Sends one push; resolves the receiver's status code, or throws an OutboundError (`retryable` for network errors). */
export async function sendPush(transport: PushTransport, push: PushRequest): Promise<number> {
  const url = new URL(push.url);
  if (url.protocol !== 'https:') throw new OutboundError('invalid_config', 'widget pushes go to https URLs only');
  const signal = AbortSignal.timeout(transport.timeoutMs);
  const target = await resolveTarget(url.hostname, {
    allowlist: transport.allowlist,
    resolver: transport.resolver,
    signal,
  });
  const headers: Record<string, string> = {
    'content-type': 'application/json',
    'content-length': String(Buffer.byteLength(push.rawBody)),
    'user-agent': 'incident-investigation-service-widget/1',
    [DELIVERY_HEADER]: push.deliveryId,
    [EVENT_HEADER]: push.eventType,
    ...(push.secret ? { [SIGNATURE_HEADER]: widgetSignature(push.secret, push.rawBody) } : {}),
  };
  try {
    return await new Promise<number>((resolve, reject) => {
      const request = https.request(url, {
        method: 'POST',
        headers,
        lookup: pinnedLookup(target),
        agent: false, // a fresh connection to the judged address
        signal,
        ...(transport.ca ? { ca: transport.ca } : {}),
      });
      request.once('response', (response) => {
        response.resume(); // the body is not read: the status says it all
        resolve(response.statusCode ?? 0);
      });
      request.once('error', reject);
      request.end(push.rawBody);
    });
  } catch (err) {
    const e = err as NodeJS.ErrnoException;
    if (signal.aborted)
      throw new OutboundError('timeout', `${url.host}: no answer within ${transport.timeoutMs} ms`, true);
    if ((e.code ?? '').startsWith('ERR_TLS') || /certificate|SSL|TLS/i.test(e.message))
      throw new OutboundError('tls_error', `${url.host}: TLS failed (${e.code ?? e.message})`, true);
    throw new OutboundError('network_error', `${url.host}: ${e.code ?? e.message}`, true);
  }
}
