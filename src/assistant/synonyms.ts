/**
 * How engineers write about incidents: a reviewed table of this field's abbreviations and
 * synonyms (db/database, k8s/kubernetes, svc/service, pg/postgres, msg/message, 5xx/server
 * errors, OOM/out of memory…), applied in the application so the search works on any PostgreSQL
 * with its stock `english` configuration. Pure functions; search.ts turns a keyword's
 * alternatives into one OR'ed tsquery, retrieval.ts corrects typos against the vocabulary.
 */

export interface TermGroup {
  /** The keyword a question's phrase is rewritten to, and the group's name. */
  key: string;
  /** Single words searched as alternatives (stemmed by PostgreSQL). */
  words: string[];
  /** Multi-word alternatives, searched as phrases. */
  phrases?: string[];
  /** Phrases of a question rewritten to `key` before its keywords are read ("out of memory" → oom). */
  collapse?: RegExp;
  /** What a collapsed phrase becomes, when more than the key ("ran out of disk" → "full disk"). */
  collapseTo?: string;
  /** Keys of broader groups whose words are searched too (pg is a database). */
  broader?: string[];
}

/** Reviewed with the on-call team's vocabulary; add a row, not a special case in the code. */
export const TERM_GROUPS: TermGroup[] = [
  { key: 'database', words: ['database', 'databases', 'db', 'dbs', 'datastore'] },
  {
    key: 'postgres',
    words: ['postgres', 'postgresql', 'pg', 'psql', 'pgbouncer', 'patroni'],
    broader: ['database'],
  },
  {
    key: 'kubernetes',
    words: ['kubernetes', 'k8s', 'kube', 'kubectl', 'kubelet', 'pod', 'pods', 'helm', 'eks', 'gke', 'aks'],
  },
  { key: 'service', words: ['service', 'services', 'svc', 'svcs'] },
  { key: 'message', words: ['message', 'messages', 'msg', 'msgs'] },
  {
    key: '5xx',
    // A bare 500 is as often a count ("max_connections 500") as a status, so only beside a verb.
    words: ['5xx', '502', '503', '504'],
    phrases: [
      'server error',
      'bad gateway',
      'service unavailable',
      '500 error',
      'http 500',
      'status 500',
      'return 500',
      'returned 500',
      'returning 500',
      'answered 500',
    ],
    // "server errors", "5xx responses", "bad gateway" (a bare "server" is not an error).
    collapse:
      /\b(?:(?:http )?5xx|(?:internal )?server|bad gateway|service unavailable)(?: errors?| responses?| status(?:es)?| codes?)\b|\b(?:http )?5xx\b|\bbad gateway\b|\bservice unavailable\b/g,
  },
  {
    key: 'oom',
    words: ['oom', 'oomkilled', 'oomkill', 'oomkiller', 'oomkills'],
    phrases: ['out of memory', 'ran out of memory', 'run out of memory', 'exit code 137'],
    collapse: /\b(?:out[- ]of[- ]memory|oom[- ]?kill(?:s|ed|er|ing)?|oom)\b/g,
  },
  { key: 'memory', words: ['memory', 'mem', 'ram', 'heap'] },
  {
    key: 'latency',
    words: ['latency', 'latencies', 'slow', 'slowness', 'p99', 'p95', 'p90', 'p50'],
    phrases: ['response time'],
  },
  {
    key: 'timeout',
    words: ['timeout', 'timeouts'],
    phrases: ['timed out', 'time out', 'times out', 'timing out'],
    collapse: /\b(?:timed|timing|times|time) out\b/g,
  },
  {
    key: 'crashloop',
    words: ['crashloop', 'crashloopbackoff', 'crashlooping'],
    phrases: ['crash loop', 'crash looping'],
    collapse: /\bcrash[- ]?loop(?:ing|s|backoff|back-off)?\b/g,
  },
  {
    key: 'notready',
    words: ['notready', 'unready'],
    phrases: ['not ready'],
    collapse: /\b(?:not[- ]ready|notready|unready)\b/g,
  },
  {
    key: 'restart',
    words: ['restart', 'restarts', 'restarted', 'restarting', 'crash', 'crashed', 'crashes', 'crashing'],
  },
  { key: 'connection', words: ['connection', 'connections', 'conn', 'conns', 'connectivity'] },
  {
    key: 'maxconn',
    words: ['maxconn'],
    phrases: [
      'too many connections',
      'too many clients',
      'max connections',
      'max_connections',
      'connection slots',
      'connection limit',
      'pool exhausted',
      'pool exhaustion',
    ],
    collapse:
      /\b(?:too many (?:db |database |pg |postgres )?(?:connections|clients|conns)|max[_ ]connections|connection (?:limit|slots)|(?:connection )?pool exhaust(?:ed|ion)|r[au]n(?:s|ning)? out of (?:db |database )?(?:connections|conns))\b/g,
  },
  {
    key: 'disk',
    words: ['disk', 'disks', 'volume', 'volumes', 'filesystem', 'storage', 'diskpressure', 'diskspacelow'],
    phrases: ['disk pressure', 'disk space'],
    collapse: /\bdisk ?pressure\b/g,
  },
  {
    key: 'full',
    words: ['full', 'filled', 'fill', 'fills', 'filling'],
    phrases: ['ran out of disk', 'run out of disk', 'no space left'],
    // "ran out of disk", "out of disk space", "no space left on device": a full disk.
    collapse: /\b(?:r[au]n(?:s|ning)? )?out of (?:disk(?: space)?|space)\b|\bno space left(?: on device)?\b/g,
    collapseTo: 'full disk',
  },
  { key: 'certificate', words: ['certificate', 'certificates', 'cert', 'certs', 'tls', 'ssl', 'x509'] },
  { key: 'expiry', words: ['expiry', 'expired', 'expire', 'expires', 'expiration', 'expiring', 'lapsed'] },
  {
    key: 'auth',
    words: ['auth', 'authentication', 'authn', 'login', 'logins', 'signin'],
    phrases: ['sign in', 'log in'],
  },
  { key: 'token', words: ['token', 'tokens', 'jwt', 'jwts', 'jwks'] },
  { key: 'elasticsearch', words: ['elasticsearch', 'es', 'opensearch', 'elastic'] },
  { key: 'configuration', words: ['configuration', 'config', 'configs', 'cfg', 'settings', 'setting'] },
  {
    key: 'deploy',
    words: ['deploy', 'deploys', 'deployment', 'deployments', 'deployed', 'release', 'releases', 'rollout', 'rollouts'],
  },
  { key: 'rollback', words: ['rollback', 'revert', 'reverted'], phrases: ['roll back', 'rolled back'] },
  { key: 'notification', words: ['notification', 'notifications', 'notif', 'notifs'] },
  { key: 'delay', words: ['delay', 'delayed', 'delays', 'late'] },
  { key: 'replication', words: ['replication', 'replica', 'replicas', 'standby'] },
  { key: 'gateway', words: ['gateway', 'gw'] },
  { key: 'autoscaler', words: ['hpa', 'autoscaler', 'autoscaling', 'horizontalpodautoscaler'] },
  { key: 'loadbalancer', words: ['lb', 'loadbalancer', 'elb', 'alb'], phrases: ['load balancer'] },
  { key: 'production', words: ['prod', 'production'] },
];

