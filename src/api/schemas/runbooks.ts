import { z } from '@hono/zod-openapi';
import { hasVisibleText } from '../../domain/text.js';
import { limitParam, oneLine } from './common.js';

export const MAX_RUNBOOK_TAGS = 20;
export const MAX_RUNBOOK_CONTENT = 50_000;

const TAG_PATTERN = /^[a-z0-9][a-z0-9_.-]{0,39}$/;
const tagMessage = 'a tag is 1 to 40 of a-z, 0-9, "_", "." and "-", starting with a letter or digit';

/** A tag, trimmed and lowercased before it is checked. */
const Tag = z.string().trim().toLowerCase().regex(TAG_PATTERN, tagMessage).openapi({ example: 'postgres' });
const Tags = z
  .array(Tag)
  .max(5 * MAX_RUNBOOK_TAGS, `at most ${5 * MAX_RUNBOOK_TAGS} tags may be sent`)
  // Counted after duplicates are dropped, as the description says.
  .refine((tags) => new Set(tags).size <= MAX_RUNBOOK_TAGS, `at most ${MAX_RUNBOOK_TAGS} distinct tags`)
  .transform((tags) => [...new Set(tags)])
  .openapi({
    description: 'Each tag is trimmed and lowercased, then checked; duplicates are dropped',
    example: ['postgres', 'connections'],
  });
const Title = oneLine(200, 'title is required').openapi({ example: 'Postgres connection exhaustion' });
const Service = oneLine(200, 'service must not be empty').openapi({ example: 'checkout-api' });
const Content = z
  .string()
  .min(1, 'content is required')
  .max(MAX_RUNBOOK_CONTENT, `content must be at most ${MAX_RUNBOOK_CONTENT} characters`)
  .refine(hasVisibleText, 'content must not be blank')
  .openapi({
    description: 'Markdown. Its steps are `## Step N …` headings, else numbered items, else bullet items (see `steps`)',
    example:
      '1. Check `pg_stat_activity` for idle connections\n2. Restart the pgbouncer pool\n3. Scale checkout-api down to 4 replicas',
  });

export const CreateRunbookBody = z
  .object({ title: Title, service: Service.nullable().optional(), tags: Tags.default([]), content: Content })
  .strict()
  .openapi('CreateRunbook');

export const UpdateRunbookBody = z
  .object({
    title: Title.optional(),
    service: Service.nullable().optional(),
    tags: Tags.optional(),
    content: Content.optional(),
  })
  .strict()
  .refine((body) => Object.values(body).some((v) => v !== undefined), {
    message: 'Give at least one of title, service, tags, content',
  })
  .openapi('UpdateRunbook', { minProperties: 1 });

export const RunbookStep = z
  .object({
    number: z.number().int().openapi({ description: 'From 1, in document order', example: 2 }),
    text: z.string().openapi({ example: 'Restart the pgbouncer pool' }),
  })
  .openapi('RunbookStep');

export const Runbook = z
  .object({
    runbookId: z.string().openapi({ example: 'rbk_01j…' }),
    title: z.string(),
    service: z.string().nullable(),
    tags: z.array(z.string()),
    content: z.string(),
    steps: z.array(RunbookStep),
    createdAt: z.string(),
    updatedAt: z.string(),
  })
  .openapi('Runbook');

export const RunbookSummary = Runbook.pick({
  runbookId: true,
  title: true,
  service: true,
  tags: true,
  createdAt: true,
  updatedAt: true,
}).openapi('RunbookSummary');

export const ListRunbooksQuery = z.object({
  service: z.string().min(1).max(200).optional().openapi({ description: 'Only runbooks for exactly this service' }),
  tag: Tag.optional().openapi({ description: 'Only runbooks with this tag' }),
  q: z
    .string()
    .trim()
    .min(1, 'q must not be empty')
    .max(200)
    .optional()
    .openapi({ description: 'Case-insensitive text to find in the title or the content' }),
  limit: limitParam(50, 200),
  cursor: z.string().min(1).max(512).optional(),
});
export const RunbookList = z
  .object({ items: z.array(RunbookSummary), total: z.number().int(), nextCursor: z.string().nullable() })
  .openapi('RunbookList');

export const RunbookIdParam = z.object({
  runbookId: z
    .string()
    .min(1)
    .max(64)
    .openapi({ param: { name: 'runbookId', in: 'path' } }),
});
