/**
 * deploy/kubernetes checked without a cluster: every object against the Kubernetes API's own
 * JSON schema (kubernetes-models ships them, with the models), then our own rules: pinned images,
 * probes, settings from the ConfigMap and Secret, one image for api, worker and migration job.
 */
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { Deployment } from 'kubernetes-models/apps/v1';
import { Job } from 'kubernetes-models/batch/v1';
import { PodDisruptionBudget } from 'kubernetes-models/policy/v1';
import { ConfigMap, PersistentVolumeClaim, Secret, Service } from 'kubernetes-models/v1';
import { parseAllDocuments } from 'yaml';
import { describe, expect, it } from 'vitest';
import { projectRoot } from '../../src/config.js';

interface Manifest {
  apiVersion: string;
  kind: string;
  metadata: { name: string };
  spec?: Record<string, unknown>;
  data?: Record<string, string>;
}

/** The models by apiVersion and kind; a kind not listed here fails the test until it is added. */
const models: Record<string, new (data: never) => { validate(): void }> = {
  'apps/v1 Deployment': Deployment,
  'batch/v1 Job': Job,
  'policy/v1 PodDisruptionBudget': PodDisruptionBudget,
  'v1 ConfigMap': ConfigMap,
  'v1 PersistentVolumeClaim': PersistentVolumeClaim,
  'v1 Secret': Secret,
  'v1 Service': Service,
};

const dir = path.join(projectRoot, 'deploy', 'kubernetes');
const files = readdirSync(dir).filter((f) => f.endsWith('.yaml'));
const manifests: (Manifest & { file: string })[] = files.flatMap((file) =>
  parseAllDocuments(readFileSync(path.join(dir, file), 'utf8')).map((doc) => {
    expect(doc.errors, file).toEqual([]);
    return { ...(doc.toJS() as Manifest), file };
  }),
);
const byName = (kind: string, name: string) => {
  const found = manifests.find((m) => m.kind === kind && m.metadata.name === name);
  if (!found) throw new Error(`no ${kind} ${name} in deploy/kubernetes`);
  return found;
};

function validationError(manifest: Manifest): string | undefined {
  const Model = models[`${manifest.apiVersion} ${manifest.kind}`];
  if (!Model) return `no schema known for ${manifest.apiVersion} ${manifest.kind}`;
  try {
    new Model(manifest as never).validate();
    return undefined;
  } catch (error) {
    return (error as Error).message;
  }
}

interface Container {
  image: string;
  command: string[];
  envFrom?: { configMapRef?: { name: string }; secretRef?: { name: string; optional?: boolean } }[];
  livenessProbe?: unknown;
  readinessProbe?: unknown;
}
/** The first (only) container of a Deployment's or Job's pods. */
function container(m: Manifest): Container {
  const first = (m.spec as { template: { spec: { containers: Container[] } } }).template.spec.containers[0];
  if (!first) throw new Error(`${m.kind} ${m.metadata.name} has no container`);
  return first;
}

describe('deploy/kubernetes', () => {
  it('holds the api, worker, Service, ConfigMap, Secret and migration Job', () => {
    expect(files.length).toBeGreaterThanOrEqual(4);
    for (const [kind, name] of [
      ['Deployment', 'incidents-api'],
      ['Deployment', 'incidents-worker'],
      ['Service', 'incidents-api'],
      ['ConfigMap', 'incidents-config'],
      ['Secret', 'incidents-secrets'],
      ['Job', 'incidents-migrate'],
    ] as const) {
      expect(byName(kind, name).kind).toBe(kind);
    }
  });

  it('every object is valid against the Kubernetes schema of its kind', () => {
    const errors = manifests.map((m) => [`${m.file}: ${m.kind} ${m.metadata.name}`, validationError(m)]);
    expect(errors.filter(([, error]) => error !== undefined)).toEqual([]);
  });

  it('the schema check refuses a broken object', () => {
    const api = structuredClone(byName('Deployment', 'incidents-api'));
    container(api).command = 'node dist/api/server.js' as never;
    expect(validationError(api)).toMatch(/command/);
    expect(validationError({ ...api, kind: 'Deploymnet' })).toMatch(/no schema known/);
  });

  it('runs one pinned image with the compiled entry points, and probes the api and the worker', () => {
    const api = container(byName('Deployment', 'incidents-api'));
    const worker = container(byName('Deployment', 'incidents-worker'));
    const migrate = container(byName('Job', 'incidents-migrate'));
    expect(api.command).toEqual(['node', 'dist/api/server.js']);
    expect(worker.command).toEqual(['node', 'dist/temporal/worker.js']);
    expect(migrate.command).toEqual(['node', 'dist/db/migrate.js']);
    for (const c of [api, worker, migrate]) {
      expect(c.image).toMatch(/:[A-Za-z0-9._-]+$/);
      expect(c.image).not.toMatch(/:latest$/);
      expect(c.image).toBe(api.image);
      expect(c.envFrom).toEqual([
        { configMapRef: { name: 'incidents-config' } },
        { secretRef: { name: 'incidents-secrets', optional: true } },
      ]);
    }
    expect(JSON.stringify(api.readinessProbe)).toContain('/health');
    expect(JSON.stringify(api.livenessProbe)).toContain('/health');
    expect(JSON.stringify(worker.livenessProbe)).toContain('dist/temporal/worker.js');
  });

  it('the ConfigMap and Secret hold only settings the service reads, and the Secret no values', () => {
    const source = readFileSync(path.join(projectRoot, 'src/config.ts'), 'utf8');
    const known = new Set([...source.matchAll(/^ {2}([A-Z][A-Z0-9_]+):/gm)].map((m) => m[1] ?? ''));
    const config = byName('ConfigMap', 'incidents-config').data ?? {};
    const secret = (byName('Secret', 'incidents-secrets') as unknown as { stringData: Record<string, string> })
      .stringData;
    expect([...Object.keys(config), ...Object.keys(secret)].filter((k) => !known.has(k))).toEqual([]);
    expect(Object.values(secret).filter((v) => v !== '')).toEqual([]);
  });
});
