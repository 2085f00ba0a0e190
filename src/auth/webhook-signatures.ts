import { createHmac, timingSafeEqual } from 'node:crypto';

/**
 * Webhook signatures, all HMAC-SHA256 with the API key's signing secret:
 * - ours, timestamped: `X-Webhook-Timestamp: <Unix seconds>` and
 *   `X-Webhook-Signature: sha256=<hex of "<timestamp>.<raw body>">`, the timestamp within
 *   {@link SIGNATURE_TOLERANCE_SECONDS} of the server's clock either way, so a captured request
 *   stops working minutes later;
 * - ours, body only (no timestamp header), for tools that cannot send a timestamp: not accepted
 *   when the tenant requires signatures;
 * - GitHub's `X-Hub-Signature-256` (body only, as GitHub signs), accepted also when required:
 *   GitHub cannot send a timestamp;
 * - Grafana's `X-Grafana-Alerting-Signature`: bare hex of "<timestamp>:<raw body>" when the
 *   contact point sends `X-Grafana-Alerting-Signature-Timestamp`, else of the body.
 * One signature is judged: X-Webhook-Signature when sent, else the provider's own.
 */
export const SIGNATURE_TOLERANCE_SECONDS = 300;

export const GRAFANA_TIMESTAMP_HEADER = 'X-Grafana-Alerting-Signature-Timestamp';

export interface WebhookSignatureInput {
  /** The provider name of the path (`github`, `grafana`, …). */
  provider: string;
  header: (name: string) => string | undefined;
  rawBody: Uint8Array;
  signingSecret: string;
  /** The tenant's `requireWebhookSignature`. */
  requireSignature: boolean;
  now: Date;
}

const HEX_SHA256 = /^[0-9a-fA-F]{64}$/;

/** Why the delivery's signature refuses it (a 401's message), or undefined when it does not. */
export function checkWebhookSignature(input: WebhookSignatureInput): string | undefined {
  const ours = input.header('x-webhook-signature');
  if (ours !== undefined) return checkOurs(input, ours.trim());
  const github = input.provider === 'github' ? input.header('x-hub-signature-256') : undefined;
  if (github !== undefined) {
    const hex = github.trim().match(/^sha256=([0-9a-fA-F]{64})$/)?.[1];
    return hex && matches(input, '', hex) ? undefined : 'X-Hub-Signature-256 does not match the body';
  }
  const grafana = input.provider === 'grafana' ? input.header('x-grafana-alerting-signature') : undefined;
  if (grafana !== undefined) return checkGrafana(input, grafana.trim());
  if (!input.requireSignature) return undefined;
  return 'This tenant requires signed webhooks: X-Webhook-Timestamp (Unix seconds) and X-Webhook-Signature: sha256=<hex HMAC-SHA256 of "<timestamp>.<raw body>" with the key\'s signing secret>';
}

function checkOurs(input: WebhookSignatureInput, value: string): string | undefined {
  if (HEX_SHA256.test(value)) return 'X-Webhook-Signature lacks the sha256= prefix: send sha256=<hex HMAC-SHA256>';
  const hex = value.match(/^sha256=([0-9a-fA-F]{64})$/)?.[1];
  if (!hex) return 'X-Webhook-Signature must be sha256= followed by the 64 hex digits of an HMAC-SHA256';
  const timestamp = input.header('x-webhook-timestamp');
  if (timestamp !== undefined)
    return checkStamped(
      input,
      { signature: 'X-Webhook-Signature', timestamp: 'X-Webhook-Timestamp', separator: '.' },
      timestamp,
      hex,
    );
  if (input.requireSignature) {
    return 'This tenant requires timestamped signatures: add X-Webhook-Timestamp (Unix seconds) and sign "<timestamp>.<raw body>" instead of the body alone';
  }
  return matches(input, '', hex) ? undefined : 'X-Webhook-Signature does not match the body';
}

function checkGrafana(input: WebhookSignatureInput, value: string): string | undefined {
  if (!HEX_SHA256.test(value))
    return 'X-Grafana-Alerting-Signature must be the 64 hex digits of an HMAC-SHA256, as Grafana sends it';
  const timestamp = input.header(GRAFANA_TIMESTAMP_HEADER);
  if (timestamp !== undefined)
    return checkStamped(
      input,
      { signature: 'X-Grafana-Alerting-Signature', timestamp: GRAFANA_TIMESTAMP_HEADER, separator: ':' },
      timestamp,
      value,
    );
  if (input.requireSignature) {
    return `This tenant requires timestamped signatures: set the Grafana contact point's HMAC "Timestamp header" to ${GRAFANA_TIMESTAMP_HEADER}`;
  }
  return matches(input, '', value) ? undefined : 'X-Grafana-Alerting-Signature does not match the body';
}

/** A signature over "<timestamp><separator><raw body>", then the timestamp's distance from now. */
function checkStamped(
  input: WebhookSignatureInput,
  names: { signature: string; timestamp: string; separator: string },
  timestamp: string,
  hex: string,
): string | undefined {
  if (!/^\d{1,15}$/.test(timestamp)) return `${names.timestamp} must be a Unix time in whole seconds`;
  if (!matches(input, `${timestamp}${names.separator}`, hex))
    return `${names.signature} does not match ${names.timestamp} and the body`;
  // Judged after the signature, so only a genuine request (a late one or a replay) is told the clock.
  const serverSeconds = Math.floor(input.now.getTime() / 1000);
  const age = serverSeconds - Number(timestamp);
  if (Math.abs(age) <= SIGNATURE_TOLERANCE_SECONDS) return undefined;
  return `${names.timestamp} ${timestamp} is ${Math.abs(age)} s ${age > 0 ? 'old' : 'ahead'}: not within ${SIGNATURE_TOLERANCE_SECONDS} s of the server's time (${serverSeconds}); take it in Unix seconds when the delivery is signed`;
}

/** Constant-time comparison of the hex HMAC given with the HMAC of prefix + raw body. */
function matches(input: WebhookSignatureInput, prefix: string, hex: string): boolean {
  const expected = createHmac('sha256', input.signingSecret).update(prefix, 'utf8').update(input.rawBody).digest();
  const given = Buffer.from(hex, 'hex');
  return given.length === expected.length && timingSafeEqual(given, expected);
}
