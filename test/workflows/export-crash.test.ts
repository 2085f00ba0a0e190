/**
 * A worker killed (SIGKILL, in its own process) in the middle of a large export: the export
 * resumes on another worker from its last heartbeat, after the bytes the dead attempt left
 * behind are cut off, and completes with every row exactly once.
 */
import type { ChildProcess } from 'node:child_process';
import { appendFileSync, existsSync } from 'node:fs';
import path from 'node:path';
import { gunzipSync } from 'node:zlib';
import { Context } from '@temporalio/activity';
import { defaultPayloadConverter } from '@temporalio/common';
import { eq } from 'drizzle-orm';
import { afterAll, describe, expect, it } from 'vitest';
import { createActivities } from '../../src/activities/index.js';
import { auditExports } from '../../src/db/schema/audit.js';
import type { AuditExportInput, ExportProgress } from '../../src/audit-exports/types.js';
import { createSkillCipher } from '../../src/skills/crypto.js';
import { createSkillRuntime } from '../../src/skills/invoke.js';
import { csvFields, expectedRows, parseCsv, seedAuditRows } from '../helpers/audit-seed.js';
import { eventually } from '../helpers/webhooks.js';
import { startTestWorker, startWorkerProcess, useWorkerlessService } from '../helpers/workers.js';

const ROWS = 50_000;
const BATCH_ROWS = 2_000;
const HANG_AFTER_ROWS = 20_000;
// The SDK sends throttled heartbeats every 0.8 × the timeout; 5 s leaves a healthy but loaded
// worker a second for that call (3 s left 0.6 s, and a busy CI host once missed it).
const HEARTBEAT_TIMEOUT_MS = 5_000;

const env = useWorkerlessService({ exports: { batchRows: BATCH_ROWS } });
let child: ChildProcess | undefined;
afterAll(() => {
  child?.kill('SIGKILL'); // after hooks run last-registered first: before the service stops
});

