import { createRoute, type OpenAPIHono } from '@hono/zod-openapi';
import { listAudit, toAuditEntryView, verifyAuditChain, type ChainVerification } from '../../db/repositories/audit.js';
import { AppError } from '../../errors.js';
import type { AppDeps, AppEnv } from '../context.js';
import { access } from '../middleware/access.js';
import { decodeCursor, nextCursor } from '../cursor.js';
import { AuditList, AuditVerification, ListAuditQuery, rangeBound, VerifyAuditQuery } from '../schemas/audit.js';
import { errorResponses, jsonResponse } from '../schemas/common.js';

const tags = ['audit'];
const bound = (value: string | undefined, end: 'from' | 'to') =>
  value === undefined ? undefined : rangeBound(value, end);

/**
 * Verifications that run at once on one api process, at most. Each is one statement over a
 * whole chain with its own 10-minute bound on a connection of the api's pool of
 * 20: unbounded, concurrent calls could hold every connection. The same verification asked
 * again while it runs (same tenant and range) shares the running one.
 */
const MAX_CONCURRENT_VERIFICATIONS = 2;

const listAuditRoute = createRoute({
  method: 'get',
  path: '/v1/audit',
  tags,
  summary: 'List audit entries, newest first (admin)',
  ...access('admin'),
  request: { query: ListAuditQuery },
  responses: { 200: jsonResponse(AuditList, 'A page of audit entries'), ...errorResponses(400, 401, 403) },
});

const verifyAuditRoute = createRoute({
  method: 'get',
  path: '/v1/audit/verify',
  tags,
  summary: "Verify the tenant's audit hash chain over a range (admin)",
  description:
    'Recomputes every entry’s hash from its content and checks each link to the entry before it and that no position is missing. Without `to`, the chain head must also be the last entry.',
  ...access('admin'),
  request: { query: VerifyAuditQuery },
  responses: { 200: jsonResponse(AuditVerification, 'The verification result'), ...errorResponses(400, 401, 403) },
});

/** The tenant's tamper-evident audit log (admins only): a filtered listing and chain verification. */
export function registerAuditRoutes(app: OpenAPIHono<AppEnv>, deps: AppDeps): void {
  const verifications = new Map<string, Promise<ChainVerification>>();
  app.openapi(listAuditRoute, async (c) => {
    const auth = c.var.auth;
    const query = c.req.valid('query');
    const { rows, hasMore } = await listAudit(deps.db, auth.tenantId, {
      actorType: query.actorType,
      action: query.action,
      incidentId: query.incidentId,
      from: bound(query.from, 'from'),
      to: bound(query.to, 'to'),
      limit: query.limit,
      after: query.cursor ? decodeCursor(query.cursor, 'desc') : undefined,
    });
    const page = rows.map(toAuditEntryView);
    return c.json(
      {
        items: page,
        nextCursor: nextCursor(
          rows.map((r) => ({ createdAt: r.occurredAt, id: r.id })),
          hasMore,
        ),
      },
      200,
    );
  });

  app.openapi(verifyAuditRoute, async (c) => {
    const auth = c.var.auth;
    const query = c.req.valid('query');
    const key = `${auth.tenantId}|${query.from ?? ''}|${query.to ?? ''}`;
    let running = verifications.get(key);
    if (!running) {
      if (verifications.size >= MAX_CONCURRENT_VERIFICATIONS) {
        c.header('Retry-After', '5');
        throw new AppError(
          'rate_limit_exceeded',
          'Audit chain verifications are already running on this server; retry in a few seconds',
        );
      }
      running = verifyAuditChain(deps.db, auth.tenantId, {
        from: bound(query.from, 'from'),
        to: bound(query.to, 'to'),
      }).finally(() => verifications.delete(key));
      verifications.set(key, running);
    }
    return c.json(await running, 200);
  });
}
