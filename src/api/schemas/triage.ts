import { z } from '@hono/zod-openapi';
import { evidenceSeverities, evidenceTypes } from '../../db/schema/investigation.js';
import { limitParam } from './common.js';
import { SeveritySchema } from './incidents.js';

export const TriageClassification = z
  .object({
    incidentId: z.string(),
    priority: SeveritySchema,
    summary: z.string(),
    confidence: z.number().min(0).max(1).openapi({ description: 'Above 0.85 counts as high confidence' }),
    suggestedAgents: z.array(z.string()).openapi({ example: ['alerts', 'deployment', 'logs'] }),
  })
  .openapi('TriageClassification');

export const EvidenceItem = z
  .object({
    evidenceId: z.string(),
    type: z.enum(evidenceTypes),
    source: z.string(),
    summary: z.string(),
    severity: z.enum(evidenceSeverities),
    timestamp: z.string(),
    rawSnippet: z.string(),
  })
  .openapi('EvidenceItem');

/** Both documented shapes in one object (DESIGN §5): the triage evidence and the item list. */
export const TriageEvidence = z
  .object({
    incidentId: z.string(),
    evidence: z.object({
      agentRole: z.literal('triage'),
      content: z.object({
        priority: SeveritySchema,
        summary: z.string(),
        confidence: z.number(),
        reasoning: z.string(),
        suggestedAgents: z.array(z.string()),
      }),
      model: z.string(),
      tokensUsed: z.number().int(),
      costUsd: z.number(),
    }),
    items: z.array(EvidenceItem),
    total: z.number().int(),
    nextCursor: z.string().nullable(),
  })
  .openapi('TriageEvidence');

export const EvidenceQuery = z.object({
  type: z.enum(evidenceTypes).optional(),
  limit: limitParam(50, 200),
  cursor: z.string().min(1).max(512).optional(),
});
