import { createRoute, type OpenAPIHono } from '@hono/zod-openapi';
import { olderThan } from '../../db/keyset.js';
import { and, asc, count, desc, eq, type SQL } from 'drizzle-orm';
import { incidents } from '../../db/schema/incidents.js';
import { approvals, remediations, remediationSteps } from '../../db/schema/remediation.js';
import { AppError } from '../../errors.js';
import type { AppDeps, AppEnv } from '../context.js';
import { access } from '../middleware/access.js';
import { decodeCursor, encodeCursor } from '../cursor.js';
import { ApprovalList, ListApprovalsQuery, Remediation, RemediationIdParam } from '../schemas/approvals.js';
import { errorResponses, jsonResponse } from '../schemas/common.js';

const iso = (d: Date | null) => (d ? d.toISOString() : null);

const listApprovalsRoute = createRoute({
  method: 'get',
  path: '/v1/approvals',
  tags: ['approvals'],
  summary: 'List remediation approvals, newest first, with their incident and remediation',
  ...access('member'),
  request: { query: ListApprovalsQuery },
  responses: { 200: jsonResponse(ApprovalList, 'A page of approvals'), ...errorResponses(400, 401, 403) },
});

const getRemediationRoute = createRoute({
  method: 'get',
  path: '/v1/remediations/{remediationId}',
  tags: ['approvals'],
  summary: 'Get a remediation: its plan, step statuses and outputs, its approval, timestamps',
  ...access('member'),
  request: { params: RemediationIdParam },
  responses: { 200: jsonResponse(Remediation, 'The remediation'), ...errorResponses(400, 401, 403, 404) },
});

/** The read side of remediation approvals; answering one is the workflow Update (remediation-respond). */
export function registerApprovalRoutes(app: OpenAPIHono<AppEnv>, deps: AppDeps): void {
  app.openapi(listApprovalsRoute, async (c) => {
    const auth = c.var.auth;
    const query = c.req.valid('query');
    const after = query.cursor ? decodeCursor(query.cursor, 'desc') : undefined;
    const filters: SQL[] = [eq(approvals.tenantId, auth.tenantId)];
    if (query.status) filters.push(eq(approvals.status, query.status));
    const where = and(...filters);
    const pageWhere = after ? and(where, olderThan(approvals.createdAt, approvals.id, after)) : where;
    const [rows, totals] = await Promise.all([
      deps.db
        .select({
          approval: approvals,
          incident: { title: incidents.title, severity: incidents.severity, status: incidents.status },
          remediation: { status: remediations.status, plan: remediations.plan },
        })
        .from(approvals)
        .innerJoin(incidents, eq(incidents.id, approvals.incidentId))
        .innerJoin(remediations, eq(remediations.id, approvals.remediationId))
        .where(pageWhere)
        .orderBy(desc(approvals.createdAt), desc(approvals.id))
        .limit(query.limit + 1),
      deps.db.select({ total: count() }).from(approvals).where(where),
    ]);
    const page = rows.slice(0, query.limit);
    const last = page.at(-1);
    return c.json(
      {
        items: page.map(({ approval: a, incident, remediation }) => ({
          approvalId: a.id,
          incidentId: a.incidentId,
          remediationId: a.remediationId,
          status: a.status,
          deadline: a.deadline.toISOString(),
          decidedAt: iso(a.decidedAt),
          decidedBy: a.decidedBy,
          expiredReason: a.expiredReason,
          createdAt: a.createdAt.toISOString(),
          incident,
          remediation: {
            status: remediation.status,
            steps: remediation.plan.length,
            summary: remediation.plan[0]?.description ?? null,
          },
        })),
        total: totals[0]?.total ?? 0,
        nextCursor:
          rows.length > query.limit && last
            ? encodeCursor({ createdAt: last.approval.createdAt, id: last.approval.id, order: 'desc' })
            : null,
      },
      200,
    );
  });

  app.openapi(getRemediationRoute, async (c) => {
    const auth = c.var.auth;
    const { remediationId } = c.req.valid('param');
    const [rem] = await deps.db
      .select()
      .from(remediations)
      .where(and(eq(remediations.tenantId, auth.tenantId), eq(remediations.id, remediationId)));
    if (!rem) throw new AppError('not_found', 'No remediation has that identifier');
    const [steps, [approval]] = await Promise.all([
      deps.db
        .select()
        .from(remediationSteps)
        .where(eq(remediationSteps.remediationId, rem.id))
        .orderBy(asc(remediationSteps.index)),
      deps.db
        .select()
        .from(approvals)
        .where(eq(approvals.remediationId, rem.id))
        .orderBy(desc(approvals.createdAt))
        .limit(1),
    ]);
    const byIndex = new Map(steps.map((s) => [s.index, s]));
    return c.json(
      {
        remediationId: rem.id,
        incidentId: rem.incidentId,
        investigationRun: rem.investigationRun,
        status: rem.status,
        evidenceHash: rem.evidenceHash,
        steps: rem.plan.map((p) => {
          const s = byIndex.get(p.index);
          return {
            index: p.index,
            kind: p.kind,
            action: p.action,
            skillId: p.skillId ?? null,
            input: p.input,
            description: p.description,
            status: s?.status ?? 'pending',
            attempts: s?.attempts ?? 0,
            output: s?.output ?? null,
            error: s?.error ?? null,
            startedAt: iso(s?.startedAt ?? null),
            finishedAt: iso(s?.finishedAt ?? null),
          };
        }),
        verification: rem.verification ?? null,
        failure: rem.failure,
        approval: approval
          ? {
              approvalId: approval.id,
              status: approval.status,
              deadline: approval.deadline.toISOString(),
              decidedAt: iso(approval.decidedAt),
              decidedBy: approval.decidedBy,
              decidedByType: approval.decidedByType,
              notes: approval.notes,
              expiredReason: approval.expiredReason,
              createdAt: approval.createdAt.toISOString(),
            }
          : null,
        createdAt: rem.createdAt.toISOString(),
        updatedAt: rem.updatedAt.toISOString(),
        completedAt: iso(rem.completedAt),
      },
      200,
    );
  });
}
