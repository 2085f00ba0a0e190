/**
 * A real local HTTP server that skills call in tests (127.0.0.1, a free port). It records every
 * request it receives (method, path, headers, body) so tests assert what reached it.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';

export interface ReceivedRequest {
  method: string;
  path: string;
  query: Record<string, string>;
  headers: http.IncomingHttpHeaders;
  body: string;
}

export interface SkillServer {
  url: string;
  port: number;
  received: ReceivedRequest[];
  /** Requests to a path (without the query string). */
  hits(path: string): ReceivedRequest[];
  close(): Promise<void>;
}

const MiB = 1024 * 1024;

export async function startSkillServer(): Promise<SkillServer> {
  const received: ReceivedRequest[] = [];
  const hanging = new Set<http.ServerResponse>();
  const failuresLeft = new Map<string, number>();

  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const url = new URL(req.url ?? '/', 'http://skill.test');
      const request: ReceivedRequest = {
        method: req.method ?? '',
        path: url.pathname,
        query: Object.fromEntries(url.searchParams),
        headers: req.headers,
        body: Buffer.concat(chunks).toString('utf8'),
      };
      received.push(request);
      const json = (status: number, body: unknown) => {
        res.writeHead(status, { 'content-type': 'application/json' });
        res.end(JSON.stringify(body));
      };
      const key = url.searchParams.get('key') ?? '';
      switch (url.pathname) {
        case '/echo':
          return json(200, {
            method: request.method,
            query: request.query,
            body: request.body ? (JSON.parse(request.body) as unknown) : null,
            authorization: req.headers.authorization ?? null,
            apiKey: req.headers['x-api-key'] ?? null,
          });
        case '/echo-500':
          // An error page that quotes the request, as some frameworks' debug pages do.
          return json(500, {
            error: 'boom',
            request: { headers: req.headers, token: String(req.headers.authorization ?? '').replace(/^Bearer /, '') },
          });
        case '/nul':
          // Text PostgreSQL cannot store (a NUL), in a valid JSON answer.
          res.writeHead(200, { 'content-type': 'application/json' });
          return res.end('{"status":"ok","note":"a\\u0000b","k\\u0000":1}');
        case '/unhealthy':
          return json(200, { healthy: false, reason: 'checkout still answers 502' });
        case '/logs':
          // A log search: the service's recent error lines, as a log tool's API answers them.
          return json(200, {
            service: request.query.service ?? null,
            entries: [
              {
                ts: '2026-11-22T03:11:02Z',
                level: 'ERROR',
                message: 'HikariPool-1 - Connection is not available, request timed out after 30000ms',
              },
              { ts: '2026-11-22T03:11:05Z', level: 'FATAL', message: 'sorry, too many clients already' },
            ],
          });
        case '/text':
          res.writeHead(200, { 'content-type': 'text/plain; charset=utf-8' });
          return res.end('plain words');
        case '/hang':
          hanging.add(res); // never answers
          return;
        case '/big': {
          // 1.5 MiB in 64 KiB chunks, no Content-Length: the client must count.
          res.writeHead(200, { 'content-type': 'application/json' });
          const chunk = Buffer.alloc(64 * 1024, 'a');
          let sent = 0;
          const pump = () => {
            while (sent < 1.5 * MiB) {
              sent += chunk.length;
              if (!res.write(chunk)) return void res.once('drain', pump);
            }
            res.end();
          };
          return pump();
        }
        case '/big-declared':
          res.writeHead(200, { 'content-type': 'text/plain', 'content-length': String(2 * MiB) });
          return res.end(Buffer.alloc(2 * MiB, 'b'));
        case '/flaky': {
          // Answers 503 `fail` times per key, then 200.
          const left = failuresLeft.get(key) ?? Number(url.searchParams.get('fail') ?? '1');
          if (left > 0) {
            failuresLeft.set(key, left - 1);
            return json(503, { error: 'try again' });
          }
          return json(200, { ok: true, key });
        }
        case '/always-503':
          return json(503, { error: 'down' });
        case '/not-found':
          return json(404, { error: 'no such thing' });
        case '/bad-json':
          res.writeHead(200, { 'content-type': 'application/json' });
          return res.end('{not json');
        case '/redirect': {
          res.writeHead(Number(url.searchParams.get('status') ?? '302'), {
            location: url.searchParams.get('to') ?? '/echo',
          });
          return res.end();
        }
        case '/redirect-loop':
          res.writeHead(302, { location: '/redirect-loop' });
          return res.end();
        default:
          return json(404, { error: 'unknown path' });
      }
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as AddressInfo).port;
  return {
    url: `http://127.0.0.1:${port}`,
    port,
    received,
    hits: (path) => received.filter((r) => r.path === path),
    async close() {
      for (const res of hanging) res.destroy();
      await new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      });
    },
  };
}
