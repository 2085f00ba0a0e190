/**
 * How a change is tied to the incident's service or a dependency: by name (also the names tools
 * give it, `payments-prod`), by a repository and path globs its node lists, by the directory
 * conventions of GitOps repositories, or by a mention in the incident's alerts. Pure functions.
 */
import type { ChangeMatch } from '../../analysis/investigation/index.js';
import type { ServiceRepository } from '../../db/schema/topology.js';
import { lower } from './common.js';

export interface ChangeTarget {
  name: string;
  hops: number;
  repositories: ServiceRepository[];
}
export interface ChangeTie {
  hops: number;
  matchedBy: ChangeMatch;
}

const matchOrder: ChangeMatch[] = ['service', 'repository', 'path', 'mention'];
/** Directories whose next segment names a service (`apps/checkout/values.yaml`). */
const serviceDirs = new Set([
  'apps',
  'applications',
  'services',
  'charts',
  'helm',
  'k8s',
  'kubernetes',
  'deploy',
  'deployments',
  'manifests',
  'releases',
]);
/** Directories whose second next segment names a service (`environments/<env>/<svc>/`). */
const envDirs = new Set(['environments', 'envs', 'overlays', 'clusters']);
const infraDirs = new Set(['terraform', 'infra', 'infrastructure', 'tf']);

/** The names a changed path gives a service by its directory conventions. */
export function namesInPath(path: string): string[] {
  const segments = path
    .toLowerCase()
    .split('/')
    .filter((s) => s !== '');
  const names: string[] = [];
  for (let i = 0; i < segments.length; i++) {
    const segment = segments[i]!;
    if (serviceDirs.has(segment) && segments[i + 1]) names.push(segments[i + 1]!);
    if (envDirs.has(segment) && segments[i + 2]) names.push(segments[i + 2]!);
    if (infraDirs.has(segment)) {
      // Any directory under terraform/ (not its files): terraform/prod/checkout/main.tf.
      const last = segments.length - 1;
      for (let j = i + 1; j < segments.length; j++)
        if (j < last || !segments[j]!.includes('.')) names.push(segments[j]!);
    }
  }
  return names;
}

/** One path segment against one glob segment (`*`, `?`), case-insensitive, without backtracking blow-ups. */
function segmentMatches(glob: string, segment: string): boolean {
  const g = glob.toLowerCase();
  const s = segment.toLowerCase();
  let gi = 0;
  let si = 0;
  let star = -1;
  let mark = 0;
  while (si < s.length) {
    if (gi < g.length && (g[gi] === '?' || g[gi] === s[si])) {
      gi++;
      si++;
    } else if (gi < g.length && g[gi] === '*') {
      star = gi++;
      mark = si;
    } else if (star >= 0) {
      gi = star + 1;
      si = ++mark;
    } else return false;
  }
  while (gi < g.length && g[gi] === '*') gi++;
  return gi === g.length;
}

/**
 * A path glob (`*` and `?` within a segment, `**` any number of segments) as a test of a changed
 * path. Greedy with one backtrack point per level, so a member's glob cannot make the worker
 * spin on a tool's paths (as a regular expression of many stars could). A directory path (an
 * Argo CD source path) matches `dir/**`.
 */
export function globMatcher(glob: string): (path: string) => boolean {
  const parts: string[] = [];
  for (const part of glob.split('/')) {
    if (part === '' || (part === '**' && parts[parts.length - 1] === '**')) continue;
    parts.push(part);
  }
  return (path) => {
    const segments = path.split('/').filter((s) => s !== '');
    let gi = 0;
    let si = 0;
    let star = -1;
    let mark = 0;
    while (si < segments.length) {
      if (gi < parts.length && parts[gi] === '**') {
        star = gi++;
        mark = si;
      } else if (gi < parts.length && segmentMatches(parts[gi]!, segments[si]!)) {
        gi++;
        si++;
      } else if (star >= 0) {
        gi = star + 1;
        si = ++mark;
      } else return false;
    }
    while (gi < parts.length && parts[gi] === '**') gi++;
    return gi === parts.length;
  };
}

/** Words too common to say which service a flag is about. */
const vagueWords = new Set([
  'api',
  'app',
  'web',
  'service',
  'svc',
  'worker',
  'server',
  'backend',
  'frontend',
  'main',
  'core',
  'new',
  'old',
  'use',
  'enable',
  'disable',
  'test',
  'prod',
  'v1',
  'v2',
  'v3',
]);

/** What a service name says in a flag key: the name, and its first word when it is telling (`checkout-api` → checkout). */
function nameWords(name: string): string[] {
  const lowered = lower(name);
  const first = lowered.split(/[-_.]/)[0] ?? '';
  return first.length >= 3 && !vagueWords.has(first) && first !== lowered ? [lowered, first] : [lowered];
}

