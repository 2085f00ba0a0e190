/**
 * Changes tied to the incident's service at investigation time (ADR 0266): a world built through
 * the real api (topology with repositories, the tools' own change webhooks, an alert that opens
 * the incident), then the change agents and the matching itself, against the real database.
 */
import { MockActivityEnvironment } from '@temporalio/testing';
import { and, eq } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createInvestigationActivities } from '../../src/activities/investigation/index.js';
import { toChangeObservation } from '../../src/activities/investigation/observations.js';
import { agentChanges, agentScene, loadScene, recentChanges } from '../../src/activities/investigation/scene.js';
import type { InvestigationContext } from '../../src/activities/investigation/common.js';
import type { AgentReport, InvestigationRequest } from '../../src/analysis/investigation-types.js';
import { createBuiltinProvider } from '../../src/analysis/providers.js';
import { evidenceItems, investigations } from '../../src/db/schema/investigation.js';
import { startTestService, type TestService } from '../helpers/service.js';
import { createKey, fixture, postWebhook } from '../helpers/webhooks.js';

let svc: TestService;
let tenant: { tenantId: string; admin: string; member: string };
let key: string;
let request: InvestigationRequest;
const ids: Record<string, string> = {};
const activityEnv = new MockActivityEnvironment();

async function post(name: string, provider: string, body: string | object, headers: Record<string, string> = {}) {
  const res = await postWebhook(svc, tenant.tenantId, provider, body, { key, headers });
  expect(res.status, JSON.stringify(res.body)).toBe(202);
  expect(res.body.eventIds).toHaveLength(1);
  ids[name] = res.body.eventIds[0];
  return res;
}

async function node(name: string, repositories: object[] = []): Promise<string> {
  const res = await svc.api('POST', '/v1/graph/nodes', {
    token: tenant.member,
    body: { name, type: 'api', repositories },
  });
  expect(res.status, JSON.stringify(res.body)).toBe(201);
  return res.body.serviceId;
}

function push(repository: string, paths: string[], sha: string) {
  const body = JSON.parse(fixture('github-push-gitops.json'));
  const [owner, name] = repository.split('/');
  body.repository.name = name;
  body.repository.full_name = repository;
  body.repository.owner.name = owner;
  body.commits[0].id = sha;
  body.commits[0].modified = paths;
  body.head_commit.id = sha;
  body.head_commit.modified = paths;
  return body;
}

