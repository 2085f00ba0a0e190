import { createRoute, z, type OpenAPIHono } from '@hono/zod-openapi';
import { requesterOf, type AppEnv } from '../context.js';
import { access } from '../middleware/access.js';
import { errorResponses, jsonResponse } from '../schemas/common.js';

const RespondBody = z
  .object({
    decision: z
      .enum(['approve', 'reject'])
      .openapi({ description: '`approve` runs the remediation now; `reject` cancels it' }),
    notes: z.string().trim().min(1).max(2000).optional().openapi({ description: 'Kept in the audit log' }),
  })
  .strict()
  .openapi('ApprovalResponse');

const ApprovalDecided = z
  .object({
    approvalId: z.string(),
    decision: z.enum(['approve', 'reject']),
    remediationId: z.string(),
    remediationStatus: z.enum(['executing', 'rejected']),
    decidedAt: z.string(),
  })
  .openapi('ApprovalDecision');

const ApprovalIdParam = z.object({
  approvalId: z
    .string()
    .min(1)
    .max(64)
    .openapi({ param: { name: 'approvalId', in: 'path' } }),
});

const respondToApproval = createRoute({
  method: 'post',
  path: '/v1/notifications/approvals/{approvalId}/respond',
  tags: ['remediation'],
  summary: 'Approve or reject a remediation before its deadline (admin)',
  description:
    'A workflow Update with a validator, so the answer is synchronous: 409 `approval_expired` after the deadline (or when newer evidence superseded the proposal), 409 `already_decided` on a second answer (of two concurrent answers exactly one succeeds).',
  ...access('admin'),
  request: {
    params: ApprovalIdParam,
    body: { required: true, content: { 'application/json': { schema: RespondBody } } },
  },
  responses: { 200: jsonResponse(ApprovalDecided, 'The decision'), ...errorResponses(400, 401, 403, 404, 409, 503) },
});

export function registerApprovalRespondRoute(app: OpenAPIHono<AppEnv>): void {
  app.openapi(respondToApproval, async (c) => {
    const answered = await c.var.services.incidents.respondToApproval(
      requesterOf(c),
      c.req.valid('param').approvalId,
      c.req.valid('json'),
    );
    return c.json(
      {
        approvalId: answered.approvalId,
        decision: answered.decision,
        remediationId: answered.remediationId,
        remediationStatus: answered.decision === 'approve' ? ('executing' as const) : ('rejected' as const),
        decidedAt: answered.decidedAt,
      },
      200,
    );
  });
}
