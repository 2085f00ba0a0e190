import net, { type AddressInfo } from 'node:net';
import { serve } from '@hono/node-server';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sql } from 'drizzle-orm';
import { createApp } from '../../src/api/app.js';
import { startTestService, type TestService } from '../helpers/service.js';
import { createKey, fixture, postWebhook } from '../helpers/webhooks.js';

let svc: TestService;

beforeAll(async () => {
  svc = await startTestService({ trustProxy: true, webhookKeyFailuresPerMinute: 4 });
});

afterAll(async () => {
  await svc?.stop();
});

/** Sends a webhook's headers announcing `contentLength` bytes and none of the body; resolves with the status line. */
function headersOnly(path: string, key: string, contentLength: number): Promise<string> {
  const { hostname, port } = new URL(svc.baseUrl);
  return new Promise((resolve, reject) => {
    const socket = net.connect(Number(port), hostname, () => {
      socket.write(
        `POST ${path} HTTP/1.1\r\nHost: ${hostname}\r\nAuthorization: Bearer ${key}\r\nContent-Type: application/json\r\nContent-Length: ${contentLength}\r\n\r\n`,
      );
    });
    let received = '';
    socket.setTimeout(5000, () => {
      socket.destroy();
      reject(new Error('no answer within 5 s: the api waited for the body'));
    });
    socket.on('data', (chunk) => {
      received += chunk.toString('latin1');
      if (received.includes('\r\n')) {
        socket.destroy();
        resolve(received.slice(0, received.indexOf('\r\n')));
      }
    });
    socket.on('error', reject);
  });
}

const bogusKey = (n: number | string) => `flo_${'B'.repeat(40)}${String(n).padStart(3, '0')}`;

describe('a webhook key is judged from the headers, before the body', () => {
  it('answers a refused key 401 before the body has arrived', async () => {
    const tenant = await svc.newTenant();
    const status = await headersOnly(`/v1/webhooks/${tenant.tenantId}/generic`, bogusKey(1), 4 * 1024 * 1024 - 1);
    expect(status).toBe('HTTP/1.1 401 Unauthorized');
  });

  it('answers a bad key on a body of 250,000 labels 401 and closes the connection instead of reading on, storing nothing', async () => {
    const tenant = await svc.newTenant();
    const labels = Object.fromEntries(Array.from({ length: 250_000 }, (_, i) => [String(i), 'v']));
    const res = await postWebhook(svc, tenant.tenantId, 'generic', { name: 'Stall', labels }, { key: bogusKey(2) });
    expect([res.status, res.body.error, res.headers.get('connection')]).toEqual([401, 'unauthorized', 'close']);
    const rows = await svc.database.db.execute(
      sql`select count(*)::int as n from ingested_events where tenant_id = ${tenant.tenantId}`,
    );
    expect(rows[0]).toEqual({ n: 0 });
  });
});

