import { createHmac } from 'node:crypto';
import type { AddressInfo } from 'node:net';
import { serve, type ServerType } from '@hono/node-server';
import { eq } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createApp } from '../../src/api/app.js';
import { ingestedEvents } from '../../src/db/schema/ingestion.js';
import { startTestService, type TestService } from '../helpers/service.js';
import { createKey, fixture, type WebhookKey } from '../helpers/webhooks.js';

// The service's own app over real HTTP, with a clock the test moves: a replay minutes later is
// sent without waiting minutes.
let svc: TestService;
let server: ServerType;
let baseUrl: string;
let clockOffsetMs = 0;

beforeAll(async () => {
  svc = await startTestService();
  const app = createApp({ ...svc.appDeps, clock: () => new Date(Date.now() + clockOffsetMs) });
  server = await new Promise<ServerType>((resolve) => {
    const s = serve({ fetch: app.fetch, port: 0, hostname: '127.0.0.1' }, () => resolve(s));
  });
  baseUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});
afterAll(async () => {
  await new Promise<void>((resolve) => (server ? server.close(() => resolve()) : resolve()));
  await svc?.stop();
});

const hmacHex = (secret: string, text: string) => createHmac('sha256', secret).update(text, 'utf8').digest('hex');
const unixNow = () => Math.floor((Date.now() + clockOffsetMs) / 1000);

/** A fresh tenant (its own deliveries, so no body replay from another test) and its key. */
async function tenantWithKey(requireWebhookSignature = false): Promise<{ tenantId: string; key: WebhookKey }> {
  const tenant = await svc.newTenant({ settings: { requireWebhookSignature } });
  return { tenantId: tenant.tenantId, key: await createKey(svc, tenant.admin) };
}

async function post(tenantId: string, provider: string, key: string, body: string, headers: Record<string, string>) {
  const response = await fetch(`${baseUrl}/v1/webhooks/${tenantId}/${provider}`, {
    method: 'POST',
    headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json', ...headers },
    body,
  });
  return { status: response.status, headers: response.headers, body: (await response.json()) as Record<string, any> };
}

/** Our timestamped scheme: `X-Webhook-Signature: sha256=<hex HMAC of "<timestamp>.<body>">`. */
const timestamped = (secret: string, body: string, timestamp = unixNow()) => ({
  'x-webhook-timestamp': String(timestamp),
  'x-webhook-signature': `sha256=${hmacHex(secret, `${timestamp}.${body}`)}`,
});

