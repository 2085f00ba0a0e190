import { and, desc, eq, gte, like, lte, sql, type SQL } from 'drizzle-orm';
import { newId } from '../../ids.js';
import type { Db } from '../client.js';
import { olderThan } from '../keyset.js';
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

export type AuditRow = typeof auditLog.$inferSelect;

export interface AuditQuery {
  actorType?: ActorType | undefined;
  /** Exact action, or a prefix ending in `.*` (`incident.*`). */
  action?: string | undefined;
  incidentId?: string | undefined;
  from?: Date | undefined;
  to?: Date | undefined;
}

/** The listing's (and the export's) filter conditions, always within one tenant. */
export function auditConditions(tenantId: string, query: AuditQuery): SQL[] {
  const conditions: SQL[] = [eq(auditLog.tenantId, tenantId)];
  if (query.actorType) conditions.push(eq(auditLog.actorType, query.actorType));
  if (query.action) {
    conditions.push(
      query.action.endsWith('.*')
        ? like(auditLog.action, `${query.action.slice(0, -1).replace(/[\\%_]/g, (ch) => `\\${ch}`)}%`)
        : eq(auditLog.action, query.action),
    );
  }
  if (query.incidentId) conditions.push(eq(auditLog.incidentId, query.incidentId));
  if (query.from) conditions.push(gte(auditLog.occurredAt, query.from));
  if (query.to) conditions.push(lte(auditLog.occurredAt, query.to));
  return conditions;
}

/** A page of the tenant's audit log, newest first (keyset on occurredAt, id). */
export async function listAudit(
  db: Db,
  tenantId: string,
  query: AuditQuery & { limit: number; after?: { createdAt: Date; id: string } | undefined },
): Promise<{ rows: AuditRow[]; hasMore: boolean }> {
  const conditions = auditConditions(tenantId, query);
  if (query.after) conditions.push(olderThan(auditLog.occurredAt, auditLog.id, query.after));
  const rows = await db
    .select()
    .from(auditLog)
    .where(and(...conditions))
    .orderBy(desc(auditLog.occurredAt), desc(auditLog.id))
    .limit(query.limit + 1);
  return { rows: rows.slice(0, query.limit), hasMore: rows.length > query.limit };
}

export function toAuditEntryView(row: AuditRow) {
  return {
    auditId: row.id,
    occurredAt: row.occurredAt.toISOString(),
    actorType: row.actorType,
    actorId: row.actorId,
    action: row.action,
    targetType: row.targetType,
    targetId: row.targetId,
    incidentId: row.incidentId,
    requestId: row.requestId,
    workflowId: row.workflowId,
    historyEventId: row.historyEventId,
    details: row.details,
    // Committed rows are always sealed (the seal trigger runs before commit).
    seq: row.seq ?? 0,
    prevHash: row.prevHash ?? '',
    hash: row.hash ?? '',
  };
}

export interface ChainVerification {
  valid: boolean;
  checked: number;
  firstInvalidAuditId: string | null;
  fromSeq: number | null;
  toSeq: number | null;
  problem: string | null;
}

const GENESIS = '0'.repeat(64);

/** How long verifying a chain may take (one statement; a long chain takes a while). */
const VERIFY_STATEMENT_TIMEOUT_MS = 10 * 60 * 1000;

/**
 * Walks the tenant's hash chain over the entries that occurred in [from, to] (the whole chain
 * when both are absent), in chain order: each entry's hash must be the hash of its own content
 * (recomputed by `audit_entry_hash`, the function that sealed it), its prevHash the hash of the
 * entry before it, and the positions must follow without a gap. Without `to` the chain's head
 * must also be the last entry, so deleting the newest entries shows too. After a retention
 * purge the chain starts at the head's `purged_seq + 1`, whose prevHash must be the anchor the
 * purge recorded (`purged_hash`); any other missing entry is a gap.
 */
