/**
 * Outbound calls of http skills: one attempt is the request and the redirects it follows (at
 * most 3, each hop checked against the SSRF rules again and pinned to its checked address),
 * bounded by one deadline; the response body is streamed and the call aborted as soon as it
 * passes the cap. Attempts are repeated with exponential backoff only after a network error or
 * a 5xx answer.
 */
import http from 'node:http';
import https from 'node:https';
import type { NetworkAllowlist } from './networks.js';
import { OutboundError, pinnedLookup, resolveTarget, type HostResolver } from './ssrf.js';

export const httpMethods = ['GET', 'POST', 'PUT', 'PATCH', 'DELETE'] as const;
export type HttpMethod = (typeof httpMethods)[number];

export interface HttpCallLimits {
  /** Per attempt, redirects included. */
  timeoutMs: number;
  maxResponseBytes: number;
  maxRedirects: number;
  maxAttempts: number;
  /** First backoff; doubled for each further attempt (with jitter). */
  retryBaseDelayMs: number;
}

export interface HttpCall {
  url: string;
  method: HttpMethod;
  /** Configured headers, decrypted. Dropped when a redirect leaves the origin. */
  headers: Record<string, string>;
  input: unknown;
  allowPlainHttp: boolean;
  allowlist: NetworkAllowlist;
  resolver: HostResolver;
  limits: HttpCallLimits;
  /** Called before each retry (logging). */
  onRetry?: (attempt: number, error: OutboundError) => void;
}

export interface HttpCallResult {
  status: number;
  /** Parsed JSON for JSON responses, text otherwise, null when empty. */
  body: unknown;
  attempts: number;
}

const USER_AGENT = 'incident-investigation-service-skills/1';
const RETRYABLE_NETWORK_CODES = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'EPIPE',
  'ETIMEDOUT',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'ENETDOWN',
  'EAI_AGAIN',
  'UND_ERR_SOCKET',
  'ECONNABORTED',
]);

/** Where a request goes and what it carries, for one hop. */
interface Hop {
  url: URL;
  method: HttpMethod;
  headers: Record<string, string>;
  body: string | undefined;
}

function firstHop(call: HttpCall): Hop {
  const url = new URL(call.url);
  if (call.method === 'GET' || call.method === 'DELETE') {
    if (call.input !== undefined && call.input !== null) {
      if (typeof call.input !== 'object' || Array.isArray(call.input)) {
        throw new OutboundError(
          'invalid_input',
          `${call.method} skills take an object whose properties become query parameters`,
        );
      }
      for (const [name, value] of Object.entries(call.input as Record<string, unknown>)) {
        if (value === undefined || value === null) continue;
        url.searchParams.set(name, typeof value === 'string' ? value : JSON.stringify(value));
      }
    }
    return { url, method: call.method, headers: call.headers, body: undefined };
  }
  return { url, method: call.method, headers: call.headers, body: JSON.stringify(call.input ?? {}) };
}

function checkScheme(url: URL, allowPlainHttp: boolean): void {
  if (url.protocol === 'https:') return;
  if (url.protocol === 'http:' && allowPlainHttp) return;
  throw new OutboundError(
    url.protocol === 'http:' ? 'http_not_allowed' : 'invalid_config',
    url.protocol === 'http:'
      ? `${url.host}: plain http is not allowed for this tenant (settings.allowHttpSkills)`
      : `${url.protocol} URLs cannot be called`,
  );
}

function describeNetworkError(err: NodeJS.ErrnoException, url: URL): OutboundError {
  const code = err.code ?? '';
  if (RETRYABLE_NETWORK_CODES.has(code) || err.message === 'socket hang up') {
    return new OutboundError('network_error', `${url.host}: ${code || err.message}`, true);
  }
  if (code.startsWith('ERR_TLS') || /certificate|SSL|TLS/i.test(err.message)) {
    return new OutboundError('tls_error', `${url.host}: TLS failed (${code || err.message})`);
  }
  return new OutboundError('network_error', `${url.host}: ${code || err.message}`, false);
}

/** Sends one request and resolves once the response headers arrive. */
function send(
  hop: Hop,
  target: Awaited<ReturnType<typeof resolveTarget>>,
  signal: AbortSignal,
): Promise<http.IncomingMessage> {
  const transport = hop.url.protocol === 'https:' ? https : http;
  const headers: Record<string, string> = {
    'user-agent': USER_AGENT,
    accept: 'application/json, text/plain;q=0.9, */*;q=0.5',
    ...hop.headers,
    // Never compressed: the cap counts the bytes we read.
    'accept-encoding': 'identity',
  };
  if (hop.body !== undefined) {
    headers['content-type'] ??= 'application/json';
    headers['content-length'] = String(Buffer.byteLength(hop.body));
  }
  return new Promise((resolve, reject) => {
    const request = transport.request(hop.url, {
      method: hop.method,
      headers,
      lookup: pinnedLookup(target),
      agent: false, // a fresh connection to the checked address; no pooled socket is reused
      signal,
    });
    request.once('response', resolve);
    request.once('error', reject);
    request.end(hop.body);
  });
}

