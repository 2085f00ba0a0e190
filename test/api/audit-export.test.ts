import { gunzipSync } from 'node:zlib';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { and, eq } from 'drizzle-orm';
import pino from 'pino';
import { historyToJSON } from '@temporalio/common/lib/proto-utils.js';
import { Worker } from '@temporalio/worker';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { createApp } from '../../src/api/app.js';
import { auditExports, auditLog } from '../../src/db/schema/audit.js';
import { events } from '../../src/db/schema/events.js';
import { signDownloadUrl } from '../../src/audit-exports/signed-url.js';
import { reconcileExports } from '../../src/outbox/workflow-dispatcher.js';
import {
  csvFields,
  expectedRows,
  parseCsv,
  parseNdjson,
  seedAuditRows,
  type ExportRow,
} from '../helpers/audit-seed.js';
import { startFakeS3, type FakeS3 } from '../helpers/s3-server.js';
import { startTestService, type TestService } from '../helpers/service.js';
import { eventually } from '../helpers/webhooks.js';

let svc: TestService;
let s3: FakeS3;
const HOUR = 3_600_000;
const recordedExportHistory = path.join(import.meta.dirname, '..', 'workflows', 'histories', 'audit-export-v1.json');

beforeAll(async () => {
  s3 = await startFakeS3({ buckets: ['audit-archive'] });
  svc = await startTestService({
    exports: {
      s3: {
        endpoint: s3.endpoint,
        region: s3.region,
        accessKeyId: s3.accessKeyId,
        secretAccessKey: s3.secretAccessKey,
        forcePathStyle: true,
        allowedBuckets: ['audit-archive', 'no-such-bucket'],
      },
      batchRows: 700, // several gzip members per export
    },
  });
});
afterAll(async () => {
  await svc?.stop();
  await s3?.stop();
});

/** The last `hours` hours up to now, as the request's from/to. */
function lastHours(hours: number) {
  const to = new Date(Date.now() + 60_000);
  const from = new Date(to.getTime() - hours * HOUR);
  return { from, to, body: { from: from.toISOString(), to: to.toISOString() } };
}

async function waitFinished(exportId: string, token: string) {
  return eventually(async () => {
    const res = await svc.api('GET', `/v1/audit/export/${exportId}`, { token });
    return res.body.status === 'completed' || res.body.status === 'failed' ? res : undefined;
  }, 45_000);
}

/** Fetches a signed URL from the test api (the URLs name the configured public base). */
async function download(url: string): Promise<Response> {
  const local = url.replace('http://api.test', svc.baseUrl);
  return fetch(local);
}

async function tenantWithRows(count: number) {
  const tenant = await svc.newTenant({ plan: 'plan_business' });
  await seedAuditRows(svc.database.sql, tenant.tenantId, count);
  return tenant;
}

