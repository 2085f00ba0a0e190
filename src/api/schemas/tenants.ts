import { z } from '@hono/zod-openapi';
import { oneLine } from './common.js';
import { planIds } from '../../domain/plans.js';

/** The cloud settings are strings, as the interface types them: empty when not set (ADR 0243). */
const cloudText = () => z.string().openapi({ description: 'empty when not set' });

export const TenantSettingsSchema = z.object({
  cloudRoleArn: cloudText(),
  cloudExternalId: cloudText(),
  cloudRegion: cloudText(),
  autoRemediation: z.boolean(),
  requireWebhookSignature: z.boolean(),
  autoResolve: z.boolean(),
  approvalTimeoutMinutes: z.number().int(),
  allowHttpSkills: z.boolean(),
  correlationWindowMinutes: z.number().int().openapi({
    description:
      "Minutes after an open incident's latest alert in which a related alert joins it (0–1440, default 10; 0: no automatic grouping, rules still apply)",
  }),
});

export const Tenant = z
  .object({
    tenantId: z.string(),
    name: z.string(),
    slug: z.string(),
    status: z.enum(['active', 'suspended']),
    plan: z.enum(planIds),
    createdAt: z.string(),
    updatedAt: z.string(),
    settings: TenantSettingsSchema,
  })
  .openapi('Tenant');

const QuotaUse = z.object({
  limit: z
    .number()
    .int()
    .openapi({ description: "The month's quota: the plan's, or an enterprise tenant's custom one" }),
  used: z.number().int(),
  remaining: z
    .number()
    .int()
    .openapi({ description: 'what is left: max(0, limit − used) plus the credits bought and not yet used (ADR 0289)' }),
});

export const TenantUsage = z
  .object({
    tenantId: z.string(),
    plan: z.enum(planIds),
    period: z.string().openapi({ description: 'The calendar month (UTC) counted, YYYY-MM', example: '2025-11' }),
    investigations: QuotaUse,
    events: QuotaUse,
    chatMessages: QuotaUse,
  })
  .openapi('TenantUsage');

/** Clearing a cloud setting: `""` (what a read of an unset one shows) or `null`, both stored as not set. */
const cleared = z.literal('').transform(() => null);
const optionalText = (max: number) =>
  z
    .union([cleared, z.string().trim().min(1).max(max)])
    .nullable()
    .optional();

export const UpdateTenantBody = z
  .object({
    name: oneLine(200).optional(),
    settings: z
      .object({
        cloudRoleArn: optionalText(2048),
        cloudExternalId: optionalText(1224),
        cloudRegion: z
          .union([
            cleared,
            z.string().regex(/^[a-z0-9-]{2,32}$/, 'cloudRegion must be a region name such as eu-west-1'),
          ])
          .nullable()
          .optional(),
        autoRemediation: z.boolean().optional(),
        requireWebhookSignature: z.boolean().optional(),
        autoResolve: z.boolean().optional(),
        approvalTimeoutMinutes: z.number().int().min(1).max(10080).optional(),
        allowHttpSkills: z.boolean().optional(),
        // 0 turns automatic grouping off (each alert by its own fingerprint; rules still apply).
        correlationWindowMinutes: z.number().int().min(0).max(1440).optional(),
      })
      .strict()
      .optional(),
  })
  .strict()
  .openapi('UpdateTenant');

export const TenantIdParam = z.object({
  tenantId: z
    .string()
    .min(1)
    .max(64)
    .openapi({ param: { name: 'tenantId', in: 'path' } }),
});
