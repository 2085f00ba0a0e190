import { z } from '@hono/zod-openapi';
import { alertStates, correlationReasons } from '../../db/schema/correlation.js';
import { limitParam, oneLine } from './common.js';

export const CorrelationSchema = z
  .object({
    reason: z.enum(correlationReasons),
    relatedAlertId: z.string().optional().openapi({ description: 'The alert it was found related to' }),
    hops: z.number().int().optional().openapi({ description: 'topology: dependency hops between the services' }),
    ruleId: z.string().optional().openapi({ description: 'rule: the correlation rule that grouped it' }),
  })
  .openapi('AlertCorrelation', {
    description:
      'Why the alert is in its incident; the first alert of an incident is `fingerprint` with no related alert',
  });

export const Alert = z
  .object({
    alertId: z.string().openapi({ example: 'alt_01j…' }),
    incidentId: z.string().nullable().openapi({ description: 'Null while held, suppressed, a test, or dropped' }),
    provider: z.string(),
    service: z.string().nullable(),
    name: z.string(),
    title: z.string(),
    status: z.enum(['firing', 'resolved']).openapi({ description: 'What the tool last said' }),
    severity: z.string(),
    fingerprint: z.string(),
    labels: z.record(z.string(), z.string()),
    firstSeenAt: z.string(),
    lastSeenAt: z.string(),
    occurrenceCount: z.number().int(),
    correlation: CorrelationSchema.nullable(),
    flapping: z.boolean(),
    state: z.enum(alertStates).openapi({
      description:
        '`grouped` into an incident; `pending`: held by a rule (minAlerts, forMinutes); `suppressed` by a rule; `test`: a test or heartbeat; `dropped`: held, then recovered before anything opened',
    }),
    ruleId: z.string().nullable().openapi({ description: 'The rule that holds, suppresses or grouped it' }),
  })
  .openapi('Alert');

export const AlertList = z
  .object({ items: z.array(Alert), total: z.number().int(), nextCursor: z.string().nullable() })
  .openapi('AlertList');

const Cursor = z.string().min(1).max(512).optional();

export const ListIncidentAlertsQuery = z.object({ limit: limitParam(50, 100), cursor: Cursor });

export const ListAlertsQuery = z.object({
  state: z.enum(alertStates).optional(),
  incidentId: z.string().min(1).max(64).optional(),
  service: oneLine(200).optional(),
  limit: limitParam(50, 100),
  cursor: Cursor,
});