const byWord = new Map<string, TermGroup>();
const byKey = new Map(TERM_GROUPS.map((g) => [g.key, g]));
for (const group of TERM_GROUPS) {
  byWord.set(group.key, group);
  for (const word of group.words) byWord.set(word, group);
}

/** The group a keyword belongs to, if any. */
export const groupOf = (term: string): TermGroup | undefined => byWord.get(term);

/**
 * Rewrites the shorthand of a question before its keywords are read: "w/" is "with", "500s" is
 * "500", and each group's phrases become its key ("out of memory" → oom, "5xx errors" → 5xx).
 */
export function normalizeQuestion(text: string): string {
  let out = text
    .toLowerCase()
    .replace(/\bw\/(?=\s|$)/g, 'with ')
    .replace(/\b([1-5]\d\d)s\b/g, '$1')
    .replace(/[’`]/g, "'")
    .replace(/\b(what|that|it|there|here|who|where|how)'s\b/g, '$1s')
    .replace(/'s\b/g, '');
  for (const group of TERM_GROUPS)
    if (group.collapse) out = out.replace(group.collapse, ` ${group.collapseTo ?? group.key} `);
  return out.replace(/\s+/g, ' ').trim();
}

/** Keeps the first keyword of each group: "ssl cert" asks about one thing, not two. */
export function dedupeByGroup(terms: string[]): string[] {
  const seen = new Set<string>();
  return terms.filter((term) => {
    const key = groupOf(term)?.key ?? term;
    if (seen.has(key)) return false;
    seen.add(key);
    return true;
  });
}

/** What a keyword is searched as: itself, its group's words and phrases, and broader groups' words. */
export function expandTerm(term: string, options: { broader?: boolean } = {}): { words: string[]; phrases: string[] } {
  const group = groupOf(term);
  if (!group) return { words: [term], phrases: [] };
  const broader = options.broader === false ? [] : (group.broader ?? []).flatMap((key) => byKey.get(key)?.words ?? []);
  const words = [...new Set([term, ...group.words, ...broader])];
  return { words, phrases: group.phrases ?? [] };
}

/** Whether a keyword's group reaches broader groups (pgbouncer → any database). */
export const hasBroader = (term: string): boolean => (groupOf(term)?.broader?.length ?? 0) > 0;

/** Optimal string alignment distance (an adjacent transposition counts as one edit), capped at 2. */
export function editDistance(a: string, b: string): number {
  if (Math.abs(a.length - b.length) > 1) return 2;
  const d: number[][] = Array.from({ length: a.length + 1 }, (_, i) => [i, ...new Array<number>(b.length).fill(0)]);
  for (let j = 1; j <= b.length; j++) d[0]![j] = j;
  for (let i = 1; i <= a.length; i++) {
    for (let j = 1; j <= b.length; j++) {
      const cost = a[i - 1] === b[j - 1] ? 0 : 1;
      let best = Math.min(d[i - 1]![j]! + 1, d[i]![j - 1]! + 1, d[i - 1]![j - 1]! + cost);
      if (i > 1 && j > 1 && a[i - 1] === b[j - 2] && a[i - 2] === b[j - 1])
        best = Math.min(best, d[i - 2]![j - 2]! + 1);
      d[i]![j] = best;
    }
  }
  return Math.min(d[a.length]![b.length]!, 2);
}

/** Every word the typo correction may correct to: the table's words (4 letters or more). */
export function tableVocabulary(): string[] {
  return [...byWord.keys()].filter((w) => w.length >= 4 && /^[a-z]+$/.test(w));
}

const sameLetters = (a: string, b: string) => [...a].sort().join() === [...b].sort().join();

/**
 * A tired engineer's typo ("paymnets", "postgress", "waht"): a word of letters not in the
 * vocabulary, one edit from exactly one word of it, becomes that word; among several, the one
 * two swapped letters make (the commonest slip) wins if it is alone. Anything else is kept.
 */
export function correctTypo(word: string, vocabulary: ReadonlySet<string>): string {
  if (word.length < 4 || !/^[a-z]+$/.test(word) || vocabulary.has(word)) return word;
  const near = [...vocabulary].filter((c) => c.length >= 4 && editDistance(word, c) === 1);
  if (near.length === 1) return near[0]!;
  const swapped = near.filter((c) => sameLetters(c, word));
  return swapped.length === 1 ? swapped[0]! : word;
}
