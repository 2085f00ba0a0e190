import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestService, type TestService } from '../helpers/service.js';

let svc: TestService;
let tenant: { tenantId: string; admin: string; member: string };

beforeAll(async () => {
  svc = await startTestService({ withoutWorker: true });
  tenant = await svc.newTenant({ plan: 'plan_enterprise' });
});
afterAll(() => svc?.stop());

type Operation = {
  requestBody?: { content?: Record<string, unknown> };
  parameters?: Array<{ in: string; name: string }>;
};

const UNKNOWN = 'zz_not_a_field';

/** A well-formed value for a path parameter: the tenant's own id, else an id no row has. */
function pathValue(name: string): string {
  return name === 'tenantId' ? tenant.tenantId : `${name.replace(/Id$/, '').slice(0, 3)}_000000000000000000000`;
}

/** Does one of the error's details (or its message) name the unknown field? */
function namesField(
  body: { message?: string; details?: Array<{ path: string; message: string }> },
  field: string,
): boolean {
  return (body.details ?? []).some((d) => d.path.split('.').includes(field) || d.message.includes(field));
}

describe('unknown body fields', () => {
  it('are refused with 400 validation_error naming the field, by every JSON-body operation except webhooks', async () => {
    const doc = (await svc.api('GET', '/openapi.json')).body as { paths: Record<string, Record<string, Operation>> };
    const checked: string[] = [];
    const wrong: string[] = [];
    for (const [template, operations] of Object.entries(doc.paths)) {
      // A webhook's body is the monitoring tool's own format, read as it comes (decision 250).
      if (template.startsWith('/v1/webhooks/')) continue;
      for (const [method, operation] of Object.entries(operations)) {
        if (!operation.requestBody?.content?.['application/json']) continue;
        const path = template.replace(/\{(\w+)\}/g, (_, name: string) => pathValue(name));
        const res = await svc.api(method.toUpperCase(), path, { token: tenant.admin, body: { [UNKNOWN]: 1 } });
        checked.push(`${method.toUpperCase()} ${template}`);
        if (res.status !== 400 || res.body?.error !== 'validation_error' || !namesField(res.body, UNKNOWN)) {
          wrong.push(`${method.toUpperCase()} ${template}: ${res.status} ${JSON.stringify(res.body).slice(0, 300)}`);
        }
      }
    }
    expect(checked.length).toBeGreaterThan(20);
    expect(wrong).toEqual([]);
  });

  it('are declared refused: every object of every JSON request body in the document says additionalProperties false', async () => {
    const doc = (await svc.api('GET', '/openapi.json')).body as {
      paths: Record<string, Record<string, any>>;
      components: { schemas: Record<string, any> };
    };
    const resolve = (s: any): any =>
      typeof s?.$ref === 'string' ? doc.components.schemas[s.$ref.split('/').pop()] : s;
    const open: string[] = [];
    const walk = (schema: any, where: string, seen: Set<unknown>): void => {
      const s = resolve(schema);
      if (!s || typeof s !== 'object' || seen.has(s)) return;
      seen.add(s);
      if (s.properties) {
        if (s.additionalProperties !== false) open.push(where);
        for (const [key, child] of Object.entries(s.properties)) walk(child, `${where}.${key}`, seen);
      }
      for (const key of ['anyOf', 'oneOf', 'allOf'])
        for (const [i, child] of (s[key] ?? []).entries()) walk(child, `${where}|${i}`, seen);
      if (s.items) walk(s.items, `${where}[]`, seen);
    };
    for (const [path, operations] of Object.entries(doc.paths)) {
      if (path.startsWith('/v1/webhooks/')) continue;
      for (const [method, operation] of Object.entries(operations)) {
        const schema = operation.requestBody?.content?.['application/json']?.schema;
        if (schema) walk(schema, `${method.toUpperCase()} ${path}`, new Set());
      }
    }
    expect(open).toEqual([]);
  });

  it('are refused inside nested objects too, naming where', async () => {
    const res = await svc.api('PATCH', `/v1/tenants/${tenant.tenantId}`, {
      token: tenant.admin,
      body: { settings: { autoResolve: true, [UNKNOWN]: 1 } },
    });
    expect(res.status).toBe(400);
    expect(res.body.error).toBe('validation_error');
    expect(res.body.details).toEqual(
      expect.arrayContaining([expect.objectContaining({ path: expect.stringContaining('settings') })]),
    );
    expect(namesField(res.body, UNKNOWN)).toBe(true);
  });

  it('a valid body with one unknown field changes nothing', async () => {
    const before = await svc.api('GET', `/v1/tenants/${tenant.tenantId}`, { token: tenant.admin });
    const res = await svc.api('PATCH', `/v1/tenants/${tenant.tenantId}`, {
      token: tenant.admin,
      body: { name: 'Renamed', [UNKNOWN]: 1 },
    });
    expect(res.status).toBe(400);
    const after = await svc.api('GET', `/v1/tenants/${tenant.tenantId}`, { token: tenant.admin });
    expect(after.body.name).toBe(before.body.name);
  });
});
