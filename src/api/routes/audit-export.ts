/**
 * Asynchronous audit export: POST /v1/audit/export (admin) queues a job and starts its workflow,
 * GET /v1/audit/export/{exportId} (admin) polls it, and the signed download URL serves the
 * finished gzip file from the export directory without a bearer token.
 */
import { createReadStream } from 'node:fs';
import { stat } from 'node:fs/promises';
import path from 'node:path';
import { Readable } from 'node:stream';
import { createRoute, type OpenAPIHono } from '@hono/zod-openapi';
import { and, eq, isNull, sql } from 'drizzle-orm';
import { findExport, findExportById, selectionBounds } from '../../db/repositories/audit-exports.js';
import { appendAudit } from '../../db/repositories/audit.js';
import { auditExports, type AuditExportRow, type ExportFilters } from '../../db/schema/audit.js';
import { retentionDays } from '../../domain/plans.js';
import { AppError } from '../../errors.js';
import { createObjectStore, parseObjectLocation, type ObjectStore } from '../../audit-exports/object-store.js';
import { DOWNLOAD_URL_TTL_MS, signDownloadUrl, verifyDownloadUrl } from '../../audit-exports/signed-url.js';
import { newId } from '../../ids.js';
import type { AppDeps, AppEnv, ExportApiSettings } from '../context.js';
import { access } from '../middleware/access.js';
import {
  AuditExportAccepted,
  AuditExportView,
  CreateAuditExportBody,
  DownloadQuery,
  ExportIdParam,
} from '../schemas/audit-export.js';
import { rangeBound } from '../schemas/audit.js';
import { errorResponses, jsonResponse } from '../schemas/common.js';

const DAY_MS = 86_400_000;

type ExportDeps = AppDeps & { exports: ExportApiSettings };

async function downloadUrlOf(
  deps: ExportDeps,
  store: ObjectStore | undefined,
  row: AuditExportRow,
): Promise<string | null> {
  if (row.status !== 'completed' || !row.completedAt || !row.location) return null;
  const remote = parseObjectLocation(row.location);
  if (remote) {
    return store ? store.presignGet(remote.bucket, remote.key, row.completedAt, DOWNLOAD_URL_TTL_MS / 1000) : null;
  }
  return signDownloadUrl(
    deps.exports.urlKey,
    deps.config.publicBaseUrl,
    row.id,
    new Date(row.completedAt.getTime() + DOWNLOAD_URL_TTL_MS),
  );
}

async function exportView(deps: ExportDeps, store: ObjectStore | undefined, row: AuditExportRow) {
  return {
    exportId: row.id,
    status: row.status,
    format: row.format,
    from: row.rangeFrom.toISOString(),
    to: row.rangeTo.toISOString(),
    filters: row.filters,
    destination: row.destination ?? null,
    estimatedRows: row.estimatedRows,
    rowCount: row.status === 'completed' ? row.rowCount : null,
    bytes: row.status === 'completed' ? row.bytes : null,
    submittedAt: row.submittedAt.toISOString(),
    startedAt: row.startedAt?.toISOString() ?? null,
    completedAt: row.completedAt?.toISOString() ?? null,
    downloadUrl: await downloadUrlOf(deps, store, row),
    downloadUrlExpiresAt:
      row.status === 'completed' && row.completedAt
        ? new Date(row.completedAt.getTime() + DOWNLOAD_URL_TTL_MS).toISOString()
        : null,
    location: row.status === 'completed' && row.location && parseObjectLocation(row.location) ? row.location : null,
    ...(row.status === 'failed' && row.failure ? { failure: row.failure } : {}),
  };
}

const startExportRoute = createRoute({
  method: 'post',
  path: '/v1/audit/export',
  tags: ['audit'],
  summary: 'Export the audit log asynchronously (NDJSON or CSV, gzip)',
  ...access('admin'),
  request: { body: { required: true, content: { 'application/json': { schema: CreateAuditExportBody } } } },
  responses: { 202: jsonResponse(AuditExportAccepted, 'Queued'), ...errorResponses(400, 401, 403) },
});

