import { eq } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { skillInvocations, skills } from '../../src/db/schema/skills.js';
import { startTestService, type TestService } from '../helpers/service.js';
import { concludedIncident, proposedRemediation } from '../helpers/remediation.js';

let svc: TestService;
let tenant: { tenantId: string; admin: string; member: string };

beforeAll(async () => {
  svc = await startTestService();
  tenant = await svc.newTenant({ plan: 'plan_pro' });
});
afterAll(() => svc?.stop());

const base = (tenantId: string) => `/api/v1/tenants/${tenantId}/skills`;
const call = (method: string, path: string, options: { token?: string; body?: unknown } = {}) =>
  svc.api(method, path, options);

let counter = 0;
const uniqueName = (prefix: string) => `${prefix}_${++counter}_${Date.now().toString(36)}`;

async function createSkill(body: Record<string, unknown>, who = tenant) {
  const res = await call('POST', base(who.tenantId), { token: who.admin, body });
  expect(res.status, JSON.stringify(res.body)).toBe(201);
  return res.body as { skillId: string; name: string };
}

describe('skills of type builtin (a tenant skill running one of the builtin actions)', () => {
  const builtinSkill = (action: string, overrides: Record<string, unknown> = {}) => ({
    name: uniqueName('builtin'),
    description: 'Finds the team runbook for a failing payment provider',
    type: 'builtin',
    config: { action },
    ...overrides,
  });

  it('creates one with a builtin action: 201, and it reads back with its action and the action’s input schema', async () => {
    const res = await call('POST', base(tenant.tenantId), {
      token: tenant.admin,
      body: builtinSkill('runbook_lookup'),
    });
    expect(res.status, JSON.stringify(res.body)).toBe(201);
    expect(res.body).toMatchObject({
      type: 'builtin',
      enabled: true,
      skillId: expect.stringMatching(/^skl_(?!builtin_)/),
    });
    const read = await call('GET', `${base(tenant.tenantId)}/${res.body.skillId}`, { token: tenant.member });
    expect(read.status).toBe(200);
    expect(read.body).toMatchObject({
      type: 'builtin',
      config: { action: 'runbook_lookup' },
      inputSchema: { required: ['query'] },
    });
    const [row] = await svc.database.db.select().from(skills).where(eq(skills.id, res.body.skillId));
    expect(row).toMatchObject({ type: 'builtin', config: { action: 'runbook_lookup' }, inputSchema: null });
    const list = await call('GET', `${base(tenant.tenantId)}?limit=200`, { token: tenant.member });
    expect(list.body.items.find((s: { skillId: string }) => s.skillId === res.body.skillId)).toMatchObject({
      config: { action: 'runbook_lookup' },
    });
  });

  it('400 validation_error naming config.action for an action the service does not have, and naming config when it is missing', async () => {
    const unknown = await call('POST', base(tenant.tenantId), {
      token: tenant.admin,
      body: builtinSkill('rollback_deployment'),
    });
    expect(unknown.status).toBe(400);
    expect(unknown.body.error).toBe('validation_error');
    expect(unknown.body.details).toEqual([
      {
        path: 'config.action',
        message: expect.stringMatching(/blast_radius.*recent_deployments.*search_incidents.*runbook_lookup/),
      },
    ]);
    const missing = await call('POST', base(tenant.tenantId), {
      token: tenant.admin,
      body: { ...builtinSkill('search_incidents'), config: undefined },
    });
    expect(missing.status).toBe(400);
    expect(missing.body.details).toEqual([expect.objectContaining({ path: 'config' })]);
    const created = await createSkill(builtinSkill('search_incidents'));
    const patch = await call('PATCH', `${base(tenant.tenantId)}/${created.skillId}`, {
      token: tenant.admin,
      body: { config: { action: 'restart_service' } },
    });
    expect(patch.status).toBe(400);
    expect(patch.body.details).toEqual([expect.objectContaining({ path: 'config.action' })]);
    const schema = await call('PATCH', `${base(tenant.tenantId)}/${created.skillId}`, {
      token: tenant.admin,
      body: { inputSchema: { type: 'object' } },
    });
    expect(schema.status).toBe(400);
    expect(schema.body.details).toEqual([expect.objectContaining({ path: 'inputSchema' })]);
    const moved = await call('PATCH', `${base(tenant.tenantId)}/${created.skillId}`, {
      token: tenant.admin,
      body: { config: { action: 'recent_deployments' } },
    });
    expect(moved.status).toBe(200);
    const read = await call('GET', `${base(tenant.tenantId)}/${created.skillId}`, { token: tenant.member });
    expect(read.body.config).toEqual({ action: 'recent_deployments' });
  });

  it('runs its action when tested: the real result from the tenant’s data; its input is checked against the action’s schema', async () => {
    const runbook = await call('POST', '/v1/runbooks', {
      token: tenant.admin,
      body: {
        title: 'Stripe webhook backlog',
        service: 'payments',
        tags: ['stripe'],
        content: '1. Check the Stripe dashboard\n2. Replay failed events',
      },
    });
    expect(runbook.status).toBe(201);
    const skill = await createSkill(builtinSkill('runbook_lookup'));
    const res = await call('POST', `${base(tenant.tenantId)}/${skill.skillId}/test`, {
      token: tenant.admin,
      body: { input: { query: 'stripe' } },
    });
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({
      skillId: skill.skillId,
      ok: true,
      output: { runbooks: [{ runbookId: runbook.body.runbookId, title: 'Stripe webhook backlog' }] },
    });
    const [recorded] = await svc.database.db
      .select()
      .from(skillInvocations)
      .where(eq(skillInvocations.id, res.body.invocationId));
    expect(recorded).toMatchObject({ skillId: skill.skillId, skillName: skill.name, status: 'succeeded' });
    const invalid = await call('POST', `${base(tenant.tenantId)}/${skill.skillId}/test`, {
      token: tenant.admin,
      body: { input: {} },
    });
    expect(invalid.status).toBe(400);
    expect(invalid.body.details).toEqual([expect.objectContaining({ message: expect.stringMatching(/query/) })]);
    // Another tenant's runbooks stay out of it.
    const other = await svc.newTenant({ plan: 'plan_pro' });
    const theirs = await createSkill(builtinSkill('runbook_lookup'), other);
    const isolated = await call('POST', `${base(other.tenantId)}/${theirs.skillId}/test`, {
      token: other.admin,
      body: { input: { query: 'stripe' } },
    });
    expect(isolated.body).toMatchObject({ ok: true, output: { runbooks: [] } });
  });

  it('a disabled one does not run', async () => {
    const disabled = await createSkill(builtinSkill('search_incidents', { enabled: false }));
    const off = await call('POST', `${base(tenant.tenantId)}/${disabled.skillId}/test`, {
      token: tenant.admin,
      body: { input: {} },
    });
    expect(off.body).toMatchObject({ ok: false, error: { code: 'skill_disabled' } });
  });

  it('runs as a remediation step: of the step’s input (the instruction and recommended action) the action gets only the properties it declares', async () => {
    const skill = await createSkill(
      builtinSkill('recent_deployments', {
        name: 'list_recent_deployments',
        description: 'Lists the deployments of a service',
      }),
    );
    const incidentId = await concludedIncident(
      svc,
      tenant,
      { title: 'Checkout errors', description: 'Checkout answers 502 errors since 03:10', service: 'checkout-api' },
      ['List recent deployments of checkout-api'],
    );
    const { acts, proposal, remediation } = await proposedRemediation(
      svc,
      tenant.tenantId,
      incidentId,
      'builtin-skill',
    );
    expect(remediation.plan[0]).toMatchObject({
      kind: 'skill',
      skillId: skill.skillId,
      input: { recommendedAction: 'List recent deployments of checkout-api' },
    });
    const outcome = await acts.executeRemediationStep({
      incidentId,
      tenantId: tenant.tenantId,
      remediationId: proposal.remediationId,
      index: 0,
      workflowId: incidentId,
    });
    expect(outcome).toMatchObject({
      ok: true,
      output: { output: { service: null, sinceMinutes: 1440, deployments: [] } },
    });
    const [invocation] = await svc.database.db
      .select()
      .from(skillInvocations)
      .where(eq(skillInvocations.skillId, skill.skillId));
    expect(invocation).toMatchObject({ status: 'succeeded', skillName: 'list_recent_deployments' });
  });
});
