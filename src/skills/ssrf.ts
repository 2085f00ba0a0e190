/**
 * Server-side request forgery protection for http skills: a host name is resolved (every
 * address), every address is checked (loopback, private, link-local and metadata, unspecified,
 * CGNAT and the IPv6 equivalents are refused unless allowlisted), and the connection is then
 * pinned to the checked address through a custom `lookup`, so a second DNS answer (rebinding)
 * cannot change where the request goes.
 */
import dns from 'node:dns';
import net from 'node:net';
import { SkillFailure } from './failure.js';
import { refusalReason, type NetworkAllowlist } from './networks.js';

export interface ResolvedAddress {
  address: string;
  family: 4 | 6;
}

/** Resolves a host name to all its addresses (the system resolver unless tests pass another). */
export type HostResolver = (hostname: string) => Promise<ResolvedAddress[]>;

export const systemResolver: HostResolver = async (hostname) => {
  const answers = await dns.promises.lookup(hostname, { all: true, verbatim: true });
  return answers.map((a) => ({ address: a.address, family: a.family === 6 ? 6 : 4 }));
};

/** Why an outbound call was refused or failed; `retryable` for network errors and 5xx answers. */
export class OutboundError extends SkillFailure {
  constructor(
    code: string,
    message: string,
    readonly retryable = false,
    override readonly details?: Record<string, unknown>,
  ) {
    super(code, message, details);
    this.name = 'OutboundError';
  }
}

/** `[::1]` (URL form) → `::1`. */
export function bareHost(hostname: string): string {
  return hostname.startsWith('[') && hostname.endsWith(']') ? hostname.slice(1, -1) : hostname;
}

/**
 * Why an outbound URL a tenant configures (a skill's, a trigger webhook's) is refused, judged
 * from the URL alone when it is written: its scheme, credentials in it, and an address written
 * into it (the URL parser turns `0x7f000001` and the like into dotted form). A host name is
 * judged after each resolution, when called. Undefined when it may be stored.
 */
export function outboundUrlRefusal(
  url: URL,
  options: { allowHttp: boolean; allowlist: NetworkAllowlist },
): string | undefined {
  if (url.protocol !== 'https:' && url.protocol !== 'http:') return 'must be an https URL';
  if (url.protocol === 'http:' && !options.allowHttp)
    return 'must use https (plain http needs the tenant setting allowHttpSkills)';
  if (url.username !== '' || url.password !== '')
    return 'must not carry credentials; send them in a header (header values are stored encrypted)';
  const host = bareHost(url.hostname);
  const reason = net.isIP(host) ? refusalReason(host, options.allowlist) : undefined;
  return reason ? `${host} is a ${reason} address; skills and triggers may only call public addresses` : undefined;
}

function abortable<T>(promise: Promise<T>, signal: AbortSignal): Promise<T> {
  if (signal.aborted) return Promise.reject(signal.reason as Error);
  return new Promise<T>((resolve, reject) => {
    const onAbort = () => reject(signal.reason as Error);
    signal.addEventListener('abort', onAbort, { once: true });
    promise.then(
      (value) => {
        signal.removeEventListener('abort', onAbort);
        resolve(value);
      },
      (err: unknown) => {
        signal.removeEventListener('abort', onAbort);
        reject(err as Error);
      },
    );
  });
}

/**
 * The address to connect to for `hostname`: every address it resolves to must be allowed (one
 * refused address refuses the host, so a name cannot mix a public and a private answer).
 */
export async function resolveTarget(
  hostname: string,
  options: { allowlist: NetworkAllowlist; resolver: HostResolver; signal: AbortSignal },
): Promise<ResolvedAddress> {
  const host = bareHost(hostname);
  let addresses: ResolvedAddress[];
  const literal = net.isIP(host);
  if (literal) {
    addresses = [{ address: host, family: literal === 6 ? 6 : 4 }];
  } else {
    try {
      addresses = await abortable(options.resolver(host), options.signal);
    } catch (err) {
      if (options.signal.aborted) throw err;
      const code = (err as NodeJS.ErrnoException).code;
      if (code === 'EAI_AGAIN')
        throw new OutboundError('network_error', `DNS lookup of ${host} failed temporarily`, true);
      throw new OutboundError('dns_error', `${host} does not resolve`);
    }
  }
  if (addresses.length === 0) throw new OutboundError('dns_error', `${host} does not resolve`);
  for (const { address } of addresses) {
    const reason = refusalReason(address, options.allowlist);
    if (reason) {
      throw new OutboundError(
        'ssrf_blocked',
        `${host === address ? address : `${host} resolves to ${address}, which`} is a ${reason} address; skills may only call public addresses`,
        false,
        { host, address, reason },
      );
    }
  }
  return addresses[0]!;
}

/** A `lookup` for http(s).request that answers only the checked address. */
export function pinnedLookup(target: ResolvedAddress): net.LookupFunction {
  return (_hostname, options, callback) => {
    if (options.all) callback(null, [{ address: target.address, family: target.family }]);
    else callback(null, target.address, target.family);
  };
}
