/**
 * Audit export activities. The writer streams the selected audit rows from PostgreSQL into
 * `<exportDir>/<tenantId>/<exportId>.<format>.gz.part` as a sequence of gzip members (one per
 * batch; concatenated members are one valid gzip file), fsyncs each member and heartbeats
 * `{ offset, rows, lastSeq, maxSeq }`; a retry truncates the file to `offset` and continues
 * after `lastSeq`. Memory stays flat: at most one batch is fetched while one is compressed.
 */
import { constants as fsConstants } from 'node:fs';
import { mkdir, open, rename, stat, unlink, type FileHandle } from 'node:fs/promises';
import path from 'node:path';
import { promisify } from 'node:util';
import { gzip as gzipCallback } from 'node:zlib';
import { Context } from '@temporalio/activity';
import { ApplicationFailure, CancelledFailure } from '@temporalio/common';
import { and, eq, ne, sql as dsql } from 'drizzle-orm';
import type { Logger } from 'pino';
import type postgres from 'postgres';
import type { S3Config } from '../config.js';
import type { Db } from '../db/client.js';
import {
  csvHeader,
  fetchExportBatch,
  findExport,
  selectionBounds,
  selectionOf,
  type ExportBatch,
} from '../db/repositories/audit-exports.js';
import { appendAudit } from '../db/repositories/audit.js';
import { appendEvent } from '../outbox/append.js';
import { auditExports, type AuditExportRow } from '../db/schema/audit.js';
import {
  createObjectStore,
  objectLocation,
  ObjectStoreError,
  parseObjectLocation,
  type ObjectStore,
} from '../audit-exports/object-store.js';
import { DOWNLOAD_URL_TTL_MS } from '../audit-exports/signed-url.js';
import type {
  AuditExportInput,
  AuditExportPlan,
  ExportFailure,
  ExportProgress,
  WrittenExport,
} from '../audit-exports/types.js';
import { whileBeating } from './heartbeat.js';

const gzip = promisify(gzipCallback);

export interface ExportActivityDeps {
  db: Db;
  /** The postgres.js pool behind `db` unless given. */
  sql?: postgres.Sql;
  logger?: Logger;
  /** Where files are written; the api serves downloads from the same directory. */
  exportDir: string;
  /** Object storage for exports with a destination. */
  s3?: S3Config;
  /** Heartbeat timeout of the writer (default 30 s): how soon a dead worker's export moves on. */
  heartbeatTimeoutMs?: number;
  /**
   * How long a local file is kept after the export completes (default: as long as its download
   * URL is valid, 2 hours). Then the workflow deletes it: no URL can reach it any more.
   */
  fileRetentionMs?: number;
  /** Rows per gzip member, i.e. per fetch, fsync and heartbeat (default 25,000). */
  batchRows?: number;
  /** gzip level (default 6). */
  gzipLevel?: number;
  /** Called after every member is durable (progress logs, benchmarks, tests). */
  onProgress?: (exportId: string, progress: ExportProgress) => void | Promise<void>;
}

export const DEFAULT_EXPORT_HEARTBEAT_TIMEOUT_MS = 30_000;
const DEFAULT_BATCH_ROWS = 5_000;
/** One batch query may take this long before it is cancelled (the activity then retries). */
const STATEMENT_TIMEOUT_MS = 120_000;

/** The finished file's path relative to the export directory. */
export function exportFileName(row: Pick<AuditExportRow, 'id' | 'tenantId' | 'format'>): string {
  return path.join(row.tenantId, `${row.id}.${row.format}.gz`);
}

/** The object key of an export with a destination: `<prefix>/<exportId>.<format>.gz`. */
export function exportObjectKey(prefix: string, row: Pick<AuditExportRow, 'id' | 'format'>): string {
  const trimmed = prefix.replace(/^\/+|\/+$/g, '');
  return `${trimmed ? `${trimmed}/` : ''}${row.id}.${row.format}.gz`;
}

function isProgress(value: unknown): value is ExportProgress {
  const p = value as ExportProgress | undefined;
  return (
    typeof p === 'object' &&
    p !== null &&
    [p.offset, p.rows, p.lastSeq, p.maxSeq].every((n) => typeof n === 'number' && Number.isSafeInteger(n) && n >= 0)
  );
}

async function sizeOf(file: string): Promise<number | undefined> {
  try {
    return (await stat(file)).size;
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw err;
  }
}

