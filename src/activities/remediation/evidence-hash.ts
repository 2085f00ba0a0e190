import { createHash } from 'node:crypto';
import { and, eq } from 'drizzle-orm';
import type { Db } from '../../db/client.js';
import { evidenceItems, investigations } from '../../db/schema/investigation.js';

/**
 * The incident's evidence as a hash (its evidence ids, investigation run and root cause): a
 * proposal carries it, so the workflow can tell when a pending one was made on older evidence.
 */
export async function currentEvidenceHash(db: Db, incidentId: string, tenantId: string): Promise<string> {
  const [inv] = await db
    .select({ run: investigations.run, rootCause: investigations.rootCause })
    .from(investigations)
    .where(and(eq(investigations.incidentId, incidentId), eq(investigations.tenantId, tenantId)));
  const ids = await db
    .select({ id: evidenceItems.id })
    .from(evidenceItems)
    .where(and(eq(evidenceItems.incidentId, incidentId), eq(evidenceItems.tenantId, tenantId)));
  const hash = createHash('sha256');
  hash.update(
    ids
      .map((r) => r.id)
      .sort()
      .join('\n'),
  );
  hash.update(`\0run:${inv?.run ?? 0}\0root:${inv?.rootCause ?? ''}`);
  return hash.digest('hex');
}
