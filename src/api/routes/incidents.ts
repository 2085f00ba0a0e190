import { createRoute, type OpenAPIHono } from '@hono/zod-openapi';
import { appendAudit } from '../../db/repositories/audit.js';
import { appendEvent } from '../../outbox/append.js';
import { findIncident, findOwnership, listIncidents, markWorkflowStarted, toIncidentView, toWorkflowInput } from '../../db/repositories/incidents.js';
import { ownershipPayload } from '../../domain/ownership.js';
import { consumeQuota, usageCount } from '../../db/repositories/usage.js';
import { incidents } from '../../db/schema/incidents.js';
import { monthlyQuota, quotaWarningKey, quotaWarningsCrossed, usagePeriod } from '../../domain/plans.js';
import { AppError } from '../../errors.js';
import { newId } from '../../ids.js';
import type { AppDeps, AppEnv } from '../context.js';
import { access } from '../middleware/access.js';
import { decodeCursor, nextCursor } from '../cursor.js';
import { errorResponses, jsonResponse } from '../schemas/common.js';
import { failureLogFields } from '../../unavailable.js';
import {
  CreateIncidentBody,
  CreatedIncident,
  Incident,
  IncidentIdParam,
  IncidentList,
  ListIncidentsQuery,
  UpdateIncidentBody,
} from '../schemas/incidents.js';


