/**
 * Address classification for outbound skill calls (server-side request forgery protection).
 * Pure: no DNS here (see ssrf.ts). IPv4 addresses embedded in IPv6 (IPv4-mapped `::ffff:a.b.c.d`,
 * IPv4-compatible `::a.b.c.d`, NAT64 `64:ff9b::a.b.c.d`) are judged as the IPv4 address they
 * reach.
 */
import net from 'node:net';

/** Ranges a skill may never reach unless the operator allows them (`SKILL_ALLOWED_NETWORKS`). */
const blockedRanges: Array<{ network: string; prefix: number; family: 'ipv4' | 'ipv6'; reason: string }> = [
  { network: '0.0.0.0', prefix: 8, family: 'ipv4', reason: 'unspecified ("this network")' },
  { network: '10.0.0.0', prefix: 8, family: 'ipv4', reason: 'private' },
  { network: '100.64.0.0', prefix: 10, family: 'ipv4', reason: 'carrier-grade NAT' },
  { network: '127.0.0.0', prefix: 8, family: 'ipv4', reason: 'loopback' },
  { network: '169.254.0.0', prefix: 16, family: 'ipv4', reason: 'link-local (cloud metadata)' },
  { network: '172.16.0.0', prefix: 12, family: 'ipv4', reason: 'private' },
  { network: '192.0.0.0', prefix: 24, family: 'ipv4', reason: 'IETF protocol assignments' },
  { network: '192.168.0.0', prefix: 16, family: 'ipv4', reason: 'private' },
  { network: '198.18.0.0', prefix: 15, family: 'ipv4', reason: 'benchmarking' },
  { network: '224.0.0.0', prefix: 4, family: 'ipv4', reason: 'multicast' },
  { network: '240.0.0.0', prefix: 4, family: 'ipv4', reason: 'reserved or broadcast' },
  { network: '::', prefix: 128, family: 'ipv6', reason: 'unspecified' },
  { network: '::1', prefix: 128, family: 'ipv6', reason: 'loopback' },
  { network: 'fc00::', prefix: 7, family: 'ipv6', reason: 'unique local (private)' },
  { network: 'fe80::', prefix: 10, family: 'ipv6', reason: 'link-local' },
  { network: 'fec0::', prefix: 10, family: 'ipv6', reason: 'site-local (deprecated, private)' },
  { network: 'ff00::', prefix: 8, family: 'ipv6', reason: 'multicast' },
];

const blocked = new net.BlockList();
for (const range of blockedRanges) blocked.addSubnet(range.network, range.prefix, range.family);

/** `a.b.c.d`, `a.b.c.d/n`, an IPv6 address or an IPv6 CIDR. */
export function isNetwork(entry: string): boolean {
  const [address, prefix, ...rest] = entry.split('/');
  if (rest.length > 0 || !address) return false;
  const version = net.isIP(address);
  if (version === 0) return false;
  if (prefix === undefined) return true;
  if (!/^\d{1,3}$/.test(prefix)) return false;
  return Number(prefix) <= (version === 4 ? 32 : 128);
}

/** The eight 16-bit groups of an IPv6 address (which must be valid). */
function ipv6Groups(address: string): number[] {
  let text = address.toLowerCase();
  const zone = text.indexOf('%');
  if (zone >= 0) text = text.slice(0, zone);
  // A trailing dotted IPv4 part becomes two groups.
  const dotted = text.match(/^(.*:)(\d+\.\d+\.\d+\.\d+)$/);
  if (dotted) {
    const [a, b, c, d] = dotted[2]!.split('.').map(Number) as [number, number, number, number];
    text = `${dotted[1]}${((a << 8) | b).toString(16)}:${((c << 8) | d).toString(16)}`;
  }
  const [head, tail] = text.split('::') as [string, string | undefined];
  const parse = (part: string) => (part === '' ? [] : part.split(':').map((g) => parseInt(g, 16)));
  const left = parse(head);
  if (tail === undefined) return left;
  const right = parse(tail);
  return [...left, ...new Array<number>(8 - left.length - right.length).fill(0), ...right];
}

/**
 * The address as it will be reached: an IPv6 address that embeds an IPv4 one (mapped,
 * compatible, NAT64) is answered as that IPv4 address. Undefined when `address` is no IP.
 */
export function canonicalAddress(address: string): { address: string; family: 'ipv4' | 'ipv6' } | undefined {
  const version = net.isIP(address);
  if (version === 4) return { address, family: 'ipv4' };
  if (version !== 6) return undefined;
  const g = ipv6Groups(address);
  const v4 = () => `${g[6]! >> 8}.${g[6]! & 0xff}.${g[7]! >> 8}.${g[7]! & 0xff}`;
  const zeros = (from: number, to: number) => g.slice(from, to).every((x) => x === 0);
  if (zeros(0, 5) && g[5] === 0xffff) return { address: v4(), family: 'ipv4' }; // ::ffff:a.b.c.d
  if (g[0] === 0x64 && g[1] === 0xff9b && zeros(2, 6)) return { address: v4(), family: 'ipv4' }; // NAT64
  if (zeros(0, 6) && !(g[6] === 0 && (g[7] === 0 || g[7] === 1))) return { address: v4(), family: 'ipv4' }; // ::a.b.c.d
  return { address: g.map((x) => x.toString(16)).join(':'), family: 'ipv6' };
}

/** Why an address is refused (loopback, private, …), or undefined when it is public. */
export function blockedReason(address: string): string | undefined {
  const canonical = canonicalAddress(address);
  if (!canonical) return 'not an IP address';
  if (!blocked.check(canonical.address, canonical.family)) return undefined;
  const range = blockedRanges.find((r) => {
    if (r.family !== canonical.family) return false;
    const one = new net.BlockList();
    one.addSubnet(r.network, r.prefix, r.family);
    return one.check(canonical.address, canonical.family);
  });
  return range?.reason ?? 'not publicly routable';
}

/** The operator's allowlist (`SKILL_ALLOWED_NETWORKS`): addresses and CIDR ranges. */
export class NetworkAllowlist {
  private readonly list = new net.BlockList();
  readonly entries: readonly string[];

  constructor(entries: readonly string[]) {
    this.entries = [...entries];
    for (const entry of entries) {
      if (!isNetwork(entry)) throw new Error(`not an IP address or CIDR range: ${entry}`);
      const [address, prefix] = entry.split('/') as [string, string | undefined];
      const canonical = canonicalAddress(address)!;
      const bits = prefix === undefined ? (canonical.family === 'ipv4' ? 32 : 128) : Number(prefix);
      // An IPv4-mapped entry allows the IPv4 range it names.
      const adjusted = canonical.family === 'ipv4' && net.isIP(address) === 6 ? Math.max(0, bits - 96) : bits;
      this.list.addSubnet(canonical.address, adjusted, canonical.family);
    }
  }

  allows(address: string): boolean {
    const canonical = canonicalAddress(address);
    return canonical !== undefined && this.list.check(canonical.address, canonical.family);
  }
}

/** Refusal reason for an address skills would connect to, or undefined when it may be reached. */
export function refusalReason(address: string, allowlist: NetworkAllowlist): string | undefined {
  const reason = blockedReason(address);
  if (reason === undefined || allowlist.allows(address)) return undefined;
  return reason;
}
