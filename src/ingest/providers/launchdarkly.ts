/**
 * LaunchDarkly webhooks: each delivery is one audit-log entry.
 * https://launchdarkly.com/docs/home/infrastructure/webhooks
 * https://launchdarkly.com/docs/api/audit-log/get-audit-log-entry
 *
 * An entry of `kind` flag whose `accesses` change what the flag serves (turned on/off, rules,
 * targets, fallthrough, variations, prerequisites, archive, delete) → one `deployment` change:
 * change_type feature_flag, flag = the key in the resource (`proj/<p>:env/<e>:flag/<key>`),
 * environment = the resource's env, state on/off from currentVersion, author = the member (or
 * token/app), service from the flag's tags. Every other entry is acknowledged and ignored.
 */
import { z } from 'zod';
import { nonEmpty, parseTime, parseWith } from '../normalize.js';
import type { ParsedDelivery, WebhookProvider } from '../types.js';
import { change, labelsOf, servicesFromTags } from './change-common.js';

/** Actions that change what a flag serves (LaunchDarkly's flag actions). */
const servingActions = new Set([
  'updateOn',
  'updateFallthrough',
  'updateFallthroughWithMrf',
  'updateRules',
  'updateRulesWithMrf',
  'updateTargets',
  'updateContextTargets',
  'updateExpiringTargets',
  'updateExpiringRules',
  'updateOffVariation',
  'updatePrerequisites',
  'updateFlagVariations',
  'updateGlobalArchived',
  'updateScheduledChanges',
  'applyApprovalRequest',
  'deleteFlag',
  'copyFlagConfigTo',
]);

const named = z.looseObject({ name: z.string().nullish() }).nullish();
const entrySchema = z.looseObject({
  _id: z.string().nullish(),
  date: z.union([z.number(), z.string()]),
  kind: z.string().min(1),
  name: z.string().nullish(),
  description: z.string().nullish(),
  shortDescription: z.string().nullish(),
  comment: z.string().nullish(),
  titleVerb: z.string().nullish(),
  title: z.string().nullish(),
  target: z.unknown().optional(),
  accesses: z.array(z.looseObject({ action: z.string(), resource: z.string() })).default([]),
  member: z
    .looseObject({ email: z.string().nullish(), firstName: z.string().nullish(), lastName: z.string().nullish() })
    .nullish(),
  token: named,
  app: named,
  currentVersion: z.unknown().optional(),
  previousVersion: z.unknown().optional(),
});

/** `proj/default:env/production:flag/new-checkout-flow;tag1,tag2` → its parts. */
export function parseResource(resource: string): { project?: string; env?: string; flag?: string; tags: string[] } {
  const [spec = '', tagList] = resource.split(';', 2);
  const parts: Record<string, string> = {};
  for (const segment of spec.split(':')) {
    const slash = segment.indexOf('/');
    if (slash > 0) parts[segment.slice(0, slash)] = segment.slice(slash + 1);
  }
  const tags = tagList ? tagList.split(',').map((t) => t.trim()) : [];
  return { project: parts.proj, env: parts.env, flag: parts.flag, tags };
}

function record(value: unknown): Record<string, unknown> | undefined {
  return typeof value === 'object' && value !== null && !Array.isArray(value)
    ? (value as Record<string, unknown>)
    : undefined;
}

export const launchdarklyProvider: WebhookProvider = {
  name: 'launchdarkly',
  parse(body): ParsedDelivery {
    const entry = parseWith(entrySchema, body, 'launchdarkly');
    if (entry.kind !== 'flag') return { events: [], ignored: `audit-log entry of kind ${entry.kind} is not used` };
    const access = entry.accesses.find((a) => servingActions.has(a.action) && /(^|:)flag\//.test(a.resource));
    if (!access) {
      const actions = entry.accesses.map((a) => a.action).join(', ') || 'none';
      return { events: [], ignored: `flag actions ${actions} do not change what the flag serves` };
    }
    const resource = parseResource(access.resource);
    const current = record(entry.currentVersion);
    const flag = resource.flag ?? nonEmpty(current?.key) ?? 'unknown-flag';
    const envState = record(record(current?.environments)?.[resource.env ?? '']);
    const flagTags = Array.isArray(current?.tags) ? current.tags.map(String) : [];
    const { service, services } = servicesFromTags([...flagTags, ...resource.tags]);
    const member = entry.member;
    const author =
      nonEmpty(member?.email) ??
      (nonEmpty([member?.firstName, member?.lastName].filter(Boolean).join(' ')) ||
        nonEmpty(entry.token?.name) ||
        nonEmpty(entry.app?.name));
    const state = typeof envState?.on === 'boolean' ? (envState.on ? 'on' : 'off') : undefined;
    const labels = labelsOf({
      change_type: 'feature_flag',
      flag,
      environment: resource.env,
      project: resource.project,
      action: entry.accesses.map((a) => a.action).join(','),
      state: access.action === 'deleteFlag' ? 'deleted' : state,
      // The flag's own revision in that environment, not a value it serves (`version` is that).
      flag_version: typeof envState?.version === 'number' ? String(envState.version) : undefined,
      author,
      services: services.length > 1 ? services.join(',') : undefined,
    });
    const verb = nonEmpty(entry.titleVerb) ?? `changed (${access.action}) the flag`;
    return {
      events: [
        change('deployment', {
          service,
          title: `LaunchDarkly: ${author ?? 'someone'} ${verb} ${flag}${resource.env ? ` in ${resource.env}` : ''}`,
          parts: [
            nonEmpty(entry.shortDescription) ?? nonEmpty(entry.title),
            nonEmpty(entry.description),
            nonEmpty(entry.comment) && `Comment: ${entry.comment}`,
          ],
          labels,
          occurredAt: parseTime(entry.date, new Date()),
          raw: body,
        }),
      ],
    };
  },
};
