import { and, eq } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { auditLog } from '../../src/db/schema/audit.js';
import { events } from '../../src/db/schema/events.js';
import { incidents } from '../../src/db/schema/incidents.js';
import { evidenceItems, triageResults } from '../../src/db/schema/investigation.js';
import { services } from '../../src/db/schema/topology.js';
import { newId } from '../../src/ids.js';
import { getStateQuery } from '../../src/workflows/messages.js';
import { startTestService, type TestService } from '../helpers/service.js';
import { createKey, eventually, postWebhook } from '../helpers/webhooks.js';

let svc: TestService;
let tenant: { tenantId: string; admin: string; member: string };

beforeAll(async () => {
  svc = await startTestService();
  tenant = await svc.newTenant({ plan: 'plan_business' });
  await svc.database.db.insert(services).values({
    id: newId('svc'),
    tenantId: tenant.tenantId,
    name: 'payments-api',
    type: 'api',
    team: 'payments',
    criticality: 9,
  });
});
afterAll(() => svc?.stop());

async function manualIncident(extra: Record<string, unknown> = {}) {
  const res = await svc.api('POST', '/v1/incidents/chat', {
    token: tenant.member,
    body: {
      title: 'Card payments failing',
      description: 'Authorisations time out with 504 errors since 03:10',
      ...extra,
    },
  });
  expect(res.status).toBe(201);
  return res.body.incidentId as string;
}

async function eventsOf(incidentId: string, type: string) {
  return svc.database.db
    .select()
    .from(events)
    .where(and(eq(events.incidentId, incidentId), eq(events.type, type)))
    .orderBy(events.seq);
}

describe('POST /v1/triage/{incidentId}', () => {
  it('classifies, moves an open incident to triaging, and takes the priority as severity', async () => {
    const id = await manualIncident({ service: 'payments-api' });
    const res = await svc.api('POST', `/v1/triage/${id}`, { token: tenant.member });
    expect(res.status).toBe(200);
    expect(Object.keys(res.body).sort()).toEqual([
      'confidence',
      'incidentId',
      'priority',
      'suggestedAgents',
      'summary',
    ]);
    expect(res.body).toMatchObject({ incidentId: id, priority: 'high' }); // medium, raised for a 9/10 service
    expect(res.body.summary).toContain('payments-api');
    expect(res.body.suggestedAgents).toEqual(expect.arrayContaining(['alerts', 'logs']));
    expect(res.body.confidence).toBeGreaterThan(0);
    expect(res.body.confidence).toBeLessThanOrEqual(1);

    const [row] = await svc.database.db.select().from(incidents).where(eq(incidents.id, id));
    expect(row).toMatchObject({ severity: 'high', status: 'triaging' });
    expect((await eventsOf(id, 'incident.severity_changed'))[0]!.payload).toMatchObject({
      from: 'medium',
      to: 'high',
      reason: 'triage',
    });
    expect((await eventsOf(id, 'triage.completed'))[0]!.payload).toMatchObject({
      priority: 'high',
      model: 'builtin-analyzer-1',
    });
    const audits = await svc.database.db
      .select()
      .from(auditLog)
      .where(and(eq(auditLog.incidentId, id), eq(auditLog.action, 'triage.completed')))
      .orderBy(auditLog.seq);
    expect(audits).toHaveLength(1);
    expect(audits[0]).toMatchObject({ actorType: 'user', actorId: 'user-member', workflowId: id });
    const state = await svc.client.workflow.getHandle(id).query(getStateQuery);
    expect(state).toMatchObject({ status: 'triaging', severity: 'high', triageRuns: 1, triagePriority: 'high' });
    const description = await svc.client.workflow.getHandle(id).describe();
    expect(description.typedSearchAttributes.getAll().find((p) => p.key.name === 'Severity')?.value).toBe('high');
  });

  it('re-triages on a second call without a second severity change', async () => {
    const id = await manualIncident({ service: 'payments-api' });
    expect((await svc.api('POST', `/v1/triage/${id}`, { token: tenant.admin })).status).toBe(200);
    const again = await svc.api('POST', `/v1/triage/${id}`, { token: tenant.admin });
    expect(again.status).toBe(200);
    expect(again.body.priority).toBe('high');
    expect(await eventsOf(id, 'triage.completed')).toHaveLength(2);
    expect(await eventsOf(id, 'incident.severity_changed')).toHaveLength(1);
    const [stored] = await svc.database.db.select().from(triageResults).where(eq(triageResults.incidentId, id));
    expect(stored!.run).toBe(2);
  });

  it('answers 404 incident_not_found for unknown and foreign incidents, 409 for a closed one, 401 without a token', async () => {
    const other = await svc.newTenant();
    const foreign = await svc.api('POST', '/v1/incidents/chat', {
      token: other.member,
      body: { title: 'Theirs', description: 'Not yours to triage' },
    });
    expect(foreign.status).toBe(201);
    for (const path of ['/v1/triage/inc_missing', `/v1/triage/${foreign.body.incidentId}`]) {
      const res = await svc.api('POST', path, { token: tenant.member });
      expect(res.status).toBe(404);
      expect(res.body.error).toBe('incident_not_found');
    }
    expect((await svc.api('POST', '/v1/triage/inc_missing')).status).toBe(401);
    const id = await manualIncident();
    expect(
      (await svc.api('PATCH', `/v1/incidents/${id}`, { token: tenant.member, body: { status: 'closed' } })).status,
    ).toBe(200);
    const closed = await svc.api('POST', `/v1/triage/${id}`, { token: tenant.member });
    expect(closed.status).toBe(409);
    expect(closed.body.error).toBe('conflict');
  });

  it('runs triage when an incident is moved to triaging', async () => {
    const id = await manualIncident({ service: 'payments-api' });
    const res = await svc.api('PATCH', `/v1/incidents/${id}`, { token: tenant.member, body: { status: 'triaging' } });
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ status: 'triaging', severity: 'high' });
    expect(await eventsOf(id, 'triage.completed')).toHaveLength(1);
  });

  it('triages automated incidents on their own right after creation', async () => {
    const key = await createKey(svc, tenant.admin);
    const res = await postWebhook(
      svc,
      tenant.tenantId,
      'generic',
      { name: 'PaymentsErrors', severity: 'high', service: 'payments-api', summary: '5xx above 10%' },
      { key: key.key },
    );
    const id = res.body.incidentIds[0];
    const stored = await eventually(
      async () => (await svc.database.db.select().from(triageResults).where(eq(triageResults.incidentId, id)))[0],
    );
    expect(stored).toMatchObject({ priority: 'critical', model: 'builtin-analyzer-1', tokensUsed: 0, costUsd: 0 }); // high, raised for a 9/10 service
    const [row] = await eventually(async () => {
      const rows = await svc.database.db.select().from(incidents).where(eq(incidents.id, id));
      return rows[0]?.status === 'triaging' || rows[0]?.status === 'investigating' ? rows : undefined; // then investigated on its own
    });
    expect(row!.severity).toBe('critical');
    const audits = await svc.database.db
      .select()
      .from(auditLog)
      .where(and(eq(auditLog.incidentId, id), eq(auditLog.action, 'triage.completed')))
      .orderBy(auditLog.seq);
    expect(audits[0]).toMatchObject({ actorType: 'system', actorId: 'auto-triage' });
  });
});

