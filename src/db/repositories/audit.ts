import { newId } from '../../ids.js';
import type { Db } from '../client.js';
import { auditLog, type ActorType } from '../schema/audit.js';

export interface AuditEntry {
  tenantId: string;
  actorType: ActorType;
  actorId: string;
  action: string;
  targetType: string;
  targetId: string;
  incidentId?: string | null;
  requestId?: string | null;
  workflowId?: string | null;
  /** For workflow-driven entries: the workflow task (history event id) that decided it. */
  historyEventId?: number | null;
  details?: Record<string, unknown>;
  idempotencyKey?: string;
}

/** Records a mutation in the audit log within the caller's transaction. */
export async function appendAudit(tx: Pick<Db, 'insert'>, entry: AuditEntry): Promise<void> {
  await tx
    .insert(auditLog)
    .values({
      id: newId('aud'),
      tenantId: entry.tenantId,
      actorType: entry.actorType,
      actorId: entry.actorId,
      action: entry.action,
      targetType: entry.targetType,
      targetId: entry.targetId,
      incidentId: entry.incidentId ?? null,
      requestId: entry.requestId ?? null,
      workflowId: entry.workflowId ?? null,
      historyEventId: entry.historyEventId ?? null,
      details: entry.details ?? {},
      idempotencyKey: entry.idempotencyKey ?? null,
    })
    .onConflictDoNothing({ target: auditLog.idempotencyKey });
}
