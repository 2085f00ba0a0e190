import { z } from '@hono/zod-openapi';
import { IncidentIdParam } from './incidents.js';

export const MergeIncidentBody = z
  .object({
    incidentId: z
      .string()
      .trim()
      .min(1, 'incidentId is required')
      .max(64, 'incidentId must be at most 64 characters')
      .openapi({
        description: 'The open incident to merge into the one of the path (it closes with `mergedInto`)',
        example: 'inc_01jd...',
      }),
  })
  .strict()
  .openapi('MergeIncident');

export const SplitAlertParams = IncidentIdParam.extend({
  alertId: z
    .string()
    .min(1)
    .max(64)
    .openapi({ param: { name: 'alertId', in: 'path' }, example: 'alt_01jd...' }),
});