/** Makes a rename durable: fsync of the directory that holds it. */
async function syncDirectory(dir: string): Promise<void> {
  const handle = await open(dir, fsConstants.O_RDONLY);
  try {
    await handle.sync();
  } finally {
    await handle.close();
  }
}

/** The dependencies with their defaults resolved: what every export activity is given. */
type ResolvedExportDeps = Omit<ExportActivityDeps, 'sql' | 'batchRows' | 'gzipLevel'> & {
  sql: postgres.Sql;
  store: ObjectStore | undefined;
  batchRows: number;
  gzipLevel: number;
};

async function loadJob(deps: ResolvedExportDeps, input: AuditExportInput): Promise<AuditExportRow> {
  const row = await findExport(deps.db, input.tenantId, input.exportId);
  if (!row)
    throw ApplicationFailure.nonRetryable(
      `no audit export ${input.exportId} for tenant ${input.tenantId}`,
      'ExportNotFound',
    );
  return row;
}

/** One batch in a read-only transaction with a statement timeout. */
function fetchBatch(
  deps: ResolvedExportDeps,
  row: AuditExportRow,
  afterSeq: number,
  maxSeq: number,
): Promise<ExportBatch> {
  return deps.sql.begin('read only', async (tx) => {
    await tx.unsafe(`set local statement_timeout = ${STATEMENT_TIMEOUT_MS}`);
    return fetchExportBatch(tx as unknown as postgres.Sql, selectionOf(row), row.format, {
      afterSeq,
      maxSeq,
      limit: deps.batchRows,
    });
  }) as Promise<ExportBatch>;
}

async function writeMembers(
  deps: ResolvedExportDeps,
  row: AuditExportRow,
  handle: FileHandle,
  start: ExportProgress,
): Promise<ExportProgress> {
  const ctx = Context.current();
  let progress = start;
  const header = row.format === 'csv' ? Buffer.from(csvHeader, 'utf8') : Buffer.alloc(0);
  let next: Promise<ExportBatch> | null =
    progress.lastSeq < progress.maxSeq ? fetchBatch(deps, row, progress.lastSeq, progress.maxSeq) : null;
  while (next) {
    const batch: ExportBatch = await next;
    if (batch.rows === 0) break;
    // Fetch the next batch while this one is compressed and written.
    next =
      batch.rows === deps.batchRows && batch.lastSeq < progress.maxSeq
        ? fetchBatch(deps, row, batch.lastSeq, progress.maxSeq)
        : null;
    next?.catch(() => undefined); // awaited (and thrown) at the top of the loop
    const plain = progress.offset === 0 ? Buffer.concat([header, batch.body]) : batch.body;
    const member = await gzip(plain, { level: deps.gzipLevel });
    await handle.write(member, 0, member.length, progress.offset);
    await handle.datasync();
    progress = {
      offset: progress.offset + member.length,
      rows: progress.rows + batch.rows,
      lastSeq: batch.lastSeq,
      maxSeq: progress.maxSeq,
    };
    ctx.heartbeat(progress);
    await deps.onProgress?.(row.id, progress);
    if (ctx.cancellationSignal.aborted) throw new CancelledFailure('the audit export was cancelled');
  }
  if (progress.offset === 0) {
    // No rows: still a valid gzip file (the CSV header alone, or empty).
    const member = await gzip(header, { level: deps.gzipLevel });
    await handle.write(member, 0, member.length, 0);
    await handle.datasync();
    progress = { ...progress, offset: member.length };
  }
  return progress;
}

/** Marks a queued export running and tells the workflow how to run it. */
async function beginAuditExport(deps: ResolvedExportDeps, input: AuditExportInput): Promise<AuditExportPlan> {
  const row = await loadJob(deps, input);
  if (row.status === 'queued') {
    await deps.db
      .update(auditExports)
      .set({ status: 'running', startedAt: dsql`now()` })
      .where(and(eq(auditExports.id, row.id), eq(auditExports.status, 'queued')));
  }
  return {
    status: row.status,
    format: row.format,
    upload: row.destination !== null,
    heartbeatTimeoutMs: deps.heartbeatTimeoutMs ?? DEFAULT_EXPORT_HEARTBEAT_TIMEOUT_MS,
  };
}