describe('signed webhooks (X-Webhook-Timestamp, X-Webhook-Signature)', () => {
  const body = fixture('generic-single.json');

  it('accepts a timestamped signature and stores the delivery', async () => {
    const { tenantId, key } = await tenantWithKey(true);
    const res = await post(tenantId, 'generic', key.key, body, timestamped(key.signingSecret, body));
    expect(res.status).toBe(202);
    const stored = await svc.database.db.select().from(ingestedEvents).where(eq(ingestedEvents.tenantId, tenantId));
    expect(stored.map((e) => e.id)).toEqual(res.body.eventIds);
  });

  it('refuses a timestamp 6 minutes old, and one 6 minutes ahead, stating the 300 s tolerance', async () => {
    const { tenantId, key } = await tenantWithKey();
    for (const skew of [-360, 360]) {
      const res = await post(
        tenantId,
        'generic',
        key.key,
        body,
        timestamped(key.signingSecret, body, unixNow() + skew),
      );
      expect([res.status, res.body.error], String(skew)).toEqual([401, 'unauthorized']);
      expect(res.body.message).toMatch(/X-Webhook-Timestamp .* not within 300 s of the server's time/);
    }
    expect(
      await svc.database.db.select().from(ingestedEvents).where(eq(ingestedEvents.tenantId, tenantId)),
    ).toHaveLength(0);
  });

  it('refuses a signed request replayed 6 minutes later', async () => {
    const { tenantId, key } = await tenantWithKey(true);
    const headers = timestamped(key.signingSecret, body);
    expect((await post(tenantId, 'generic', key.key, body, headers)).status).toBe(202);
    clockOffsetMs = 6 * 60 * 1000;
    try {
      const replayed = await post(tenantId, 'generic', key.key, body, headers);
      expect([replayed.status, replayed.body.error]).toEqual([401, 'unauthorized']);
      expect(replayed.body.message).toMatch(/not within 300 s/);
      expect(replayed.headers.get('idempotent-replayed')).toBeNull();
    } finally {
      clockOffsetMs = 0;
    }
  });

  it('refuses a body-only signature when the tenant requires signatures, telling the caller to add X-Webhook-Timestamp', async () => {
    const { tenantId, key } = await tenantWithKey(true);
    const res = await post(tenantId, 'generic', key.key, body, {
      'x-webhook-signature': `sha256=${hmacHex(key.signingSecret, body)}`,
    });
    expect([res.status, res.body.error]).toEqual([401, 'unauthorized']);
    expect(res.body.message).toContain('add X-Webhook-Timestamp');
    const unsigned = await post(tenantId, 'generic', key.key, body, {});
    expect([unsigned.status, unsigned.body.message]).toEqual([401, expect.stringContaining('X-Webhook-Timestamp')]);
  });

  it('accepts a body-only signature when the tenant does not require signatures, and refuses a wrong one', async () => {
    const { tenantId, key } = await tenantWithKey(false);
    expect(
      (
        await post(tenantId, 'generic', key.key, body, {
          'x-webhook-signature': `sha256=${hmacHex(key.signingSecret, body)}`,
        })
      ).status,
    ).toBe(202);
    const wrong = await post(tenantId, 'generic', key.key, body, {
      'x-webhook-signature': `sha256=${hmacHex('whsec_other', body)}`,
    });
    expect([wrong.status, wrong.body.message]).toEqual([401, 'X-Webhook-Signature does not match the body']);
  });

  it('tells a bare-hex signature that it lacks the sha256= prefix', async () => {
    const { tenantId, key } = await tenantWithKey(false);
    const res = await post(tenantId, 'generic', key.key, body, {
      'x-webhook-signature': hmacHex(key.signingSecret, body),
    });
    expect([res.status, res.body.error]).toEqual([401, 'unauthorized']);
    expect(res.body.message).toContain('sha256=');
    expect(res.body.message).toMatch(/lacks the sha256= prefix/);
  });
});

describe("Grafana's X-Grafana-Alerting-Signature", () => {
  const body = fixture('grafana-firing.json');

  it('accepts a correct signature over the body, and a correct one over "<timestamp>:<body>"', async () => {
    const { tenantId, key } = await tenantWithKey(false);
    const overBody = await post(tenantId, 'grafana', key.key, body, {
      'x-grafana-alerting-signature': hmacHex(key.signingSecret, body),
    });
    expect(overBody.status).toBe(202);
    const strict = await tenantWithKey(true);
    const timestamp = String(unixNow());
    const stamped = await post(strict.tenantId, 'grafana', strict.key.key, body, {
      'x-grafana-alerting-signature-timestamp': timestamp,
      'x-grafana-alerting-signature': hmacHex(strict.key.signingSecret, `${timestamp}:${body}`),
    });
    expect(stamped.status).toBe(202);
    expect(stamped.body.incidentIds).toHaveLength(1);
  });

  it('refuses a wrong signature, and stores nothing', async () => {
    const { tenantId, key } = await tenantWithKey(false);
    const res = await post(tenantId, 'grafana', key.key, body, {
      'x-grafana-alerting-signature': hmacHex('not-the-signing-secret', body),
    });
    expect([res.status, res.body.error, res.body.message]).toEqual([
      401,
      'unauthorized',
      'X-Grafana-Alerting-Signature does not match the body',
    ]);
    expect(
      await svc.database.db.select().from(ingestedEvents).where(eq(ingestedEvents.tenantId, tenantId)),
    ).toHaveLength(0);
  });

  it("refuses Grafana's body-only signature when the tenant requires signatures, naming the timestamp header to configure", async () => {
    const { tenantId, key } = await tenantWithKey(true);
    const res = await post(tenantId, 'grafana', key.key, body, {
      'x-grafana-alerting-signature': hmacHex(key.signingSecret, body),
    });
    expect([res.status, res.body.message]).toEqual([
      401,
      expect.stringContaining('X-Grafana-Alerting-Signature-Timestamp'),
    ]);
  });
});
