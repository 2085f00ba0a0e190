/**
 * Unleash webhook addon (integration), with its default body: the Unleash event.
 * https://docs.getunleash.io/reference/integrations/webhook
 *
 * Events that change what a flag serves (feature-environment-enabled/disabled, feature-strategy-
 * add/update/remove, feature-updated, feature-variants-updated, feature-archived/revived) → one
 * `deployment` change: change_type feature_flag, flag = featureName, environment, author =
 * createdBy, state enabled/disabled when the event says, service from the tags. Other events
 * (created, tagged, stale, change requests…) are acknowledged and ignored.
 */
import { z } from 'zod';
import { nonEmpty, parseTime, parseWith } from '../normalize.js';
import type { ParsedDelivery, WebhookProvider } from '../types.js';
import { change, labelsOf, servicesFromTags } from './change-common.js';

const flagChanges = new Set([
  'feature-environment-enabled',
  'feature-environment-disabled',
  'feature-strategy-add',
  'feature-strategy-update',
  'feature-strategy-remove',
  'feature-updated',
  'feature-variants-updated',
  'feature-environment-variants-updated',
  'feature-archived',
  'feature-revived',
]);

const eventSchema = z.looseObject({
  id: z.number().nullish(),
  type: z.string().min(1),
  createdBy: z.string().nullish(),
  createdAt: z.union([z.string(), z.number()]).nullish(),
  featureName: z.string().nullish(),
  project: z.string().nullish(),
  environment: z.string().nullish(),
  data: z.unknown().optional(),
  preData: z.unknown().optional(),
  tags: z.array(z.looseObject({ type: z.string().nullish(), value: z.string() })).nullish(),
});

function state(type: string, data: unknown): string | undefined {
  if (type === 'feature-environment-enabled') return 'enabled';
  if (type === 'feature-environment-disabled') return 'disabled';
  if (type === 'feature-archived') return 'archived';
  const enabled = (data as { enabled?: unknown } | null | undefined)?.enabled;
  return typeof enabled === 'boolean' ? (enabled ? 'enabled' : 'disabled') : undefined;
}

function strategyLine(data: unknown): string | undefined {
  const d = data as { name?: unknown; parameters?: unknown; constraints?: unknown } | null | undefined;
  if (!d || typeof d.name !== 'string') return undefined;
  const parameters = d.parameters && typeof d.parameters === 'object' ? JSON.stringify(d.parameters) : '';
  return `Strategy ${d.name}${parameters && parameters !== '{}' ? ` ${parameters}` : ''}`;
}

export const unleashProvider: WebhookProvider = {
  name: 'unleash',
  parse(body, header): ParsedDelivery {
    const event = parseWith(eventSchema, body, 'unleash');
    const deliveryId = typeof event.id === 'number' ? `unleash-event-${event.id}` : nonEmpty(header('x-delivery-id'));
    const withId = (d: ParsedDelivery): ParsedDelivery => (deliveryId ? { ...d, deliveryId } : d);
    if (!flagChanges.has(event.type)) return withId({ events: [], ignored: `event type ${event.type} is not used` });
    const flag = nonEmpty(event.featureName) ?? nonEmpty((event.data as { name?: unknown } | null)?.name);
    if (!flag) return withId({ events: [], ignored: `event ${event.type} names no feature` });
    const tags = (event.tags ?? []).map((t) => (t.type === 'service' ? `service:${t.value}` : t.value));
    const { service, services } = servicesFromTags(tags);
    const environment = nonEmpty(event.environment);
    const flagState = state(event.type, event.data);
    const labels = labelsOf({
      change_type: 'feature_flag',
      flag,
      environment,
      project: nonEmpty(event.project),
      event_type: event.type,
      state: flagState,
      author: nonEmpty(event.createdBy),
      services: services.length > 1 ? services.join(',') : undefined,
    });
    const what = event.type.replace(/^feature-/, '').replace(/-/g, ' ');
    return withId({
      events: [
        change('deployment', {
          service,
          title: `Unleash: ${flag} ${what}${environment ? ` in ${environment}` : ''}${event.createdBy ? ` by ${event.createdBy}` : ''}`,
          parts: [strategyLine(event.data), strategyLine(event.preData) && `Was: ${strategyLine(event.preData)}`],
          labels,
          occurredAt: parseTime(event.createdAt, new Date()),
          raw: body,
        }),
      ],
    });
  },
};