beforeAll(async () => {
  svc = await startTestService({ withoutWorker: true, withoutDispatcher: true });
  tenant = await svc.newTenant();
  key = (await createKey(svc, tenant.admin)).key;
  // checkout depends on payments; checkout's manifests live in the shared platform-config repo.
  const checkout = await node('checkout', [
    { repository: 'acme/checkout' },
    { repository: 'acme/platform-config', paths: ['apps/checkout/**'] },
  ]);
  const payments = await node('payments');
  await node('search', [{ repository: 'acme/platform-config', paths: ['apps/search/**'] }]);
  const edge = await svc.api('POST', '/v1/graph/edges', {
    token: tenant.member,
    body: { sourceServiceId: checkout, targetServiceId: payments },
  });
  expect(edge.status).toBe(201);

  // Tied: the GitOps push touching apps/checkout/ (09:20), the flag the alert names (09:15), a
  // release naming only checkout's own repository, and payments' Helm upgrade (a dependency).
  await post('gitops', 'github', fixture('github-push-gitops.json'), {
    'x-github-event': 'push',
    'x-github-delivery': 'gitops-1',
  });
  const flag = JSON.parse(fixture('launchdarkly-flag-turned-on.json'));
  flag.currentVersion.tags = [];
  flag.target.resources = ['proj/checkout:env/production:flag/new-payment-retry-policy'];
  await post('flag', 'launchdarkly', flag);
  await post('release', 'generic', {
    type: 'change',
    change: {
      kind: 'release',
      title: 'Checkout web 2024.05.14 tagged',
      service: 'checkout-web',
      repository: 'acme/checkout',
      version: '2024.05.14',
      occurredAt: '2024-05-14T09:05:00Z',
    },
  });
  const helm = JSON.parse(fixture('flux-helmrelease-upgrade-succeeded.json'));
  helm.involvedObject.name = 'payments';
  helm.involvedObject.namespace = 'payments';
  await post('payments-helm', 'flux', helm);
  // A GitOps push with no repository entry, tied by the apps/<svc>/ convention alone (payments).
  await post(
    'payments-gitops',
    'github',
    push('acme/infra-live', ['charts/payments/values-production.yaml'], 'f'.repeat(40)),
    {
      'x-github-event': 'push',
      'x-github-delivery': 'gitops-2',
    },
  );
  // The deployment of the GitOps push's commit (the config repo's own deploy) is tied as its commit is.
  const deploy = JSON.parse(fixture('github-deployment-status.json'));
  deploy.repository.name = 'platform-config';
  deploy.repository.full_name = 'acme/platform-config';
  deploy.deployment.sha = 'e8f9a0b1c2d3e4f5a6b7c8d9e0f1a2b3c4d5e6f7';
  await post('gitops-deploy', 'github', deploy, {
    'x-github-event': 'deployment_status',
    'x-github-delivery': 'gitops-deploy-1',
  });
  // Not tied: another service's path in the shared repo, an unrelated repository, a flag nobody mentions.
  await post('search-gitops', 'github', push('acme/platform-config', ['apps/search/values.yaml'], 'a'.repeat(40)), {
    'x-github-event': 'push',
    'x-github-delivery': 'gitops-3',
  });
  await post('marketing', 'github', push('acme/marketing-site', ['src/pages/index.html'], 'b'.repeat(40)), {
    'x-github-event': 'push',
    'x-github-delivery': 'gitops-4',
  });
  const other = JSON.parse(fixture('launchdarkly-flag-turned-on.json'));
  other.currentVersion.tags = [];
  other.accesses = [{ action: 'updateOn', resource: 'proj/web:env/production:flag/dark-mode' }];
  other.target.resources = ['proj/web:env/production:flag/dark-mode'];
  other.date = 1715678200000;
  await post('other-flag', 'launchdarkly', other);

  const alert = await postWebhook(
    svc,
    tenant.tenantId,
    'generic',
    {
      name: 'PaymentRetryStorm',
      service: 'checkout',
      severity: 'critical',
      summary: 'Retries to payments are 12x normal',
      description: 'Requests with flag new-payment-retry-policy make 93% of the retries since 09:16.',
      startsAt: '2024-05-14T09:30:00Z',
    },
    { key },
  );
  expect(alert.status).toBe(202);
  const incidentId = alert.body.incidentIds[0] as string;
  await svc.database.db
    .insert(investigations)
    .values({ incidentId, tenantId: tenant.tenantId, status: 'running', run: 1 });
  request = { incidentId, tenantId: tenant.tenantId, run: 1, workflowId: incidentId };
});
afterAll(() => svc?.stop());

