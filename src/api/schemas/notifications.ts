import { z } from '@hono/zod-openapi';
import { severities } from '../../db/schema/incidents.js';
import { EVENT_TYPES } from '../../outbox/events.js';
import { limitParam } from './common.js';

export const MAX_READ_IDS = 200;

export const Notification = z
  .object({
    notificationId: z.string().openapi({ example: 'ntf_01j…' }),
    type: z.string().openapi({ description: 'The event type that generated it', example: 'investigation.completed' }),
    title: z.string().openapi({ example: 'Root cause found: connection pool exhausted' }),
    body: z.string(),
    read: z.boolean(),
    incidentId: z.string().nullable().openapi({ description: 'Related incident, if any' }),
    remediationId: z.string().nullable().openapi({ description: 'Related remediation, if any' }),
    approvalId: z.string().nullable().openapi({ description: 'Related approval, if any' }),
    createdAt: z.string(),
  })
  .openapi('Notification');

export const NotificationList = z
  .object({
    items: z.array(Notification),
    unreadCount: z
      .number()
      .int()
      .openapi({ description: "All of the caller's unread notifications, whatever the filters" }),
    nextCursor: z.string().nullable(),
  })
  .openapi('NotificationList');

export const ListNotificationsQuery = z.object({
  read: z
    .enum(['true', 'false'], { message: 'read must be true or false' })
    .transform((v) => v === 'true')
    .optional()
    .openapi({ description: 'true: read ones only; false: unread ones only', type: 'boolean' }),
  type: z
    .string()
    .min(1)
    .max(100)
    .optional()
    .openapi({ description: 'Only this event type', example: 'incident.created' }),
  limit: limitParam(50, 200),
  cursor: z.string().min(1).max(512).optional(),
});

export const MarkNotificationsReadBody = z
  .object({
    notificationIds: z
      .array(z.string().min(1).max(64))
      .min(1, 'notificationIds must not be empty')
      .max(MAX_READ_IDS, `at most ${MAX_READ_IDS} notificationIds`)
      .optional(),
    all: z.literal(true, { message: 'all must be true' }).optional(),
  })
  .strict()
  .refine((b) => (b.notificationIds !== undefined) !== (b.all !== undefined), {
    message: 'Give exactly one of notificationIds and all',
  })
  .openapi('MarkNotificationsRead', { minProperties: 1, maxProperties: 1 });

const eventType = z
  .enum(EVENT_TYPES, {
    error: (issue) =>
      typeof issue.input === 'string'
        ? `unknown event type '${issue.input}'`
        : 'must be an event type of the catalogue (a string)',
  })
  .openapi({ description: 'An event type of the catalogue', example: 'incident.status_changed' });

const minSeverity = z.enum(severities, { message: 'minSeverity must be one of critical, high, medium, low' }).openapi({
  description:
    'Incidents below this severity are not notified to you; approval requests are, whatever the severity. Default `low`',
  example: 'high',
});

export const NotificationPreferences = z
  .object({
    disabledTypes: z.array(z.string()).openapi({
      description: 'Event types never notified to you (they stay on the event stream). Default: none',
      example: ['incident.status_changed'],
    }),
    minSeverity: z.enum(severities).openapi({ description: 'The lowest incident severity notified to you' }),
    updatedAt: z
      .string()
      .nullable()
      .openapi({ description: 'When you last saved them; null while the defaults apply' }),
  })
  .openapi('NotificationPreferences');

export const PutNotificationPreferencesBody = z
  .object({
    disabledTypes: z
      .array(eventType)
      .max(EVENT_TYPES.length * 2, `at most ${EVENT_TYPES.length * 2} disabledTypes`)
      .openapi({ description: 'Event types never to notify you of; an unknown type is refused (400), naming it' }),
    minSeverity,
  })
  .strict()
  .openapi('NotificationPreferencesUpdate');
