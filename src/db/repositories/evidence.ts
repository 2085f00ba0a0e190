import { and, count, desc, eq, type SQL } from 'drizzle-orm';
import { olderThan } from '../keyset.js';
import type { Db } from '../client.js';
import { evidenceItems, type EvidenceType } from '../schema/investigation.js';

export type EvidenceRow = typeof evidenceItems.$inferSelect;

export function toEvidenceView(row: EvidenceRow) {
  return {
    evidenceId: row.id,
    type: row.type,
    source: row.source,
    summary: row.summary,
    severity: row.severity,
    timestamp: row.occurredAt.toISOString(),
    rawSnippet: row.rawSnippet,
  };
}

/** An incident's evidence items, newest first, keyset over (created_at, id), with the total. */
export async function listEvidence(
  db: Db,
  query: {
    tenantId: string;
    incidentId: string;
    type?: EvidenceType;
    limit: number;
    after?: { createdAt: Date; id: string };
  },
): Promise<{ rows: EvidenceRow[]; total: number; hasMore: boolean }> {
  const filters: SQL[] = [eq(evidenceItems.tenantId, query.tenantId), eq(evidenceItems.incidentId, query.incidentId)];
  if (query.type) filters.push(eq(evidenceItems.type, query.type));
  const where = and(...filters);
  const page = query.after ? and(where, olderThan(evidenceItems.createdAt, evidenceItems.id, query.after)) : where;
  const [rows, totals] = await Promise.all([
    db
      .select()
      .from(evidenceItems)
      .where(page)
      .orderBy(desc(evidenceItems.createdAt), desc(evidenceItems.id))
      .limit(query.limit + 1),
    db.select({ total: count() }).from(evidenceItems).where(where),
  ]);
  return { rows: rows.slice(0, query.limit), total: totals[0]?.total ?? 0, hasMore: rows.length > query.limit };
}