/** Writes (or resumes writing) the export file; records its row count, size and location. */
async function writeAuditExportFile(deps: ResolvedExportDeps, input: AuditExportInput): Promise<WrittenExport> {
  const ctx = Context.current();
  const row = await loadJob(deps, input);
  const location = exportFileName(row);
  const finalPath = path.join(deps.exportDir, location);
  const partPath = `${finalPath}.part`;

  // A retry after the file was finished: the row already holds the result.
  if (row.rowCount !== null && row.bytes !== null && row.location === location) {
    if ((await sizeOf(finalPath)) === row.bytes) return { rowCount: row.rowCount, bytes: row.bytes, location };
    if ((await sizeOf(partPath)) === row.bytes) {
      await rename(partPath, finalPath);
      await syncDirectory(path.dirname(finalPath));
      return { rowCount: row.rowCount, bytes: row.bytes, location };
    }
  }

  await mkdir(path.dirname(finalPath), { recursive: true });
  const details: unknown = ctx.info.heartbeatDetails;
  let progress = isProgress(details) ? details : undefined;
  const existing = await sizeOf(partPath);
  // Resume only from members this machine's file really holds (a shared directory is expected).
  if (progress && (existing === undefined || existing < progress.offset)) progress = undefined;
  const handle = await open(partPath, existing === undefined ? 'w' : 'r+');
  try {
    if (!progress) {
      const bounds = await selectionBounds(deps.sql, selectionOf(row));
      progress = { offset: 0, rows: 0, lastSeq: bounds.count > 0 ? bounds.minSeq - 1 : 0, maxSeq: bounds.maxSeq };
    } else {
      deps.logger?.info({ exportId: row.id, ...progress, attempt: ctx.info.attempt }, 'resuming the audit export');
    }
    // Drop whatever a dead attempt wrote after its last durable member.
    await handle.truncate(progress.offset);
    ctx.heartbeat(progress);
    progress = await writeMembers(deps, row, handle, progress);
    await handle.sync();
  } finally {
    await handle.close();
  }
  await deps.db
    .update(auditExports)
    .set({ rowCount: progress.rows, bytes: progress.offset, location })
    .where(eq(auditExports.id, row.id));
  await rename(partPath, finalPath);
  await syncDirectory(path.dirname(finalPath));
  return { rowCount: progress.rows, bytes: progress.offset, location };
}

/** Uploads the finished file to the export's destination, then removes the local copy. */
async function uploadAuditExport(deps: ResolvedExportDeps, input: AuditExportInput): Promise<{ location: string }> {
  const row = await loadJob(deps, input);
  const { destination } = row;
  if (!destination) return { location: row.location ?? '' };
  const key = exportObjectKey(destination.prefix, row);
  const remote = objectLocation(destination.bucket, key);
  if (row.location === remote) return { location: remote };
  const { store } = deps;
  if (!store)
    throw ApplicationFailure.nonRetryable(
      'object storage (S3_*) is not configured on this worker',
      'ObjectStoreNotConfigured',
    );
  if (!row.location) throw ApplicationFailure.nonRetryable('the export file was not written', 'ExportFileMissing');
  const localPath = path.join(deps.exportDir, row.location);
  const bytes = (await sizeOf(localPath)) ?? 0;
  try {
    // A minute, plus a second per MiB (a slow store still finishes; a stuck one is cut off).
    await whileBeating(() =>
      store.putFile(destination.bucket, key, localPath, {
        contentType: 'application/gzip',
        timeoutMs: 60_000 + Math.ceil(bytes / 1024 / 1024) * 1000,
      }),
    );
  } catch (err) {
    if (err instanceof ObjectStoreError && !err.retryable)
      throw ApplicationFailure.nonRetryable(err.message, 'ObjectStoreRefused');
    throw err;
  }
  await deps.db.update(auditExports).set({ location: remote }).where(eq(auditExports.id, row.id));
  await unlink(localPath).catch(() => undefined);
  return { location: remote };
}

/**
 * Completes the export once: status, audit entry and `system.export_completed` in one
 * transaction. Answers how long the local file is kept (the workflow then deletes it).
 */
