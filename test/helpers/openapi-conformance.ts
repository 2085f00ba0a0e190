import { Ajv2020 } from 'ajv/dist/2020.js';
import { expect } from 'vitest';
import type { TestService } from './service.js';

/**
 * Checks a real answer against the schema the served OpenAPI document declares for that path,
 * method and status, with a JSON Schema 2020-12 validator (OpenAPI 3.1's).
 */
export async function expectConformsToDocument(
  svc: TestService,
  path: string,
  method: string,
  status: number,
  body: unknown,
): Promise<void> {
  const doc = (await svc.api('GET', '/openapi.json')).body;
  const ajv = new Ajv2020({ strict: false, allErrors: true });
  ajv.addSchema({ $id: 'https://openapi.test/doc', components: doc.components });
  const schema = doc.paths[path][method].responses[String(status)].content['application/json'].schema;
  const check = ajv.compile(
    JSON.parse(JSON.stringify(schema).replaceAll('"#/components/', '"https://openapi.test/doc#/components/')),
  );
  expect(check(body) ? [] : check.errors, `${method} ${path} ${status}`).toEqual([]);
}
