/**
 * Flagsmith environment webhooks (Environment settings → Webhooks).
 * https://docs.flagsmith.com/system-administration/webhooks
 *
 * `event_type` FLAG_UPDATED or FLAG_DELETED → one `deployment` change: change_type
 * feature_flag, flag = the feature's name, environment = the environment's name, state
 * enabled/disabled (deleted), version = the remote-config value, author = changed_by, service
 * from the feature's tags when the payload has them. Other event types (and the audit-log
 * webhook's entries) are acknowledged and ignored.
 */
import { z } from 'zod';
import { nonEmpty, parseTime, parseWith } from '../normalize.js';
import type { ParsedDelivery, WebhookProvider } from '../types.js';
import { change, labelsOf, servicesFromTags } from './change-common.js';

const featureState = z
  .looseObject({
    enabled: z.boolean().nullish(),
    environment: z.looseObject({ name: z.string().nullish() }).nullish(),
    feature: z.looseObject({
      name: z.string().min(1),
      type: z.string().nullish(),
      description: z.string().nullish(),
      project: z.looseObject({ name: z.string().nullish() }).nullish(),
      tags: z.array(z.union([z.string(), z.looseObject({ label: z.string() })])).nullish(),
    }),
    feature_segment: z.unknown().optional(),
    feature_state_value: z.union([z.string(), z.number(), z.boolean()]).nullish(),
    identity: z.unknown().optional(),
    identity_identifier: z.string().nullish(),
  })
  .nullish();

const webhookSchema = z.looseObject({
  event_type: z.string().nullish(),
  data: z
    .looseObject({
      changed_by: z.string().nullish(),
      timestamp: z.union([z.string(), z.number()]).nullish(),
      new_state: featureState,
      previous_state: featureState,
    })
    .nullish(),
});

/** A remote-config value worth showing (not null, not empty). */
const shown = (v: unknown): boolean => v !== null && v !== undefined && v !== '';

export const flagsmithProvider: WebhookProvider = {
  name: 'flagsmith',
  parse(body): ParsedDelivery {
    const payload = parseWith(webhookSchema, body, 'flagsmith');
    const type = payload.event_type ?? 'none';
    if (type !== 'FLAG_UPDATED' && type !== 'FLAG_DELETED')
      return { events: [], ignored: `event_type ${type} is not used` };
    const data = payload.data;
    const state = data?.new_state ?? data?.previous_state;
    if (!data || !state) return { events: [], ignored: `${type} carries no feature state` };
    const feature = state.feature;
    const tags = (feature.tags ?? []).map((t) => (typeof t === 'string' ? t : t.label));
    const { service, services } = servicesFromTags(tags);
    const environment = nonEmpty(state.environment?.name);
    const value = state.feature_state_value;
    const enabled =
      type === 'FLAG_DELETED'
        ? 'deleted'
        : typeof state.enabled !== 'boolean'
          ? undefined
          : state.enabled
            ? 'enabled'
            : 'disabled';
    const was = data.previous_state;
    const scope = state.identity_identifier
      ? `identity ${state.identity_identifier}`
      : state.feature_segment
        ? 'a segment override'
        : undefined;
    const labels = labelsOf({
      change_type: 'feature_flag',
      flag: feature.name,
      environment,
      project: nonEmpty(feature.project?.name),
      state: enabled,
      version: shown(value) ? String(value).slice(0, 200) : undefined,
      scope,
      author: nonEmpty(data.changed_by),
      services: services.length > 1 ? services.join(',') : undefined,
    });
    const before =
      was && type === 'FLAG_UPDATED'
        ? `Was ${was.enabled ? 'enabled' : 'disabled'}${shown(was.feature_state_value) ? ` with value ${String(was.feature_state_value)}` : ''}.`
        : undefined;
    return {
      events: [
        change('deployment', {
          service,
          title: `Flagsmith: ${feature.name} ${type === 'FLAG_DELETED' ? 'deleted' : (enabled ?? 'updated')}${environment ? ` in ${environment}` : ''}${data.changed_by ? ` by ${data.changed_by}` : ''}`,
          parts: [
            `${type}${scope ? ` (${scope})` : ''}: ${feature.name} is ${enabled ?? 'updated'}${shown(value) ? ` with value ${String(value)}` : ''}.`,
            before,
            nonEmpty(feature.description),
          ],
          labels,
          occurredAt: parseTime(data.timestamp, new Date()),
          raw: body,
        }),
      ],
    };
  },
};
