import type postgres from 'postgres';
import { auditRetentionDays } from '../../domain/plans.js';

export interface AuditPurgeOptions {
  /** Entries per transaction: the tenant's chain head stays locked only that long. */
  chunkSize?: number;
  /** Checked between transactions, so a stopping process does not finish a long backlog first. */
  shouldStop?: () => boolean;
}

/**
 * Purges each tenant's audit entries older than its plan's retention, from the start of its
 * chain. Per transaction: lock the tenant's chain head (as sealing does), take the
 * next `chunkSize` entries after the head's `purged_seq` in chain order, keep the prefix that is
 * expired and follows without a gap, record its last entry as the purge anchor (`purged_seq`,
 * `purged_hash`, which the first remaining entry links to), then delete it; the append-only
 * trigger allows deleting only entries the head records as purged. The chain stays a contiguous,
 * verifiable suffix: an entry that occurred later than one after it in the chain (`seq` order is
 * commit order) is kept until those before it expire, and a gap (an entry deleted some other
 * way) stops the purge there, so it stays visible to verification. Returns the entries deleted.
 */
export async function purgeExpiredAudit(sql: postgres.Sql, options: AuditPurgeOptions = {}): Promise<number> {
  const chunk = options.chunkSize ?? 1_000;
  const stop = options.shouldStop ?? (() => false);
  const plans = Object.entries(auditRetentionDays);
  // Tenants whose oldest remaining entry has expired: one probe of the (tenant_id, seq) index each.
  const due = await sql<{ tenant_id: string; days: number }[]>`
    select h.tenant_id, r.days
    from audit_chain_heads h
    join tenants t on t.id = h.tenant_id
    join unnest(${plans.map(([plan]) => plan)}::text[], ${plans.map(([, days]) => days)}::int[]) as r(plan, days) on r.plan = t.plan
    where exists (
      select 1 from audit_log a
      where a.tenant_id = h.tenant_id and a.seq = h.purged_seq + 1 and a.occurred_at < now() - make_interval(days => r.days))
    order by h.tenant_id`;
  let deleted = 0;
  for (const { tenant_id: tenantId, days } of due) {
    while (!stop()) {
      const count = await sql.begin(async (tx) => {
        const [head] = await tx<{ purged_seq: string }[]>`
          select purged_seq::text from audit_chain_heads where tenant_id = ${tenantId} for update`;
        const purged = head!.purged_seq;
        const [last] = await tx<{ seq: string; hash: string }[]>`
          with c as (
            select seq, hash,
                   occurred_at < now() - make_interval(days => ${days}) and seq = ${purged}::bigint + row_number() over (order by seq) as doomed
            from audit_log
            where tenant_id = ${tenantId} and seq > ${purged}::bigint
            order by seq
            limit ${chunk}
          )
          select seq::text, hash from c
          where doomed and seq < coalesce((select min(seq) from c where not doomed), 'infinity'::numeric)
          order by seq desc
          limit 1`;
        if (!last) return 0;
        await tx`update audit_chain_heads set purged_seq = ${last.seq}::bigint, purged_hash = ${last.hash} where tenant_id = ${tenantId}`;
        const result =
          await tx`delete from audit_log where tenant_id = ${tenantId} and seq > ${purged}::bigint and seq <= ${last.seq}::bigint`;
        return result.count;
      });
      deleted += count;
      if (count < chunk) break;
    }
  }
  return deleted;
}
