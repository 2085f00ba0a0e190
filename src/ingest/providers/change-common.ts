/**
 * What change providers share: the bounded `paths` label, how changed paths classify a push
 * (GitOps, infrastructure, dependency), deploy-workflow names, and services read off flag tags.
 */
import type { ChangeType } from '../../analysis/investigation/types.js';
import { clip, makeDescription, oneLineLabel, TITLE_MAX } from '../normalize.js';
import type { NormalizedChange } from '../types.js';

/** The `paths` label keeps at most this many paths and characters (ADR 0266). */
export const MAX_PATHS = 200;
export const MAX_PATHS_CHARS = 4000;

/** Changed paths as the `paths` label: distinct, in order, newline-separated, bounded. */
export function pathsLabel(paths: Iterable<string>): string | undefined {
  const kept: string[] = [];
  const seen = new Set<string>();
  let length = 0;
  for (const raw of paths) {
    const path = oneLineLabel(raw);
    if (path === '' || seen.has(path)) continue;
    if (kept.length >= MAX_PATHS || length + path.length + 1 > MAX_PATHS_CHARS) break;
    seen.add(path);
    kept.push(path);
    length += path.length + 1;
  }
  return kept.length > 0 ? kept.join('\n') : undefined;
}

/** Labels without the absent (undefined, blank) values; every value one line. */
export function labelsOf(values: Record<string, string | number | boolean | null | undefined>): Record<string, string> {
  const labels: Record<string, string> = {};
  for (const [key, value] of Object.entries(values)) {
    if (value === undefined || value === null) continue;
    const text = key === 'paths' ? String(value) : oneLineLabel(String(value));
    if (text !== '') labels[key] = text;
  }
  return labels;
}

const dependencyFiles = new Set([
  'package.json',
  'package-lock.json',
  'npm-shrinkwrap.json',
  'yarn.lock',
  'pnpm-lock.yaml',
  'bun.lockb',
  'go.mod',
  'go.sum',
  'pipfile',
  'pipfile.lock',
  'poetry.lock',
  'pyproject.toml',
  'uv.lock',
  'setup.py',
  'setup.cfg',
  'pom.xml',
  'build.gradle',
  'build.gradle.kts',
  'gradle.lockfile',
  'libs.versions.toml',
  'gemfile',
  'gemfile.lock',
  'cargo.toml',
  'cargo.lock',
  'composer.json',
  'composer.lock',
  'mix.exs',
  'mix.lock',
  'packages.lock.json',
  'directory.packages.props',
  'podfile.lock',
  'package.resolved',
]);
const gitopsDirs = new Set([
  'apps',
  'applications',
  'charts',
  'helm',
  'k8s',
  'kubernetes',
  'manifests',
  'kustomize',
  'overlays',
  'deploy',
  'deployments',
  'environments',
  'clusters',
  'releases',
]);
const gitopsFiles =
  /^(values(?:[-.][\w.-]+)?\.ya?ml|kustomization\.ya?ml|chart\.ya?ml|helmfile\.ya?ml|helmrelease\.ya?ml)$/;

export type PathClass = 'gitops' | 'infrastructure' | 'dependency' | 'other';

/** What one changed path is: a deployment manifest, Terraform, a dependency manifest or lockfile, or code. */
export function classifyPath(path: string): PathClass {
  const lower = path.toLowerCase();
  const segments = lower.split('/');
  const base = segments[segments.length - 1] ?? '';
  if (/\.(tf|tfvars|tf\.json|tfvars\.json)$/.test(base) || base === '.terraform.lock.hcl' || base === 'terragrunt.hcl')
    return 'infrastructure';
  if (dependencyFiles.has(base) || /^requirements[\w.-]*\.(txt|in)$/.test(base) || /\.csproj$/.test(base))
    return 'dependency';
  if (gitopsFiles.test(base)) return 'gitops';
  if (/\.(ya?ml|json)$/.test(base) && segments.slice(0, -1).some((s) => gitopsDirs.has(s))) return 'gitops';
  return 'other';
}