/** Whether a flag key names a service: `new-checkout-flow` names checkout-api, `use-tax-service-v2` tax-api. */
export function flagNames(flag: string, service: string): boolean {
  const key = lower(flag);
  const words = new Set(key.split(/[-_.:/\s]+/));
  return nameWords(service).some((w) => (w.includes('-') || w.includes('_') ? key.includes(w) : words.has(w)));
}

/** A service name without deploy verbs, environments and kind suffixes: `deploy-payments-api-prod` → `payments`. */
export function canonicalName(name: string): string {
  let n = lower(name)
    .trim()
    .replace(/\.ya?ml$/, '');
  n = n.replace(/^(deploy|release|rollout|cd|ship|promote)[-_]/, '');
  for (let i = 0; i < 3; i++)
    n = n.replace(/[-_](prod|production|prd|staging|stage|stg|live|canary|blue|green|eu|us|apac|dev|qa|preprod)$/, '');
  return n.replace(/[-_](api|service|svc|app|server|web)$/, '');
}

function mentioned(text: string, word: string): boolean {
  if (word.length < 3) return false;
  const escaped = word.toLowerCase().replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
  return new RegExp(`(^|[^\\w.-])${escaped}($|[^\\w-])`).test(text);
}

/**
 * Ties a change to the nearest target it concerns (fewest hops; then service, repository, path,
 * mention). `alertServices` are the services of the incident's own alerts: a flag whose key names
 * one is the incident's.
 */
export function changeMatcher(
  targets: ChangeTarget[],
  alertText: string,
  alertServices: string[] = [],
): (change: { service: string | null; labels: Record<string, string> }) => ChangeTie | undefined {
  const byName = new Map<string, ChangeTarget>();
  for (const t of targets) if (!byName.has(lower(t.name))) byName.set(lower(t.name), t);
  const byRepo = new Map<string, Array<{ target: ChangeTarget; globs: Array<(path: string) => boolean> }>>();
  for (const t of targets)
    for (const r of t.repositories) {
      const list = byRepo.get(lower(r.repository)) ?? [];
      list.push({ target: t, globs: (r.paths ?? []).map(globMatcher) });
      byRepo.set(lower(r.repository), list);
    }
  const byCanonical = new Map<string, ChangeTarget>();
  for (const t of targets) if (!byCanonical.has(canonicalName(t.name))) byCanonical.set(canonicalName(t.name), t);
  const own = targets.find((t) => t.hops === 0);
  return (change) => {
    const ties: ChangeTie[] = [];
    const tie = (target: ChangeTarget | undefined, matchedBy: ChangeMatch) => {
      if (target) ties.push({ hops: target.hops, matchedBy });
    };
    const names = [change.service ?? '', ...(change.labels.services ?? '').split(',')].map((n) => lower(n.trim()));
    for (const n of names) if (n) tie(byName.get(n), 'service');
    const paths = (change.labels.paths ?? '').split('\n').filter((p) => p !== '');
    for (const entry of byRepo.get(lower(change.labels.repository)) ?? []) {
      if (entry.globs.length === 0) tie(entry.target, 'repository');
      else if (paths.some((p) => entry.globs.some((matches) => matches(p)))) tie(entry.target, 'path');
    }
    for (const p of paths) for (const n of namesInPath(p)) tie(byName.get(n), 'path');
    // Tool-side names that carry the service with an environment or a verb (`payments-prod`,
    // `deploy-accounts-api`): compared without them.
    if (ties.length === 0)
      for (const n of [...names, lower(change.labels.workflow)])
        if (n) tie(byCanonical.get(canonicalName(n)), 'service');
    const flag = change.labels.flag;
    if (ties.length === 0 && own) {
      if ((flag && mentioned(alertText, flag)) || (change.service && mentioned(alertText, change.service)))
        tie(own, 'mention');
      else if (flag && alertServices.some((n) => flagNames(flag, n))) tie(own, 'mention');
      // A grouped incident holds several services' alerts: a change of any of them is the incident's.
      else if (change.service && alertServices.some((n) => canonicalName(n) === canonicalName(change.service!)))
        tie(own, 'mention');
    }
    // A flag no tool tied whose key names the service or a dependency (`new-checkout-flow`).
    if (ties.length === 0 && flag) for (const t of targets) if (flagNames(flag, t.name)) tie(t, 'mention');
    ties.sort((a, b) => a.hops - b.hops || matchOrder.indexOf(a.matchedBy) - matchOrder.indexOf(b.matchedBy));
    return ties[0];
  };
}
