import { z } from '@hono/zod-openapi';
import { ruleActions } from '../../db/schema/correlation.js';
import { severities } from '../../db/schema/incidents.js';
import { LAST_STORABLE_TIME } from '../../ingest/normalize.js';
import { providers } from '../../ingest/providers/index.js';
import { limitParam, oneLine, queryBoolean, visibleOrEmpty } from './common.js';

// eslint-disable-next-line no-control-regex
const NO_CONTROL_CHARACTERS = /^[^\u0000-\u001f\u007f-\u009f]*$/;
const MAX_LABELS = 50;
const MAX_GROUP_BY = 10;

/** A label name as the tools send them (Prometheus names, Datadog tag keys): one line, kept as written. */
const LabelName = z
  .string()
  .min(1, 'a label name must not be empty')
  .max(200)
  .regex(NO_CONTROL_CHARACTERS, 'must be one line without control characters');

/**
 * An exact value, or a glob over the whole value (`*` any run of characters, `?` one): not
 * trimmed, since a value is compared as the tool sent it.
 */
const Glob = z
  .string()
  .min(1, 'must not be empty (a glob of * matches any value)')
  .max(500)
  .regex(NO_CONTROL_CHARACTERS, 'must be one line without control characters')
  .refine(visibleOrEmpty, 'must not be blank')
  .openapi({ description: 'Exact value, or a glob: `*` any run of characters, `?` exactly one', example: 'Kube*' });

/**
 * The label names of `match.labels`, judged here rather than as the record's key schema, whose
 * failure zod reports as "Invalid key in record" under the (possibly empty) key itself.
 */
function checkLabelNames(labels: Record<string, string>, ctx: z.RefinementCtx): void {
  const names = Object.keys(labels);
  if (names.length > MAX_LABELS) ctx.addIssue({ code: 'custom', message: `at most ${MAX_LABELS} labels` });
  for (const name of names) {
    const problem = LabelName.safeParse(name).error?.issues[0]?.message;
    if (problem) ctx.addIssue({ code: 'custom', message: `label name ${JSON.stringify(name)}: ${problem}` });
  }
}

const distinct = (values: readonly string[]) => new Set(values).size === values.length;
const providerNames = Object.keys(providers) as [string, ...string[]];

const NO_CRITERION =
  'match needs at least one criterion (provider, service, alertName, labels or severity): an empty match would match every alert';

export const RuleMatchSchema = z
  .object({
    provider: z.enum(providerNames).optional(),
    service: oneLine(200).optional().openapi({ description: 'The alert’s service, exactly' }),
    alertName: Glob.optional(),
    labels: z.record(z.string(), Glob).superRefine(checkLabelNames).optional().openapi({
      description: 'Label name → exact value or glob; every one must match (a missing label never does)',
      maxProperties: MAX_LABELS,
    }),
    severity: z
      .array(z.enum(severities))
      .min(1)
      .max(severities.length)
      .refine(distinct, 'severity must not name a severity twice')
      .optional()
      .openapi({ description: 'The alert’s severity is one of these' }),
  })
  .strict()
  .refine(
    (m) =>
      m.provider !== undefined ||
      m.service !== undefined ||
      m.alertName !== undefined ||
      Object.keys(m.labels ?? {}).length > 0 ||
      m.severity !== undefined,
    { message: NO_CRITERION },
  )
  .openapi('CorrelationRuleMatch', { description: 'Every given criterion must match; at least one is required' });

const GroupBy = z
  .array(LabelName)
  .max(MAX_GROUP_BY)
  .refine(distinct, 'groupBy must not name a label twice')
  .openapi({ description: 'Label names whose equal values put matching alerts in one incident' });

/** An instant with a zone, between 1970 and the year 10000 (past it PostgreSQL refuses the text). */
const Instant = z.iso
  .datetime({ offset: true, message: 'must be an ISO 8601 date-time with a zone, such as 2026-11-01T02:00:00Z' })
  .refine((v) => {
    const t = Date.parse(v);
    return t >= 0 && t < LAST_STORABLE_TIME;
  }, 'must be between 1970 and the year 9999')
  .openapi({ example: '2026-11-01T02:00:00Z' });

