import { z } from '@hono/zod-openapi';
import { incidentSources, incidentStatuses, severities } from '../../db/schema/incidents.js';
import { limitParam, oneLine, visibleOrEmpty } from './common.js';

export const SeveritySchema = z.enum(severities);
export const IncidentStatusSchema = z.enum(incidentStatuses);

export const CreateIncidentBody = z
  .object({
    title: oneLine(200, 'title is required').openapi({ example: 'Checkout latency above 2s' }),
    description: z
      .string()
      .trim()
      .min(10, 'description must be 10 to 4000 characters')
      .max(4000, 'description must be 10 to 4000 characters')
      .refine(visibleOrEmpty, 'description must not be blank')
      .openapi({ example: 'p99 latency of the checkout api rose after the 14:02 deploy' }),
    service: oneLine(200).optional().openapi({
      description: 'The affected service; when it names a topology node, its team owns the incident',
      example: 'checkout-api',
    }),
  })
  .strict()
  .openapi('CreateIncident');

export const CreatedIncident = z
  .object({
    incidentId: z.string().openapi({ example: 'inc_01jd...' }),
    title: z.string(),
    severity: SeveritySchema,
    status: IncidentStatusSchema,
    source: z.enum(incidentSources),
    createdAt: z.string(),
    investigationsRemaining: z.number().int().openapi({
      description: 'Investigations left this month, credits included (for an enterprise tenant, its custom quota)',
    }),
    eventsRemaining: z.number().int().openapi({
      description: 'Events left this month, credits included (for an enterprise tenant, its custom quota)',
    }),
  })
  .openapi('CreatedIncident');

export const Incident = z
  .object({
    incidentId: z.string(),
    title: z.string(),
    description: z.string(),
    severity: SeveritySchema,
    status: IncidentStatusSchema,
    source: z.enum(incidentSources),
    assignedAgents: z.array(z.string()),
    rootCause: z.string().nullable(),
    recommendedActions: z.array(z.string()),
    service: z.string().nullable().openapi({ description: 'The service named by the alert or the creator' }),
    serviceId: z.string().nullable().openapi({ description: 'The topology node of that name, when one exists' }),
    ownerTeam: z.string().nullable().openapi({ description: "The owning team: the service node's team" }),
    immediateAttention: z.boolean().openapi({ description: 'The service is rated 8–10: on-call attention now' }),
    occurrenceCount: z.number().int().openapi({ description: 'Alerts that fired into this incident' }),
    lastSeenAt: z.string().nullable(),
    recoveredAt: z
      .string()
      .nullable()
      .openapi({ description: 'When its alerts reported resolved; null while any fires' }),
    mergedInto: z.string().nullable().openapi({
      description: 'The incident a person merged this one into (it is then closed); null otherwise',
    }),
    createdAt: z.string(),
    updatedAt: z.string(),
  })
  .openapi('Incident');

export const IncidentSummary = Incident.pick({
  incidentId: true,
  title: true,
  severity: true,
  status: true,
  source: true,
  mergedInto: true,
  createdAt: true,
}).openapi('IncidentSummary');

export const ListIncidentsQuery = z.object({
  severity: SeveritySchema.optional(),
  status: IncidentStatusSchema.optional(),
  sort: z.enum(['createdAt']).default('createdAt'),
  order: z.enum(['asc', 'desc']).default('desc'),
  limit: limitParam(20, 100),
  cursor: z.string().min(1).max(512).optional(),
});

export const IncidentList = z
  .object({ incidents: z.array(IncidentSummary), count: z.number().int(), cursor: z.string().nullable() })
  .openapi('IncidentList');

export const UpdateIncidentBody = z.object({ status: IncidentStatusSchema }).strict().openapi('UpdateIncident');

export const IncidentIdParam = z.object({
  incidentId: z
    .string()
    .min(1)
    .max(64)
    .openapi({ param: { name: 'incidentId', in: 'path' } }),
});
