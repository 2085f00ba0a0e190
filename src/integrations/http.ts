/**
 * Calls to an integration's provider. Endpoints of the provider's own (or the operator's
 * INTEGRATION_<P>_URL) are called directly, with a deadline and no redirect followed (a token
 * must not travel to where a redirect points); a URL the tenant gave (Grafana, Mattermost,
 * ServiceNow) goes through the skills' SSRF-checked client, its rules and its allow-list.
 */
import { callHttpSkill, type HttpCallLimits, type HttpMethod } from '../skills/http.js';
import type { NetworkAllowlist } from '../skills/networks.js';
import { OutboundError, type HostResolver } from '../skills/ssrf.js';

/** What outbound calls need of the skill runtime (its SSRF allow-list, resolver and bounds). */
export interface OutboundRuntime {
  allowlist: NetworkAllowlist;
  resolver: HostResolver;
  limits: HttpCallLimits;
}

export interface ProviderCall {
  method: HttpMethod;
  url: string;
  headers?: Record<string, string>;
  json?: unknown;
  form?: Record<string, string>;
  /** A URL the tenant gave: judged by the SSRF rules; plain http only when the tenant allows it. */
  tenantUrl?: { allowPlainHttp: boolean };
}

export interface ProviderAnswer {
  status: number;
  body: unknown;
}

/** The provider did not answer (network, deadline, TLS, an answer too large or unreadable). */
export class ProviderUnreachable extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'ProviderUnreachable';
  }
}

/** A tenant's URL the SSRF rules refuse (a private address, plain http, no such host). */
export class ProviderUrlRefused extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'ProviderUrlRefused';
  }
}

const REFUSED_URL = new Set(['ssrf_blocked', 'http_not_allowed', 'invalid_config', 'dns_error']);

function parse(text: string, contentType: string | null): unknown {
  if (text === '') return null;
  if (/[/+]json\b/i.test(contentType ?? '') || /^\s*[[{]/.test(text)) {
    try {
      return JSON.parse(text) as unknown;
    } catch {
      return text;
    }
  }
  return text;
}

async function viaSsrfClient(runtime: OutboundRuntime, call: ProviderCall): Promise<ProviderAnswer> {
  try {
    const result = await callHttpSkill({
      url: call.url,
      method: call.method,
      headers: call.headers ?? {},
      input: call.json,
      allowPlainHttp: call.tenantUrl!.allowPlainHttp,
      allowlist: runtime.allowlist,
      resolver: runtime.resolver,
      limits: runtime.limits,
    });
    return { status: result.status, body: result.body };
  } catch (err) {
    if (!(err instanceof OutboundError)) throw err;
    if (err.code === 'http_error') {
      const details = err.details as { status: number; body?: string };
      return { status: details.status, body: parse(details.body ?? '', null) };
    }
    if (REFUSED_URL.has(err.code)) throw new ProviderUrlRefused(err.message);
    throw new ProviderUnreachable(err.message);
  }
}

/** One call to the provider; any HTTP answer is returned, a missing one throws. */
export async function callProvider(runtime: OutboundRuntime, call: ProviderCall): Promise<ProviderAnswer> {
  if (call.tenantUrl) return viaSsrfClient(runtime, call);
  const headers: Record<string, string> = { accept: 'application/json', ...call.headers };
  let body: string | undefined;
  if (call.form) {
    body = new URLSearchParams(call.form).toString();
    headers['content-type'] = 'application/x-www-form-urlencoded';
  } else if (call.json !== undefined) {
    body = JSON.stringify(call.json);
    headers['content-type'] = 'application/json';
  }
  const host = URL.canParse(call.url) ? new URL(call.url).host : call.url;
  try {
    const response = await fetch(call.url, {
      method: call.method,
      headers,
      ...(body !== undefined ? { body } : {}),
      redirect: 'manual',
      signal: AbortSignal.timeout(runtime.limits.timeoutMs),
    });
    const declared = Number(response.headers.get('content-length'));
    if (Number.isFinite(declared) && declared > runtime.limits.maxResponseBytes) {
      await response.body?.cancel();
      throw new ProviderUnreachable(`${host}: the answer is larger than ${runtime.limits.maxResponseBytes} bytes`);
    }
    const text = await response.text();
    if (Buffer.byteLength(text) > runtime.limits.maxResponseBytes)
      throw new ProviderUnreachable(`${host}: the answer is larger than ${runtime.limits.maxResponseBytes} bytes`);
    return { status: response.status, body: parse(text, response.headers.get('content-type')) };
  } catch (err) {
    if (err instanceof ProviderUnreachable) throw err;
    const e = err as Error & { cause?: { code?: string } };
    if (e.name === 'TimeoutError' || e.name === 'AbortError')
      throw new ProviderUnreachable(`${host}: no answer within ${runtime.limits.timeoutMs} ms`);
    throw new ProviderUnreachable(`${host}: ${e.cause?.code ?? e.message}`);
  }
}
