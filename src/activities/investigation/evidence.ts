/** Storing an agent's evidence items, and the wording its report shares with the other agents. */
import { and, eq, inArray } from 'drizzle-orm';
import { formatDuration } from '../../analysis/investigation/index.js';
import type { AgentReport, InvestigationRequest } from '../../analysis/investigation-types.js';
import type { AgentRole } from '../../analysis/types.js';
import { evidenceItems } from '../../db/schema/investigation.js';
import { newId } from '../../ids.js';
import { appendEvent } from '../../outbox/append.js';
import {
  clip,
  MAX_ITEMS_PER_AGENT,
  oneLine,
  RAW_SNIPPET_MAX,
  SUMMARY_MAX,
  type EvidenceDraft,
  type InvestigationContext,
  type Scene,
} from './common.js';

/**
 * Stores an agent's evidence items (once per incident and dedupe key) and, when any is new,
 * one `investigation.evidence_added` event for the agent in the same transaction. Returns the
 * ids of every item the agent found, new or stored by an earlier attempt or run.
 */
export async function storeEvidence(
  ctx: InvestigationContext,
  req: InvestigationRequest,
  role: AgentRole,
  drafts: EvidenceDraft[],
): Promise<string[]> {
  const unique = new Map<string, EvidenceDraft>();
  for (const d of drafts.slice(0, MAX_ITEMS_PER_AGENT)) unique.set(`${role}:${d.sourceId}`, d);
  if (unique.size === 0) return [];
  const keys = [...unique.keys()];
  return ctx.db.transaction(async (tx) => {
    const inserted = await tx
      .insert(evidenceItems)
      .values(
        [...unique.entries()].map(([dedupeKey, d]) => ({
          id: newId('evi'),
          tenantId: req.tenantId,
          incidentId: req.incidentId,
          agentRole: role,
          type: d.type,
          source: d.source,
          summary: clip(oneLine(d.summary), SUMMARY_MAX),
          severity: d.severity,
          occurredAt: d.occurredAt,
          rawSnippet: clip(d.rawSnippet, RAW_SNIPPET_MAX),
          dedupeKey,
        })),
      )
      .onConflictDoNothing({ target: [evidenceItems.incidentId, evidenceItems.dedupeKey] })
      .returning({ id: evidenceItems.id, type: evidenceItems.type });
    const stored = await tx
      .select({ id: evidenceItems.id, dedupeKey: evidenceItems.dedupeKey })
      .from(evidenceItems)
      .where(
        and(
          eq(evidenceItems.tenantId, req.tenantId),
          eq(evidenceItems.incidentId, req.incidentId),
          inArray(evidenceItems.dedupeKey, keys),
        ),
      );
    const idOf = new Map(stored.map((s) => [s.dedupeKey, s.id]));
    if (inserted.length > 0) {
      const counts: Record<string, number> = {};
      for (const row of inserted) counts[row.type] = (counts[row.type] ?? 0) + 1;
      await appendEvent(tx, {
        tenantId: req.tenantId,
        type: 'investigation.evidence_added',
        incidentId: req.incidentId,
        payload: {
          incidentId: req.incidentId,
          run: req.run,
          agentRole: role,
          added: inserted.length,
          counts,
          evidenceIds: inserted.map((r) => r.id),
        },
        idempotencyKey: `${req.incidentId}:investigation:${req.run}:evidence_added:${role}`,
      });
    }
    return keys.map((k) => idOf.get(k)).filter((id): id is string => !!id);
  });
}

export const report = (agentRole: AgentRole, content: string, evidenceIds: string[], found: boolean): AgentReport => ({
  agentRole,
  content: clip(content.replace(/\.{2,}/g, '.').replace(/\.([;|])/g, '$1'), 2000),
  evidenceIds,
  found,
});
export const serviceName = (scene: Scene) => scene.service ?? 'the affected service';
export const before = (scene: Scene, at: Date) => (scene.firstAlertAt.getTime() - at.getTime()) / 60_000;
export const timing = (minutes: number) =>
  minutes >= 0
    ? `${formatDuration(minutes)} before the first alert`
    : `${formatDuration(-minutes)} after the first alert`;
