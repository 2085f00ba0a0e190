import { z } from '@hono/zod-openapi';
import { visibleOrEmpty } from './common.js';

export const StartInvestigationBody = z
  .object({ incidentId: z.string().min(1).max(64).openapi({ example: 'inc_01jd...' }) })
  .strict()
  .openapi('StartInvestigation');

export const InvestigationAccepted = z
  .object({ incidentId: z.string(), status: z.literal('investigating') })
  .openapi('InvestigationAccepted');

export const InvestigationContextBody = z
  .object({
    content: z
      .string()
      .trim()
      .min(1, 'content must be 1 to 4000 characters')
      .max(4000, 'content must be 1 to 4000 characters')
      .refine(visibleOrEmpty, 'content must not be blank')
      .openapi({ example: 'We rotated the DNS provider at 03:00 UTC' }),
  })
  .strict()
  .openapi('InvestigationContext');

export const InvestigationContextAccepted = z
  .object({
    incidentId: z.string(),
    sequence: z
      .number()
      .int()
      .openapi({ description: "Position of this context among the incident's context entries" }),
    createdAt: z.string(),
    resynthesis: z
      .boolean()
      .openapi({ description: 'True when a finished investigation will be re-synthesised with it' }),
  })
  .openapi('InvestigationContextAccepted');

export const InvestigationResult = z
  .object({
    incidentId: z.string(),
    status: z.enum(['running', 'completed', 'failed']).openapi({ description: 'Poll until it is not `running`' }),
    rootCause: z
      .string()
      .nullable()
      .openapi({ description: 'null while the investigation is running; when it failed, says so and why' }),
    confidence: z.number().min(0).max(1).openapi({ description: '0 when the investigation failed' }),
    evidence: z.array(z.object({ agentRole: z.string(), content: z.string() })),
    recommendedActions: z.array(z.string()),
    hypotheses: z
      .array(
        z.object({
          kind: z.string().openapi({ description: 'The mechanism: `bad_deploy`, `feature_flag`, `consumer_lag`, …' }),
          statement: z.string(),
          subject: z.string().openapi({ description: 'What it blames: a service, flag, job, queue, vendor…' }),
          probability: z.number().min(0).max(1),
          status: z.enum(['kept', 'discarded']),
          reason: z.string(),
        }),
      )
      .openapi({
        description:
          'The competing hypotheses, best first, with their probability of being the cause (the kept one carries `confidence`); empty while running',
      }),
    failure: z
      .string()
      .nullable()
      .openapi({ description: 'Why the investigation failed, as recorded; null unless failed' }),
    startedAt: z.string(),
    completedAt: z.string().nullable(),
  })
  .openapi('InvestigationResult');
