import { and, eq, like } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { evidenceItems, investigations } from '../../src/db/schema/investigation.js';
import { skillInvocations } from '../../src/db/schema/skills.js';
import { tenants } from '../../src/db/schema/tenants.js';
import { getStateQuery } from '../../src/workflows/messages.js';
import { startTestService, type TestService } from '../helpers/service.js';
import { startSkillServer, type SkillServer } from '../helpers/skill-server.js';
import { eventually } from '../helpers/webhooks.js';

// The agents call the tenant's skills during an investigation: a real local HTTP server answers
// them (the service's skill allowlist admits 127.0.0.1 for it).
let svc: TestService;
let server: SkillServer;
let tenant: { tenantId: string; admin: string; member: string };

beforeAll(async () => {
  server = await startSkillServer();
  svc = await startTestService({
    skills: { allowedNetworks: ['127.0.0.1/32'], limits: { timeoutMs: 1000, retryBaseDelayMs: 10 } },
  });
  tenant = await svc.newTenant({ plan: 'plan_business', settings: { allowHttpSkills: true } });
});
afterAll(async () => {
  await svc?.stop();
  await server?.close();
});

async function createSkill(body: Record<string, unknown>, who = tenant) {
  const res = await svc.api('POST', `/api/v1/tenants/${who.tenantId}/skills`, {
    token: who.admin,
    body: { type: 'http', ...body },
  });
  expect(res.status, JSON.stringify(res.body)).toBe(201);
  return res.body as { skillId: string; name: string };
}

async function investigate(who: typeof tenant, service: string) {
  const created = await svc.api('POST', '/v1/incidents/chat', {
    token: who.member,
    body: { title: 'Checkout errors', description: 'Checkout answers 502 errors to some customers', service },
  });
  expect(created.status).toBe(201);
  const id = created.body.incidentId as string;
  const started = await svc.api('POST', '/v1/investigation/', { token: who.member, body: { incidentId: id } });
  expect(started.status).toBe(202);
  const done = await eventually(async () => {
    const res = await svc.api('GET', `/v1/investigation/${id}`, { token: who.member });
    const state = await svc.client.workflow.getHandle(id).query(getStateQuery);
    return res.body.status === 'completed' && (state.syntheses ?? 0) >= 1 ? res : undefined;
  }, 30_000);
  const finding = (role: string) =>
    (done.body.evidence as Array<{ agentRole: string; content: string }>).find((e) => e.agentRole === role)!.content;
  return { id, done, finding };
}

