/**
 * A completed export's local file is deleted once its download URL has expired: the workflow
 * keeps a durable timer for the URL's lifetime, then deletes the file and audits it once. The
 * worker here keeps files 1.5 s instead of the 2 hours of a real download URL.
 */
import { existsSync } from 'node:fs';
import path from 'node:path';
import { Worker } from '@temporalio/worker';
import { and, eq } from 'drizzle-orm';
import { describe, expect, inject, it } from 'vitest';
import { auditLog } from '../../src/db/schema/audit.js';
import { seedAuditRows } from '../helpers/audit-seed.js';
import { eventually } from '../helpers/webhooks.js';
import { startTestWorker, useWorkerlessService } from '../helpers/workers.js';

const RETENTION_MS = 1_500;
const env = useWorkerlessService();

describe('audit export files', () => {
  it('are deleted when their download URL expires, once, with an audit entry; the export stays completed', async () => {
    const { svc, connection } = env;
    const worker = await startTestWorker(svc, connection, {}, { exports: { fileRetentionMs: RETENTION_MS } });
    try {
      const tenant = await svc.newTenant({ plan: 'plan_business' });
      await seedAuditRows(svc.database.sql, tenant.tenantId, 120);
      const to = new Date(Date.now() + 60_000);
      const from = new Date(to.getTime() - 24 * 3_600_000);
      const created = await svc.api('POST', '/v1/audit/export', {
        token: tenant.admin,
        body: { format: 'ndjson', from: from.toISOString(), to: to.toISOString() },
      });
      expect(created.status).toBe(202);
      const exportId = created.body.exportId as string;
      const job = await eventually(async () => {
        const res = await svc.api('GET', `/v1/audit/export/${exportId}`, { token: tenant.admin });
        return res.body.status === 'completed' ? res.body : undefined;
      }, 30_000);
      const file = path.join(svc.exportDir, tenant.tenantId, `${exportId}.ndjson.gz`);
      const url = (job.downloadUrl as string).replace('http://api.test', svc.baseUrl);

      // The workflow ends only after the deletion: its result is the signal that it happened.
      await svc.client.workflow.getHandle(exportId).result();
      expect(existsSync(file)).toBe(false);
      // The URL itself is still valid (2 hours): the api answers that the file is gone.
      const gone = await fetch(url);
      expect(gone.status).toBe(404);
      expect(await gone.json()).toMatchObject({
        error: 'not_found',
        message: 'The export file is no longer available',
      });
      const again = await svc.api('GET', `/v1/audit/export/${exportId}`, { token: tenant.admin });
      expect(again.body).toMatchObject({ exportId, status: 'completed', rowCount: job.rowCount });

      const deleted = await svc.database.db
        .select()
        .from(auditLog)
        .where(and(eq(auditLog.tenantId, tenant.tenantId), eq(auditLog.action, 'audit.export_file_deleted')));
      expect(deleted).toHaveLength(1);
      expect(deleted[0]).toMatchObject({
        actorType: 'system',
        actorId: 'workflow',
        targetType: 'audit_export',
        targetId: exportId,
        workflowId: exportId,
        details: { location: path.join(tenant.tenantId, `${exportId}.ndjson.gz`), reason: 'download_url_expired' },
      });

      // A retried deletion (the file already gone) is not an error and audits nothing again.
      await worker.activities.purgeAuditExportFile({ exportId, tenantId: tenant.tenantId });
      expect(
        await svc.database.db
          .select()
          .from(auditLog)
          .where(and(eq(auditLog.tenantId, tenant.tenantId), eq(auditLog.action, 'audit.export_file_deleted'))),
      ).toHaveLength(1);

      // The timer and the deletion replay deterministically.
      const history = await svc.client.workflow.getHandle(exportId).fetchHistory();
      expect(history.events?.some((e) => e.timerStartedEventAttributes?.startToFireTimeout)).toBe(true);
      await Worker.runReplayHistory({ workflowBundle: { codePath: inject('workflowBundlePath') } }, history, exportId);
    } finally {
      await worker.stop();
    }
  });
});
