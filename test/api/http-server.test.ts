/**
 * The api's HTTP server bounds (decision 246), over real TCP against the server as `npm start`
 * builds it: keep-alive past a load balancer's 60 s idle timeout, a body deadline answered 408 in
 * the error shape, event streams exempt from it, and a cap on open connections.
 */
import http from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ConfigError, loadConfig } from '../../src/config.js';
import { startTestService, type TestService } from '../helpers/service.js';
import { connectRaw, requestHead, type RawConnection } from '../helpers/raw-http.js';
import { createKey, eventually } from '../helpers/webhooks.js';

const BODY_DEADLINE_MS = 1500;

describe('HTTP server settings', () => {
  it('default to keep-alive above a load balancer idle timeout, headers above keep-alive, a body deadline and a cap', () => {
    expect(loadConfig({}).http).toEqual({
      keepAliveTimeoutMs: 65_000,
      headersTimeoutMs: 66_000,
      requestTimeoutMs: 60_000,
      maxConnections: 10_000,
    });
    expect(
      loadConfig({
        HTTP_KEEP_ALIVE_TIMEOUT_MS: '90000',
        HTTP_HEADERS_TIMEOUT_MS: '91000',
        HTTP_REQUEST_TIMEOUT_MS: '5000',
        HTTP_MAX_CONNECTIONS: '50',
      }).http,
    ).toEqual({
      keepAliveTimeoutMs: 90_000,
      headersTimeoutMs: 91_000,
      requestTimeoutMs: 5_000,
      maxConnections: 50,
    });
    expect(() => loadConfig({ HTTP_KEEP_ALIVE_TIMEOUT_MS: '70000' })).toThrow(
      /HTTP_HEADERS_TIMEOUT_MS: must be more than HTTP_KEEP_ALIVE_TIMEOUT_MS/,
    );
    expect(() => loadConfig({ HTTP_MAX_CONNECTIONS: '0' })).toThrow(ConfigError);
  });
});