describe('POST /v1/audit/export and GET /v1/audit/export/{exportId}', () => {
  it('exports NDJSON: 202 queued, then completed with a signed URL whose gzip holds exactly the rows in audit_log', async () => {
    const tenant = await tenantWithRows(2500);
    const range = lastHours(24);
    const expectedBefore = await expectedRows(svc.database.sql, {
      tenantId: tenant.tenantId,
      from: range.from,
      to: range.to,
    });
    const res = await svc.api('POST', '/v1/audit/export', {
      token: tenant.admin,
      body: { format: 'ndjson', ...range.body },
    });
    expect(res.status).toBe(202);
    expect(res.body).toEqual({
      exportId: expect.stringMatching(/^exp_/),
      status: 'queued',
      estimatedRows: expectedBefore.length,
      format: 'ndjson',
      submittedAt: expect.any(String),
      downloadUrl: null,
    });
    const exportId = res.body.exportId as string;

    const done = await waitFinished(exportId, tenant.admin);
    expect(done.status).toBe(200);
    const job = done.body;
    // The export holds the rows committed when it began: the seeded ones and the request's own entry.
    const expected = await expectedRows(svc.database.sql, {
      tenantId: tenant.tenantId,
      from: range.from,
      to: range.to,
    });
    const requested = expected.filter((r) => r.action === 'audit.export_requested');
    expect(requested).toHaveLength(1);
    expect(requested[0]).toMatchObject({ actorType: 'user', targetType: 'audit_export', targetId: exportId });
    const inExport = expected.filter((r) => r.action !== 'audit.export_completed');
    expect(job).toMatchObject({
      exportId,
      status: 'completed',
      format: 'ndjson',
      rowCount: inExport.length,
      estimatedRows: expectedBefore.length,
      location: null,
    });
    expect(job.submittedAt).toBe(res.body.submittedAt);
    expect(new Date(job.downloadUrlExpiresAt).getTime()).toBe(new Date(job.completedAt).getTime() + 2 * HOUR);
    expect(job.downloadUrl).toMatch(
      new RegExp(`^http://api\\.test/v1/audit/export/${exportId}/download\\?expires=\\d+&signature=[\\w-]+$`),
    );

    const file = await download(job.downloadUrl);
    expect(file.status).toBe(200);
    expect(file.headers.get('content-type')).toBe('application/gzip');
    expect(file.headers.get('content-disposition')).toBe(`attachment; filename="${exportId}.ndjson.gz"`);
    // Like every answer, it names its request and its address's window.
    expect(file.headers.get('x-request-id')).toMatch(/\S/);
    expect(Number(file.headers.get('x-ratelimit-limit'))).toBeGreaterThan(0);
    expect(file.headers.get('x-ratelimit-remaining')).toMatch(/^\d+$/);
    const gz = Buffer.from(await file.arrayBuffer());
    expect(Number(file.headers.get('content-length'))).toBe(gz.length);
    expect(job.bytes).toBe(gz.length);
    const rows = parseNdjson(gz);
    expect(rows).toEqual(inExport);
    expect(Object.keys(rows[0]!)).toEqual([
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
    ]);

    // Completion: one audit entry by the system, one outbox event.
    const completed = await svc.database.db
      .select()
      .from(auditLog)
      .where(and(eq(auditLog.tenantId, tenant.tenantId), eq(auditLog.action, 'audit.export_completed')))
      .orderBy(auditLog.seq);
    expect(completed).toHaveLength(1);
    expect(completed[0]).toMatchObject({ actorType: 'system', targetId: exportId, workflowId: exportId });
    const outbox = await svc.database.db
      .select()
      .from(events)
      .where(and(eq(events.tenantId, tenant.tenantId), eq(events.type, 'system.export_completed')))
      .orderBy(events.seq);
    expect(outbox).toHaveLength(1);
    expect(outbox[0]!.payload).toMatchObject({ exportId, rowCount: inExport.length, format: 'ndjson' });

    // The export workflow is deterministic: its history replays with the current code, and so
    // does the history recorded when the workflow was written (RECORD_HISTORIES=1 rewrites it).
    const history = await svc.client.workflow.getHandle(exportId).fetchHistory();
    const bundle = { workflowBundle: { codePath: inject('workflowBundlePath') } };
    await Worker.runReplayHistory(bundle, history, exportId);
    if (process.env.RECORD_HISTORIES) writeFileSync(recordedExportHistory, historyToJSON(history));
    const recorded = JSON.parse(readFileSync(recordedExportHistory, 'utf8'));
    expect(recorded.events.length).toBeGreaterThan(10);
    await Worker.runReplayHistory(bundle, recorded, 'recorded-export');
  });

  it('exports RFC 4180 CSV: header, CRLF records, quoted fields with doubled quotes and embedded newlines', async () => {
    const tenant = await tenantWithRows(1500);
    const range = lastHours(24);
    const res = await svc.api('POST', '/v1/audit/export', {
      token: tenant.admin,
      body: { format: 'csv', ...range.body },
    });
    expect(res.status).toBe(202);
    const job = (await waitFinished(res.body.exportId, tenant.admin)).body;
    expect(job.status).toBe('completed');
    const file = await download(job.downloadUrl);
    expect(file.headers.get('content-disposition')).toBe(`attachment; filename="${job.exportId}.csv.gz"`);
    const text = gunzipSync(Buffer.from(await file.arrayBuffer())).toString('utf8');
    expect(
      text.startsWith(
        'auditId,occurredAt,actorType,actorId,action,targetType,targetId,incidentId,requestId,workflowId,historyEventId,details,seq,prevHash,hash\r\n',
      ),
    ).toBe(true);
    expect(text).toContain('"ops, ""night""\r\nshift 7"'); // an actorId with a comma, quotes and CRLF
    const [header, ...records] = parseCsv(text);
    expect(header).toHaveLength(15);
    const expected = (
      await expectedRows(svc.database.sql, { tenantId: tenant.tenantId, from: range.from, to: range.to })
    ).filter((r) => r.action !== 'audit.export_completed');
    expect(records).toHaveLength(expected.length);
    expect(job.rowCount).toBe(expected.length);
    records.forEach((record, i) => {
      const want = csvFields(expected[i]!);
      expect(JSON.parse(record[11]!)).toEqual(expected[i]!.details); // PostgreSQL's JSON text of details
      expect([...record.slice(0, 11), ...record.slice(12)]).toEqual([...want.slice(0, 11), ...want.slice(12)]);
    });
  });

  it('applies the filters (actorType, action, incidentId) and estimates exactly', async () => {
    const tenant = await tenantWithRows(1200);
    const range = lastHours(24);
    // The same filters as the listing, an action prefix included.
    const cases = [
      { actorType: 'system' as const, action: 'tenant.updated' },
      { incidentId: 'inc_seed_1' },
      { action: 'no.such.action' },
      { action: 'tenant.*' },
    ];
    for (const filters of cases) {
      const expected = await expectedRows(svc.database.sql, {
        tenantId: tenant.tenantId,
        from: range.from,
        to: range.to,
        filters,
      });
      const res = await svc.api('POST', '/v1/audit/export', {
        token: tenant.admin,
        body: { format: 'ndjson', ...range.body, filters },
      });
      expect(res.status).toBe(202);
      expect(res.body.estimatedRows).toBe(expected.length);
      if (filters.action === 'tenant.*') expect(expected.length).toBeGreaterThan(1);
      const job = (await waitFinished(res.body.exportId, tenant.admin)).body;
      expect(job).toMatchObject({ status: 'completed', rowCount: expected.length, filters });
      const rows = parseNdjson(Buffer.from(await (await download(job.downloadUrl)).arrayBuffer()));
      expect(rows).toEqual(expected);
    }
    // A narrower time range: only rows whose occurredAt lies within it (both ends inclusive).
    const all = await expectedRows(svc.database.sql, { tenantId: tenant.tenantId, from: range.from, to: range.to });
    const seeded = all.filter((r) => r.auditId.startsWith('aud_seed_'));
    const from = seeded[100]!.occurredAt;
    const to = seeded[400]!.occurredAt;
    const [lo, hi] = from < to ? [from, to] : [to, from];
    const res = await svc.api('POST', '/v1/audit/export', {
      token: tenant.admin,
      body: { format: 'ndjson', from: lo, to: hi },
    });
    const job = (await waitFinished(res.body.exportId, tenant.admin)).body;
    const rows = parseNdjson(Buffer.from(await (await download(job.downloadUrl)).arrayBuffer()));
    const want = all.filter((r) => r.occurredAt >= lo && r.occurredAt <= hi);
    expect(rows).toEqual(want);
    expect(rows.some((r) => r.occurredAt === lo) && rows.some((r) => r.occurredAt === hi)).toBe(true);
  });
});