async function completeAuditExport(
  deps: ResolvedExportDeps,
  input: AuditExportInput,
): Promise<{ fileRetentionMs: number }> {
  await deps.db.transaction(async (tx) => {
    const [row] = await tx
      .update(auditExports)
      .set({ status: 'completed', completedAt: dsql`now()`, failure: null })
      .where(
        and(
          eq(auditExports.id, input.exportId),
          eq(auditExports.tenantId, input.tenantId),
          ne(auditExports.status, 'completed'),
        ),
      )
      .returning();
    if (!row) return; // completed before (a retried activity)
    const summary = {
      exportId: row.id,
      format: row.format,
      rowCount: row.rowCount,
      bytes: row.bytes,
      location: row.location,
      completedAt: row.completedAt?.toISOString(),
    };
    await appendAudit(tx, {
      tenantId: row.tenantId,
      actorType: 'system',
      actorId: 'workflow',
      action: 'audit.export_completed',
      targetType: 'audit_export',
      targetId: row.id,
      workflowId: row.id,
      details: { format: row.format, rowCount: row.rowCount, bytes: row.bytes, location: row.location },
      idempotencyKey: `audit-export:${row.id}:completed`,
    });
    await appendEvent(tx, {
      tenantId: row.tenantId,
      type: 'system.export_completed',
      payload: summary,
      idempotencyKey: `audit-export:${row.id}:system.export_completed`,
    });
  });
  return { fileRetentionMs: deps.fileRetentionMs ?? DOWNLOAD_URL_TTL_MS };
}

/**
 * Deletes a completed export's local file once its download URL has expired, and audits it
 * once. An uploaded export has no local file (the upload removed it); a file already gone
 * (a retried activity, an operator) is not an error.
 */
async function purgeAuditExportFile(deps: ResolvedExportDeps, input: AuditExportInput): Promise<void> {
  const row = await loadJob(deps, input);
  if (row.status !== 'completed' || !row.location || parseObjectLocation(row.location)) return;
  await unlink(path.join(deps.exportDir, row.location)).catch((err: NodeJS.ErrnoException) => {
    if (err.code !== 'ENOENT') throw err;
  });
  await appendAudit(deps.db, {
    tenantId: row.tenantId,
    actorType: 'system',
    actorId: 'workflow',
    action: 'audit.export_file_deleted',
    targetType: 'audit_export',
    targetId: row.id,
    workflowId: row.id,
    details: { location: row.location, reason: 'download_url_expired' },
    idempotencyKey: `audit-export:${row.id}:file_deleted`,
  });
}

/** Marks the export failed (once) with the reason, and audits it. */
async function failAuditExport(deps: ResolvedExportDeps, input: ExportFailure): Promise<void> {
  const failure = input.failure.slice(0, 2000);
  await deps.db.transaction(async (tx) => {
    const [row] = await tx
      .update(auditExports)
      .set({ status: 'failed', failure })
      .where(
        and(
          eq(auditExports.id, input.exportId),
          eq(auditExports.tenantId, input.tenantId),
          ne(auditExports.status, 'failed'),
          ne(auditExports.status, 'completed'),
        ),
      )
      .returning({ id: auditExports.id, tenantId: auditExports.tenantId });
    if (!row) return;
    await appendAudit(tx, {
      tenantId: row.tenantId,
      actorType: 'system',
      actorId: 'workflow',
      action: 'audit.export_failed',
      targetType: 'audit_export',
      targetId: row.id,
      workflowId: row.id,
      details: { failure },
      idempotencyKey: `audit-export:${row.id}:failed`,
    });
  });
}

export function createExportActivities(deps: ExportActivityDeps) {
  const resolved: ResolvedExportDeps = {
    ...deps,
    sql: deps.sql ?? (deps.db as unknown as { $client: postgres.Sql }).$client,
    store: deps.s3 ? createObjectStore(deps.s3) : undefined,
    batchRows: deps.batchRows ?? DEFAULT_BATCH_ROWS,
    gzipLevel: deps.gzipLevel ?? 6,
  };
  // The keys are the activity names recorded in workflow histories.
  return {
    beginAuditExport: (input: AuditExportInput) => beginAuditExport(resolved, input),
    writeAuditExportFile: (input: AuditExportInput) => writeAuditExportFile(resolved, input),
    uploadAuditExport: (input: AuditExportInput) => uploadAuditExport(resolved, input),
    completeAuditExport: (input: AuditExportInput) => completeAuditExport(resolved, input),
    purgeAuditExportFile: (input: AuditExportInput) => purgeAuditExportFile(resolved, input),
    failAuditExport: (input: ExportFailure) => failAuditExport(resolved, input),
  };
}

export type ExportActivities = ReturnType<typeof createExportActivities>;
