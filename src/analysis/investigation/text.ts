/**
 * Reading text and time: signal patterns, host and word extraction, and the phrasing helpers
 * every narrative shares.
 */
import { type AlertObservation } from './types.js';

// ---------------------------------------------------------------------------------------------
// Signals in text

export const RE = {
  dns: /(nxdomain|servfail|no such host|enotfound|eai_again|name resolution|name or service not known|\bdns\b|could not resolve|failed to resolve|unknown host|unable to resolve|lookup [\w.-]+ on [\d.:]+)/i,
  dnsStrong:
    /(nxdomain|servfail|no such host|enotfound|eai_again|name resolution|failed to resolve|could not resolve|name or service not known)/i,
  cert: /(certificate (has )?expired|cert(ificate)?s? (is |has )?expir|x509|ssl ?(cert|expir|error|handshake)|tls handshake|certificate verify failed|cert_has_expired|probe_ssl_earliest_cert_expiry|sslcert|certificate.{0,40}(expired|not valid after))/i,
  certExpired: /(expired|cert_has_expired|not valid after|expir\w* .{0,20}ago|earliest_cert_expiry.{0,40}< ?0)/i,
  pool: /(connection pool|pool (is )?exhausted|too many (clients|connections)|remaining connection slots|max_connections|hikaripool|queuepool limit|connection is not available|pool timeout|no available connections|pgbouncer|connections? (saturat|exhaust)|pool size)/i,
  disk: /(disk (is )?full|no space left|enospc|filesystem.{0,40}(full|avail|space)|node_filesystem|out of (disk|space)|disk ?(space|usage|pressure)|diskpressure|volume.{0,20}full|inodes|ephemeral[- ]storage|persistentvolume.{0,30}(fill|full|space)|kubelet_volume_stats|volume is filling|pvc.{0,30}(full|fill)|(available|free) (disk )?space left|space left)/i,
  memory:
    /(out ?of ?memory|oomkill|oom[- ]?killed|\boom\b|heap (space|usage|out|size)|memory (leak|usage|limit|pressure)|container_memory|javascript heap|memorynear|memoryhigh|high ?memory|memory.{0,30}(limit|of \d))/i,
  cache:
    /(\bredis\b|memcache|cache[- ]?miss|cache hit|hit ratio|cache (unavailable|down|cluster|server|node)|elasticache)/i,
  traffic:
    /(traffic (spike|surge)|request rate|requests? per (second|minute)|\brps\b|\bqps\b|\brpm\b|\d+(\.\d+)?x (the |its )?(normal|baseline|usual)|x baseline|surge|spike in (requests|traffic)|hpa.{0,40}max|max(imum)? replicas|load (spike|surge))/i,
  trafficMultiplier: /(\d+(\.\d+)?x (the |its )?(normal|baseline|usual)|x baseline|\d+ ?% above (normal|baseline))/i,
  saturation: /(cpu|latency|p9\d|saturat|throttl|hpa|replicas|queue depth)/i,
  error:
    /(\b5\d\d\b|5xx|error rate|errors?\b|exception|traceback|panic|crash|fail(ed|ure|ing)?\b|refused|timed? ?out)/i,
  upstreamDown:
    /(connection refused|econnrefused|could not connect|connection reset|server closed the connection|is down|\bdown\b|unreachable|no route to host|pg_up|up == 0|failed to connect|cannot connect|unavailable)/i,
  dbLoad: /(cpu|load|query rate|queries per|slow quer|connections|iops)/i,
  config:
    /(config|configuration|settings?\b|timeout|feature[- ]?flag|\bflags?\b|env(ironment)? var|\.ya?ml\b|\.env\b|\.toml\b|\.ini\b|\blimits?\b|threshold|pool size|max_?conn|values\.ya?ml|helm)/i,
  flappingHint: /(flapp|toggl)/i,
  thirdPartyWords:
    /(third[- ]party|3rd[- ]party|external (api|provider|service|dependency)|vendor|upstream provider|status page|statuspage)/i,
};