/**
 * A push's change type from its paths: when every path is a manifest, Terraform or dependency
 * file, the strongest of them (what runs first, then infrastructure, then dependencies); a push
 * that touches any code is a `push`.
 */
export function pushChangeType(paths: string[]): ChangeType {
  if (paths.length === 0) return 'push';
  const classes = new Set(paths.map(classifyPath));
  if (classes.has('other')) return 'push';
  if (classes.has('gitops')) return 'gitops';
  if (classes.has('infrastructure')) return 'infrastructure';
  return 'dependency';
}

const deployWords = new Set([
  'deploy',
  'deploys',
  'deployment',
  'deployments',
  'release',
  'releases',
  'rollout',
  'rollouts',
  'publish',
  'cd',
  'promote',
  'promotion',
  'ship',
  // A schema migration changes production as much as a deploy does.
  'migrate',
  'migration',
  'migrations',
]);
const environmentWords: Record<string, string> = {
  production: 'production',
  prod: 'production',
  prd: 'production',
  staging: 'staging',
  stage: 'staging',
  stg: 'staging',
  development: 'development',
  dev: 'development',
  qa: 'qa',
  test: 'test',
  preview: 'preview',
  sandbox: 'sandbox',
  canary: 'canary',
};

function words(text: string): string[] {
  return text
    .toLowerCase()
    .split(/[^a-z0-9]+/)
    .filter((w) => w !== '');
}

/** Whether a workflow's name or file reads as one that deploys (deploy, release, rollout, publish, CD, migrate). */
export function isDeployWorkflow(...texts: Array<string | null | undefined>): boolean {
  return texts.some((text) => typeof text === 'string' && words(text).some((w) => deployWords.has(w)));
}

/** The environment a workflow's name or file names (`deploy-production.yml` → production). */
export function environmentFrom(...texts: Array<string | null | undefined>): string | undefined {
  for (const text of texts) {
    if (typeof text !== 'string') continue;
    for (const w of words(text)) if (environmentWords[w]) return environmentWords[w];
  }
  return undefined;
}

const nameLike = /^[a-z0-9][a-z0-9._-]{0,199}$/i;

/**
 * The services a flag's tags name: `service:<name>` (or `service=<name>`) tags when there are
 * any, else the tags that read as plain names (the topology decides later which is a service).
 * `service` is set when exactly one is named.
 */
export function servicesFromTags(tags: Array<string | null | undefined>): {
  service: string | null;
  services: string[];
} {
  const clean = tags.map((t) => (typeof t === 'string' ? t.trim() : '')).filter((t) => t !== '');
  const explicit = clean
    .map((t) => /^service[:=](.+)$/i.exec(t)?.[1]?.trim())
    .filter((t): t is string => t !== undefined && t !== '');
  const names = [...new Set(explicit.length > 0 ? explicit : clean.filter((t) => nameLike.test(t)))].slice(0, 20);
  return { service: names.length === 1 ? names[0]! : explicit.length > 0 ? (names[0] ?? null) : null, services: names };
}

/** `owner/name` from a git URL (`https://github.com/acme/platform-config.git`, `git@github.com:acme/x.git`). */
export function repositoryFromUrl(url: string | null | undefined): string | undefined {
  if (!url) return undefined;
  const match = /(?:[:/])([\w.-]+)\/([\w.-]+?)(?:\.git)?\/?$/.exec(url.trim());
  return match ? `${match[1]}/${match[2]}` : undefined;
}

/** A change event with its description built from `parts` and its labels listed. */
export function change(
  kind: NormalizedChange['kind'],
  fields: {
    service: string | null;
    title: string;
    parts: Array<string | null | undefined>;
    labels: Record<string, string>;
    occurredAt: Date;
    raw: unknown;
  },
): NormalizedChange {
  const { paths, ...listed } = fields.labels;
  const pathLines = paths ? `Paths:\n${paths.split('\n').slice(0, 50).join('\n')}` : undefined;
  return {
    kind,
    service: fields.service,
    title: clip(fields.title, TITLE_MAX),
    description: makeDescription([...fields.parts, pathLines], listed),
    labels: fields.labels,
    occurredAt: fields.occurredAt,
    raw: fields.raw,
  };
}