describe('the signed download URL', () => {
  let job: { exportId: string; downloadUrl: string };
  beforeAll(async () => {
    const tenant = await tenantWithRows(10);
    const res = await svc.api('POST', '/v1/audit/export', {
      token: tenant.admin,
      body: { format: 'csv', ...lastHours(1).body },
    });
    job = (await waitFinished(res.body.exportId, tenant.admin)).body;
  });

  it('downloads without a bearer token while valid', async () => {
    const res = await download(job.downloadUrl);
    expect(res.status).toBe(200);
    expect(gunzipSync(Buffer.from(await res.arrayBuffer())).toString('utf8')).toMatch(/^auditId,/);
  });

  it('is 403 forbidden when tampered with, expired, or used for another export', async () => {
    const url = new URL(job.downloadUrl);
    const signature = url.searchParams.get('signature')!;
    const expires = url.searchParams.get('expires')!;
    const variants = [
      job.downloadUrl.replace(
        `signature=${signature}`,
        `signature=${signature.slice(0, -2)}${signature.endsWith('AA') ? 'BB' : 'AA'}`,
      ),
      job.downloadUrl.replace(`expires=${expires}`, `expires=${Number(expires) + 1000}`),
      job.downloadUrl.replace(`signature=${signature}`, 'signature='),
      job.downloadUrl.split('?')[0]!,
      job.downloadUrl.replace(job.exportId, 'exp_01jzzzzzzzzzzzzzzzzzzzzzzz'),
      // Correctly signed, but expired a second ago.
      signDownloadUrl(svc.exportUrlKey, 'http://api.test', job.exportId, new Date(Date.now() - 1000)),
    ];
    for (const variant of variants) {
      const res = await download(variant);
      expect(res.status, variant).toBe(403);
      expect(await res.json()).toMatchObject({ error: 'forbidden' });
    }
    // The same key with a future expiry works: only the expiry made the previous one fail.
    expect(
      (
        await download(
          signDownloadUrl(svc.exportUrlKey, 'http://api.test', job.exportId, new Date(Date.now() + 60_000)),
        )
      ).status,
    ).toBe(200);
  });
});