const HOST =
  /\b((?:[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?\.)+(?:com|net|org|io|dev|app|cloud|co|internal|local|svc|ai|sh|tech|example|eu|us|uk|de|fr))\b/gi;

/** Host names in a text (lowercased, first seen first). */
export function hostsIn(text: string): string[] {
  const found: string[] = [];
  for (const match of text.matchAll(HOST)) {
    const host = match[1]!.toLowerCase();
    if (!found.includes(host)) found.push(host);
  }
  return found;
}

const STOPWORDS = new Set(
  'the and for with from that this into than then when were have has been after before about over under more less only also which while their there these those what your ours they them will would could should into onto like just other some most such very each both down make made last first since until using used uses merge pull request main branch commit commits update updated change changes fix fixes fixed add added remove removed refactor'.split(
    ' ',
  ),
);

/** Distinctive words (≥ 5 characters, not common English) of a text, lowercased. */
export function distinctiveWords(text: string): Set<string> {
  const words = text.toLowerCase().match(/[a-z][a-z0-9_-]{4,}/g) ?? [];
  return new Set(words.filter((w) => !STOPWORDS.has(w)));
}

// ---------------------------------------------------------------------------------------------
// Time helpers

const MINUTE = 60_000;
export const ms = (iso: string) => new Date(iso).getTime();
/** Minutes from `earlier` to `later` (negative when `earlier` is after `later`). */
export const minutesBetween = (earlier: string, later: string) => (ms(later) - ms(earlier)) / MINUTE;

export function formatDuration(minutes: number): string {
  const m = Math.max(0, Math.round(minutes));
  if (m < 60) return `${m} min`;
  const h = Math.floor(m / 60);
  const rest = m % 60;
  return rest === 0 ? `${h} h` : `${h} h ${rest} min`;
}

/** How strongly a change this many minutes before the first alert points at it (0 … 1). */
export function proximity(minutesBefore: number): number {
  if (minutesBefore < -5) return 0; // after the first alert (5 min of clock skew allowed)
  if (minutesBefore <= 30) return 1;
  if (minutesBefore <= 60) return 0.8;
  if (minutesBefore <= 120) return 0.6;
  if (minutesBefore <= 360) return 0.3;
  return 0;
}

export const hhmm = (iso: string) => `${iso.slice(11, 16)} UTC`;
export const sha7 = (sha: string | null) => (sha ? sha.slice(0, 7) : null);
export const clamp = (x: number, lo: number, hi: number) => Math.min(hi, Math.max(lo, x));
export const round2 = (x: number) => Math.round(x * 100) / 100;
export const quote = (text: string, max = 120) => {
  const one = text.replace(/\s+/g, ' ').trim();
  return one.length > max ? `${one.slice(0, max - 1)}…` : one;
};
export const firstLine = (message: string) => message.split('\n', 1)[0]!.trim();
export const list = (items: string[]) =>
  items.length <= 1 ? (items[0] ?? '') : `${items.slice(0, -1).join(', ')} and ${items[items.length - 1]}`;

const META_LINE =
  /^(labels|source|link|runbook|status|transition|scope|host|metric|level|alert rule|culprit|details|environment|dashboard|panel|query|values):/i;
/** The most telling line of an alert (a value, an error), without metadata or the repeated title. */
export function alertDetail(a: AlertObservation, max = 140): string {
  const name = a.alertName.trim();
  const lines = a.text
    .split('\n')
    .map((l) => l.trim())
    .filter(
      (l) =>
        l !== '' &&
        !META_LINE.test(l) &&
        !l.startsWith('[[') &&
        l !== name &&
        l !== a.title.trim() &&
        !name.startsWith(l),
    );
  const telling = lines.find((l) =>
    /\d|error|fail|refused|expired|timed? ?out|exception|down|unreachable|no space|oom/i.test(l),
  );
  return quote(telling ?? lines[0] ?? a.title, max).replace(/[.;,]+$/, '');
}
/** `Name on service (provider, 09:30 UTC): detail`; a long name (an exception) stands for itself. */
export const alertLine = (a: AlertObservation) =>
  `${quote(a.alertName, 120)}${a.service ? ` on ${a.service}` : ''} (${a.provider}, ${hhmm(a.occurredAt)})${a.alertName.length > 60 ? '' : `: ${alertDetail(a)}`}`;
/** What an alert says, for narratives: the exception or the telling line. */
export const says = (a: AlertObservation, max = 140) =>
  a.alertName.length > 60 ? quote(a.alertName, max).replace(/[.;,]+$/, '') : alertDetail(a, max);
export const textOf = (a: AlertObservation) => `${a.alertName}\n${a.title}\n${a.text}`;
export const lower = (s: string | null | undefined) => (s ?? '').toLowerCase();
/** A change that reached production (or says nothing of where it went). */
export const isProduction = (env: string | null) => env === null || env === '' || /prod|live|main|default/i.test(env);
/** The workload an exporter's `instance` names: `product-cache-0:9121` → `product-cache`. */
export const instanceWorkload = (instance: string) => instance.replace(/:\d+$/, '').replace(/-\d+$/, '');
