import { z } from '@hono/zod-openapi';
import { integrationCatalog } from '../../domain/catalog.js';
import { skillTypes } from '../../db/schema/skills.js';
import { builtinActions } from '../../skills/builtins.js';
import { httpMethods } from '../../skills/http.js';
import { checkInputSchema } from '../../skills/json-schema.js';
import { limitParam, visibleOrEmpty } from './common.js';

export const MAX_SKILL_HEADERS = 20;
export const MAX_HEADER_VALUE_LENGTH = 4096;

/**
 * Headers a skill may not set: hop-by-hop and framing headers (the client owns the connection,
 * the body length and its encoding) and Host (the URL names the host).
 */
export const forbiddenSkillHeaders = new Set([
  'host',
  'connection',
  'keep-alive',
  'proxy-connection',
  'proxy-authenticate',
  'proxy-authorization',
  'te',
  'trailer',
  'transfer-encoding',
  'upgrade',
  'content-length',
  'accept-encoding',
  'expect',
]);

const SkillName = z
  .string()
  .regex(
    /^[a-z][a-z0-9_]{0,63}$/,
    'name must be snake_case: a lowercase letter, then up to 63 lowercase letters, digits or underscores',
  )
  .openapi({ example: 'lookup_customer' });

const Description = z
  .string()
  .trim()
  .min(1, 'description is required')
  .max(500, 'description must be at most 500 characters')
  .refine(visibleOrEmpty, 'description must not be blank')
  .openapi({
    description: 'Used by the AI to decide when to invoke the skill',
    example: 'Looks up a customer account by id',
  });

const InputSchema = z
  .record(z.string(), z.unknown())
  .superRefine((schema, ctx) => {
    for (const problem of checkInputSchema(schema)) {
      ctx.addIssue({ code: 'custom', message: `not a valid JSON Schema: ${problem.path} ${problem.message}` });
    }
  })
  .openapi({
    description:
      'JSON Schema (draft-07, or 2020-12 with $schema) of the accepted input; checked when the skill is invoked',
    example: { type: 'object', properties: { customerId: { type: 'string' } }, required: ['customerId'] },
  });

