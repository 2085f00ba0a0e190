import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { exportJWK, generateKeyPair, SignJWT } from 'jose';
import jwt from 'jsonwebtoken';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { serve, type ServerType } from '@hono/node-server';
import { createApp } from '../../src/api/app.js';
import { createTokenVerifier } from '../../src/auth/tokens.js';
import { loadConfig } from '../../src/config.js';
import {
  startTestService,
  TEST_JWT_SECRET,
  TOKEN_AUDIENCE,
  TOKEN_ISSUER,
  type TestService,
} from '../helpers/service.js';

let svc: TestService;
let tenant: { tenantId: string; admin: string; member: string };
let jwksServer: Server;
let privateKey: Awaited<ReturnType<typeof generateKeyPair>>['privateKey'];

beforeAll(async () => {
  // An external identity provider's JWKS endpoint: a real local HTTP server.
  const pair = await generateKeyPair('RS256');
  privateKey = pair.privateKey;
  const jwk = { ...(await exportJWK(pair.publicKey)), kid: 'idp-key-1', alg: 'RS256', use: 'sig' };
  jwksServer = createServer((_req, res) => {
    res.writeHead(200, { 'content-type': 'application/json' });
    res.end(JSON.stringify({ keys: [jwk] }));
  });
  await new Promise<void>((resolve) => jwksServer.listen(0, '127.0.0.1', resolve));
  const jwksUrl = `http://127.0.0.1:${(jwksServer.address() as AddressInfo).port}/.well-known/jwks.json`;
  svc = await startTestService({ jwksUrl });
  tenant = await svc.newTenant();
});
afterAll(async () => {
  await svc?.stop();
  await new Promise((resolve) => jwksServer?.close(resolve));
});

const claims = (tenantId: string) => ({ tenant_id: tenantId, roles: ['admin'], email: 'a@example.test' });
function hs256(payload: object, options: jwt.SignOptions = {}, secret = TEST_JWT_SECRET): string {
  const merged: jwt.SignOptions = {
    algorithm: 'HS256',
    issuer: TOKEN_ISSUER,
    audience: TOKEN_AUDIENCE,
    subject: 'u1',
    expiresIn: 600,
    ...options,
  };
  if (merged.expiresIn === undefined) delete merged.expiresIn; // a token with no exp claim
  return jwt.sign(payload, secret, merged);
}