describe('a worker killed during a large export', () => {
  it('completes on another worker from the last heartbeat, every row exactly once', async () => {
    const { svc, connection } = env;
    const tenant = await svc.newTenant({ plan: 'plan_business' });
    const lines: string[] = [];
    [child] = await Promise.all([
      startWorkerProcess(
        svc,
        {
          EXPORT_DIR: svc.exportDir,
          HEARTBEAT_TIMEOUT_MS: String(HEARTBEAT_TIMEOUT_MS),
          BATCH_ROWS: String(BATCH_ROWS),
          HANG_AFTER_ROWS: String(HANG_AFTER_ROWS),
        },
        lines,
      ),
      seedAuditRows(svc.database.sql, tenant.tenantId, ROWS),
    ]);

    const to = new Date(Date.now() + 60_000);
    const from = new Date(to.getTime() - 24 * 3_600_000);
    const res = await svc.api('POST', '/v1/audit/export', {
      token: tenant.admin,
      body: { format: 'csv', from: from.toISOString(), to: to.toISOString() },
    });
    expect(res.status).toBe(202);
    const exportId = res.body.exportId as string;
    const handle = svc.client.workflow.getHandle(exportId);

    // The worker stalls past HANG_AFTER_ROWS; wait until Temporal holds a heartbeat at least that far.
    await eventually(async () => lines.some((l) => l.startsWith('HUNG')), 30_000);
    const recorded = await eventually(async () => {
      const pending = (await handle.describe()).raw.pendingActivities?.[0];
      const payload = pending?.heartbeatDetails?.payloads?.[0];
      const progress = payload ? defaultPayloadConverter.fromPayload<ExportProgress>(payload) : undefined;
      return progress && progress.rows >= HANG_AFTER_ROWS ? progress : undefined;
    }, 15_000);
    child.kill('SIGKILL');
    await new Promise((resolve) => child!.once('exit', resolve));
    child = undefined;

    // A torn write: bytes after the last durable member, as a crash mid-write leaves them.
    const part = path.join(svc.exportDir, tenant.tenantId, `${exportId}.csv.gz.part`);
    expect(existsSync(part)).toBe(true);
    appendFileSync(part, Buffer.from('torn member: not gzip at all'));

    // A healthy worker; its writer records where each attempt resumed from.
    const resumedFrom: unknown[] = [];
    const real = createActivities({
      db: svc.database.db,
      skills: createSkillRuntime({ cipher: createSkillCipher(Buffer.alloc(32)), allowedNetworks: [] }),
      exports: svc.exportSettings,
    }).writeAuditExportFile;
    const healthy = await startTestWorker(svc, connection, {
      writeAuditExportFile: (input: AuditExportInput) => {
        resumedFrom.push(Context.current().info.heartbeatDetails);
        return real(input);
      },
    });
    try {
      const done = await eventually(async () => {
        const body = (await svc.api('GET', `/v1/audit/export/${exportId}`, { token: tenant.admin })).body;
        return body.status === 'completed' || body.status === 'failed' ? body : undefined;
      }, 60_000);
      expect(done.status).toBe('completed');

      // It resumed from the heartbeat Temporal held, not from the start. A loaded host can time
      // out a healthy attempt too; any further attempt resumes from a later heartbeat, never 0.
      expect(resumedFrom.length).toBeGreaterThanOrEqual(1);
      let previous = recorded.rows;
      for (const from of resumedFrom) {
        expect(from).toMatchObject({ rows: expect.any(Number), offset: expect.any(Number) });
        expect((from as ExportProgress).rows).toBeGreaterThanOrEqual(previous);
        expect((from as ExportProgress).rows).toBeLessThan(ROWS);
        previous = (from as ExportProgress).rows;
      }
      const resumed = resumedFrom[0] as ExportProgress;

      const expected = (await expectedRows(svc.database.sql, { tenantId: tenant.tenantId, from, to })).filter(
        (r) => r.action !== 'audit.export_completed',
      );
      expect(expected.length).toBeGreaterThan(ROWS); // the seeded rows, the tenant's own entries, the export request
      expect(done.rowCount).toBe(expected.length);
      const file = await fetch(done.downloadUrl.replace('http://api.test', svc.baseUrl));
      const [header, ...records] = parseCsv(gunzipSync(Buffer.from(await file.arrayBuffer())).toString('utf8'));
      expect(header![0]).toBe('auditId');
      expect(records).toHaveLength(expected.length);
      const ids = records.map((r) => r[0]);
      expect(new Set(ids).size).toBe(ids.length); // no duplicate rows
      expect(ids).toEqual(expected.map((r) => r.auditId));
      expect(records.map((r) => r[12])).toEqual(expected.map((r) => String(r.seq)));
      // Spot-check whole rows across the resume point.
      for (const i of [0, resumed.rows - 1, resumed.rows, resumed.rows + 1, expected.length - 1]) {
        const want = csvFields(expected[i]!);
        expect([...records[i]!.slice(0, 11), ...records[i]!.slice(12)]).toEqual([
          ...want.slice(0, 11),
          ...want.slice(12),
        ]);
      }
      expect(existsSync(part)).toBe(false);
      const [row] = await svc.database.db.select().from(auditExports).where(eq(auditExports.id, exportId));
      expect(row).toMatchObject({ status: 'completed', rowCount: expected.length });

      // The writer ran twice: the killed attempt and the resumed one.
      const history = await handle.fetchHistory();
      const attempts = (history.events ?? [])
        .filter((e) => e.activityTaskStartedEventAttributes)
        .map((e) => e.activityTaskStartedEventAttributes!.attempt ?? 0);
      expect(Math.max(...attempts)).toBeGreaterThanOrEqual(2);
    } finally {
      await healthy.stop();
    }
  }, 150_000); // 44–63 s measured, on a loaded machine too; the bound leaves room for a slower CI host
});