describe('HTTP server', () => {
  let svc: TestService;
  let tenant: Awaited<ReturnType<TestService['newTenant']>>;
  const open: RawConnection[] = [];
  const raw = async () => {
    const connection = await connectRaw(svc.baseUrl);
    open.push(connection);
    return connection;
  };

  beforeAll(async () => {
    svc = await startTestService({
      withoutWorker: true,
      http: { requestTimeoutMs: BODY_DEADLINE_MS },
      stream: { heartbeatMs: 300 },
    });
    tenant = await svc.newTenant();
  });
  afterAll(async () => {
    for (const connection of open) connection.close();
    await svc?.stop();
  });

  it('keeps an idle keep-alive connection open past 5 s: reused after 6 s it still answers', async () => {
    const connection = await raw();
    connection.write(requestHead('GET', '/health'));
    const first = await connection.answer();
    expect(first.status).toBe(200);
    await new Promise((r) => setTimeout(r, 6_000));
    connection.write(requestHead('GET', '/health'));
    expect((await connection.answer()).status).toBe(200);
    expect(first.headers['keep-alive']).toBe('timeout=65');
  }, 15_000);

  it('answers 408 request_timeout, in the error shape, to a body that stalls, and closes the connection', async () => {
    const body = JSON.stringify({ title: 'Slow upload', description: 'This body never arrives whole' });
    const connection = await raw();
    const sent = performance.now();
    connection.write(
      requestHead('POST', '/v1/incidents/chat', {
        authorization: `Bearer ${tenant.member}`,
        'content-type': 'application/json',
        'content-length': Buffer.byteLength(body),
      }) + body.slice(0, 20),
    );
    const answer = await connection.answer(BODY_DEADLINE_MS + 5_000);
    const waitedMs = performance.now() - sent;
    expect(answer.status).toBe(408);
    expect(JSON.parse(answer.body)).toEqual({
      error: 'request_timeout',
      message: 'The request body did not arrive within 1.5 s of its headers',
    });
    expect(answer.headers.connection).toBe('close');
    expect(answer.headers['x-ratelimit-limit']).toMatch(/^\d+$/);
    expect(waitedMs).toBeGreaterThanOrEqual(BODY_DEADLINE_MS - 50);
    expect(waitedMs).toBeLessThan(BODY_DEADLINE_MS + 1_500);
    await connection.closed;
    const incidents = await svc.api('GET', '/v1/incidents', { token: tenant.member });
    expect(incidents.body.count).toBe(0);
  });

  it('answers 408 to a webhook body that trickles past the deadline, and stores nothing', async () => {
    const key = await createKey(svc, tenant.admin);
    const body = JSON.stringify({ title: 'Trickled alert', severity: 'critical', description: 'one byte at a time' });
    const connection = await raw();
    const sent = performance.now();
    connection.write(
      requestHead('POST', `/v1/webhooks/${tenant.tenantId}/generic`, {
        authorization: `Bearer ${key.key}`,
        'content-type': 'application/json',
        'content-length': Buffer.byteLength(body),
      }),
    );
    let at = 0;
    const trickle = setInterval(() => {
      if (at < body.length && !connection.isClosed()) connection.write(body[at++]!);
    }, 100);
    try {
      const answer = await connection.answer(BODY_DEADLINE_MS + 5_000);
      expect(answer.status).toBe(408);
      expect(JSON.parse(answer.body).error).toBe('request_timeout');
      expect(performance.now() - sent).toBeLessThan(BODY_DEADLINE_MS + 1_500);
      expect(at).toBeLessThan(body.length);
    } finally {
      clearInterval(trickle);
    }
    await connection.closed;
    const rows = await svc.database.sql`select count(*)::int as n from webhook_deliveries`;
    expect(rows[0]!.n).toBe(0);
  });

  it('takes a body sent in pieces that arrives whole within the deadline', async () => {
    const body = JSON.stringify({ title: 'Pieces', description: 'Sent in three pieces, in time' });
    const connection = await raw();
    connection.write(
      requestHead('POST', '/v1/incidents/chat', {
        authorization: `Bearer ${tenant.member}`,
        'content-type': 'application/json',
        'content-length': Buffer.byteLength(body),
      }),
    );
    for (const piece of [body.slice(0, 10), body.slice(10, 30), body.slice(30)]) {
      await new Promise((r) => setTimeout(r, 300));
      connection.write(piece);
    }
    const answer = await connection.answer();
    expect(answer.status).toBe(201);
    expect(JSON.parse(answer.body).title).toBe('Pieces');
  });

  it('keeps an event stream open past the body deadline', async () => {
    const chunks: string[] = [];
    let ended = false;
    const req = http.get(`${svc.baseUrl}/v1/notifications/stream`, {
      headers: { accept: 'text/event-stream', authorization: `Bearer ${tenant.member}` },
    });
    try {
      const res = await new Promise<http.IncomingMessage>((resolve, reject) =>
        req.once('response', resolve).once('error', reject),
      );
      expect(res.statusCode).toBe(200);
      expect(res.headers['content-type']).toMatch(/^text\/event-stream/);
      res.setEncoding('utf8');
      res.on('data', (chunk: string) => chunks.push(chunk));
      res.on('close', () => (ended = true));
      await new Promise((r) => setTimeout(r, BODY_DEADLINE_MS * 2));
      const before = chunks.length;
      await eventually(async () => chunks.length > before, 2_000); // still heartbeating
      expect(ended).toBe(false);
      expect(chunks.join('')).toContain(': ping');
    } finally {
      req.destroy();
    }
  });
});

describe('HTTP server connection cap', () => {
  let svc: TestService;
  const open: RawConnection[] = [];
  beforeAll(async () => {
    svc = await startTestService({ withoutWorker: true, http: { maxConnections: 3 } });
  });
  afterAll(async () => {
    for (const connection of open) connection.close();
    await svc?.stop();
  });

  it('closes connections past HTTP_MAX_CONNECTIONS on arrival, and takes new ones once some close', async () => {
    const health = async (connection: RawConnection) => {
      connection.write(requestHead('GET', '/health'));
      return (await connection.answer(3_000)).status;
    };
    for (let i = 0; i < 3; i++) {
      const connection = await connectRaw(svc.baseUrl);
      open.push(connection);
      expect(await health(connection)).toBe(200);
    }
    const refused = await connectRaw(svc.baseUrl);
    open.push(refused);
    await expect(health(refused)).rejects.toThrow(/closed before an answer/);
    open[0]!.close();
    await eventually(async () => {
      const connection = await connectRaw(svc.baseUrl);
      open.push(connection);
      return (await health(connection).catch(() => 0)) === 200;
    }, 5_000);
  });
});
