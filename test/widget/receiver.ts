/**
 * A push receiver over real HTTPS: a self-signed certificate for 127.0.0.1 made with openssl at
 * test time, every request recorded with its headers and raw body. `/fail…` paths answer 500.
 */
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import https from 'node:https';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';

export interface ReceivedPush {
  path: string;
  headers: Record<string, string | string[] | undefined>;
  rawBody: string;
}

export interface PushReceiver {
  origin: string;
  /** The certificate (PEM), for the worker to trust. */
  ca: string;
  received: ReceivedPush[];
  close(): Promise<void>;
}

export async function startPushReceiver(): Promise<PushReceiver> {
  const dir = mkdtempSync(path.join(tmpdir(), 'widget-receiver-'));
  const key = path.join(dir, 'key.pem');
  const cert = path.join(dir, 'cert.pem');
  execFileSync(
    'openssl',
    [
      'req',
      '-x509',
      '-newkey',
      'rsa:2048',
      '-nodes',
      '-keyout',
      key,
      '-out',
      cert,
      '-days',
      '1',
      '-subj',
      '/CN=127.0.0.1',
      '-addext',
      'subjectAltName=IP:127.0.0.1',
    ],
    { stdio: 'ignore' },
  );
  const pem = { key: readFileSync(key, 'utf8'), cert: readFileSync(cert, 'utf8') };
  rmSync(dir, { recursive: true, force: true });
  const received: ReceivedPush[] = [];
  const server = https.createServer(pem, (req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      received.push({ path: req.url ?? '', headers: req.headers, rawBody: Buffer.concat(chunks).toString('utf8') });
      res.writeHead(req.url?.startsWith('/fail') ? 500 : 200).end();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    origin: `https://127.0.0.1:${(server.address() as AddressInfo).port}`,
    ca: pem.cert,
    received,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}

/** Polls `check` until it returns a value (not undefined/false), or fails after `timeoutMs`. */
export async function eventually<T>(
  check: () => Promise<T | undefined | false> | T | undefined | false,
  timeoutMs = 20_000,
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await check();
    if (value !== undefined && value !== false) return value;
    if (Date.now() > deadline) throw new Error('condition not met in time');
    await new Promise((r) => setTimeout(r, 100));
  }
}

/** Reads a Server-Sent Events response until `until` holds for the events so far (or the stream ends). */
export async function readEvents(
  url: string,
  headers: Record<string, string>,
  until: (events: Array<{ id?: string; event?: string; data?: any }>) => boolean,
  timeoutMs = 20_000,
): Promise<{ status: number; events: Array<{ id?: string; event?: string; data?: any }>; ended: boolean }> {
  const controller = new AbortController();
  const timer = setTimeout(() => controller.abort(), timeoutMs);
  const res = await fetch(url, { headers, signal: controller.signal });
  const events: Array<{ id?: string; event?: string; data?: any }> = [];
  if (res.status !== 200 || !res.body) {
    clearTimeout(timer);
    return { status: res.status, events, ended: true };
  }
  const reader = res.body.getReader();
  const decoder = new TextDecoder();
  let buffer = '';
  let ended = false;
  try {
    while (!until(events)) {
      const { value, done } = await reader.read();
      if (done) {
        ended = true;
        break;
      }
      buffer += decoder.decode(value, { stream: true });
      let cut: number;
      while ((cut = buffer.indexOf('\n\n')) >= 0) {
        const block = buffer.slice(0, cut);
        buffer = buffer.slice(cut + 2);
        const event: { id?: string; event?: string; data?: any } = {};
        for (const line of block.split('\n')) {
          if (line.startsWith('id: ')) event.id = line.slice(4);
          else if (line.startsWith('event: ')) event.event = line.slice(7);
          else if (line.startsWith('data: ')) event.data = JSON.parse(line.slice(6));
        }
        if (event.event) events.push(event);
      }
    }
  } finally {
    clearTimeout(timer);
    controller.abort();
  }
  return { status: res.status, events, ended };
}
