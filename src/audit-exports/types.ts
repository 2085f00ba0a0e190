/**
 * The audit export's workflow contract, shared by the api (through the workflow port), the
 * workflow and its activities. Types and constants only.
 */
import type { ExportFormat } from '../db/schema/audit.js';

/** The export workflow's type name (workflow id = exportId). */
export const auditExportWorkflowType = 'auditExportWorkflow';

export interface AuditExportInput {
  exportId: string;
  tenantId: string;
}

/** What the workflow learns when the export starts (recorded in its history). */
export interface AuditExportPlan {
  /** The job's status before this run: a finished job is not run again. */
  status: 'queued' | 'running' | 'completed' | 'failed';
  format: ExportFormat;
  /** True when the file goes to object storage after it is written. */
  upload: boolean;
  /** The heartbeat timeout of the writing activity: a worker that dies is noticed after it. */
  heartbeatTimeoutMs: number;
}

/** The progress a writing attempt heartbeats, and a retry resumes from. */
export interface ExportProgress {
  /** Bytes of complete gzip members in the `.part` file (fsynced). */
  offset: number;
  /** Rows in those members. */
  rows: number;
  /** The seq of the last row written; the next batch starts after it. */
  lastSeq: number;
  /** The last seq in the selection when the export began: its snapshot. */
  maxSeq: number;
}

export interface WrittenExport {
  rowCount: number;
  bytes: number;
  /** The finished file, relative to the export directory. */
  location: string;
}

export interface ExportFailure {
  exportId: string;
  tenantId: string;
  failure: string;
}
