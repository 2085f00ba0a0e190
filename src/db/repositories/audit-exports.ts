/**
 * Audit exports: the job rows, and the selection of audit entries an export writes, read in
 * keyset batches on (tenant_id, seq) with PostgreSQL rendering each row as a finished line.
 */
import { and, eq } from 'drizzle-orm';
import { PgDialect } from 'drizzle-orm/pg-core';
import type postgres from 'postgres';
import type { Db } from '../client.js';
import { auditConditions } from './audit.js';
import { auditExports, type AuditExportRow, type ExportFilters, type ExportFormat } from '../schema/audit.js';

/** The exported columns, in file order (the CSV header; the NDJSON keys). */
export const exportColumns = [
  'auditId',
  'occurredAt',
  'actorType',
  'actorId',
  'action',
  'targetType',
  'targetId',
  'incidentId',
  'requestId',
  'workflowId',
  'historyEventId',
  'details',
  'seq',
  'prevHash',
  'hash',
] as const;

export const csvHeader = `${exportColumns.join(',')}\r\n`;

/** Which audit entries an export holds: one tenant, `occurred_at` in [from, to], and the filters. */
export interface AuditSelection {
  tenantId: string;
  from: Date;
  to: Date;
  filters: ExportFilters;
}

const isoMs = `to_char(occurred_at at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"')`;

/**
 * The exported columns under their export names, for NDJSON: `row_to_json` renders a row in
 * column order, compactly, and JSON escaping leaves no raw CR or LF in a line.
 */
const ndjsonColumns = [
  'id as "auditId"',
  `${isoMs} as "occurredAt"`,
  'actor_type as "actorType"',
  'actor_id as "actorId"',
  'action as "action"',
  'target_type as "targetType"',
  'target_id as "targetId"',
  'incident_id as "incidentId"',
  'request_id as "requestId"',
  'workflow_id as "workflowId"',
  'history_event_id as "historyEventId"',
  'details as "details"',
  'seq as "seq"',
  'prev_hash as "prevHash"',
  'hash as "hash"',
].join(', ');

/** RFC 4180: a field holding `"`, `,`, CR or LF is quoted, its quotes doubled; null is empty. */
const csvField = (column: string) =>
  `coalesce(case when ${column} ~ '[",\r\n]' then '"' || replace(${column}, '"', '""') || '"' else ${column} end, '')`;

const csvLine = [
  'id',
  isoMs,
  'actor_type',
  csvField('actor_id'),
  csvField('action'),
  csvField('target_type'),
  csvField('target_id'),
  csvField('incident_id'),
  csvField('request_id'),
  csvField('workflow_id'),
  `coalesce(history_event_id::text, '')`,
  // An object's text always holds quotes: always quoted.
  `'"' || replace(details::text, '"', '""') || '"'`,
  'seq::text',
  'prev_hash',
  `hash || chr(13) || chr(10)`,
].join(` || ',' || `);

const dialect = new PgDialect();

/**
 * The WHERE clause of a selection with its parameters from $1: the audit listing's conditions
 * (`auditConditions`, so the filters mean the same in both), rendered for postgres.js.
 */
function selectionWhere(selection: AuditSelection): { where: string; params: Array<string | number> } {
  const conditions = auditConditions(selection.tenantId, {
    ...selection.filters,
    from: selection.from,
    to: selection.to,
  });
  const { sql: where, params } = dialect.sqlToQuery(and(...conditions)!);
  return { where: `${where} and seq is not null`, params: params as Array<string | number> };
}

export interface SelectionBounds {
  count: number;
  /** Seqs of the first and last selected rows (0 when none). */
  minSeq: number;
  maxSeq: number;
}

/** Counts the selection and finds its seq range (read through the tenant/time index). */
export async function selectionBounds(sql: postgres.Sql, selection: AuditSelection): Promise<SelectionBounds> {
  const { where, params } = selectionWhere(selection);
  const [row] = await sql.unsafe<Array<{ count: string; min_seq: string | null; max_seq: string | null }>>(
    `select count(*)::text as count, min(seq)::text as min_seq, max(seq)::text as max_seq from audit_log where ${where}`,
    params,
  );
  return { count: Number(row?.count ?? 0), minSeq: Number(row?.min_seq ?? 0), maxSeq: Number(row?.max_seq ?? 0) };
}

export interface ExportBatch {
  rows: number;
  /** The seq of the batch's last row (the next batch starts after it). */
  lastSeq: number;
  /** The batch's rows as finished lines, UTF-8. */
  body: Buffer;
}

/**
 * The next rows of a selection after `afterSeq` (at most `limit`, none past `maxSeq`), in seq
 * order, rendered by PostgreSQL as NDJSON or CSV lines and returned as one buffer.
 */
export async function fetchExportBatch(
  sql: postgres.Sql,
  selection: AuditSelection,
  format: ExportFormat,
  range: { afterSeq: number; maxSeq: number; limit: number },
): Promise<ExportBatch> {
  const { where, params } = selectionWhere(selection);
  params.push(range.afterSeq, range.maxSeq, range.limit);
  const n = params.length;
  const bounds = `where ${where} and seq > $${n - 2} and seq <= $${n - 1} order by seq limit $${n}`;
  const batch =
    format === 'csv'
      ? `select seq, ${csvLine} as line from audit_log ${bounds}`
      : `select r.seq, row_to_json(r)::text || chr(10) as line from (select ${ndjsonColumns} from audit_log ${bounds}) r`;
  const rows = await sql
    .unsafe(
      `select count(*)::text, coalesce(max(seq), 0)::text, coalesce(string_agg(line, '' order by seq), '') from (${batch}) batch`,
      params,
    )
    .raw();
  const [count, lastSeq, body] = rows[0] as unknown as [Buffer, Buffer, Buffer];
  return { rows: Number(count.toString()), lastSeq: Number(lastSeq.toString()), body };
}

export async function findExport(db: Db, tenantId: string, exportId: string): Promise<AuditExportRow | undefined> {
  const [row] = await db
    .select()
    .from(auditExports)
    .where(and(eq(auditExports.id, exportId), eq(auditExports.tenantId, tenantId)));
  return row;
}

export async function findExportById(db: Db, exportId: string): Promise<AuditExportRow | undefined> {
  const [row] = await db.select().from(auditExports).where(eq(auditExports.id, exportId));
  return row;
}

export function selectionOf(
  row: Pick<AuditExportRow, 'tenantId' | 'rangeFrom' | 'rangeTo' | 'filters'>,
): AuditSelection {
  return { tenantId: row.tenantId, from: row.rangeFrom, to: row.rangeTo, filters: row.filters };
}
