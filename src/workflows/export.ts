/**
 * One workflow per audit export (workflow id = exportId): queued → running → completed or
 * failed; a completed local file is deleted when its download URL expires. Deterministic code
 * only; the activities write the file, upload it, record the outcome and delete the file, each
 * idempotent.
 */
import { ActivityFailure, ApplicationFailure, proxyActivities, sleep } from '@temporalio/workflow';
import type { ExportActivities } from '../activities/exports.js';
import type { AuditExportInput } from '../audit-exports/types.js';

// Bookkeeping: quick database writes that must land eventually.
const bookkeeping = proxyActivities<ExportActivities>({
  startToCloseTimeout: '30 seconds',
  retry: { initialInterval: '1 second', backoffCoefficient: 2, maximumInterval: '1 minute' },
});

function reason(err: unknown): string {
  let e: unknown = err;
  while (e instanceof ActivityFailure && e.cause) e = e.cause;
  return e instanceof ApplicationFailure || e instanceof Error ? e.message : String(err);
}

export async function auditExportWorkflow(input: AuditExportInput): Promise<void> {
  const plan = await bookkeeping.beginAuditExport(input);
  if (plan.status === 'completed' || plan.status === 'failed') return; // a finished job is not run again

  // The writer heartbeats after every member; a dead worker is noticed after the heartbeat
  // timeout and a retry resumes from the last heartbeat. Resumable, so retries are generous.
  const transfer = proxyActivities<ExportActivities>({
    startToCloseTimeout: '6 hours',
    heartbeatTimeout: plan.heartbeatTimeoutMs,
    retry: { initialInterval: '1 second', backoffCoefficient: 2, maximumInterval: '1 minute', maximumAttempts: 10 },
  });
  try {
    await transfer.writeAuditExportFile(input);
    if (plan.upload) await transfer.uploadAuditExport(input);
  } catch (err) {
    await bookkeeping.failAuditExport({ ...input, failure: reason(err) });
    return;
  }
  const completed = await bookkeeping.completeAuditExport(input);

  // The local file is deleted once its download URL has expired (a durable timer: a worker
  // that is down then deletes it when it is back). Uploaded files have no local copy.
  if (!plan.upload) {
    await sleep(completed.fileRetentionMs);
    await bookkeeping.purgeAuditExportFile(input);
  }
}
