import { z } from '@hono/zod-openapi';
import { approvalStatuses, remediationStatuses, stepStatuses } from '../../db/schema/remediation.js';
import { limitParam } from './common.js';

export const ListApprovalsQuery = z.object({
  status: z.enum(approvalStatuses).optional().openapi({ description: 'Only approvals in this state' }),
  limit: limitParam(50, 200),
  cursor: z.string().min(1).max(512).optional(),
});

export const ApprovalSummary = z
  .object({
    approvalId: z.string().openapi({ example: 'apr_01j…' }),
    incidentId: z.string(),
    remediationId: z.string(),
    status: z.enum(approvalStatuses),
    deadline: z.string(),
    decidedAt: z.string().nullable(),
    decidedBy: z.string().nullable(),
    expiredReason: z.string().nullable(),
    createdAt: z.string(),
    incident: z.object({ title: z.string(), severity: z.string(), status: z.string() }),
    remediation: z.object({
      status: z.enum(remediationStatuses),
      steps: z.number().int().openapi({ description: 'Number of steps in the plan' }),
      summary: z.string().nullable().openapi({ description: "The first step's recommended action" }),
    }),
  })
  .openapi('ApprovalSummary');

export const ApprovalList = z
  .object({ items: z.array(ApprovalSummary), total: z.number().int(), nextCursor: z.string().nullable() })
  .openapi('ApprovalList');

export const RemediationIdParam = z.object({
  remediationId: z
    .string()
    .min(1)
    .max(64)
    .openapi({ param: { name: 'remediationId', in: 'path' }, example: 'rem_01j…' }),
});

export const RemediationStep = z
  .object({
    index: z.number().int(),
    kind: z.enum(['builtin', 'skill', 'integration']),
    action: z.string(),
    skillId: z.string().nullable(),
    input: z.record(z.string(), z.unknown()),
    description: z.string(),
    status: z.enum(stepStatuses),
    attempts: z.number().int(),
    output: z.unknown(),
    error: z.string().nullable(),
    startedAt: z.string().nullable(),
    finishedAt: z.string().nullable(),
  })
  .openapi('RemediationStep');

export const Remediation = z
  .object({
    remediationId: z.string(),
    incidentId: z.string(),
    investigationRun: z.number().int(),
    status: z.enum(remediationStatuses),
    evidenceHash: z.string(),
    steps: z.array(RemediationStep),
    verification: z.record(z.string(), z.unknown()).nullable(),
    failure: z.string().nullable(),
    approval: z
      .object({
        approvalId: z.string(),
        status: z.enum(approvalStatuses),
        deadline: z.string(),
        decidedAt: z.string().nullable(),
        decidedBy: z.string().nullable(),
        decidedByType: z.string().nullable(),
        notes: z.string().nullable(),
        expiredReason: z.string().nullable(),
        createdAt: z.string(),
      })
      .nullable(),
    createdAt: z.string(),
    updatedAt: z.string(),
    completedAt: z.string().nullable(),
  })
  .openapi('Remediation');