function registerStartExport(app: OpenAPIHono<AppEnv>, deps: ExportDeps): void {
  app.openapi(startExportRoute, async (c) => {
    const auth = c.var.auth;
    const body = c.req.valid('json');
    const from = rangeBound(body.from, 'from');
    const to = rangeBound(body.to, 'to');
    if (from.getTime() > to.getTime()) throw new AppError('validation_error', 'from must not be later than to');
    const now = deps.clock();
    const days = retentionDays(auth.tenant.plan);
    if (from.getTime() < now.getTime() - days * DAY_MS) {
      throw new AppError('range_exceeds_retention', `from lies before the plan's audit retention of ${days} days`, {
        retentionDays: days,
        earliestFrom: new Date(now.getTime() - days * DAY_MS).toISOString(),
      });
    }
    if (body.destination && !deps.exports.s3) {
      throw new AppError('validation_error', 'destination: object storage is not configured on this service');
    }
    // The service's credentials reach more than one tenant's buckets: a tenant names only one
    // the operator allows.
    if (
      body.destination &&
      deps.exports.s3?.allowedBuckets &&
      !deps.exports.s3.allowedBuckets.includes(body.destination.bucket)
    ) {
      throw new AppError(
        'validation_error',
        `destination.bucket: ${body.destination.bucket} is not a bucket this service exports to`,
        [{ path: 'destination.bucket', message: 'is not one of the buckets this service exports to' }],
      );
    }
    const filters: ExportFilters = {
      ...(body.filters?.actorType !== undefined ? { actorType: body.filters.actorType } : {}),
      ...(body.filters?.action !== undefined ? { action: body.filters.action } : {}),
      ...(body.filters?.incidentId !== undefined ? { incidentId: body.filters.incidentId } : {}),
    };
    const { count } = await selectionBounds(deps.sql, { tenantId: auth.tenantId, from, to, filters });
    const exportId = newId('exp');
    const row = await deps.db.transaction(async (tx) => {
      const [created] = await tx
        .insert(auditExports)
        .values({
          id: exportId,
          tenantId: auth.tenantId,
          format: body.format,
          rangeFrom: from,
          rangeTo: to,
          filters,
          destination: body.destination
            ? { type: 's3', bucket: body.destination.bucket, prefix: body.destination.prefix }
            : null,
          estimatedRows: count,
          requestedBy: auth.userId,
        })
        .returning();
      await appendAudit(tx, {
        tenantId: auth.tenantId,
        actorType: 'user',
        actorId: auth.userId,
        action: 'audit.export_requested',
        targetType: 'audit_export',
        targetId: exportId,
        requestId: c.get('requestId'),
        details: {
          format: body.format,
          from: from.toISOString(),
          to: to.toISOString(),
          filters,
          ...(body.destination
            ? { destination: { bucket: body.destination.bucket, prefix: body.destination.prefix } }
            : {}),
        },
      });
      return created!;
    });

    try {
      await deps.workflows.startAuditExport({ exportId, tenantId: auth.tenantId });
      await deps.db
        .update(auditExports)
        .set({ workflowStartedAt: sql`now()` })
        .where(and(eq(auditExports.id, exportId), isNull(auditExports.workflowStartedAt)));
    } catch (err) {
      c.get('logger').error({ err, exportId }, 'export workflow start failed; the reconciler will retry');
    }

    return c.json(
      {
        exportId: row.id,
        status: 'queued' as const,
        estimatedRows: row.estimatedRows,
        format: row.format,
        submittedAt: row.submittedAt.toISOString(),
        downloadUrl: null,
      },
      202,
    );
  });
}

const getExportRoute = createRoute({
  method: 'get',
  path: '/v1/audit/export/{exportId}',
  tags: ['audit'],
  summary: 'An audit export: poll until status is completed, then download',
  ...access('admin'),
  request: { params: ExportIdParam },
  responses: { 200: jsonResponse(AuditExportView, 'The export'), ...errorResponses(401, 403, 404) },
});

function registerGetExport(app: OpenAPIHono<AppEnv>, deps: ExportDeps, store: ObjectStore | undefined): void {
  app.openapi(getExportRoute, async (c) => {
    const auth = c.var.auth;
    const { exportId } = c.req.valid('param');
    const row = await findExport(deps.db, auth.tenantId, exportId);
    if (!row) throw new AppError('not_found', 'No audit export has that identifier');
    return c.json(await exportView(deps, store, row), 200);
  });
}

const downloadExportRoute = createRoute({
  method: 'get',
  path: '/v1/audit/export/{exportId}/download',
  tags: ['audit'],
  summary: 'Download a completed export through its signed URL (no bearer token)',
  request: { params: ExportIdParam, query: DownloadQuery },
  responses: {
    200: {
      description: 'The gzip file',
      content: { 'application/gzip': { schema: { type: 'string', format: 'binary' } } },
    },
    ...errorResponses(403, 404),
  },
});

function registerDownloadExport(app: OpenAPIHono<AppEnv>, deps: ExportDeps): void {
  app.openapi(downloadExportRoute, async (c) => {
    const { exportId } = c.req.valid('param');
    const { expires, signature } = c.req.valid('query');
    if (!verifyDownloadUrl(deps.exports.urlKey, exportId, expires, signature, deps.clock())) {
      throw new AppError('forbidden', 'The download link is invalid or has expired');
    }
    const row = await findExportById(deps.db, exportId);
    if (!row || row.status !== 'completed' || !row.location || parseObjectLocation(row.location)) {
      throw new AppError('not_found', 'No downloadable export has that identifier');
    }
    const file = path.join(deps.exports.dir, row.location);
    let size: number;
    try {
      size = (await stat(file)).size;
    } catch {
      throw new AppError('not_found', 'The export file is no longer available');
    }
    const stream = Readable.toWeb(createReadStream(file, { highWaterMark: 256 * 1024 })) as ReadableStream<Uint8Array>;
    // Through the context, so the answer keeps the X-Request-Id and X-RateLimit-* headers the
    // middleware set (a raw Response dropped them, as the event stream's did; ADR 0209).
    return c.body(stream, 200, {
      'content-type': 'application/gzip',
      'content-length': String(size),
      'content-disposition': `attachment; filename="${path.basename(row.location)}"`,
      'cache-control': 'private, no-store',
    });
  });
}

export function registerAuditExportRoutes(app: OpenAPIHono<AppEnv>, deps: ExportDeps): void {
  const store: ObjectStore | undefined = deps.exports.s3 ? createObjectStore(deps.exports.s3) : undefined;
  registerStartExport(app, deps);
  registerGetExport(app, deps, store);
  registerDownloadExport(app, deps);
}