describe('the work one delivery may cost is bounded', () => {
  let tenantId: string;
  let key: string;
  beforeAll(async () => {
    const tenant = await svc.newTenant({ plan: 'plan_enterprise' });
    tenantId = tenant.tenantId;
    key = (await createKey(svc, tenant.admin)).key;
  });

  const refusal = async (body: object) => {
    const res = await postWebhook(svc, tenantId, 'generic', body, { key });
    return { status: res.status, error: res.body.error, message: res.body.message, details: res.body.details };
  };

  it('refuses more than 256 labels on one alert, naming the bound and where', async () => {
    const labels = Object.fromEntries(Array.from({ length: 250_000 }, (_, i) => [String(i), 'v']));
    expect(await refusal({ name: 'Stall', labels })).toEqual({
      status: 400,
      error: 'validation_error',
      message: 'labels: has more than 256 labels or annotations',
      details: [{ path: 'labels', message: 'has more than 256 labels or annotations' }],
    });
    const annotations = Object.fromEntries(Array.from({ length: 257 }, (_, i) => [`a${i}`, 'x']));
    const am = JSON.parse(fixture('alertmanager-firing.json'));
    am.alerts[1].annotations = annotations;
    const res = await postWebhook(svc, tenantId, 'alertmanager', am, { key });
    expect([res.status, res.body.message]).toEqual([
      400,
      'alerts.1.annotations: has more than 256 labels or annotations',
    ]);
  });

  it('refuses an object of more than 1,000 keys, more than 100,000 keys in all, and a string over 256 KiB', async () => {
    const wide = Object.fromEntries(Array.from({ length: 1001 }, (_, i) => [`k${i}`, i]));
    expect(await refusal({ name: 'Wide', context: { extra: wide } })).toMatchObject({
      status: 400,
      message: 'context.extra: has an object with more than 1000 keys',
    });
    const many = Array.from({ length: 101 }, () =>
      Object.fromEntries(Array.from({ length: 1000 }, (_, i) => [`k${i}`, 0])),
    );
    expect(await refusal({ name: 'Many', context: many })).toMatchObject({
      status: 400,
      message: 'The JSON body has more than 100000 keys in all',
    });
    expect(await refusal({ name: 'Long', description: 'x'.repeat(256 * 1024 + 1) })).toMatchObject({
      status: 400,
      message: 'description: has a string longer than 262144 characters',
    });
  });

  it('stores a large Alertmanager group parsed on a parse thread, alert by alert', async () => {
    const am = JSON.parse(fixture('alertmanager-firing.json'));
    const template = am.alerts[0];
    am.alerts = Array.from({ length: 300 }, (_, i) => ({
      ...template,
      labels: { ...template.labels, pod: `checkout-7d9f8b6c5-${i}` },
      annotations: {
        ...template.annotations,
        description: `${template.annotations.description} ${'detail '.repeat(60)}`,
      },
      fingerprint: `large-group-${i}`,
    }));
    const body = JSON.stringify(am);
    expect(body.length).toBeGreaterThan(128 * 1024); // past the 64 KiB from which a parse thread takes it
    const res = await postWebhook(svc, tenantId, 'alertmanager', body, { key });
    expect(res.status).toBe(202);
    expect(res.body.eventIds).toHaveLength(300);
    const rows = await svc.database.db.execute(
      sql`select fingerprint, raw->'labels'->>'pod' as pod from ingested_events where tenant_id = ${tenantId} and fingerprint like 'alertmanager:large-group-%' order by occurred_at, fingerprint`,
    );
    expect(rows).toHaveLength(300);
    expect(rows).toContainEqual({ fingerprint: 'alertmanager:large-group-299', pod: 'checkout-7d9f8b6c5-299' });
    // What a parse thread refuses is told as on the api's thread.
    am.alerts[7].labels = Object.fromEntries(Array.from({ length: 300 }, (_, i) => [`l${i}`, 'v']));
    const refused = await postWebhook(svc, tenantId, 'alertmanager', am, { key });
    expect([refused.status, refused.body.error, refused.body.message]).toEqual([
      400,
      'validation_error',
      'alerts.7.labels: has more than 256 labels or annotations',
    ]);
  });
});

describe('the refused-key guard never refuses a key it has not seen fail', () => {
  const from = { 'x-forwarded-for': '198.51.100.200' };
  const alert = (name: string) => ({ name, summary: 'guard', startsAt: new Date().toISOString() });

  it("keeps delivering another tenant's and the same tenant's valid keys from a flooding address, after a restart too", async () => {
    const attacked = await svc.newTenant();
    const other = await svc.newTenant();
    const statuses: number[] = [];
    for (let i = 0; i < 6; i++) {
      statuses.push(
        (
          await postWebhook(svc, attacked.tenantId, 'generic', alert(`Flood${i}`), {
            key: bogusKey(100 + i),
            headers: from,
          })
        ).status,
      );
    }
    expect(statuses).toEqual([401, 401, 401, 401, 429, 429]);
    // Keys created after the flood were never used on this process.
    const [otherKey, attackedKey] = await Promise.all([createKey(svc, other.admin), createKey(svc, attacked.admin)]);
    expect(
      (await postWebhook(svc, other.tenantId, 'generic', alert('OtherTenant'), { key: otherKey.key, headers: from }))
        .status,
    ).toBe(202);
    expect(
      (
        await postWebhook(svc, attacked.tenantId, 'generic', alert('SameTenant'), {
          key: attackedKey.key,
          headers: from,
        })
      ).status,
    ).toBe(202);
    // The flood's own keys stay refused, now without a lookup.
    const again = await postWebhook(svc, attacked.tenantId, 'generic', alert('FloodAgain'), {
      key: bogusKey(100),
      headers: from,
    });
    expect([again.status, again.body.error]).toEqual([429, 'rate_limit_exceeded']);
    expect(Number(again.headers.get('retry-after'))).toBeGreaterThan(0);

    // A second api process over the same database (a restart, another replica) knows no key yet.
    const replica = serve({ fetch: createApp(svc.appDeps).fetch, hostname: '127.0.0.1', port: 0 });
    await new Promise((resolve) => replica.once('listening', resolve));
    const replicaUrl = `http://127.0.0.1:${(replica.address() as AddressInfo).port}`;
    const deliver = (tenantId: string, key: string, name: string) =>
      fetch(`${replicaUrl}/v1/webhooks/${tenantId}/generic`, {
        method: 'POST',
        headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json', ...from },
        body: JSON.stringify(alert(name)),
      });
    const floods = [];
    for (let i = 0; i < 5; i++)
      floods.push((await deliver(attacked.tenantId, bogusKey(200 + i), `ReplicaFlood${i}`)).status);
    expect(floods).toEqual([401, 401, 401, 401, 429]);
    expect((await deliver(attacked.tenantId, attackedKey.key, 'ReplicaSameTenant')).status).toBe(202);
    await new Promise((resolve) => replica.close(resolve));
  });
});
