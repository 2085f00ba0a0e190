import { z } from '@hono/zod-openapi';
import { exportFormats, exportStatuses } from '../../db/schema/audit.js';
import { AuditFilters, instant } from './audit.js';

/** The audit listing's filters (an action may be a `prefix.*`); unknown keys are refused. */
export const ExportFiltersSchema = AuditFilters.strict().openapi('AuditExportFilters');

export const ExportDestinationSchema = z
  .object({
    type: z.literal('s3').openapi({
      description: 'S3-compatible object storage (endpoint and credentials from the service configuration)',
    }),
    bucket: z
      .string()
      .regex(
        /^[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]$/,
        'must be a bucket name: 3-63 lowercase letters, digits, dots and hyphens',
      ),
    prefix: z
      .string()
      .max(512)
      // eslint-disable-next-line no-control-regex -- control characters are what it refuses
      .regex(/^[^\u0000-\u001f\u007f\\]*$/, 'must not hold control characters or backslashes')
      .refine((p) => !p.split('/').some((part) => part === '.' || part === '..'), 'must not hold . or .. segments')
      .default(''),
  })
  .strict()
  .openapi('AuditExportDestination');

export const CreateAuditExportBody = z
  .object({
    format: z.enum(exportFormats),
    from: instant,
    to: instant,
    filters: ExportFiltersSchema.optional(),
    destination: ExportDestinationSchema.optional(),
  })
  .strict()
  .openapi('CreateAuditExport');

export const AuditExportAccepted = z
  .object({
    exportId: z.string(),
    status: z.literal('queued'),
    estimatedRows: z.number().int(),
    format: z.enum(exportFormats),
    submittedAt: z.string(),
    downloadUrl: z.null(),
  })
  .openapi('AuditExportAccepted');

export const AuditExportView = z
  .object({
    exportId: z.string(),
    status: z.enum(exportStatuses),
    format: z.enum(exportFormats),
    from: z.string(),
    to: z.string(),
    filters: ExportFiltersSchema,
    // A union, not `.nullable()`: on a registered schema that is `allOf [$ref, type: [object, null]]`,
    // which no null satisfies.
    destination: z.union([ExportDestinationSchema, z.null()]),
    estimatedRows: z.number().int(),
    rowCount: z.number().int().nullable(),
    bytes: z.number().int().nullable(),
    submittedAt: z.string(),
    startedAt: z.string().nullable(),
    completedAt: z.string().nullable(),
    downloadUrl: z.string().nullable().openapi({ description: 'Signed URL, null until completed' }),
    downloadUrlExpiresAt: z.string().nullable().openapi({ description: '2 hours after completion' }),
    location: z
      .string()
      .nullable()
      .openapi({ description: 'The object (s3://bucket/key) of an export with a destination' }),
    failure: z.string().optional(),
  })
  .openapi('AuditExport');

export const ExportIdParam = z.object({
  exportId: z
    .string()
    .min(1)
    .max(64)
    .openapi({ param: { name: 'exportId', in: 'path' } }),
});

export const DownloadQuery = z.object({
  expires: z
    .string()
    .optional()
    .openapi({ param: { name: 'expires', in: 'query' }, description: 'Expiry, epoch milliseconds' }),
  signature: z
    .string()
    .optional()
    .openapi({ param: { name: 'signature', in: 'query' }, description: 'HMAC-SHA256, base64url' }),
});