export async function verifyAuditChain(
  db: Db,
  tenantId: string,
  range: { from?: Date | undefined; to?: Date | undefined },
): Promise<ChainVerification> {
  const from = range.from?.toISOString() ?? null;
  const to = range.to?.toISOString() ?? null;
  // One statement over the whole chain, which may run past the api's statement bound: it sets
  // its own for its transaction.
  const rows = await db.transaction(async (tx) => {
    await tx.execute(sql`select set_config('statement_timeout', ${String(VERIFY_STATEMENT_TIMEOUT_MS)}, true)`);
    return tx.execute<{
      lo: string | null;
      hi: string | null;
      checked: string;
      bad_id: string | null;
      bad_seq: string | null;
      bad_kind: string | null;
      head_seq: string | null;
      head_hash: string | null;
      purged_seq: string;
      last_hash: string | null;
    }>(sql`
      with head as (
        select max(last_seq) as last_seq, max(last_hash) as last_hash,
               coalesce(max(purged_seq), 0) as purged_seq, max(purged_hash) as purged_hash
        from audit_chain_heads where tenant_id = ${tenantId}
      ),
      bounds as (
        select min(seq) as lo, max(seq) as hi from audit_log
        where tenant_id = ${tenantId}
          and (${from}::timestamptz is null or occurred_at >= ${from}::timestamptz)
          and (${to}::timestamptz is null or occurred_at <= ${to}::timestamptz)
      ),
      walk as (
        select a.id, a.seq, a.hash,
               a.hash is distinct from audit_entry_hash(a) as content_changed,
               a.prev_hash is distinct from (
                 case when a.seq = 1 then ${GENESIS} when a.seq = p.purged_seq + 1 then p.purged_hash else lag(a.hash) over w end
               ) as link_broken,
               a.seq > p.purged_seq + 1 and (lag(a.seq) over w) is distinct from a.seq - 1 as gap
        from audit_log a, bounds b, head p
        where a.tenant_id = ${tenantId} and a.seq between b.lo - 1 and b.hi
        window w as (order by a.seq)
      ),
      checked as (
        select w.* from walk w, bounds b where w.seq >= b.lo
      ),
      first_bad as (
        select id, seq, case when content_changed then 'content' when gap then 'gap' else 'link' end as kind
        from checked where content_changed or link_broken or gap
        order by seq limit 1
      )
      select b.lo::text as lo, b.hi::text as hi,
             (select count(*) from checked)::text as checked,
             f.id as bad_id, f.seq::text as bad_seq, f.kind as bad_kind,
             p.last_seq::text as head_seq, p.last_hash as head_hash, p.purged_seq::text as purged_seq,
             (select hash from checked order by seq desc limit 1) as last_hash
      from bounds b
      cross join head p
      left join first_bad f on true`);
  });
  const r = rows[0];
  if (!r || r.lo === null || r.hi === null) {
    // Nothing in the range; without a range an empty chain must also have no head beyond what
    // retention purged.
    const headBeyond =
      from === null &&
      to === null &&
      r?.head_seq !== null &&
      r?.head_seq !== undefined &&
      Number(r.head_seq) > Number(r.purged_seq);
    return {
      valid: !headBeyond,
      checked: 0,
      firstInvalidAuditId: null,
      fromSeq: null,
      toSeq: null,
      problem: headBeyond ? 'the chain head records entries that are missing' : null,
    };
  }
  const base = { checked: Number(r.checked), fromSeq: Number(r.lo), toSeq: Number(r.hi) };
  if (r.bad_id !== null) {
    const problem =
      r.bad_kind === 'content'
        ? `entry ${r.bad_seq} does not match its hash (changed after it was written)`
        : r.bad_kind === 'gap'
          ? `entries before ${r.bad_seq} are missing`
          : `entry ${r.bad_seq} does not link to the entry before it`;
    return { ...base, valid: false, firstInvalidAuditId: r.bad_id, problem };
  }
  if (to === null && (Number(r.head_seq) !== Number(r.hi) || r.head_hash !== r.last_hash)) {
    return {
      ...base,
      valid: false,
      firstInvalidAuditId: null,
      problem: `the chain head is at entry ${r.head_seq} but the last entry is ${r.hi}: newer entries are missing or changed`,
    };
  }
  return { ...base, valid: true, firstInvalidAuditId: null, problem: null };
}
