/**
 * Stripe's official stripe-mock (a Stripe API server built from Stripe's OpenAPI document) on a
 * free port, with a recording relay in front so tests see each request the SDK sent (its
 * Idempotency-Key). Built once by .ci/install-stripe-mock into .cache/.
 */
import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { createServer, request, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import { projectRoot } from '../../src/config.js';
import { freePort } from './ports.js';

export interface RecordedRequest {
  method: string;
  path: string;
  idempotencyKey: string | undefined;
  body: string;
}

export interface StripeMock {
  /** The relay's base URL (STRIPE_API_URL). */
  url: string;
  requests: RecordedRequest[];
  /** While set, the relay answers 500 without reaching stripe-mock (the provider failing). */
  failing: boolean;
  stop(): Promise<void>;
}

function binary(): string {
  const out = execFileSync(path.join(projectRoot, '.ci/install-stripe-mock'), { encoding: 'utf8' });
  return out.trim().split('\n').at(-1)!;
}

async function listening(port: number, child: ChildProcess): Promise<void> {
  const deadline = Date.now() + 20_000;
  while (Date.now() < deadline) {
    if (child.exitCode !== null) throw new Error(`stripe-mock exited with ${child.exitCode}`);
    const up = await fetch(`http://127.0.0.1:${port}/v1/customers`, {
      headers: { authorization: 'Bearer sk_test_123' },
    }).then(
      (r) => r.ok,
      () => false,
    );
    if (up) return;
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error('stripe-mock did not start listening');
}

export async function startStripeMock(): Promise<StripeMock> {
  const port = await freePort();
  // Its HTTPS listener would take the fixed port 12112 and fail a second stripe-mock (test files
  // run in parallel): the system picks that port too.
  const child = spawn(binary(), ['-http-addr', `127.0.0.1:${port}`, '-https-addr', '127.0.0.1:'], {
    stdio: 'ignore',
  });
  await listening(port, child);
  const mock: StripeMock = {
    url: '',
    requests: [],
    failing: false,
    async stop() {
      await new Promise<void>((resolve) => relay.close(() => resolve()));
      relay.closeAllConnections();
      child.kill('SIGTERM');
    },
  };
  const relay: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const body = Buffer.concat(chunks);
      const key = req.headers['idempotency-key'];
      mock.requests.push({
        method: req.method ?? '',
        path: req.url ?? '',
        idempotencyKey: typeof key === 'string' ? key : undefined,
        body: body.toString(),
      });
      if (mock.failing) {
        res.writeHead(500, { 'content-type': 'application/json' });
        res.end(JSON.stringify({ error: { type: 'api_error', message: 'The provider is failing (test)' } }));
        return;
      }
      const upstream = request(
        { host: '127.0.0.1', port, method: req.method, path: req.url, headers: req.headers },
        (up) => {
          res.writeHead(up.statusCode ?? 502, up.headers);
          up.pipe(res);
        },
      );
      upstream.on('error', () => res.destroy());
      upstream.end(body);
    });
  });
  await new Promise<void>((resolve) => relay.listen(0, '127.0.0.1', resolve));
  mock.url = `http://127.0.0.1:${(relay.address() as AddressInfo).port}`;
  return mock;
}
