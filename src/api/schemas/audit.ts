import { z } from '@hono/zod-openapi';
import { actorTypes } from '../../db/schema/audit.js';
import { limitParam } from './common.js';

/** An ISO 8601 instant with a zone (`Z` or an offset), or a calendar date (a whole UTC day). */
export const instant = z
  .union([z.iso.datetime({ offset: true }), z.iso.date()], {
    message: 'must be an ISO 8601 date-time with a zone, such as 2026-11-01T00:00:00Z, or a date such as 2026-11-01',
  })
  // Year 0 (or an offset that reaches back into it) is valid ISO 8601 and JavaScript, not PostgreSQL.
  .refine((value) => rangeBound(value, 'from').getTime() >= FIRST_STORABLE_TIME, {
    message: 'must not be before the year 1',
  })
  .openapi({
    example: '2025-01-01T00:00:00Z',
    description: 'ISO 8601 date-time with zone, or a date (a whole UTC day)',
  });

const DAY_MS = 86_400_000;
const FIRST_STORABLE_TIME = Date.parse('0001-01-01T00:00:00Z');

/** The instant a range bound stands for: a calendar date is a whole UTC day, `from` its first millisecond, `to` its last. */
export function rangeBound(value: string, end: 'from' | 'to'): Date {
  if (/^\d{4}-\d{2}-\d{2}$/.test(value)) {
    const start = new Date(`${value}T00:00:00.000Z`);
    return end === 'from' ? start : new Date(start.getTime() + DAY_MS - 1);
  }
  return new Date(value);
}

export const AuditEntry = z
  .object({
    auditId: z.string(),
    occurredAt: z.string(),
    actorType: z.enum(actorTypes),
    actorId: z.string(),
    action: z.string().openapi({ example: 'incident.status_changed' }),
    targetType: z.string(),
    targetId: z.string(),
    incidentId: z.string().nullable(),
    requestId: z.string().nullable(),
    workflowId: z.string().nullable(),
    historyEventId: z
      .number()
      .int()
      .nullable()
      .openapi({ description: 'The workflow task (history event id) that decided a workflow-driven entry' }),
    details: z.record(z.string(), z.unknown()),
    seq: z.number().int().openapi({ description: "Position in the tenant's hash chain" }),
    prevHash: z.string(),
    hash: z.string().openapi({ description: 'SHA-256 (hex) of prevHash and the canonical content' }),
  })
  .openapi('AuditEntry');

export const AuditList = z
  .object({ items: z.array(AuditEntry), nextCursor: z.string().nullable() })
  .openapi('AuditList');

/** The listing's filters; the export takes the same keys. */
export const AuditFilters = z.object({
  actorType: z.enum(actorTypes).optional(),
  action: z
    .string()
    .trim()
    .min(1)
    .max(100)
    .optional()
    .openapi({ description: 'Exact action, or a prefix ending in `.*` such as `incident.*`' }),
  incidentId: z.string().trim().min(1).max(100).optional(),
});

const range = {
  from: instant
    .optional()
    .openapi({ description: 'Inclusive lower bound of occurredAt (a date: from its start, UTC)' }),
  to: instant.optional().openapi({ description: 'Inclusive upper bound of occurredAt (a date: to its end, UTC)' }),
};
const orderedRange = <T extends { from?: string | undefined; to?: string | undefined }>(q: T) =>
  q.from === undefined || q.to === undefined || rangeBound(q.from, 'from') <= rangeBound(q.to, 'to');
const rangeMessage = { message: 'from must not be after to', path: ['from'] };

export const ListAuditQuery = AuditFilters.extend({
  ...range,
  limit: limitParam(50, 200),
  cursor: z.string().min(1).max(512).optional(),
}).refine(orderedRange, rangeMessage);

export const VerifyAuditQuery = z.object(range).refine(orderedRange, rangeMessage);

export const AuditVerification = z
  .object({
    valid: z.boolean(),
    checked: z.number().int().openapi({ description: 'Entries whose hash and link were checked' }),
    firstInvalidAuditId: z
      .string()
      .nullable()
      .openapi({ description: 'The first entry (in chain order) that does not verify' }),
    fromSeq: z.number().int().nullable(),
    toSeq: z.number().int().nullable(),
    problem: z.string().nullable().openapi({ description: 'What failed first, in words; null when valid' }),
  })
  .openapi('AuditVerification');