describe('GET /v1/triage/{incidentId}/evidence', () => {
  it('answers 404 triage_not_started before triage and incident_not_found for an unknown incident', async () => {
    const id = await manualIncident();
    const before = await svc.api('GET', `/v1/triage/${id}/evidence`, { token: tenant.member });
    expect(before.status).toBe(404);
    expect(before.body.error).toBe('triage_not_started');
    const unknown = await svc.api('GET', '/v1/triage/inc_missing/evidence', { token: tenant.member });
    expect(unknown.status).toBe(404);
    expect(unknown.body.error).toBe('incident_not_found');
  });

  it('carries the triage evidence object and pages the evidence items with a type filter', async () => {
    const id = await manualIncident({ service: 'payments-api' });
    await svc.api('POST', `/v1/triage/${id}`, { token: tenant.member });
    const empty = await svc.api('GET', `/v1/triage/${id}/evidence`, { token: tenant.member });
    expect(empty.status).toBe(200);
    expect(empty.body).toMatchObject({
      incidentId: id,
      evidence: {
        agentRole: 'triage',
        content: { priority: 'high', confidence: expect.any(Number) },
        model: 'builtin-analyzer-1',
        tokensUsed: 0,
        costUsd: 0,
      },
      items: [],
      total: 0,
      nextCursor: null,
    });
    expect(empty.body.evidence.content.reasoning).toContain('Priority high');

    const base = Date.now();
    await svc.database.db.insert(evidenceItems).values(
      Array.from({ length: 5 }, (_, i) => ({
        id: newId('evi', base + i),
        tenantId: tenant.tenantId,
        incidentId: id,
        agentRole: i < 3 ? 'logs' : 'deployment',
        type: i < 3 ? ('log' as const) : ('deployment' as const),
        source: i < 3 ? 'alertmanager' : 'github',
        summary: `finding ${i}`,
        severity: 'high' as const,
        occurredAt: new Date(base - 60_000),
        rawSnippet: `raw ${i}`,
        dedupeKey: `k${i}`,
        createdAt: new Date(base + i),
      })),
    );
    const first = await svc.api('GET', `/v1/triage/${id}/evidence?limit=2`, { token: tenant.member });
    expect(first.body.total).toBe(5);
    expect(first.body.items.map((i: { summary: string }) => i.summary)).toEqual(['finding 4', 'finding 3']);
    expect(Object.keys(first.body.items[0]).sort()).toEqual([
      'evidenceId',
      'rawSnippet',
      'severity',
      'source',
      'summary',
      'timestamp',
      'type',
    ]);
    const second = await svc.api('GET', `/v1/triage/${id}/evidence?limit=2&cursor=${first.body.nextCursor}`, {
      token: tenant.member,
    });
    expect(second.body.items.map((i: { summary: string }) => i.summary)).toEqual(['finding 2', 'finding 1']);
    const logs = await svc.api('GET', `/v1/triage/${id}/evidence?type=log`, { token: tenant.member });
    expect(logs.body).toMatchObject({ total: 3, nextCursor: null });
    expect(logs.body.items.every((i: { type: string }) => i.type === 'log')).toBe(true);
    for (const bad of ['type=trace', 'limit=0', 'limit=201', 'cursor=nope']) {
      const res = await svc.api('GET', `/v1/triage/${id}/evidence?${bad}`, { token: tenant.member });
      expect(res.status).toBe(400);
      expect(res.body.error).toBe('validation_error');
    }
    const other = await svc.newTenant();
    const foreign = await svc.api('GET', `/v1/triage/${id}/evidence`, { token: other.member });
    expect(foreign.status).toBe(404);
    expect(foreign.body.error).toBe('incident_not_found');
  });
});