describe('agents calling tenant skills', () => {
  it('calls the GET skills routed to each agent with input bound from the incident, and their answers lead the root cause', async () => {
    const logs = await createSkill({
      name: 'fetch_logs',
      description: 'Fetch the recent error logs of a service',
      config: { url: `${server.url}/logs`, method: 'GET' },
      inputSchema: {
        type: 'object',
        properties: {
          service: { type: 'string' },
          since: { type: 'string' },
          until: { type: 'string' },
          limit: { type: 'integer' },
        },
        required: ['service', 'since'],
      },
    });
    // Never called by an agent: a POST (an action needing approval), a disabled skill, a skill
    // whose required input the agent cannot fill.
    await createSkill({
      name: 'restart_and_tail_logs',
      description: 'Restart the pods of a service and tail their logs',
      config: { url: `${server.url}/echo`, method: 'POST' },
    });
    const disabled = await createSkill({
      name: 'old_logs',
      description: 'Old log search',
      config: { url: `${server.url}/echo`, method: 'GET' },
    });
    expect(
      (
        await svc.api('PATCH', `/api/v1/tenants/${tenant.tenantId}/skills/${disabled.skillId}`, {
          token: tenant.admin,
          body: { enabled: false },
        })
      ).status,
    ).toBe(200);
    await createSkill({
      name: 'cluster_logs',
      description: 'Logs of a Kubernetes cluster',
      config: { url: `${server.url}/echo`, method: 'GET' },
      inputSchema: { type: 'object', properties: { cluster: { type: 'string' } }, required: ['cluster'] },
    });
    // A deployment skill that fails: its agent notes it, the investigation goes on.
    await createSkill({
      name: 'deploy_history',
      description: 'Recent deployments of a service',
      config: { url: `${server.url}/always-503`, method: 'GET' },
    });

    const before = server.received.length;
    const { id, done, finding } = await investigate(tenant, 'checkout-api');

    // The skill's answer is the logs agent's evidence and leads the root cause.
    expect(done.body.rootCause).toMatch(/connection pool/i);
    expect(finding('logs')).toContain(
      'fetch_logs for checkout-api: ts=2026-11-22T03:11:02Z level=ERROR message=HikariPool-1 - Connection is not available',
    );
    expect(finding('logs')).toContain('cluster_logs not called (it requires cluster, which the agent cannot fill)');
    expect(finding('deployment')).toMatch(/deploy_history failed \(http_error: /);
    const items = await svc.database.db
      .select()
      .from(evidenceItems)
      .where(and(eq(evidenceItems.incidentId, id), like(evidenceItems.source, 'skill:%')));
    expect(items).toEqual([
      expect.objectContaining({
        tenantId: tenant.tenantId,
        agentRole: 'logs',
        type: 'log',
        source: 'skill:fetch_logs',
        severity: 'high',
        dedupeKey: `logs:skill:${logs.skillId}:1`,
      }),
    ]);
    expect(items[0]!.rawSnippet).toContain(
      'message=HikariPool-1 - Connection is not available, request timed out after 30000ms',
    );
    // The hypothesis built on it cites the item.
    const [row] = await svc.database.db.select().from(investigations).where(eq(investigations.incidentId, id));
    const top = (row!.hypotheses as Array<{ kind: string; status: string; evidenceIds: string[] }>).find(
      (h) => h.kind === 'connection_pool',
    );
    expect(top?.evidenceIds).toContain(items[0]!.id);

    // What reached the server: one GET of the logs, with the incident's service and window; the
    // failing deployment skill with its retries; nothing else.
    const calls = server.received.slice(before);
    const logCalls = calls.filter((r) => r.path === '/logs');
    expect(logCalls).toHaveLength(1);
    expect(logCalls[0]).toMatchObject({
      method: 'GET',
      query: { service: 'checkout-api', since: expect.any(String), until: expect.any(String), limit: '50' },
    });
    expect(Date.parse(logCalls[0]!.query.until!) - Date.parse(logCalls[0]!.query.since!)).toBeGreaterThanOrEqual(
      60 * 60 * 1000,
    );
    expect(calls.filter((r) => r.path === '/echo')).toEqual([]);
    expect(calls.filter((r) => r.path === '/always-503').length).toBeGreaterThanOrEqual(1);
    const recorded = await svc.database.db
      .select()
      .from(skillInvocations)
      .where(
        and(
          eq(skillInvocations.tenantId, tenant.tenantId),
          like(skillInvocations.idempotencyKey, `%investigation:${id}:%`),
        ),
      );
    expect(recorded.map((r) => [r.skillName, r.status]).sort()).toEqual([
      ['deploy_history', 'failed'],
      ['fetch_logs', 'succeeded'],
    ]);

    // Human context re-synthesises from the stored answer: no second call.
    const context = await svc.api('POST', `/v1/investigation/${id}/context`, {
      token: tenant.member,
      body: { content: 'The pool was resized last week.' },
    });
    expect(context.status).toBe(202);
    await eventually(
      async () => ((await svc.client.workflow.getHandle(id).query(getStateQuery)).syntheses ?? 0) >= 2,
      30_000,
    );
    expect(server.received.slice(before).filter((r) => r.path === '/logs')).toHaveLength(1);
  });

  it('calls no skill once the plan of the tenant no longer includes custom skills', async () => {
    const downgraded = await svc.newTenant({ plan: 'plan_business', settings: { allowHttpSkills: true } });
    await createSkill(
      {
        name: 'fetch_logs',
        description: 'Fetch the recent error logs of a service',
        config: { url: `${server.url}/logs?who=downgraded`, method: 'GET' },
      },
      downgraded,
    );
    await svc.database.db.update(tenants).set({ plan: 'plan_starter' }).where(eq(tenants.id, downgraded.tenantId));
    const { done, finding } = await investigate(downgraded, 'checkout-api');
    expect(finding('logs')).not.toContain('Skills:');
    // The same incident without the skill's answer: nothing points at the pool.
    expect(done.body.rootCause).not.toMatch(/connection pool/i);
    expect(server.received.filter((r) => r.query.who === 'downgraded')).toEqual([]);
  });
});
