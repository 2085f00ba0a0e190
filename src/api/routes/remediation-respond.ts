import { createRoute, z, type OpenAPIHono } from '@hono/zod-openapi';
import { and, eq } from 'drizzle-orm';
import { approvals } from '../../db/schema/remediation.js';
import { AppError } from '../../errors.js';
import type { AppDeps, AppEnv } from '../context.js';
import { access } from '../middleware/access.js';
import { errorResponses, jsonResponse } from '../schemas/common.js';

const RespondBody = z
  .object({
    decision: z.enum(['approve', 'reject']).openapi({ description: '`approve` runs the remediation now; `reject` cancels it' }),
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
  approvalId: z.string().min(1).max(64).openapi({ param: { name: 'approvalId', in: 'path' } }),
});

/** Why an approval is no longer open, from its stored reason. */
function expiredMessage(reason: string | null): string {
  switch (reason) {
    case 'deadline':
      return 'The approval deadline has passed';
    case 'superseded':
      return 'This approval was superseded by a proposal on newer evidence';
    case 'resolved':
    case 'closed':
      return `The approval ended when its incident was ${reason}`;
    case 'status_changed':
      return 'The approval ended when its incident was moved out of awaiting_approval';
    default:
      return 'The approval is no longer open: its deadline passed, newer evidence superseded it, or its incident moved on';
  }
}

export function registerApprovalRespondRoute(app: OpenAPIHono<AppEnv>, deps: AppDeps): void {
  app.openapi(
    createRoute({
      method: 'post',
      path: '/v1/notifications/approvals/{approvalId}/respond',
      tags: ['remediation'],
      summary: "Approve or reject a remediation before its deadline (admin)",
      description:
        "A workflow Update with a validator, so the answer is synchronous: 409 `approval_expired` after the deadline (or when newer evidence superseded the proposal), 409 `already_decided` on a second answer (of two concurrent answers exactly one succeeds).",
      ...access('admin'),
      request: { params: ApprovalIdParam, body: { required: true, content: { 'application/json': { schema: RespondBody } } } },
      responses: { 200: jsonResponse(ApprovalDecided, 'The decision'), ...errorResponses(400, 401, 403, 404, 409, 503) },
    }),
    async (c) => {
      const auth = c.var.auth;
      const { approvalId } = c.req.valid('param');
      const { decision, notes } = c.req.valid('json');
      const [row] = await deps.db
        .select()
        .from(approvals)
        .where(and(eq(approvals.tenantId, auth.tenantId), eq(approvals.id, approvalId)));
      if (!row) throw new AppError('approval_not_found', 'No approval has that identifier');
      const endedAnswer = () =>
        row.status === 'approved' || row.status === 'rejected'
          ? new AppError('already_decided', 'This approval has already been answered')
          : new AppError('approval_expired', expiredMessage(row.status === 'expired' ? row.expiredReason : null));
      // What the row already says needs no workflow (which may be unreachable): an answered or
      // expired approval, or one past its deadline (the workflow's validator refuses it too;
      // its timer expires it).
      if (row.status !== 'pending') throw endedAnswer();
      if (deps.clock().getTime() >= row.deadline.getTime()) {
        throw new AppError('approval_expired', 'The approval deadline has passed');
      }
      const answered = await deps.workflows
        .respondToApproval(row.incidentId, {
          approvalId,
          decision,
          ...(notes !== undefined ? { notes } : {}),
          actor: { type: 'user', id: auth.userId, requestId: c.get('requestId') },
        })
        .catch((err: unknown) => {
          // The stored approval is pending and within its deadline (judged above), but the
          // workflow does not wait on it yet: it has not taken in its own proposal (a worker
          // behind). Not a 404 for an approval the list shows: retry shortly (decision 202).
          if (err instanceof AppError && err.code === 'approval_not_found') {
            throw new AppError('service_unavailable', 'The approval is not ready to be answered yet; retry shortly');
          }
          throw err;
        });
      if (answered === 'gone') throw endedAnswer(); // the incident's workflow has ended
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
    },
  );
}
