import { createHmac } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { checkWebhookSignature, type WebhookSignatureInput } from '../../src/auth/webhook-signatures.js';

const SECRET = 'whsec_0123456789abcdefghijklmnopqrstuvwxyzABCDEF';
const BODY = '{"name":"HighErrorRate","severity":"critical"}';
const NOW = 1_715_680_000;
const hex = (text: string, secret = SECRET) => createHmac('sha256', secret).update(text, 'utf8').digest('hex');

/** Judges a delivery of BODY at NOW with these headers (names in any case, as HTTP has them). */
function check(
  headers: Record<string, string>,
  options: { provider?: string; require?: boolean; nowSeconds?: number } = {},
) {
  const lower = Object.fromEntries(Object.entries(headers).map(([name, value]) => [name.toLowerCase(), value]));
  const input: WebhookSignatureInput = {
    provider: options.provider ?? 'generic',
    header: (name) => lower[name.toLowerCase()],
    rawBody: Buffer.from(BODY),
    signingSecret: SECRET,
    requireSignature: options.require ?? false,
    now: new Date((options.nowSeconds ?? NOW) * 1000 + 999),
  };
  return checkWebhookSignature(input);
}

const stamped = (timestamp: number | string, signedTimestamp = timestamp) => ({
  'X-Webhook-Timestamp': String(timestamp),
  'X-Webhook-Signature': `sha256=${hex(`${signedTimestamp}.${BODY}`)}`,
});

describe('checkWebhookSignature: ours, timestamped', () => {
  it('admits a signature over "<timestamp>.<body>", also when the tenant requires signatures, in either hex case', () => {
    expect(check(stamped(NOW))).toBeUndefined();
    expect(check(stamped(NOW), { require: true })).toBeUndefined();
    expect(
      check({
        'X-Webhook-Timestamp': String(NOW),
        'X-Webhook-Signature': `sha256=${hex(`${NOW}.${BODY}`).toUpperCase()}`,
      }),
    ).toBeUndefined();
  });

  it('admits a timestamp up to 300 s from the server clock either way and refuses 301 s, saying which way', () => {
    expect(check(stamped(NOW - 300))).toBeUndefined();
    expect(check(stamped(NOW + 300))).toBeUndefined();
    expect(check(stamped(NOW - 301))).toBe(
      `X-Webhook-Timestamp ${NOW - 301} is 301 s old: not within 300 s of the server's time (${NOW}); take it in Unix seconds when the delivery is signed`,
    );
    expect(check(stamped(NOW + 301))).toMatch(/^X-Webhook-Timestamp \d+ is 301 s ahead: not within 300 s/);
    expect(check(stamped(NOW - 360), { require: true })).toMatch(/360 s old/);
  });

  it('refuses a timestamp changed after signing, a signature over the body alone, and another secret', () => {
    const moved = check(stamped(NOW, NOW - 1000));
    expect(moved).toBe('X-Webhook-Signature does not match X-Webhook-Timestamp and the body');
    expect(check({ 'X-Webhook-Timestamp': String(NOW), 'X-Webhook-Signature': `sha256=${hex(BODY)}` })).toBe(moved);
    expect(
      check({
        'X-Webhook-Timestamp': String(NOW),
        'X-Webhook-Signature': `sha256=${hex(`${NOW}.${BODY}`, 'whsec_other')}`,
      }),
    ).toBe(moved);
    // Grafana's separator is not ours.
    expect(
      check({ 'X-Webhook-Timestamp': String(NOW), 'X-Webhook-Signature': `sha256=${hex(`${NOW}:${BODY}`)}` }),
    ).toBe(moved);
  });

  it('refuses a timestamp that is not whole Unix seconds', () => {
    for (const timestamp of ['', 'now', '1715680000.5', '-1715680000', '2024-05-14T09:30:00Z', '1'.repeat(16)]) {
      expect(check(stamped(timestamp)), timestamp).toBe('X-Webhook-Timestamp must be a Unix time in whole seconds');
    }
  });

  it('tells milliseconds apart by showing the server time in seconds', () => {
    expect(check(stamped(NOW * 1000))).toContain(`(${NOW})`);
  });
});

describe('checkWebhookSignature: ours, body only', () => {
  it('admits a signature over the body when the tenant does not require signatures', () => {
    expect(check({ 'X-Webhook-Signature': `sha256=${hex(BODY)}` })).toBeUndefined();
  });

  it('refuses it when the tenant requires signatures, telling the caller to add X-Webhook-Timestamp', () => {
    expect(check({ 'X-Webhook-Signature': `sha256=${hex(BODY)}` }, { require: true })).toBe(
      'This tenant requires timestamped signatures: add X-Webhook-Timestamp (Unix seconds) and sign "<timestamp>.<raw body>" instead of the body alone',
    );
  });

  it('refuses a signature made with another secret or for another body', () => {
    expect(check({ 'X-Webhook-Signature': `sha256=${hex(BODY, 'whsec_other')}` })).toBe(
      'X-Webhook-Signature does not match the body',
    );
    expect(check({ 'X-Webhook-Signature': `sha256=${hex(`${BODY} `)}` })).toBe(
      'X-Webhook-Signature does not match the body',
    );
  });

  it('tells a bare-hex signature that it lacks sha256=, and a malformed one what the form is', () => {
    expect(check({ 'X-Webhook-Signature': hex(BODY) })).toBe(
      'X-Webhook-Signature lacks the sha256= prefix: send sha256=<hex HMAC-SHA256>',
    );
    expect(check({ 'X-Webhook-Timestamp': String(NOW), 'X-Webhook-Signature': hex(`${NOW}.${BODY}`) })).toMatch(
      /lacks the sha256= prefix/,
    );
    for (const value of [
      '',
      'sha256=',
      `sha1=${hex(BODY).slice(0, 40)}`,
      `sha256=${hex(BODY).slice(1)}`,
      `sha256=${'z'.repeat(64)}`,
    ]) {
      expect(check({ 'X-Webhook-Signature': value }), value).toBe(
        'X-Webhook-Signature must be sha256= followed by the 64 hex digits of an HMAC-SHA256',
      );
    }
  });
});

