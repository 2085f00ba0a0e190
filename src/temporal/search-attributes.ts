import type { Connection } from '@temporalio/client';
import proto from '@temporalio/proto';
import { customSearchAttributes } from '../workflows/search-attributes.js';

/**
 * Registers the custom search attributes on the namespace when missing (operator API), so a
 * Temporal server that was not started with our dev-server flags works too.
 */
export async function ensureSearchAttributes(connection: Connection, namespace: string): Promise<void> {
  const existing = await connection.operatorService.listSearchAttributes({ namespace });
  const known = new Set(Object.keys(existing.customAttributes ?? {}));
  const missing = customSearchAttributes.filter((key) => !known.has(key.name));
  if (missing.length === 0) return;
  await connection.operatorService.addSearchAttributes({
    namespace,
    searchAttributes: Object.fromEntries(
      missing.map((key) => [key.name, proto.temporal.api.enums.v1.IndexedValueType.INDEXED_VALUE_TYPE_KEYWORD]),
    ),
  });
}
