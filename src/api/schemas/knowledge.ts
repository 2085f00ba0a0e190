import { z } from '@hono/zod-openapi';
import { feedbackTypes, patternStatuses } from '../../db/schema/knowledge.js';
import { limitParam } from './common.js';

export const Pattern = z
  .object({
    patternId: z.string().openapi({ example: 'pat_01j…' }),
    title: z.string().openapi({ example: 'Connection pool exhaustion on checkout-api (HighErrorRate)' }),
    confidence: z
      .number()
      .min(0)
      .max(1)
      .openapi({ description: 'Beta posterior mean (confirms + 1) / (confirms + rejects + 2)', example: 0.86 }),
    occurrences: z
      .number()
      .int()
      .openapi({ description: 'Resolved or corrected incidents counted as this pattern', example: 5 }),
    status: z
      .enum(patternStatuses)
      .openapi({ description: 'stable when occurrences ≥ 5 and confidence ≥ 0.85, else emerging' }),
    createdAt: z.string(),
    lastSeenAt: z.string(),
    service: z.string().nullable(),
    category: z.string().openapi({
      description: 'Root-cause category (a hypothesis kind of the analyzer, or other)',
      example: 'connection_pool',
    }),
    alertNames: z.array(z.string()),
    rootCause: z.string(),
    fix: z.array(z.string()).openapi({ description: 'The actions that resolved it' }),
    confirms: z.number().int(),
    rejects: z.number().int(),
  })
  .openapi('Pattern');

/** "0", "0.85", "1": a number from 0 to 1 inclusive (an empty value is not 0). */
const MinConfidence = z
  .string()
  .trim()
  .regex(/^[0-9]*\.?[0-9]+$/, 'minConfidence must be a decimal number from 0 to 1, such as 0.85')
  .transform((v) => Number(v))
  .pipe(
    z
      .number({ message: 'minConfidence must be a number from 0 to 1' })
      .min(0, 'minConfidence must be from 0 to 1')
      .max(1, 'minConfidence must be from 0 to 1'),
  )
  .optional()
  .openapi({
    param: { name: 'minConfidence', in: 'query' },
    type: 'number',
    example: 0.8,
    description: 'Only patterns with confidence ≥ this (0 to 1 inclusive)',
  });

export const ListPatternsQuery = z.object({
  status: z
    .enum(patternStatuses)
    .optional()
    .openapi({ param: { name: 'status', in: 'query' } }),
  minConfidence: MinConfidence,
  limit: limitParam(20, 100),
  cursor: z.string().min(1).max(512).optional(),
});

export const PatternList = z
  .object({
    patterns: z.array(Pattern),
    count: z.number().int().openapi({ description: 'Total matching across all pages' }),
    cursor: z.string().nullable().openapi({ description: 'Null when there are no more pages' }),
  })
  .openapi('PatternList');

export const FeedbackBody = z
  .object({
    incidentId: z.string().min(1).max(64).openapi({ example: 'inc_01j…' }),
    patternId: z.string().min(1).max(64).optional().openapi({
      description: 'Omit to give feedback on the pattern the incident matched (when exactly one), or free-form',
    }),
    type: z.enum(feedbackTypes),
    comment: z
      .string()
      .max(4000)
      .optional()
      .openapi({ description: 'Required for correct_rca: the corrected root cause (and what fixed it)' }),
  })
  .strict()
  .openapi('FeedbackRequest');

export const Feedback = z
  .object({
    feedbackId: z.string().openapi({ example: 'fbk_01j…' }),
    incidentId: z.string(),
    patternId: z
      .string()
      .nullable()
      .openapi({ description: 'The pattern the verdict applies to; null for free-form feedback' }),
    type: z.enum(feedbackTypes),
    comment: z.string().nullable(),
    updatedConfidence: z
      .number()
      .nullable()
      .openapi({ description: "The pattern's confidence after the feedback; null for free-form feedback" }),
    createdAt: z.string(),
    updatedAt: z.string(),
    correctedPattern: Pattern.nullable()
      .optional()
      .openapi({ description: 'correct_rca: the pattern the corrected root cause describes (created or reinforced)' }),
  })
  .openapi('Feedback');