/** Reads the body, aborting the connection as soon as it passes `maxBytes`. */
function readBody(response: http.IncomingMessage, maxBytes: number, url: URL): Promise<Buffer> {
  const declared = Number(response.headers['content-length']);
  if (Number.isFinite(declared) && declared > maxBytes) {
    response.destroy();
    return Promise.reject(tooLarge(url, maxBytes));
  }
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    response.on('data', (chunk: Buffer) => {
      size += chunk.length;
      if (size > maxBytes) {
        reject(tooLarge(url, maxBytes)); // first: destroying emits 'aborted' at once
        response.destroy();
        return;
      }
      chunks.push(chunk);
    });
    response.once('end', () => resolve(Buffer.concat(chunks)));
    response.once('error', reject);
    response.once('aborted', () =>
      reject(new OutboundError('network_error', `${url.host}: the response was cut off`, true)),
    );
  });
}

function tooLarge(url: URL, maxBytes: number): OutboundError {
  return new OutboundError(
    'response_too_large',
    `${url.host}: the response is larger than ${maxBytes >= 1024 * 1024 ? `${maxBytes / (1024 * 1024)} MiB` : `${maxBytes} bytes`}; the call was aborted`,
  );
}

function parseBody(response: http.IncomingMessage, raw: Buffer, url: URL): unknown {
  if (raw.length === 0) return null;
  const text = raw.toString('utf8');
  const type = response.headers['content-type'] ?? '';
  if (/[/+]json\b/i.test(type)) {
    try {
      return JSON.parse(text) as unknown;
    } catch {
      throw new OutboundError('invalid_response', `${url.host}: the response says JSON but is not valid JSON`);
    }
  }
  return text;
}

const REDIRECTS = new Set([301, 302, 303, 307, 308]);

/** One attempt: the request and its redirects, under one deadline. */
async function attempt(call: HttpCall): Promise<{ status: number; body: unknown }> {
  const signal = AbortSignal.timeout(call.limits.timeoutMs);
  let hop = firstHop(call);
  try {
    for (let redirects = 0; ; redirects++) {
      checkScheme(hop.url, call.allowPlainHttp);
      if (hop.url.username || hop.url.password) {
        throw new OutboundError('invalid_config', 'URLs with credentials are not called; send them in a header');
      }
      const target = await resolveTarget(hop.url.hostname, {
        allowlist: call.allowlist,
        resolver: call.resolver,
        signal,
      });
      let response: http.IncomingMessage;
      try {
        response = await send(hop, target, signal);
      } catch (err) {
        if (signal.aborted || err instanceof OutboundError) throw err;
        throw describeNetworkError(err as NodeJS.ErrnoException, hop.url);
      }
      const status = response.statusCode ?? 0;
      const location = response.headers.location;
      if (REDIRECTS.has(status) && location) {
        response.destroy();
        if (redirects >= call.limits.maxRedirects) {
          throw new OutboundError(
            'too_many_redirects',
            `${hop.url.host}: more than ${call.limits.maxRedirects} redirects`,
          );
        }
        let next: URL;
        try {
          next = new URL(location, hop.url);
        } catch {
          throw new OutboundError('invalid_response', `${hop.url.host}: redirect to an invalid URL`);
        }
        const toGet = status === 303 || ((status === 301 || status === 302) && hop.method === 'POST');
        hop = {
          url: next,
          method: toGet ? 'GET' : hop.method,
          // The configured headers are credentials for the configured origin only.
          headers: next.origin === hop.url.origin ? hop.headers : {},
          body: toGet ? undefined : hop.body,
        };
        continue;
      }
      let raw: Buffer;
      try {
        raw = await readBody(response, call.limits.maxResponseBytes, hop.url);
      } catch (err) {
        if (signal.aborted || err instanceof OutboundError) throw err;
        throw describeNetworkError(err as NodeJS.ErrnoException, hop.url);
      }
      if (status >= 200 && status < 300) return { status, body: parseBody(response, raw, hop.url) };
      const excerpt = raw.toString('utf8').slice(0, 500);
      throw new OutboundError('http_error', `${hop.url.host} answered ${status}`, status >= 500, {
        status,
        body: excerpt,
      });
    }
  } catch (err) {
    // A deadline that passed surfaces as an abort, or as a cut-off connection.
    if (signal.aborted && (!(err instanceof OutboundError) || err.code === 'network_error')) {
      throw new OutboundError('timeout', `${hop.url.host}: no complete answer within ${call.limits.timeoutMs} ms`);
    }
    throw err;
  }
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** Calls the skill's endpoint, retrying network errors and 5xx answers with backoff. */
export async function callHttpSkill(call: HttpCall): Promise<HttpCallResult> {
  for (let attemptNumber = 1; ; attemptNumber++) {
    try {
      return { ...(await attempt(call)), attempts: attemptNumber };
    } catch (err) {
      if (!(err instanceof OutboundError)) throw err;
      if (!err.retryable || attemptNumber >= call.limits.maxAttempts) {
        throw new OutboundError(err.code, err.message, false, { ...err.details, attempts: attemptNumber });
      }
      call.onRetry?.(attemptNumber, err);
      const backoff = call.limits.retryBaseDelayMs * 2 ** (attemptNumber - 1);
      await sleep(backoff / 2 + Math.random() * (backoff / 2));
    }
  }
}
