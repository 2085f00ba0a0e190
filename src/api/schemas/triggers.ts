import { z } from '@hono/zod-openapi';
import { severities, incidentSources } from '../../db/schema/incidents.js';
import { triggerActions } from '../../db/schema/triggers.js';
import { limitParam, oneLine, queryBoolean } from './common.js';
import { EVENT_TYPES } from '../../outbox/events.js';

/** The 21 event types of DESIGN §5 (the outbox's catalogue): what a trigger's `eventType` names. */
export const eventCatalogue = EVENT_TYPES;

const EventType = z.enum(eventCatalogue, {
  message: `eventType must be one of the event catalogue: ${eventCatalogue.join(', ')}`,
});

export const TriggerConditions = z
  .object({
    severities: z.array(z.enum(severities)).max(4).optional(),
    sources: z.array(z.enum(incidentSources)).max(2).optional(),
    services: z.array(oneLine(200)).max(50).optional(),
  })
  .strict()
  .openapi('TriggerConditions', {
    description: 'Each given list must contain the event’s (or its incident’s) value; an absent list matches anything',
  });

const Action = z.enum(triggerActions);
/** Checked per action by the route (webhook: url; invoke_skill: skillId and optional input; others: nothing). */
const ActionConfig = z.record(z.string(), z.unknown()).openapi({
  description: 'webhook: `url`; invoke_skill: `skillId`, optional `input`; notify and start_investigation: empty',
});

export const CreateTriggerBody = z
  .object({
    name: oneLine(200, 'name is required'),
    eventType: EventType,
    conditions: TriggerConditions.default({}),
    action: Action,
    actionConfig: ActionConfig.default({}),
    enabled: z.boolean().default(true),
  })
  .strict()
  .openapi('CreateTrigger');

export const UpdateTriggerBody = z
  .object({
    name: oneLine(200).optional(),
    enabled: z.boolean().optional(),
    conditions: TriggerConditions.optional(),
    action: Action.optional(),
    actionConfig: ActionConfig.optional(),
  })
  .strict()
  .refine((b) => Object.values(b).some((v) => v !== undefined), {
    message: 'Give at least one of name, enabled, conditions, action, actionConfig',
  })
  .openapi('UpdateTrigger', { minProperties: 1 });

export const Trigger = z
  .object({
    triggerId: z.string().openapi({ example: 'trg_01j…' }),
    name: z.string(),
    eventType: z.string(),
    conditions: z.object({
      severities: z.array(z.string()).optional(),
      sources: z.array(z.string()).optional(),
      services: z.array(z.string()).optional(),
    }),
    action: Action,
    actionConfig: z.record(z.string(), z.unknown()),
    enabled: z.boolean(),
    createdAt: z.string(),
    updatedAt: z.string(),
  })
  .openapi('Trigger');

export const CreatedTrigger = Trigger.extend({
  signingSecret: z
    .string()
    .optional()
    .openapi({ description: 'Webhook triggers only, shown once: the HMAC key of `X-Webhook-Signature: sha256=…`' }),
}).openapi('CreatedTrigger');

export const TriggerList = z
  .object({ items: z.array(Trigger), total: z.number().int(), nextCursor: z.string().nullable() })
  .openapi('TriggerList');

export const ListTriggersQuery = z.object({
  enabled: queryBoolean.optional().openapi({ type: 'string', enum: ['true', 'false'] }),
  eventType: z.string().min(1).max(100).optional(),
  limit: limitParam(50, 200),
  cursor: z.string().min(1).max(512).optional(),
});

export const TriggerIdParam = z.object({
  triggerId: z
    .string()
    .min(1)
    .max(100)
    .openapi({ param: { name: 'triggerId', in: 'path' } }),
});