const Order = z.number().int().min(0).max(10000).openapi({ description: 'Evaluated ascending, then by creation' });
const MinAlerts = z
  .number()
  .int()
  .min(1)
  .max(1000)
  .openapi({ description: 'Matching alerts of one group needed before its incident opens' });
const ForMinutes = z
  .number()
  .int()
  .min(0)
  .max(1440)
  .openapi({ description: 'Minutes a matching alert must keep firing before its incident opens' });
const Action = z.enum(ruleActions).openapi({
  description: '`group`: one incident per group; `suppress`: kept and counted, never an incident; `open_separately`',
});

const untilAfterFrom = (b: { activeFrom?: string | null | undefined; activeUntil?: string | null | undefined }) =>
  !b.activeFrom || !b.activeUntil || Date.parse(b.activeUntil) > Date.parse(b.activeFrom);
const UNTIL_AFTER_FROM = { message: 'activeUntil must be after activeFrom', path: ['activeUntil'] };

export const CreateCorrelationRuleBody = z
  .object({
    name: oneLine(200, 'name is required'),
    enabled: z.boolean().default(true),
    order: Order.default(100),
    match: RuleMatchSchema,
    groupBy: GroupBy.default([]),
    minAlerts: MinAlerts.default(1),
    forMinutes: ForMinutes.default(0),
    action: Action.default('group'),
    activeFrom: Instant.nullable().default(null),
    activeUntil: Instant.nullable().default(null),
  })
  .strict()
  .refine(untilAfterFrom, UNTIL_AFTER_FROM)
  .openapi('CreateCorrelationRule');

export const UpdateCorrelationRuleBody = z
  .object({
    name: oneLine(200).optional(),
    enabled: z.boolean().optional(),
    order: Order.optional(),
    match: RuleMatchSchema.optional().openapi({ description: 'Replaces the whole match' }),
    groupBy: GroupBy.optional(),
    minAlerts: MinAlerts.optional(),
    forMinutes: ForMinutes.optional(),
    action: Action.optional(),
    activeFrom: Instant.nullable().optional(),
    activeUntil: Instant.nullable().optional(),
  })
  .strict()
  .refine((b) => Object.values(b).some((v) => v !== undefined), {
    message:
      'Give at least one of name, enabled, order, match, groupBy, minAlerts, forMinutes, action, activeFrom, activeUntil',
  })
  .refine(untilAfterFrom, UNTIL_AFTER_FROM)
  .openapi('UpdateCorrelationRule', { minProperties: 1 });

export const CorrelationRule = z
  .object({
    ruleId: z.string().openapi({ example: 'crl_01j…' }),
    name: z.string(),
    enabled: z.boolean(),
    order: z.number().int(),
    match: z.object({
      provider: z.string().optional(),
      service: z.string().optional(),
      alertName: z.string().optional(),
      labels: z.record(z.string(), z.string()).optional(),
      severity: z.array(z.string()).optional(),
    }),
    groupBy: z.array(z.string()),
    minAlerts: z.number().int(),
    forMinutes: z.number().int(),
    action: z.enum(ruleActions),
    activeFrom: z.string().nullable(),
    activeUntil: z.string().nullable(),
    createdAt: z.string(),
    updatedAt: z.string(),
    lastMatchedAt: z.string().nullable(),
    matchCount: z.number().int(),
    stale: z.boolean().openapi({
      description: 'Enabled, older than 7 days and no match in the last 7 days: check the rule still means something',
    }),
  })
  .openapi('CorrelationRule');

export const CorrelationRuleList = z
  .object({ items: z.array(CorrelationRule), total: z.number().int(), nextCursor: z.string().nullable() })
  .openapi('CorrelationRuleList');

export const ListCorrelationRulesQuery = z.object({
  enabled: queryBoolean.optional().openapi({ type: 'string', enum: ['true', 'false'] }),
  stale: queryBoolean.optional().openapi({ type: 'string', enum: ['true', 'false'] }),
  limit: limitParam(50, 200),
  cursor: z.string().min(1).max(512).optional(),
});

export const RuleIdParam = z.object({
  ruleId: z
    .string()
    .min(1)
    .max(100)
    .openapi({ param: { name: 'ruleId', in: 'path' } }),
});