describe('JWT authentication', () => {
  const unauthorizedCases: Array<[string, () => Record<string, string>]> = [
    ['no Authorization header', () => ({})],
    ['a non-bearer scheme', () => ({ authorization: `Basic ${Buffer.from('a:b').toString('base64')}` })],
    ['a malformed token', () => ({ authorization: 'Bearer not.a.jwt' })],
    [
      'a token signed with another secret',
      () => ({
        authorization: `Bearer ${hs256(claims(tenant.tenantId), {}, 'another-secret-another-secret-another-secret')}`,
      }),
    ],
    [
      'an expired token',
      () => ({
        authorization: `Bearer ${hs256({ ...claims(tenant.tenantId), exp: Math.floor(Date.now() / 1000) - 10 }, { expiresIn: undefined })}`,
      }),
    ],
    [
      'a token without expiry',
      () => ({ authorization: `Bearer ${hs256(claims(tenant.tenantId), { expiresIn: undefined })}` }),
    ],
    [
      'a wrong issuer',
      () => ({ authorization: `Bearer ${hs256(claims(tenant.tenantId), { issuer: 'someone-else' })}` }),
    ],
    [
      'a wrong audience',
      () => ({ authorization: `Bearer ${hs256(claims(tenant.tenantId), { audience: 'other-api' })}` }),
    ],
    ['an unknown tenant', () => ({ authorization: `Bearer ${hs256(claims('ten_unknown'))}` })],
    ['a token missing tenant_id', () => ({ authorization: `Bearer ${hs256({ roles: ['admin'] })}` })],
    [
      'alg none',
      () => {
        const header = Buffer.from(JSON.stringify({ alg: 'none', typ: 'JWT' })).toString('base64url');
        const body = Buffer.from(
          JSON.stringify({
            ...claims(tenant.tenantId),
            sub: 'u1',
            iss: TOKEN_ISSUER,
            aud: TOKEN_AUDIENCE,
            exp: Math.floor(Date.now() / 1000) + 600,
          }),
        ).toString('base64url');
        return { authorization: `Bearer ${header}.${body}.` };
      },
    ],
  ];

  it.each(unauthorizedCases)('answers 401 unauthorized for %s', async (_name, headers) => {
    const res = await svc.api('GET', '/v1/incidents', { headers: headers() });
    expect(res.status).toBe(401);
    expect(res.body).toEqual({ error: 'unauthorized', message: expect.any(String) });
  });

  it('accepts a valid HS256 token', async () => {
    const res = await svc.api('GET', '/v1/incidents', { token: hs256(claims(tenant.tenantId)) });
    expect(res.status).toBe(200);
  });

  it('accepts an RS256 token from the JWKS of an external identity provider, and rejects a forged one', async () => {
    const token = await new SignJWT({ tenant_id: tenant.tenantId, roles: ['member'] })
      .setProtectedHeader({ alg: 'RS256', kid: 'idp-key-1' })
      .setSubject('idp-user')
      .setIssuer(TOKEN_ISSUER)
      .setAudience(TOKEN_AUDIENCE)
      .setExpirationTime('5m')
      .sign(privateKey);
    expect((await svc.api('GET', '/v1/incidents', { token })).status).toBe(200);

    const other = await generateKeyPair('RS256');
    const forged = await new SignJWT({ tenant_id: tenant.tenantId, roles: ['admin'] })
      .setProtectedHeader({ alg: 'RS256', kid: 'idp-key-1' })
      .setSubject('attacker')
      .setIssuer(TOKEN_ISSUER)
      .setAudience(TOKEN_AUDIENCE)
      .setExpirationTime('5m')
      .sign(other.privateKey);
    expect((await svc.api('GET', '/v1/incidents', { token: forged })).status).toBe(401);
  });

  it('answers 401, never 500, for claims that cannot name a tenant or user (a NUL, control characters, an oversized id)', async () => {
    for (const [payload, options] of [
      [{ tenant_id: `${tenant.tenantId}\u0000`, roles: ['member'] }, {}],
      [{ tenant_id: 'x'.repeat(65), roles: ['member'] }, {}],
      [{ tenant_id: tenant.tenantId, roles: ['member'] }, { subject: 'u\u00001' }],
      [{ tenant_id: tenant.tenantId, roles: ['member'], email: 'a@b.c\r\nX-Injected: 1' }, {}],
      [{ tenant_id: tenant.tenantId, roles: Array.from({ length: 51 }, () => 'member') }, {}],
    ] as const) {
      const res = await svc.api('GET', '/v1/incidents', { token: hs256(payload, options as jwt.SignOptions) });
      expect(res.status, JSON.stringify(payload)).toBe(401);
      expect(res.body).toEqual({ error: 'unauthorized', message: 'The bearer token is invalid or expired' });
    }
  });

  it('answers 403 forbidden for a member on an admin route and for a token with no known role', async () => {
    const patch = await svc.api('PATCH', `/v1/tenants/${tenant.tenantId}`, {
      token: tenant.member,
      body: { name: 'New name' },
    });
    expect(patch.status).toBe(403);
    expect(patch.body.error).toBe('forbidden');
    const noRole = hs256({ tenant_id: tenant.tenantId, roles: ['viewer'] });
    const list = await svc.api('GET', '/v1/incidents', { token: noRole });
    expect(list.status).toBe(403);
    expect(list.body.error).toBe('forbidden');
  });

  it('judges the caller before the input on every JWT route: 401 without a token, 403 without the role, never 400', async () => {
    const doc = (await svc.api('GET', '/openapi.json')).body as {
      paths: Record<string, Record<string, { security?: Array<Record<string, string[]>> }>>;
    };
    const noRole = hs256({ tenant_id: tenant.tenantId, roles: ['viewer'] });
    let checked = 0;
    for (const [template, operations] of Object.entries(doc.paths)) {
      for (const [method, operation] of Object.entries(operations)) {
        const required = operation.security?.find((s) => 'bearerAuth' in s)?.bearerAuth;
        if (!required) continue;
        expect(required, `${method} ${template} names its role`).toHaveLength(1);
        // Every parameter malformed, an unknown query value and a body of the wrong shape.
        const path = `${template.replace(/\{[^}]+\}/g, 'not%20an%20id')}?limit=many&cursor=%%%`;
        const body = ['post', 'put', 'patch'].includes(method) ? { unexpected: [1, 2, 3] } : undefined;
        const verb = method.toUpperCase() as 'GET';
        const anonymous = await svc.api(verb, path, body ? { body } : {});
        expect([anonymous.status, anonymous.body.error], `${method} ${template} without a token`).toEqual([
          401,
          'unauthorized',
        ]);
        const outsider = required[0] === 'admin' ? tenant.member : noRole;
        const refused = await svc.api(verb, path, { token: outsider, ...(body ? { body } : {}) });
        expect([refused.status, refused.body.error], `${method} ${template} without the ${required[0]} role`).toEqual([
          403,
          'forbidden',
        ]);
        // Unstorable input too (a NUL in the URL, in the body, a body nested too deep) is judged
        // only after the role.
        const unstorable = ['post', 'put', 'patch'].includes(method)
          ? [{ body: { unexpected: 'a\u0000b' } }, { body: JSON.parse('['.repeat(70) + ']'.repeat(70)) as unknown }]
          : [{}];
        for (const input of unstorable) {
          const late = await svc.api(verb, `${path}&nul=%00`, { token: outsider, ...input });
          expect(
            [late.status, late.body.error],
            `${method} ${template} with unstorable input without the role`,
          ).toEqual([403, 'forbidden']);
        }
        checked++;
      }
    }
    expect(checked).toBeGreaterThanOrEqual(54);
  });

  it('publishes patterns a client can use: each compiles, and the one-line rule matches a plain title', async () => {
    const patterns: string[] = [];
    const walk = (node: unknown): void => {
      if (Array.isArray(node)) node.forEach(walk);
      else if (node && typeof node === 'object') {
        for (const [key, value] of Object.entries(node)) {
          if (key === 'pattern' && typeof value === 'string') patterns.push(value);
          else walk(value);
        }
      }
    };
    walk((await svc.api('GET', '/openapi.json')).body);
    expect(patterns.length).toBeGreaterThan(10);
    for (const pattern of patterns) {
      expect(() => new RegExp(pattern, 'u'), pattern).not.toThrow();
      expect(pattern, 'no regex flags left in the pattern').not.toMatch(/\/[a-z]+$/);
    }
    const oneLine = patterns.filter((p) => p.includes(String.raw`\u0000`));
    expect(oneLine.length).toBeGreaterThan(0);
    for (const pattern of new Set(oneLine)) {
      expect(new RegExp(pattern, 'u').test('Checkout down — 502s in eu-west-1')).toBe(true);
      expect(new RegExp(pattern, 'u').test('two\nlines')).toBe(false);
    }
  });

  it('still refuses unstorable input to a caller who has the role', async () => {
    const nul = await svc.api('GET', '/v1/incidents?status=%00', { token: tenant.member });
    expect(nul.status).toBe(400);
    expect(nul.body).toMatchObject({
      error: 'validation_error',
      message: 'The URL must not contain a NUL character (%00)',
    });
    const body = await svc.api('POST', '/v1/incidents/chat', {
      token: tenant.member,
      body: { title: 'a\u0000b', description: 'NUL in the title' },
    });
    expect(body.status).toBe(400);
    expect(body.body.error).toBe('validation_error');
    const deep = await svc.api('POST', '/v1/incidents/chat', {
      token: tenant.member,
      body: JSON.parse('['.repeat(70) + ']'.repeat(70)) as unknown,
    });
    expect(deep.status).toBe(400);
    expect(deep.body.message).toMatch(/nests deeper than 64 levels/);
    // And to a caller without a token it is 401, as before.
    expect((await svc.api('GET', '/v1/incidents?status=%00')).status).toBe(401);
  });

  it('lets an admin do everything a member can', async () => {
    const res = await svc.api('POST', '/v1/incidents/chat', {
      token: tenant.admin,
      body: { title: 'By admin', description: 'admins are members too' },
    });
    expect(res.status).toBe(201);
  });

  it('keeps the public endpoints public', async () => {
    expect((await svc.api('GET', '/v1/billing/plans')).status).toBe(200);
    expect((await svc.api('GET', '/v1/integrations/catalog')).status).toBe(200);
    expect((await svc.api('GET', '/health')).status).toBe(200);
    expect((await svc.api('GET', '/openapi.json')).status).toBe(200);
  });
});