describe('checkWebhookSignature: no signature', () => {
  it('admits an unsigned delivery unless the tenant requires signatures', () => {
    expect(check({})).toBeUndefined();
    expect(check({ 'X-Webhook-Timestamp': String(NOW) })).toBeUndefined();
    expect(check({}, { require: true })).toBe(
      'This tenant requires signed webhooks: X-Webhook-Timestamp (Unix seconds) and X-Webhook-Signature: sha256=<hex HMAC-SHA256 of "<timestamp>.<raw body>" with the key\'s signing secret>',
    );
  });

  it("ignores another provider's signature header on a path that is not that provider's", () => {
    expect(check({ 'X-Hub-Signature-256': 'sha256=00' }, { provider: 'generic' })).toBeUndefined();
    expect(check({ 'X-Grafana-Alerting-Signature': '00' }, { provider: 'alertmanager' })).toBeUndefined();
    expect(check({ 'X-Grafana-Alerting-Signature': hex(BODY) }, { provider: 'generic', require: true })).toMatch(
      /^This tenant requires signed webhooks/,
    );
  });
});

describe("checkWebhookSignature: GitHub's X-Hub-Signature-256", () => {
  it('admits the body-only signature, also when the tenant requires signatures', () => {
    expect(check({ 'X-Hub-Signature-256': `sha256=${hex(BODY)}` }, { provider: 'github' })).toBeUndefined();
    expect(
      check({ 'X-Hub-Signature-256': `sha256=${hex(BODY)}` }, { provider: 'github', require: true }),
    ).toBeUndefined();
  });

  it('refuses a wrong or malformed one', () => {
    for (const value of [`sha256=${hex(BODY, 'whsec_other')}`, hex(BODY), '']) {
      expect(check({ 'X-Hub-Signature-256': value }, { provider: 'github' }), value).toBe(
        'X-Hub-Signature-256 does not match the body',
      );
    }
  });

  it('judges X-Webhook-Signature instead when both are sent', () => {
    expect(
      check({ 'X-Hub-Signature-256': 'sha256=00', ...stamped(NOW) }, { provider: 'github', require: true }),
    ).toBeUndefined();
    expect(
      check({ 'X-Hub-Signature-256': `sha256=${hex(BODY)}`, 'X-Webhook-Signature': hex(BODY) }, { provider: 'github' }),
    ).toMatch(/lacks the sha256= prefix/);
  });
});

describe("checkWebhookSignature: Grafana's X-Grafana-Alerting-Signature", () => {
  const grafana = (headers: Record<string, string>, options: { require?: boolean; nowSeconds?: number } = {}) =>
    check(headers, { ...options, provider: 'grafana' });
  const stampedGrafana = (timestamp: number, signedAs = `${timestamp}:${BODY}`) => ({
    'X-Grafana-Alerting-Signature-Timestamp': String(timestamp),
    'X-Grafana-Alerting-Signature': hex(signedAs),
  });

  it('admits bare hex over the body when no timestamp header is sent', () => {
    expect(grafana({ 'X-Grafana-Alerting-Signature': hex(BODY) })).toBeUndefined();
  });

  it('admits bare hex over "<timestamp>:<body>" with the timestamp header, also when the tenant requires signatures', () => {
    expect(grafana(stampedGrafana(NOW))).toBeUndefined();
    expect(grafana(stampedGrafana(NOW - 300), { require: true })).toBeUndefined();
  });

  it('refuses a wrong signature, a timestamp changed after signing, and ours prefixed form', () => {
    expect(grafana({ 'X-Grafana-Alerting-Signature': hex(BODY, 'whsec_other') })).toBe(
      'X-Grafana-Alerting-Signature does not match the body',
    );
    expect(grafana(stampedGrafana(NOW, `${NOW - 1}:${BODY}`))).toBe(
      'X-Grafana-Alerting-Signature does not match X-Grafana-Alerting-Signature-Timestamp and the body',
    );
    expect(grafana({ 'X-Grafana-Alerting-Signature': `sha256=${hex(BODY)}` })).toBe(
      'X-Grafana-Alerting-Signature must be the 64 hex digits of an HMAC-SHA256, as Grafana sends it',
    );
  });

  it('refuses a timestamp more than 300 s away', () => {
    expect(grafana(stampedGrafana(NOW - 301))).toMatch(
      /^X-Grafana-Alerting-Signature-Timestamp \d+ is 301 s old: not within 300 s/,
    );
  });

  it('refuses the body-only form when the tenant requires signatures, naming the timestamp header to configure', () => {
    expect(grafana({ 'X-Grafana-Alerting-Signature': hex(BODY) }, { require: true })).toBe(
      'This tenant requires timestamped signatures: set the Grafana contact point\'s HMAC "Timestamp header" to X-Grafana-Alerting-Signature-Timestamp',
    );
  });
});