describe('changes tied to the incident', () => {
  it("the run's two change agents share one read: each kind is its part of the tied changes", async () => {
    const ctx: InvestigationContext = {
      db: svc.database.db,
      model: createBuiltinProvider(),
      deps: {},
      sharedReads: new Map(),
    };
    const scene = await agentScene(ctx, request);
    const [deployments, codeChanges] = await Promise.all([
      agentChanges(ctx, scene, 'deployment'),
      agentChanges(ctx, scene, 'code_change'),
    ]);
    const shared = [...ctx.sharedReads.values()][0]!.changes;
    expect(shared).toBeDefined();
    expect(deployments.every((c) => c.row.kind === 'deployment')).toBe(true);
    expect(codeChanges.every((c) => c.row.kind === 'code_change')).toBe(true);
    const all = await recentChanges(ctx, scene, 'both');
    expect([...deployments, ...codeChanges].map((c) => c.row.id).sort()).toEqual(all.map((c) => c.row.id).sort());
    expect(deployments.length).toBeGreaterThan(0);
    expect(codeChanges.length).toBeGreaterThan(0);
    expect([...ctx.sharedReads.values()][0]!.changes).toBe(shared);
  });

  it('ties each change to the service or dependency it concerns, and says how', async () => {
    const ctx: InvestigationContext = {
      db: svc.database.db,
      model: createBuiltinProvider(),
      deps: {},
      sharedReads: new Map(),
    };
    const scene = await loadScene(ctx, request);
    const tied = await recentChanges(ctx, scene, 'both');
    const byId = Object.fromEntries(tied.map((t) => [t.row.id, { hops: t.hops, matchedBy: t.matchedBy }]));
    expect(byId).toEqual({
      [ids.gitops!]: { hops: 0, matchedBy: 'path' },
      [ids.flag!]: { hops: 0, matchedBy: 'mention' },
      [ids.release!]: { hops: 0, matchedBy: 'repository' },
      [ids['payments-helm']!]: { hops: 1, matchedBy: 'service' },
      [ids['payments-gitops']!]: { hops: 1, matchedBy: 'path' },
      [ids['gitops-deploy']!]: { hops: 0, matchedBy: 'path' },
    });
    // Oldest first, and the observation carries the tie and the new fields.
    expect(tied.map((t) => t.row.occurredAt.getTime())).toEqual(
      [...tied.map((t) => t.row.occurredAt.getTime())].sort((a, b) => a - b),
    );
    const flag = tied.find((t) => t.row.id === ids.flag)!;
    expect(toChangeObservation(flag.row, flag.hops)).toMatchObject({
      changeType: 'feature_flag',
      matchedBy: 'mention',
      flag: 'new-payment-retry-policy',
      author: 'ariel@example-shop.com',
      environment: 'production',
      state: 'on',
      kind: 'deployment',
    });
    const gitops = tied.find((t) => t.row.id === ids.gitops)!;
    expect(toChangeObservation(gitops.row, gitops.hops)).toMatchObject({
      changeType: 'gitops',
      matchedBy: 'path',
      repository: 'acme/platform-config',
      paths: ['apps/checkout/values.yaml', 'apps/checkout/values-production.yaml'],
      author: 'lpark',
      kind: 'code_change',
    });
  });

  it('the change agents report the tied changes as evidence, and not the unrelated ones', async () => {
    const engine = createInvestigationActivities({ db: svc.database.db, model: createBuiltinProvider() });
    const deployments = (await activityEnv.run(engine.deploymentAgent, request)) as AgentReport;
    const code = (await activityEnv.run(engine.codeChangeAgent, request)) as AgentReport;
    const evidence = await svc.database.db
      .select()
      .from(evidenceItems)
      .where(and(eq(evidenceItems.tenantId, tenant.tenantId), eq(evidenceItems.incidentId, request.incidentId)));
    // An item's dedupe key is `<agent role>:<source row id>`.
    const bySource = new Map(evidence.map((e) => [e.dedupeKey.slice(e.dedupeKey.indexOf(':') + 1), e]));
    expect(bySource.get(ids.flag!)).toMatchObject({ type: 'deployment', source: 'launchdarkly' });
    expect(bySource.get(ids.flag!)!.summary).toContain(
      'Feature flag new-payment-retry-policy on in production by ariel@example-shop.com (LaunchDarkly)',
    );
    expect(bySource.get(ids.flag!)!.summary).toContain(
      "tied by flag new-payment-retry-policy in the incident's alerts",
    );
    expect(bySource.get(ids.gitops!)).toMatchObject({ type: 'code_change', source: 'github' });
    expect(bySource.get(ids.gitops!)!.summary).toContain(
      'GitOps push to acme/platform-config main (head e8f9a0b) by lpark touching apps/checkout/values.yaml',
    );
    expect(bySource.get(ids['payments-helm']!)!.summary).toContain('Flux sync of payments chart');
    expect(bySource.get(ids['payments-helm']!)!.summary).toContain('a dependency of checkout (1 hop)');
    expect(bySource.get(ids.release!)!.summary).toContain('Release 2024.05.14 of acme/checkout');
    for (const unrelated of ['search-gitops', 'marketing', 'other-flag'])
      expect(bySource.has(ids[unrelated]!)).toBe(false);
    expect(deployments.content).toContain('Feature flag new-payment-retry-policy');
    expect(code.content).toContain('GitOps push to acme/platform-config');
    expect(code.content).not.toContain('marketing-site');
  });
});