export function registerIncidentRoutes(app: OpenAPIHono<AppEnv>, deps: AppDeps): void {
  app.openapi(
    createRoute({
      method: 'post',
      path: '/v1/incidents/chat',
      tags: ['incidents'],
      summary: 'Open a manual incident',
      ...access('member'),
      request: { body: { required: true, content: { 'application/json': { schema: CreateIncidentBody } } } },
      responses: { 201: jsonResponse(CreatedIncident, 'Incident opened'), ...errorResponses(400, 401, 403, 429) },
    }),
    async (c) => {
      const auth = c.var.auth;
      const body = c.req.valid('json');
      const now = deps.clock();
      const period = usagePeriod(now);
      const eventsLimit = monthlyQuota(auth.tenant, 'events');
      const investigationsLimit = monthlyQuota(auth.tenant, 'investigations');

      // Row, event, audit and quota count commit together; then the workflow starts. A crash
      // in between is repaired by the worker's reconciler, so an accepted incident is never lost.
      const { row, eventsUsed } = await deps.db.transaction(async (tx) => {
        const ownership = body.service ? await findOwnership(tx, auth.tenantId, body.service) : undefined;
        const inserted = await tx
          .insert(incidents)
          .values({
            id: newId('inc', now.getTime()),
            tenantId: auth.tenantId,
            title: body.title,
            description: body.description,
            severity: 'medium',
            status: 'open',
            source: 'manual',
            version: 1,
            service: body.service ?? null,
            serviceId: ownership?.serviceId ?? null,
            ownerTeam: ownership?.ownerTeam ?? null,
            immediateAttention: ownership?.immediateAttention ?? false,
          })
          .returning();
        const incident = inserted[0]!;
        await appendEvent(tx, {
          tenantId: auth.tenantId,
          type: 'incident.created',
          incidentId: incident.id,
          payload: {
            incidentId: incident.id,
            title: incident.title,
            severity: incident.severity,
            source: incident.source,
            ...ownershipPayload(incident.service, ownership),
          },
          idempotencyKey: `${incident.id}:incident.created`,
        });
        await appendAudit(tx, {
          tenantId: auth.tenantId,
          actorType: 'user',
          actorId: auth.userId,
          action: 'incident.created',
          targetType: 'incident',
          targetId: incident.id,
          incidentId: incident.id,
          requestId: c.get('requestId'),
          details: { title: incident.title, source: incident.source },
        });
        // Last, so the tenant's hot counter row stays locked only until commit.
        const used = await consumeQuota(tx, { tenantId: auth.tenantId, period, metric: 'events', limit: eventsLimit });
        if (used === null) {
          throw new AppError('event_quota_exceeded', `The monthly event quota of ${eventsLimit} is reached for ${period}`);
        }
        // Crossing 80 % or 100 % here warns as ingestion does, once a month whichever path crosses.
        for (const percent of quotaWarningsCrossed(used - 1, used, eventsLimit)) {
          await appendEvent(tx, {
            tenantId: auth.tenantId,
            type: 'system.quota_warning',
            incidentId: null,
            payload: { metric: 'events', period, used, limit: eventsLimit, percent },
            idempotencyKey: quotaWarningKey(auth.tenantId, period, 'events', percent),
          });
        }
        return { row: incident, eventsUsed: used };
      });

      try {
        await deps.workflows.startIncident(toWorkflowInput(row), row.title);
        await markWorkflowStarted(deps.db, row.id);
      } catch (err) {
        const fields = failureLogFields(err);
        c.get('logger')['err' in fields ? 'error' : 'warn']({ ...fields, incidentId: row.id }, 'workflow start failed; the reconciler will retry');
      }

      const investigationsUsed = await usageCount(deps.db, { tenantId: auth.tenantId, period, metric: 'investigations' });
      return c.json(
        {
          incidentId: row.id,
          title: row.title,
          severity: row.severity,
          status: row.status,
          source: row.source,
          createdAt: row.createdAt.toISOString(),
          investigationsRemaining: Math.max(0, investigationsLimit - investigationsUsed),
          eventsRemaining: Math.max(0, eventsLimit - eventsUsed),
        },
        201,
      );
    },
  );

  app.openapi(
    createRoute({
      method: 'get',
      path: '/v1/incidents',
      tags: ['incidents'],
      summary: 'List incidents (newest first by default)',
      ...access('member'),
      request: { query: ListIncidentsQuery },
      responses: { 200: jsonResponse(IncidentList, 'A page of incidents'), ...errorResponses(400, 401, 403) },
    }),
    async (c) => {
      const auth = c.var.auth;
      const query = c.req.valid('query');
      const after = query.cursor ? decodeCursor(query.cursor, query.order) : undefined;
      const page = await listIncidents(deps.db, {
        tenantId: auth.tenantId,
        ...(query.severity ? { severity: query.severity } : {}),
        ...(query.status ? { status: query.status } : {}),
        order: query.order,
        limit: query.limit,
        ...(after ? { after } : {}),
      });
      return c.json(
        {
          incidents: page.rows.map((r) => ({
            incidentId: r.id,
            title: r.title,
            severity: r.severity,
            status: r.status,
            source: r.source,
            createdAt: r.createdAt.toISOString(),
          })),
          count: page.total,
          cursor: nextCursor(page.rows, page.hasMore, query.order),
        },
        200,
      );
    },
  );

  app.openapi(
    createRoute({
      method: 'get',
      path: '/v1/incidents/{incidentId}',
      tags: ['incidents'],
      summary: 'Get one incident',
      ...access('member'),
      request: { params: IncidentIdParam },
      responses: { 200: jsonResponse(Incident, 'The incident'), ...errorResponses(401, 403, 404) },
    }),
    async (c) => {
      const auth = c.var.auth;
      const row = await findIncident(deps.db, auth.tenantId, c.req.valid('param').incidentId);
      if (!row) throw new AppError('incident_not_found', 'No incident has that identifier');
      return c.json(toIncidentView(row), 200);
    },
  );

  app.openapi(
    createRoute({
      method: 'patch',
      path: '/v1/incidents/{incidentId}',
      tags: ['incidents'],
      summary: 'Move an incident to a status (any of the seven; a closed incident reopens)',
      ...access('member'),
      request: {
        params: IncidentIdParam,
        body: { required: true, content: { 'application/json': { schema: UpdateIncidentBody } } },
      },
      responses: { 200: jsonResponse(Incident, 'The incident after the update'), ...errorResponses(400, 401, 403, 404, 409) },
    }),
    async (c) => {
      const auth = c.var.auth;
      const { status } = c.req.valid('json');
      const row = await findIncident(deps.db, auth.tenantId, c.req.valid('param').incidentId);
      if (!row) throw new AppError('incident_not_found', 'No incident has that identifier');
      const view = await deps.workflows.setIncidentStatus(toWorkflowInput(row), row.title, {
        status,
        actor: { type: 'user', id: auth.userId, requestId: c.get('requestId') },
      });
      if (!row.workflowStartedAt) await markWorkflowStarted(deps.db, row.id);
      return c.json(view, 200);
    },
  );
}