describe('errors', () => {
  it('401 without a token, 403 for a member', async () => {
    const tenant = await svc.newTenant();
    const body = { format: 'ndjson', ...lastHours(1).body };
    expect((await svc.api('POST', '/v1/audit/export', { body })).status).toBe(401);
    const member = await svc.api('POST', '/v1/audit/export', { token: tenant.member, body });
    expect(member.status).toBe(403);
    expect(member.body.error).toBe('forbidden');
    const created = await svc.api('POST', '/v1/audit/export', { token: tenant.admin, body });
    expect((await svc.api('GET', `/v1/audit/export/${created.body.exportId}`)).status).toBe(401);
    expect(
      (await svc.api('GET', `/v1/audit/export/${created.body.exportId}`, { token: tenant.member })).body.error,
    ).toBe('forbidden');
  });

  it('400 validation_error for a bad format or range, from after to, and unknown keys', async () => {
    const tenant = await svc.newTenant();
    const { body } = lastHours(1);
    const bad: unknown[] = [
      { ...body, format: 'xml' },
      { ...body },
      { format: 'csv', from: body.from },
      { format: 'csv', from: 'yesterday', to: body.to },
      { format: 'csv', from: '2025-13-40T00:00:00Z', to: body.to },
      { format: 'csv', from: '2025-01-01T00:00:00', to: body.to }, // no zone
      { format: 'csv', from: body.to, to: body.from },
      { format: 'csv', ...body, compress: true },
      { format: 'csv', ...body, filters: { actor: 'user' } },
      { format: 'csv', ...body, filters: { actorType: 'robot' } },
      { format: 'csv', ...body, destination: { type: 'gcs', bucket: 'audit-archive', prefix: 'x' } },
      { format: 'csv', ...body, destination: { type: 's3', bucket: 'Bad_Bucket', prefix: 'x' } },
      { format: 'csv', ...body, destination: { type: 's3', bucket: 'audit-archive', prefix: '../up' } },
    ];
    for (const request of bad) {
      const res = await svc.api('POST', '/v1/audit/export', { token: tenant.admin, body: request });
      expect(res.status, JSON.stringify(request)).toBe(400);
      expect(res.body.error).toBe('validation_error');
    }
    const none = await svc.database.db.select().from(auditExports).where(eq(auditExports.tenantId, tenant.tenantId));
    expect(none).toHaveLength(0);
  });

  it('400 range_exceeds_retention when from is older than the plan keeps audit entries', async () => {
    const starter = await svc.newTenant({ plan: 'plan_starter' }); // 30 days
    const to = new Date().toISOString();
    const old = await svc.api('POST', '/v1/audit/export', {
      token: starter.admin,
      body: { format: 'csv', from: new Date(Date.now() - 31 * 24 * HOUR).toISOString(), to },
    });
    expect(old.status).toBe(400);
    expect(old.body).toMatchObject({ error: 'range_exceeds_retention', details: { retentionDays: 30 } });
    const ok = await svc.api('POST', '/v1/audit/export', {
      token: starter.admin,
      body: { format: 'csv', from: new Date(Date.now() - 29 * 24 * HOUR).toISOString(), to },
    });
    expect(ok.status).toBe(202);
    const business = await svc.newTenant({ plan: 'plan_business' }); // 365 days
    const longer = await svc.api('POST', '/v1/audit/export', {
      token: business.admin,
      body: { format: 'csv', from: new Date(Date.now() - 300 * 24 * HOUR).toISOString(), to },
    });
    expect(longer.status).toBe(202);
  });

  it("404 not_found for an unknown id and for another tenant's export", async () => {
    const a = await svc.newTenant();
    const b = await svc.newTenant();
    const created = await svc.api('POST', '/v1/audit/export', {
      token: a.admin,
      body: { format: 'ndjson', ...lastHours(1).body },
    });
    const other = await svc.api('GET', `/v1/audit/export/${created.body.exportId}`, { token: b.admin });
    expect(other.status).toBe(404);
    expect(other.body.error).toBe('not_found');
    expect((await svc.api('GET', '/v1/audit/export/exp_unknown', { token: a.admin })).body.error).toBe('not_found');
    expect((await svc.api('GET', `/v1/audit/export/${created.body.exportId}`, { token: a.admin })).status).toBe(200);
  });

  it('400 validation_error for a destination when object storage is not configured', async () => {
    const bare = await startTestService({ withoutWorker: true, withoutDispatcher: true });
    try {
      const tenant = await bare.newTenant();
      const res = await bare.api('POST', '/v1/audit/export', {
        token: tenant.admin,
        body: {
          format: 'ndjson',
          ...lastHours(1).body,
          destination: { type: 's3', bucket: 'audit-archive', prefix: 'x' },
        },
      });
      expect(res.status).toBe(400);
      expect(res.body).toMatchObject({ error: 'validation_error', message: expect.stringContaining('object storage') });
    } finally {
      await bare.stop();
    }
  });
});

