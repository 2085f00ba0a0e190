/**
 * docker-compose.yml checked without a container engine: against the Compose Specification's own
 * JSON schema (vendored, see LICENSE-compose-spec.md), then against the rules of issue 39 (pinned
 * images, the UI on loopback only, no required-variable syntax, health checks) and against
 * .env.example, which must list exactly the settings the service reads.
 */
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { Ajv } from 'ajv';
import addFormats from 'ajv-formats';
import { parse } from 'yaml';
import { describe, expect, it } from 'vitest';
import { projectRoot } from '../../src/config.js';

interface Service {
  image?: string;
  build?: unknown;
  ports?: (string | { host_ip?: string; published?: string | number })[];
  healthcheck?: { test?: string[] | string; disable?: boolean };
  environment?: Record<string, string>;
}
interface ComposeFile {
  services: Record<string, Service>;
}

const read = (file: string) => readFileSync(path.join(projectRoot, file), 'utf8');
const composeText = read('docker-compose.yml');
/** Settings files read beside src/config.ts (by its loadConfig): sign-in, the payment provider. */
const settingsFiles = ['src/config.ts', 'src/auth/settings.ts', 'src/billing/settings.ts'];
const compose = parse(composeText, { merge: true }) as ComposeFile;

function service(name: string): Service {
  const found = compose.services[name];
  if (!found) throw new Error(`no service ${name} in docker-compose.yml`);
  return found;
}

/** The vendored schema, compiled. It names draft-07 by an https URL Ajv does not know by that
 * spelling; draft-07 is Ajv's own default, so the declaration is dropped, not the rules. */
function composeValidator(allErrors: boolean) {
  const { $schema: _draft, ...schema } = JSON.parse(read('test/deploy/compose-spec.json')) as Record<string, unknown>;
  expect(_draft).toBe('https://json-schema.org/draft-07/schema');
  const ajv = new Ajv({ strict: false, allErrors });
  addFormats.default(ajv);
  return ajv.compile(schema);
}

/** The setting names of a zod object in a source file: its `  NAME:` keys at two spaces' indent. */
function settingNames(source: string): string[] {
  return [...source.matchAll(/^ {2}([A-Z][A-Z0-9_]+):/gm)].map((m) => m[1] ?? '');
}

describe('docker-compose.yml', () => {
  it('is valid against the Compose Specification schema', () => {
    const validate = composeValidator(true);
    const valid = validate(parse(composeText, { merge: true }));
    expect(validate.errors ?? []).toEqual([]);
    expect(valid).toBe(true);
  });

  it('the schema check fails on a file that breaks the specification', () => {
    const validate = composeValidator(false);
    const broken = parse(composeText, { merge: true }) as ComposeFile;
    (broken.services.api as unknown as Record<string, unknown>).healthcheck = { test: 'x', intervall: '5s' };
    expect(validate(broken)).toBe(false);
  });

  it('pins every image to a version tag and runs maintained Temporal images', () => {
    const images = Object.values(compose.services).map((s) => s.image ?? '');
    for (const image of images) expect(image).toMatch(/^[a-z0-9./_-]+:[A-Za-z0-9._-]+$/);
    for (const image of images) expect(image).not.toMatch(/:latest$/);
    expect(images.some((i) => i.startsWith('temporalio/server:'))).toBe(true);
    expect(images.some((i) => i.startsWith('temporalio/admin-tools:'))).toBe(true);
    expect(images.some((i) => i.startsWith('temporalio/auto-setup'))).toBe(false);
  });

  it('binds the Temporal UI to 127.0.0.1 and publishes no Temporal gRPC port', () => {
    expect(service('temporal-ui').ports).toEqual(['127.0.0.1:8233:8080']);
    expect(service('temporal').ports).toBeUndefined();
    const published = Object.values(compose.services).flatMap((s) => s.ports ?? []);
    expect(published.map(String).filter((p) => p.includes('7233'))).toEqual([]);
  });

  it('uses no required-variable syntax (${VAR:?}, ${VAR?}): down and logs work without secrets', () => {
    expect(composeText).not.toMatch(/\$\{[A-Za-z0-9_]+:?\?/);
  });

  it('gives the api and the worker health checks', () => {
    for (const name of ['api', 'worker']) {
      const check = service(name).healthcheck;
      expect(check?.disable).not.toBe(true);
      expect(check?.test?.length).toBeGreaterThan(0);
    }
    expect(JSON.stringify(service('api').healthcheck?.test)).toContain('/health');
  });

  it('passes the app only settings the service reads', () => {
    const known = new Set([...settingsFiles.flatMap((f) => settingNames(read(f))), 'NODE_OPTIONS', 'MALLOC_ARENA_MAX']);
    for (const name of ['api', 'worker', 'migrate']) {
      const unknown = Object.keys(service(name).environment ?? {}).filter((k) => !known.has(k));
      expect(unknown, name).toEqual([]);
    }
  });

  it('passes the api every payment provider setting src/billing/settings.ts reads', () => {
    const stripe = settingNames(read('src/billing/settings.ts'));
    expect(stripe).toEqual([
      'STRIPE_SECRET_KEY',
      'STRIPE_API_URL',
      'STRIPE_WEBHOOK_SECRET',
      'STRIPE_TIMEOUT_MS',
      'STRIPE_WEBHOOK_TOLERANCE_SECONDS',
    ]);
    const api = service('api').environment ?? {};
    for (const name of stripe) expect(api[name], name).toBe(`\${${name}:-}`);
  });
});

describe('.env.example', () => {
  it('lists every setting src/config.ts, src/auth/settings.ts and src/billing/settings.ts read, and the OpenTelemetry ones, and nothing else', () => {
    // OpenTelemetry's standard variables: src/tracing/tracing.ts reads the first three, its OTLP
    // exporter and resource the rest.
    const otel = [
      'OTEL_TRACES_EXPORTER',
      'OTEL_SDK_DISABLED',
      'OTEL_SERVICE_NAME',
      'OTEL_EXPORTER_OTLP_ENDPOINT',
      'OTEL_EXPORTER_OTLP_TRACES_ENDPOINT',
      'OTEL_EXPORTER_OTLP_HEADERS',
      'OTEL_RESOURCE_ATTRIBUTES',
    ];
    for (const name of otel.slice(0, 3)) expect(read('src/tracing/tracing.ts')).toContain(name);
    const read_ = [...settingsFiles.flatMap((f) => settingNames(read(f))), ...otel];
    expect(read_.length).toBeGreaterThan(50);
    const listed = [...read('.env.example').matchAll(/^#? ?([A-Z][A-Z0-9_]+)=/gm)].map((m) => m[1] ?? '');
    expect(new Set(listed).size).toBe(listed.length);
    expect([...listed].sort()).toEqual([...new Set(read_)].sort());
  });
});