const HEADER_NAME = /^[!#$%&'*+.^_`|~0-9A-Za-z-]{1,64}$/;

/** Why a header name cannot be configured, or undefined. */
function headerNameProblem(name: string): string | undefined {
  if (!HEADER_NAME.test(name)) return `${name}: header names are 1–64 token characters`;
  if (forbiddenSkillHeaders.has(name.toLowerCase())) {
    return `${name}: Host and hop-by-hop headers cannot be set (${[...forbiddenSkillHeaders].join(', ')})`;
  }
  return undefined;
}

export const HttpSkillConfig = z
  .object({
    url: z
      .string()
      .max(2048)
      .refine((value) => {
        try {
          const url = new URL(value);
          return (url.protocol === 'https:' || url.protocol === 'http:') && url.hostname !== '';
        } catch {
          return false;
        }
      }, 'url must be an absolute https:// URL (http:// only where the tenant allows it)'),
    method: z.enum(httpMethods),
    headers: z
      .record(
        z.string(),
        z
          .string()
          .max(MAX_HEADER_VALUE_LENGTH, `header values are at most ${MAX_HEADER_VALUE_LENGTH} characters`)
          .regex(/^[\t\x20-\x7e\x80-\xff]*$/, 'header values cannot contain control characters or line breaks'),
      )
      .superRefine((headers, ctx) => {
        const names = Object.keys(headers);
        for (const name of names) {
          const problem = headerNameProblem(name);
          if (problem) ctx.addIssue({ code: 'custom', message: problem });
        }
        if (names.length > MAX_SKILL_HEADERS)
          ctx.addIssue({ code: 'custom', message: `at most ${MAX_SKILL_HEADERS} headers` });
        if (new Set(names.map((h) => h.toLowerCase())).size !== names.length) {
          ctx.addIssue({ code: 'custom', message: 'header names must be unique (case-insensitively)' });
        }
      })
      .openapi({ description: 'Name → value; values are stored encrypted and never returned' })
      .optional(),
  })
  .strict()
  .openapi('HttpSkillConfig');

const providers = integrationCatalog.map((i) => i.provider) as [string, ...string[]];

export const IntegrationSkillConfig = z
  .object({
    action: z
      .string()
      .regex(/^[A-Za-z][A-Za-z0-9_.:/-]{0,99}$/, 'action must be 1–100 characters: letters, digits and _ . : / -')
      .openapi({ example: 'create_ticket' }),
    provider: z.enum(providers).optional().openapi({ description: 'A provider of GET /v1/integrations/catalog' }),
  })
  .strict()
  .openapi('IntegrationSkillConfig');

export const BuiltinSkillConfig = z
  .object({
    action: z
      .enum(builtinActions, { message: `action must be one of the builtin actions: ${builtinActions.join(', ')}` })
      .openapi({ description: 'The builtin action the skill runs, with that action’s input schema' }),
  })
  .strict()
  .openapi('BuiltinSkillConfig');

const configDescription = `By type (components HttpSkillConfig, IntegrationSkillConfig and BuiltinSkillConfig). For \`http\`: \`url\` (https; http only when the tenant setting allowHttpSkills is true), \`method\` (GET, POST, PUT, PATCH, DELETE), optional \`headers\` (name → value; values are stored encrypted and never returned). For \`integration\`: \`action\` and optionally \`provider\`. For \`builtin\`: \`action\`, one of ${builtinActions.join(', ')}.`;

export const CreateSkillBody = z
  .object({
    name: SkillName,
    description: Description,
    type: z.enum(skillTypes),
    config: z.record(z.string(), z.unknown()).openapi({ description: configDescription }),
    inputSchema: InputSchema.optional().openapi({
      description: 'JSON Schema of the accepted input; a `builtin` skill takes its action’s and accepts none',
    }),
    enabled: z.boolean().optional(),
  })
  .strict()
  .openapi('CreateSkill');

export const UpdateSkillBody = z
  .object({
    description: Description.optional(),
    config: z
      .record(z.string(), z.unknown())
      .optional()
      .openapi({ description: `Replaces the whole config. ${configDescription}` }),
    inputSchema: InputSchema.nullable().optional(),
    enabled: z.boolean().optional(),
  })
  .strict()
  .openapi('UpdateSkill');

export const SkillConfigView = z
  .object({
    url: z.string().optional(),
    method: z.enum(httpMethods).optional(),
    headerNames: z
      .array(z.string())
      .optional()
      .openapi({ description: 'Names of the configured headers; their values are never returned' }),
    action: z.string().optional(),
    provider: z.string().optional(),
  })
  .openapi('SkillConfig');

export const Skill = z
  .object({
    skillId: z.string(),
    tenantId: z.string(),
    name: z.string(),
    description: z.string(),
    type: z.enum(skillTypes),
    config: SkillConfigView,
    inputSchema: z.record(z.string(), z.unknown()).nullable(),
    enabled: z.boolean(),
    createdAt: z.string(),
    updatedAt: z.string(),
  })
  .openapi('Skill');

export const CreatedSkill = z
  .object({
    skillId: z.string(),
    tenantId: z.string(),
    name: z.string(),
    description: z.string(),
    type: z.enum(skillTypes),
    enabled: z.boolean(),
    createdAt: z.string(),
  })
  .openapi('CreatedSkill');

export const UpdatedSkill = z
  .object({ skillId: z.string(), name: z.string(), enabled: z.boolean(), updatedAt: z.string() })
  .openapi('UpdatedSkill');

export const ListSkillsQuery = z.object({ limit: limitParam(50, 200), cursor: z.string().min(1).max(512).optional() });
export const SkillList = z
  .object({
    items: z.array(Skill).openapi({ description: 'Builtin skills first, then the tenant’s skills oldest first' }),
    nextCursor: z.string().nullable(),
  })
  .openapi('SkillList');

export const SkillPathParams = z.object({
  tenantId: z
    .string()
    .min(1)
    .max(64)
    .openapi({ param: { name: 'tenantId', in: 'path' } }),
  skillId: z
    .string()
    .min(1)
    .max(64)
    .openapi({ param: { name: 'skillId', in: 'path' } }),
});

export const TestSkillBody = z
  .object({ input: z.unknown().optional().openapi({ description: 'The skill input; {} when absent' }) })
  .strict()
  .openapi('TestSkill');

export const SkillTestResult = z
  .object({
    skillId: z.string(),
    invocationId: z.string(),
    ok: z.boolean(),
    output: z.unknown().optional(),
    error: z.object({ code: z.string(), message: z.string(), details: z.unknown().optional() }).optional(),
    durationMs: z.number().int(),
  })
  .openapi('SkillTestResult');