describe('an S3 destination', () => {
  it('uploads the file to <prefix>/<exportId>.<format>.gz and answers a presigned GET URL valid 2 hours', async () => {
    const tenant = await tenantWithRows(900);
    const range = lastHours(24);
    const res = await svc.api('POST', '/v1/audit/export', {
      token: tenant.admin,
      body: {
        format: 'ndjson',
        ...range.body,
        destination: { type: 's3', bucket: 'audit-archive', prefix: `tenants/${tenant.tenantId}/` },
      },
    });
    expect(res.status).toBe(202);
    const job = (await waitFinished(res.body.exportId, tenant.admin)).body;
    const key = `tenants/${tenant.tenantId}/${job.exportId}.ndjson.gz`;
    expect(job).toMatchObject({ status: 'completed', location: `s3://audit-archive/${key}` });
    const stored = s3.objects.get(`audit-archive/${key}`);
    expect(stored?.contentType).toBe('application/gzip');
    expect(stored!.body.length).toBe(job.bytes);
    const expected = (
      await expectedRows(svc.database.sql, { tenantId: tenant.tenantId, from: range.from, to: range.to })
    ).filter((r) => r.action !== 'audit.export_completed');
    expect(parseNdjson(stored!.body)).toEqual(expected);
    // The local copy is gone once uploaded.
    expect(existsSync(path.join(svc.exportDir, tenant.tenantId, `${job.exportId}.ndjson.gz`))).toBe(false);

    const url = new URL(job.downloadUrl);
    expect(url.origin).toBe(s3.endpoint);
    expect(url.searchParams.get('X-Amz-Expires')).toBe('7200');
    const fetched = await fetch(job.downloadUrl);
    expect(fetched.status).toBe(200);
    const rows: ExportRow[] = parseNdjson(Buffer.from(await fetched.arrayBuffer()));
    expect(rows).toEqual(expected);
    url.searchParams.set('X-Amz-Expires', '72000');
    expect((await fetch(url)).status).toBe(403); // the store checks the signature too
  });

  it('400 validation_error for a bucket the service does not export to (S3_ALLOWED_BUCKETS); nothing is queued', async () => {
    const tenant = await tenantWithRows(5);
    const res = await svc.api('POST', '/v1/audit/export', {
      token: tenant.admin,
      body: {
        format: 'csv',
        ...lastHours(1).body,
        destination: { type: 's3', bucket: 'another-tenants-bucket', prefix: 'x' },
      },
    });
    expect(res.status).toBe(400);
    expect(res.body).toEqual({
      error: 'validation_error',
      message: 'destination.bucket: another-tenants-bucket is not a bucket this service exports to',
      details: [{ path: 'destination.bucket', message: 'is not one of the buckets this service exports to' }],
    });
    expect(await svc.database.db.select().from(auditExports).where(eq(auditExports.tenantId, tenant.tenantId))).toEqual(
      [],
    );
  });

  it('fails the export, with the reason and an audit entry, when the store refuses the upload', async () => {
    const tenant = await tenantWithRows(5);
    const res = await svc.api('POST', '/v1/audit/export', {
      token: tenant.admin,
      body: { format: 'csv', ...lastHours(1).body, destination: { type: 's3', bucket: 'no-such-bucket', prefix: '' } },
    });
    const job = (await waitFinished(res.body.exportId, tenant.admin)).body;
    expect(job).toMatchObject({
      status: 'failed',
      downloadUrl: null,
      rowCount: null,
      failure: expect.stringContaining('NoSuchBucket'),
    });
    const failed = await svc.database.db
      .select()
      .from(auditLog)
      .where(and(eq(auditLog.tenantId, tenant.tenantId), eq(auditLog.action, 'audit.export_failed')))
      .orderBy(auditLog.seq);
    expect(failed).toHaveLength(1);
    expect(failed[0]).toMatchObject({ actorType: 'system', workflowId: job.exportId });
  });
});