describe('JWT lifetime and clock skew (24 h and 60 s by default)', () => {
  const nowSeconds = () => Math.floor(Date.now() / 1000);
  const year = 365 * 86_400;
  const rs256 = (build: (jwt: SignJWT) => SignJWT) =>
    build(
      new SignJWT(claims(tenant.tenantId))
        .setProtectedHeader({ alg: 'RS256', kid: 'idp-key-1' })
        .setSubject('idp-user')
        .setIssuer(TOKEN_ISSUER)
        .setAudience(TOKEN_AUDIENCE),
    ).sign(privateKey);
  const status = async (token: string, api = svc.api.bind(svc)) =>
    (await api('GET', '/v1/incidents', { token })).status;

  it('refuses an HS256 token living 100 years or issued a year ahead, and accepts up to the bounds', async () => {
    expect(await status(hs256(claims(tenant.tenantId), { expiresIn: '100y' }))).toBe(401);
    expect(await status(hs256({ ...claims(tenant.tenantId), iat: nowSeconds() + year }))).toBe(401);
    expect(await status(hs256({ ...claims(tenant.tenantId), iat: nowSeconds() + 120 }))).toBe(401);
    expect(await status(hs256({ ...claims(tenant.tenantId), nbf: nowSeconds() + 120 }))).toBe(401);
    const refused = await svc.api('GET', '/v1/incidents', {
      token: hs256(claims(tenant.tenantId), { expiresIn: 86_401 }),
    });
    expect([refused.status, refused.body]).toEqual([
      401,
      { error: 'unauthorized', message: 'The bearer token is invalid or expired' },
    ]);

    expect(await status(hs256(claims(tenant.tenantId)))).toBe(200);
    expect(await status(hs256(claims(tenant.tenantId), { expiresIn: 86_400 }))).toBe(200);
    // A clock a little ahead of ours is tolerated.
    expect(await status(hs256({ ...claims(tenant.tenantId), iat: nowSeconds() + 30 }))).toBe(200);
    expect(await status(hs256({ ...claims(tenant.tenantId), nbf: nowSeconds() + 30 }))).toBe(200);
  });

  it('refuses an RS256 token from the identity provider living 100 years or issued a year ahead; one without iat is judged from now', async () => {
    expect(await status(await rs256((t) => t.setIssuedAt().setExpirationTime('100y')))).toBe(401);
    expect(
      await status(await rs256((t) => t.setIssuedAt(nowSeconds() + year).setExpirationTime(nowSeconds() + year + 600))),
    ).toBe(401);
    expect(
      await status(await rs256((t) => t.setIssuedAt(nowSeconds() + 120).setExpirationTime(nowSeconds() + 600))),
    ).toBe(401);
    expect(await status(await rs256((t) => t.setExpirationTime('2d')))).toBe(401);

    expect(await status(await rs256((t) => t.setIssuedAt().setExpirationTime('1h')))).toBe(200);
    expect(await status(await rs256((t) => t.setExpirationTime('23h')))).toBe(200);
    expect(await status(await rs256((t) => t.setIssuedAt(nowSeconds() + 30).setExpirationTime('10m')))).toBe(200);
  });

  it('honours a configured maximum lifetime and skew', async () => {
    const config = loadConfig({
      JWT_MAX_LIFETIME_SECONDS: '3600',
      JWT_CLOCK_SKEW_SECONDS: '5',
      JWT_TTL_SECONDS: '1800',
    });
    expect(config.auth).toMatchObject({ maxLifetimeSeconds: 3600, clockSkewSeconds: 5 });
    expect(loadConfig({}).auth).toMatchObject({ maxLifetimeSeconds: 86_400, clockSkewSeconds: 60 });
    // What the service signs itself (npm start's token, the CLI's default) must pass its own bound.
    expect(() => loadConfig({ JWT_MAX_LIFETIME_SECONDS: '3600', JWT_TTL_SECONDS: '7200' })).toThrow(
      /JWT_TTL_SECONDS: must be at most JWT_MAX_LIFETIME_SECONDS \(3600\)/,
    );

    // A second app over the same database, verifying with those bounds, over real HTTP.
    const app = createApp({
      ...svc.appDeps,
      tokens: createTokenVerifier({
        jwtSecret: TEST_JWT_SECRET,
        maxLifetimeSeconds: config.auth.maxLifetimeSeconds,
        clockSkewSeconds: config.auth.clockSkewSeconds,
      }),
    });
    const server = await new Promise<ServerType>((resolve) => {
      const s = serve({ fetch: app.fetch, port: 0, hostname: '127.0.0.1' }, () => resolve(s));
    });
    try {
      const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
      const get = async (token: string) =>
        (await fetch(`${base}/v1/incidents`, { headers: { authorization: `Bearer ${token}` } })).status;
      expect(await get(hs256(claims(tenant.tenantId), { expiresIn: 7200 }))).toBe(401);
      expect(await get(hs256(claims(tenant.tenantId), { expiresIn: 3600 }))).toBe(200);
      expect(await get(hs256({ ...claims(tenant.tenantId), iat: nowSeconds() + 30 }))).toBe(401);
      // The same tokens on the default bounds.
      expect(await status(hs256(claims(tenant.tenantId), { expiresIn: 7200 }))).toBe(200);
    } finally {
      await new Promise((resolve) => server.close(resolve));
    }
  });
});
