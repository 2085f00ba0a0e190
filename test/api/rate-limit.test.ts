import { get, type IncomingMessage } from 'node:http';
import { sql } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestService, type TestService } from '../helpers/service.js';
import { createKey, postWebhook } from '../helpers/webhooks.js';

let svc: TestService;

beforeAll(async () => {
  svc = await startTestService({
    publicRateLimitPerMinute: 5,
    webhookRateLimitPerMinute: 3,
    trustProxy: true,
    webhookKeyFailuresPerMinute: 4,
  });
});
afterAll(() => svc?.stop());

/** Waits out the last seconds of a minute so one test's requests fall in one fixed window. */
async function awayFromWindowEdge() {
  const second = new Date().getUTCSeconds();
  if (second >= 55) await new Promise((r) => setTimeout(r, (61 - second) * 1000));
}

describe('rate limits', () => {
  it('sends X-RateLimit headers on every api response, per tenant and plan', async () => {
    await awayFromWindowEdge();
    const starter = await svc.newTenant({ plan: 'plan_starter' });
    const pro = await svc.newTenant({ plan: 'plan_pro' });
    const first = await svc.api('GET', '/v1/incidents', { token: starter.member });
    expect(first.headers.get('x-ratelimit-limit')).toBe('100');
    expect(first.headers.get('x-ratelimit-remaining')).toBe('99');
    const reset = Number(first.headers.get('x-ratelimit-reset'));
    const now = Math.floor(Date.now() / 1000);
    expect(reset).toBeGreaterThan(now);
    expect(reset).toBeLessThanOrEqual(now + 60);
    expect(reset % 60).toBe(0);
    const second = await svc.api('GET', `/v1/tenants/${starter.tenantId}`, { token: starter.member });
    expect(second.headers.get('x-ratelimit-remaining')).toBe('98');
    // Errors are counted and carry the headers too.
    const notFound = await svc.api('GET', '/v1/incidents/inc_missing', { token: starter.member });
    expect(notFound.status).toBe(404);
    expect(notFound.headers.get('x-ratelimit-remaining')).toBe('97');
    // Each tenant has its own window and its plan's limit.
    const proRes = await svc.api('GET', '/v1/incidents', { token: pro.member });
    expect(proRes.headers.get('x-ratelimit-limit')).toBe('500');
    expect(proRes.headers.get('x-ratelimit-remaining')).toBe('499');
  });

  it('puts them on the event stream, on a 413, and on webhooks refused before a key is judged (the address window of refused keys)', async () => {
    await awayFromWindowEdge();
    const tenant = await svc.newTenant({ plan: 'plan_starter' });
    const stream = await new Promise<IncomingMessage>((resolve, reject) => {
      const req = get(
        `${svc.baseUrl}/v1/notifications/stream`,
        { headers: { authorization: `Bearer ${tenant.member}` } },
        resolve,
      );
      req.on('error', reject);
    });
    stream.destroy();
    expect(stream.statusCode).toBe(200);
    expect(stream.headers['content-type']).toBe('text/event-stream; charset=utf-8');
    expect([stream.headers['x-ratelimit-limit'], stream.headers['x-ratelimit-remaining']]).toEqual(['100', '99']);
    expect(Number(stream.headers['x-ratelimit-reset']) % 60).toBe(0);
    expect(stream.headers['x-request-id']).toMatch(/^req_/);
    // A body over 1 MiB on a JWT route is counted in the tenant's window, like any answer.
    const tooLarge = await svc.api('POST', '/v1/incidents/chat', {
      token: tenant.member,
      rawBody: JSON.stringify({ title: 'x', description: 'y'.repeat(1024 * 1024) }),
      headers: { 'content-type': 'application/json' },
    });
    expect(tooLarge.status).toBe(413);
    expect([tooLarge.headers.get('x-ratelimit-limit'), tooLarge.headers.get('x-ratelimit-remaining')]).toEqual([
      '100',
      '98',
    ]);

    // Webhooks refused before a key's tenant window is read carry their address's window of
    // refused keys (4 a minute here): a missing key is not counted, a refused one is.
    const from = { 'x-forwarded-for': '198.51.100.90' };
    const window = (res: { headers: Headers }) => [
      res.headers.get('x-ratelimit-limit'),
      res.headers.get('x-ratelimit-remaining'),
    ];
    const noKey = await postWebhook(svc, tenant.tenantId, 'generic', { name: 'NoKey' }, { headers: from });
    expect([noKey.status, ...window(noKey)]).toEqual([401, '4', '4']);
    expect(Number(noKey.headers.get('x-ratelimit-reset')) % 60).toBe(0);
    const badKey = await postWebhook(
      svc,
      tenant.tenantId,
      'generic',
      { name: 'BadKey' },
      { key: `flo_${'K'.repeat(43)}`, headers: from },
    );
    expect([badKey.status, ...window(badKey)]).toEqual([401, '4', '3']);
    const unknownProvider = await postWebhook(
      svc,
      tenant.tenantId,
      'nagios',
      { name: 'x' },
      { key: `flo_${'K'.repeat(43)}`, headers: from },
    );
    expect([unknownProvider.status, ...window(unknownProvider)]).toEqual([404, '4', '3']);
    const oversized = await postWebhook(
      svc,
      tenant.tenantId,
      'generic',
      { name: 'Big', summary: 's'.repeat(4 * 1024 * 1024) },
      { headers: from },
    );
    expect([oversized.status, ...window(oversized)]).toEqual([413, '4', '3']);
    // A delivery whose key is judged carries its tenant's webhook window instead (3 a minute here).
    const key = await createKey(svc, tenant.admin);
    const accepted = await postWebhook(
      svc,
      tenant.tenantId,
      'generic',
      { name: 'Accepted' },
      { key: key.key, headers: from },
    );
    expect([accepted.status, ...window(accepted)]).toEqual([202, '3', '2']);
  });

  it("counts a suspended tenant's requests in its window: 403 with the headers, 429 past the limit", async () => {
    await awayFromWindowEdge();
    const tenant = await svc.newTenant({ plan: 'plan_starter' });
    await svc.database.db.execute(sql`update tenants set status = 'suspended' where id = ${tenant.tenantId}`);
    const first = await svc.api('GET', '/v1/incidents', { token: tenant.member });
    expect([
      first.status,
      first.body.error,
      first.headers.get('x-ratelimit-limit'),
      first.headers.get('x-ratelimit-remaining'),
    ]).toEqual([403, 'forbidden', '100', '99']);
    for (let i = 0; i < 99; i++) await svc.api('GET', '/v1/incidents', { token: tenant.member });
    const limited = await svc.api('GET', '/v1/incidents', { token: tenant.member });
    expect([limited.status, limited.body.error, limited.headers.get('x-ratelimit-remaining')]).toEqual([
      429,
      'rate_limit_exceeded',
      '0',
    ]);
  });

  it('answers 429 rate_limit_exceeded past the plan limit, naming the retry time', async () => {
    await awayFromWindowEdge();
    const starter = await svc.newTenant({ plan: 'plan_starter' });
    const statuses: number[] = [];
    for (let i = 0; i < 100; i++) {
      statuses.push((await svc.api('GET', '/v1/incidents?limit=1', { token: starter.member })).status);
    }
    expect(statuses.every((s) => s === 200)).toBe(true);
    const limited = await svc.api('GET', '/v1/incidents', { token: starter.member });
    expect(limited.status).toBe(429);
    expect(limited.body.error).toBe('rate_limit_exceeded');
    const reset = Number(limited.headers.get('x-ratelimit-reset'));
    expect(limited.body.message).toContain(new Date(reset * 1000).toISOString());
    expect(limited.headers.get('x-ratelimit-remaining')).toBe('0');
    expect(Number(limited.headers.get('retry-after'))).toBeGreaterThan(0);
    // The window is shared through PostgreSQL, so another api process would see the same count.
    const rows = await svc.database.db.execute(
      sql`select count from rate_limit_windows where bucket = ${`tenant:${starter.tenantId}`}`,
    );
    expect(Number(rows[0]!.count)).toBe(101);
  });

  it('limits public endpoints per client address', async () => {
    await awayFromWindowEdge();
    const statuses: number[] = [];
    for (let i = 0; i < 6; i++) statuses.push((await svc.api('GET', '/v1/billing/plans')).status);
    expect(statuses).toEqual([200, 200, 200, 200, 200, 429]);
    const limited = await svc.api('GET', '/v1/integrations/catalog');
    expect(limited.status).toBe(429);
    expect(limited.body.error).toBe('rate_limit_exceeded');
    expect(limited.headers.get('x-ratelimit-limit')).toBe('5');
    // Probes are never limited.
    expect((await svc.api('GET', '/health')).status).toBe(200);
  });

  it('behind a proxy, counts the address the proxy saw (the right-most X-Forwarded-For), whatever the client put before it', async () => {
    await awayFromWindowEdge();
    const via = (forwarded: string) =>
      svc.api('GET', '/v1/billing/plans', { headers: { 'x-forwarded-for': forwarded } });
    const statuses: number[] = [];
    for (let i = 0; i < 6; i++) statuses.push((await via(`198.51.100.${i}, 10.9.8.${i}, 203.0.113.7`)).status);
    expect(statuses).toEqual([200, 200, 200, 200, 200, 429]);
    // Another client address behind the same proxy has its own window.
    expect((await via('203.0.113.8')).status).toBe(200);
    // Not an address: the connection's own address is counted (127.0.0.1, used up by the test above).
    const localCount = async () =>
      Number(
        (
          await svc.database.db.execute<{ n: string }>(
            sql`select coalesce(sum(count), 0) as n from rate_limit_windows where bucket = 'ip:127.0.0.1'`,
          )
        )[0]!.n,
      );
    const localBefore = await localCount();
    const bogus = await via(`203.0.113.9, ${'x'.repeat(500)}`);
    expect(bogus.headers.get('x-ratelimit-remaining')).not.toBeNull();
    expect(bogus.headers.get('x-ratelimit-remaining')).not.toBe('4');
    expect(await localCount()).toBe(localBefore + 1);
    const buckets = await svc.database.db.execute<{ bucket: string }>(
      sql`select distinct bucket from rate_limit_windows where bucket like 'ip:%'`,
    );
    expect(
      Array.from(buckets)
        .map((r) => r.bucket)
        .sort(),
    ).toEqual(['ip:127.0.0.1', 'ip:203.0.113.7', 'ip:203.0.113.8']);
  });

  it('refuses at once an address that keeps sending refused keys, but not a key accepted before', async () => {
    await awayFromWindowEdge();
    const tenant = await svc.newTenant({ plan: 'plan_enterprise' });
    const good = await createKey(svc, tenant.admin);
    const from = (address: string) => ({ 'x-forwarded-for': address });
    const alert = (n: number) => ({
      name: `Flood${n}`,
      summary: 'x',
      startsAt: new Date(Date.now() + n).toISOString(),
    });
    // The good key is accepted once from the flood's address: it is known on this process.
    expect(
      (await postWebhook(svc, tenant.tenantId, 'generic', alert(0), { key: good.key, headers: from('198.51.100.77') }))
        .status,
    ).toBe(202);
    const statuses: number[] = [];
    for (let i = 0; i < 6; i++) {
      statuses.push(
        (
          await postWebhook(svc, tenant.tenantId, 'generic', alert(i + 1), {
            key: `flo_${'F'.repeat(40)}${i}`,
            headers: from('198.51.100.77'),
          })
        ).status,
      );
    }
    expect(statuses).toEqual([401, 401, 401, 401, 429, 429]);
    const refused = await postWebhook(svc, tenant.tenantId, 'generic', alert(9), {
      key: `flo_${'G'.repeat(41)}`,
      headers: from('198.51.100.77'),
    });
    expect(refused.body).toEqual({
      error: 'rate_limit_exceeded',
      message: expect.stringMatching(
        /^Too many webhook requests with a refused API key from this address; retry in \d+ s$/,
      ),
    });
    expect(Number(refused.headers.get('retry-after'))).toBeGreaterThan(0);
    // The known key still delivers from there, and other addresses are not affected.
    expect(
      (await postWebhook(svc, tenant.tenantId, 'generic', alert(10), { key: good.key, headers: from('198.51.100.77') }))
        .status,
    ).toBe(202);
    expect(
      (
        await postWebhook(svc, tenant.tenantId, 'generic', alert(11), {
          key: `flo_${'H'.repeat(41)}`,
          headers: from('198.51.100.78'),
        })
      ).status,
    ).toBe(401);

    // Once revoked, the known key is refused, and from then on counts like any refused key: its
    // holder cannot keep filling the batch queue past the address's limit.
    expect((await svc.api('DELETE', `/v1/api-keys/${good.keyId}`, { token: tenant.admin })).status).toBe(204);
    const revoked: number[] = [];
    for (let i = 0; i < 3; i++) {
      revoked.push(
        (
          await postWebhook(svc, tenant.tenantId, 'generic', alert(20 + i), {
            key: good.key,
            headers: from('198.51.100.79'),
          })
        ).status,
      );
    }
    expect(revoked).toEqual([401, 401, 401]);
    for (let i = 0; i < 2; i++) {
      await postWebhook(svc, tenant.tenantId, 'generic', alert(30 + i), {
        key: `flo_${'J'.repeat(41)}${i}`,
        headers: from('198.51.100.79'),
      });
    }
    expect(
      (await postWebhook(svc, tenant.tenantId, 'generic', alert(40), { key: good.key, headers: from('198.51.100.79') }))
        .status,
    ).toBe(429);
  });

  it('limits webhooks per tenant in their own window, with the headers, counting only authenticated deliveries', async () => {
    await awayFromWindowEdge();
    const tenant = await svc.newTenant();
    const key = await createKey(svc, tenant.admin);
    const alert = (n: number) => ({ name: `RateLimited${n}`, severity: 'low' });
    // A delivery with a wrong key is refused before it is counted.
    expect(
      (await postWebhook(svc, tenant.tenantId, 'generic', alert(0), { key: 'flo_' + 'B'.repeat(43) })).status,
    ).toBe(401);
    const statuses: number[] = [];
    let last;
    for (let i = 1; i <= 4; i++) {
      last = await postWebhook(svc, tenant.tenantId, 'generic', alert(i), { key: key.key });
      statuses.push(last.status);
    }
    expect(statuses).toEqual([202, 202, 202, 429]);
    expect(last!.body.error).toBe('rate_limit_exceeded');
    expect(last!.headers.get('x-ratelimit-limit')).toBe('3');
    expect(last!.headers.get('x-ratelimit-remaining')).toBe('0');
    // The refused delivery stored nothing; the user api's window is separate.
    const listed = await svc.api('GET', '/v1/incidents', { token: tenant.member });
    expect(listed.body.count).toBe(3);
    expect(listed.headers.get('x-ratelimit-remaining')).toBe('1998'); // key creation + this list
  });

  it('counts concurrent webhook deliveries exactly, per tenant, when they share one lookup batch', async () => {
    await awayFromWindowEdge();
    const a = await svc.newTenant();
    const b = await svc.newTenant();
    const [keyA, keyB] = await Promise.all([createKey(svc, a.admin), createKey(svc, b.admin)]);
    const sends = Array.from({ length: 6 }, (_, i) => [
      postWebhook(svc, a.tenantId, 'generic', { name: `ConcurrentA${i}`, severity: 'low' }, { key: keyA.key }),
      postWebhook(svc, b.tenantId, 'generic', { name: `ConcurrentB${i}`, severity: 'low' }, { key: keyB.key }),
      // Wrong tenant; each from its own address, so the refused-key window (4 here) stays out of it.
      postWebhook(
        svc,
        a.tenantId,
        'generic',
        { name: `Forged${i}`, severity: 'low' },
        { key: keyB.key, headers: { 'x-forwarded-for': `203.0.113.${i + 1}` } },
      ),
    ]).flat();
    const results = await Promise.all(sends);
    // Sends are interleaved: index % 3 is 0 for tenant a, 1 for tenant b, 2 for a with b's key.
    const group = (g: number) => results.filter((_, i) => i % 3 === g);
    expect(
      group(0)
        .map((r) => r.status)
        .sort(),
    ).toEqual([202, 202, 202, 429, 429, 429]);
    expect(
      group(1)
        .map((r) => r.status)
        .sort(),
    ).toEqual([202, 202, 202, 429, 429, 429]);
    expect(group(2).map((r) => r.status)).toEqual([401, 401, 401, 401, 401, 401]);
    // Each accepted delivery saw its own place in the window.
    const remaining = group(0)
      .filter((r) => r.status === 202)
      .map((r) => r.headers.get('x-ratelimit-remaining'))
      .sort();
    expect(remaining).toEqual(['0', '1', '2']);
  });

  it('counts a refused credential in its address window: a 401 carries the headers, and guessing tokens is throttled', async () => {
    await awayFromWindowEdge();
    const from = { 'x-forwarded-for': '192.0.2.44' };
    const attempts: Array<[number, string | null]> = [];
    for (let i = 0; i < 6; i++) {
      const res = await svc.api('GET', '/v1/incidents', { token: `not-a-token-${i}`, headers: from });
      attempts.push([res.status, res.headers.get('x-ratelimit-remaining')]);
    }
    expect(attempts).toEqual([
      [401, '4'],
      [401, '3'],
      [401, '2'],
      [401, '1'],
      [401, '0'],
      [429, '0'],
    ]);
    const missing = await svc.api('GET', '/v1/incidents', { headers: from });
    expect([missing.status, missing.body.error]).toEqual([429, 'rate_limit_exceeded']);
    // A valid token is counted in its tenant's window, not the address's.
    const tenant = await svc.newTenant({ plan: 'plan_starter' });
    const ok = await svc.api('GET', '/v1/incidents', { token: tenant.member, headers: from });
    expect([ok.status, ok.headers.get('x-ratelimit-limit')]).toEqual([200, '100']);
  });
});
