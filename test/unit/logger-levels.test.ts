import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { Hono } from 'hono';
import { describe, expect, it } from 'vitest';
import type { AppDeps, AppEnv } from '../../src/api/context.js';
import { requestContext } from '../../src/api/middleware/request-context.js';
import { writeToTerminalOnly } from '../../src/launcher/terminal-only.js';
import { createLogger } from '../../src/logger.js';

function capture(level = 'debug') {
  const lines: string[] = [];
  const logger = createLogger(level, {}, { write: (line: string) => void lines.push(line) });
  const parsed = () => lines.map((l) => JSON.parse(l) as Record<string, unknown>);
  return { logger, lines, parsed };
}

/** The service's request middleware on a Hono app of its own: the logger is the only dependency it reads. */
function appLogging(level = 'debug') {
  const logs = capture(level);
  const app = new Hono<AppEnv>();
  app.use('*', requestContext({ logger: logs.logger } as AppDeps));
  app.get('/health', (c) => c.json({ status: 'ok' }));
  app.get('/health/detailed', (c) =>
    c.json({ status: c.req.header('x-fail') ? 'unavailable' : 'ok' }, c.req.header('x-fail') ? 503 : 200),
  );
  app.get('/v1/notifications/stream', (c) => c.text('ok'));
  return { app, ...logs, requests: () => logs.parsed().filter((l) => l.msg === 'request') };
}

describe('log levels', () => {
  it('writes level names, not pino numbers', () => {
    const { logger, parsed } = capture('debug');
    logger.debug('d');
    logger.info('i');
    logger.warn('w');
    logger.error('e');
    logger.fatal('f');
    logger.child({ component: 'worker' }).info('from a child');
    expect(parsed().map((l) => l.level)).toEqual(['debug', 'info', 'warn', 'error', 'fatal', 'info']);
  });

  it('logs health probes at debug (a failing one at info) and other requests at info', async () => {
    const { app, requests } = appLogging('debug');
    expect((await app.request('/health')).status).toBe(200);
    expect((await app.request('/health/detailed')).status).toBe(200);
    expect((await app.request('/health/detailed', { headers: { 'x-fail': '1' } })).status).toBe(503);
    expect((await app.request('/v1/notifications/stream')).status).toBe(200);
    expect(requests().map((l) => [l.path, l.status, l.level])).toEqual([
      ['/health', 200, 'debug'],
      ['/health/detailed', 200, 'debug'],
      ['/health/detailed', 503, 'info'],
      ['/v1/notifications/stream', 200, 'info'],
    ]);
  });

  it('at the default level info, a passing probe writes nothing', async () => {
    const { app, lines } = appLogging('info');
    await app.request('/health');
    await app.request('/health/detailed');
    expect(lines).toEqual([]);
  });
});

describe('no secret in a log', () => {
  it("never writes a request's query string or its Authorization header", async () => {
    const { app, lines, requests } = appLogging('debug');
    const streamToken = 'st_9f2c4b7e1a6d8f0c3e5b7a9d1f3c5e7a';
    const bearer = 'eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiJkZW1vLWFkbWluIn0.c2lnbmF0dXJl';
    const res = await app.request(`/v1/notifications/stream?token=${streamToken}`, {
      headers: { authorization: `Bearer ${bearer}` },
    });
    expect(res.status).toBe(200);
    expect(requests()).toHaveLength(1);
    expect(requests()[0]).toMatchObject({ path: '/v1/notifications/stream', status: 200 });
    const all = lines.join('\n');
    for (const secret of [streamToken, bearer, 'token=', 'Bearer']) expect(all).not.toContain(secret);
  });

  it("prints npm start's admin token to a terminal, never into redirected output", () => {
    const dir = mkdtempSync(path.join(tmpdir(), 'terminal-only-'));
    try {
      const token = 'eyJhbGciOiJIUzI1NiJ9.admin.token';
      const written: string[] = [];
      // stdout is a terminal: it goes there.
      expect(writeToTerminalOnly(token, { isTTY: true, write: (t) => written.push(t) }, '/nonexistent/tty')).toBe(
        'stdout',
      );
      expect(written).toEqual([token]);

      // stdout redirected to a log file, with a controlling terminal (a file stands in for /dev/tty).
      written.length = 0;
      const tty = path.join(dir, 'tty');
      writeFileSync(tty, '');
      expect(writeToTerminalOnly(token, { isTTY: false, write: (t) => written.push(t) }, tty)).toBe('tty');
      expect(written).toEqual([]);
      expect(readFileSync(tty, 'utf8')).toBe(token);

      // No terminal at all (a container, a service manager): written nowhere, and no file made.
      const absent = path.join(dir, 'no-tty');
      expect(writeToTerminalOnly(token, { isTTY: false, write: (t) => written.push(t) }, absent)).toBe('nowhere');
      expect(written).toEqual([]);
      expect(() => readFileSync(absent)).toThrow(/ENOENT/);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