describe('a submission while Temporal is unavailable', () => {
  it('still answers 202 and the reconciler starts the workflow later', async () => {
    const tenant = await tenantWithRows(20);
    const app = createApp({
      ...svc.appDeps,
      workflows: { ...svc.workflows, startAuditExport: () => Promise.reject(new Error('Temporal is unavailable')) },
    });
    const res = await app.request('/v1/audit/export', {
      method: 'POST',
      headers: { authorization: `Bearer ${tenant.admin}`, 'content-type': 'application/json' },
      body: JSON.stringify({ format: 'ndjson', ...lastHours(1).body }),
    });
    expect(res.status).toBe(202);
    const { exportId } = (await res.json()) as { exportId: string };
    const [row] = await svc.database.db.select().from(auditExports).where(eq(auditExports.id, exportId));
    expect(row).toMatchObject({ status: 'queued', workflowStartedAt: null });

    expect(
      await reconcileExports(
        { db: svc.database.db, sql: svc.database.sql, workflows: svc.workflows, logger: pino({ level: 'silent' }) },
        { olderThanMs: 0 },
      ),
    ).toBeGreaterThanOrEqual(1);
    const job = (await waitFinished(exportId, tenant.admin)).body;
    expect(job.status).toBe('completed');
    const [started] = await svc.database.db.select().from(auditExports).where(eq(auditExports.id, exportId));
    expect(started!.workflowStartedAt).not.toBeNull();
    // Starting it again (a second reconciler, a late retry) is harmless: the finished job stays as it is.
    await svc.workflows.startAuditExport({ exportId, tenantId: tenant.tenantId });
    const [again] = await svc.database.db.select().from(auditExports).where(eq(auditExports.id, exportId));
    expect(again).toMatchObject({ status: 'completed', rowCount: job.rowCount });
  });
});
