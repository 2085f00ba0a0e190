/**
 * A raw TCP connection to a test api that writes requests byte by byte as a test wants (a body
 * that stalls, a connection reused after a pause) and reads the HTTP/1.1 answers as they come.
 * Answers with a Content-Length only (the api's JSON answers).
 */
import { connect, type Socket } from 'node:net';

export interface RawAnswer {
  status: number;
  headers: Record<string, string>;
  body: string;
}

export interface RawConnection {
  socket: Socket;
  write(text: string): void;
  /** The next complete answer; rejects when the connection closes first or after `timeoutMs`. */
  answer(timeoutMs?: number): Promise<RawAnswer>;
  /** Resolves when the server (or the test) has closed the connection. */
  closed: Promise<void>;
  isClosed(): boolean;
  close(): void;
}

function parseAnswer(buffer: Buffer): { answer: RawAnswer; rest: Buffer } | undefined {
  const end = buffer.indexOf('\r\n\r\n');
  if (end < 0) return undefined;
  const [statusLine, ...lines] = buffer.subarray(0, end).toString('latin1').split('\r\n');
  const headers: Record<string, string> = {};
  for (const line of lines) {
    const colon = line.indexOf(':');
    headers[line.slice(0, colon).trim().toLowerCase()] = line.slice(colon + 1).trim();
  }
  const length = Number(headers['content-length'] ?? 0);
  if (buffer.length < end + 4 + length) return undefined;
  const body = buffer.subarray(end + 4, end + 4 + length).toString('utf8');
  return {
    answer: { status: Number(statusLine!.split(' ')[1]), headers, body },
    rest: buffer.subarray(end + 4 + length),
  };
}

export function connectRaw(baseUrl: string): Promise<RawConnection> {
  const { hostname, port } = new URL(baseUrl);
  return new Promise((resolve, reject) => {
    const socket = connect({ host: hostname, port: Number(port) });
    let buffer: Buffer = Buffer.alloc(0);
    let closed = false;
    let wake = () => undefined as void;
    const closedPromise = new Promise<void>((done) =>
      socket.once('close', () => {
        closed = true;
        wake();
        done();
      }),
    );
    socket.on('error', () => undefined); // a reset shows as the close
    socket.on('data', (chunk: Buffer) => {
      buffer = Buffer.concat([buffer, chunk]);
      wake();
    });
    socket.once('connect', () => {
      socket.off('error', reject);
      resolve({
        socket,
        write: (text) => void socket.write(text),
        answer(timeoutMs = 10_000) {
          return new Promise((done, fail) => {
            const timer = setTimeout(() => fail(new Error(`no answer within ${timeoutMs} ms`)), timeoutMs);
            const check = () => {
              const parsed = parseAnswer(buffer);
              if (parsed) {
                buffer = parsed.rest;
                clearTimeout(timer);
                done(parsed.answer);
              } else if (closed) {
                clearTimeout(timer);
                fail(
                  new Error(
                    `the connection closed before an answer${buffer.length ? ` (had ${buffer.length} bytes)` : ''}`,
                  ),
                );
              } else {
                wake = check;
              }
            };
            check();
          });
        },
        closed: closedPromise,
        isClosed: () => closed,
        close: () => socket.destroy(),
      });
    });
    socket.once('error', reject);
  });
}

/** A request's head, keep-alive, with the body's length when it has one. */
export function requestHead(method: string, path: string, headers: Record<string, string | number> = {}): string {
  const lines = [
    `${method} ${path} HTTP/1.1`,
    'Host: api.test',
    ...Object.entries(headers).map(([k, v]) => `${k}: ${v}`),
  ];
  return `${lines.join('\r\n')}\r\n\r\n`;
}
