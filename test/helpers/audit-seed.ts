/** Seeding audit rows by SQL (sealed by the chain trigger at commit) and reading them back as export rows. */
import { gunzipSync } from 'node:zlib';
import type postgres from 'postgres';
import type { ExportFilters } from '../../src/db/schema/audit.js';

/**
 * Inserts `count` audit rows for a tenant in one transaction, spread over the last ~10 hours, with
 * awkward content: commas, quotes, CR/LF in text fields and in details, nulls, three actor types
 * and three actions, every fifth row on one of three incidents.
 */
export async function seedAuditRows(sql: postgres.Sql, tenantId: string, count: number): Promise<void> {
  const tag = Math.random().toString(36).slice(2, 10);
  // The chain head row is updated once per sealed row at commit: in one transaction that costs
  // O(rows²) (each update walks the row's earlier versions), so seed in transactions of 2,000.
  for (let first = 1; first <= count; first += 2000) {
    await seedChunk(sql, tenantId, tag, first, Math.min(count, first + 1999));
  }
}

async function seedChunk(sql: postgres.Sql, tenantId: string, tag: string, first: number, last: number): Promise<void> {
  await sql.begin(async (tx) => {
    await tx`
      insert into audit_log (id, tenant_id, occurred_at, actor_type, actor_id, action, target_type, target_id,
                             incident_id, request_id, workflow_id, history_event_id, details)
      select 'aud_seed_' || ${tag} || '_' || lpad(g::text, 8, '0'), ${tenantId},
             now() - make_interval(secs => (g % 36000)::double precision),
             (array['user', 'api_key', 'system'])[1 + g % 3],
             case when g % 7 = 0 then 'ops, "night"' || chr(13) || chr(10) || 'shift ' || g else 'user-' || g end,
             (array['incident.created', 'api_key.created', 'tenant.updated'])[1 + g % 3],
             'incident', 'target-' || g,
             case when g % 5 = 0 then 'inc_seed_' || (g % 3) else null end,
             'req_' || g,
             case when g % 4 = 0 then 'wf-' || g else null end,
             case when g % 4 = 0 then g else null end,
             jsonb_build_object('n', g, 'note', 'a,b "c"' || chr(10) || 'd', 'nested', jsonb_build_object('even', g % 2 = 0), 'emoji', 'é€😀')
      from generate_series(${first}::int, ${last}::int) g`;
  });
}

export interface ExportRow {
  auditId: string;
  occurredAt: string;
  actorType: string;
  actorId: string;
  action: string;
  targetType: string;
  targetId: string;
  incidentId: string | null;
  requestId: string | null;
  workflowId: string | null;
  historyEventId: number | null;
  details: Record<string, unknown>;
  seq: number;
  prevHash: string;
  hash: string;
}

/** The rows an export of this selection must hold, read independently of the exporter. */
export async function expectedRows(
  sql: postgres.Sql,
  selection: { tenantId: string; from: Date; to: Date; filters?: ExportFilters },
): Promise<ExportRow[]> {
  const f = selection.filters ?? {};
  const rows = await sql<Array<Record<string, any>>>`
    select * from audit_log
    where tenant_id = ${selection.tenantId} and occurred_at between ${selection.from.toISOString()}::timestamptz and ${selection.to.toISOString()}::timestamptz
      ${f.actorType ? sql`and actor_type = ${f.actorType}` : sql``}
      ${f.action?.endsWith('.*') ? sql`and starts_with(action, ${f.action.slice(0, -1)})` : f.action ? sql`and action = ${f.action}` : sql``}
      ${f.incidentId ? sql`and incident_id = ${f.incidentId}` : sql``}
    order by seq`;
  return rows.map((r) => ({
    auditId: r.id,
    occurredAt: new Date(r.occurred_at).toISOString(),
    actorType: r.actor_type,
    actorId: r.actor_id,
    action: r.action,
    targetType: r.target_type,
    targetId: r.target_id,
    incidentId: r.incident_id,
    requestId: r.request_id,
    workflowId: r.workflow_id,
    historyEventId: r.history_event_id,
    details: r.details,
    seq: Number(r.seq),
    prevHash: r.prev_hash,
    hash: r.hash,
  }));
}

export function parseNdjson(gz: Buffer): ExportRow[] {
  const text = gunzipSync(gz).toString('utf8');
  if (text === '') return [];
  if (!text.endsWith('\n')) throw new Error('NDJSON must end with a newline');
  return text
    .slice(0, -1)
    .split('\n')
    .map((line) => JSON.parse(line) as ExportRow);
}

/** A strict RFC 4180 parser: CRLF records, quoted fields with doubled quotes, embedded newlines. */
export function parseCsv(text: string): string[][] {
  const records: string[][] = [];
  let record: string[] = [];
  let i = 0;
  while (i < text.length) {
    let field = '';
    if (text[i] === '"') {
      i++;
      for (;;) {
        if (i >= text.length) throw new Error('unterminated quoted field');
        if (text[i] === '"') {
          if (text[i + 1] === '"') {
            field += '"';
            i += 2;
            continue;
          }
          i++;
          break;
        }
        field += text[i++];
      }
    } else {
      while (i < text.length && text[i] !== ',' && text[i] !== '\r' && text[i] !== '\n') {
        if (text[i] === '"') throw new Error(`bare quote at ${i}`);
        field += text[i++];
      }
    }
    record.push(field);
    if (text[i] === ',') {
      i++;
    } else if (text.startsWith('\r\n', i)) {
      records.push(record);
      record = [];
      i += 2;
    } else {
      throw new Error(`expected , or CRLF at ${i}`);
    }
  }
  if (record.length > 0) throw new Error('the last record lacks its CRLF');
  return records;
}

/** An export row as its CSV fields (null as empty, details as JSON). */
export function csvFields(row: ExportRow): string[] {
  return [
    row.auditId,
    row.occurredAt,
    row.actorType,
    row.actorId,
    row.action,
    row.targetType,
    row.targetId,
    row.incidentId ?? '',
    row.requestId ?? '',
    row.workflowId ?? '',
    row.historyEventId === null ? '' : String(row.historyEventId),
    JSON.stringify(row.details),
    String(row.seq),
    row.prevHash,
    row.hash,
  ];
}
