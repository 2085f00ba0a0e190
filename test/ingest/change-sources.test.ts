/**
 * Every change source through the real api: the webhook is accepted (202), stored as a change
 * (kind, service, labels the investigation reads) and never opens an incident.
 */
import { eq, inArray } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { incidents } from '../../src/db/schema/incidents.js';
import { ingestedEvents, type IngestedEventRow } from '../../src/db/schema/ingestion.js';
import { startTestService, type TestService } from '../helpers/service.js';
import { createKey, fixture, postWebhook, type WebhookKey } from '../helpers/webhooks.js';

let svc: TestService;
let tenant: { tenantId: string; admin: string; member: string };
let key: WebhookKey;

beforeAll(async () => {
  svc = await startTestService();
  tenant = await svc.newTenant();
  key = await createKey(svc, tenant.admin);
});
afterAll(() => svc?.stop());

let delivery = 0;
async function send(provider: string, body: string | object, headers: Record<string, string> = {}) {
  delivery += 1;
  const all = provider === 'github' ? { 'x-github-delivery': `change-sources-${delivery}`, ...headers } : headers;
  return postWebhook(svc, tenant.tenantId, provider, body, { key: key.key, headers: all });
}

/** Posts one change and answers its stored row, after checking the 202 and that no incident opened. */
async function stored(provider: string, body: string | object, headers: Record<string, string> = {}) {
  const res = await send(provider, body, headers);
  expect(res.status, JSON.stringify(res.body)).toBe(202);
  expect(res.body.incidentIds).toEqual([]);
  expect(res.body.eventIds).toHaveLength(1);
  const [row] = await svc.database.db
    .select()
    .from(ingestedEvents)
    .where(inArray(ingestedEvents.id, res.body.eventIds as string[]));
  expect(row).toBeDefined();
  expect(row!.incidentId).toBeNull();
  expect(row!.tenantId).toBe(tenant.tenantId);
  return row as IngestedEventRow;
}

async function expectIgnored(provider: string, body: string | object, headers: Record<string, string>, reason: RegExp) {
  const res = await send(provider, body, headers);
  expect(res.status).toBe(202);
  expect(res.body).toMatchObject({ eventIds: [], incidentIds: [] });
  expect(res.body.ignored).toMatch(reason);
}

const json = (name: string) => JSON.parse(fixture(name));

describe('GitHub changes', () => {
  it('a successful deploy workflow run is a deployment with its environment', async () => {
    const row = await stored('github', fixture('github-workflow-run-deploy.json'), {
      'x-github-event': 'workflow_run',
    });
    expect(row).toMatchObject({ kind: 'deployment', service: 'checkout', provider: 'github' });
    expect(row.labels).toMatchObject({
      change_type: 'ci_workflow',
      repository: 'example-shop/checkout',
      workflow: 'Deploy production',
      sha: '7c1e2d9a4b3f5e6d8c0a1b2c3d4e5f6a7b8c9d0e',
      ref: 'main',
      environment: 'production',
      state: 'success',
      author: 'mchen',
    });
    expect(row.occurredAt.toISOString()).toBe('2024-05-14T09:19:47.000Z');
  });

  it('test workflows, failed runs and unfinished runs are acknowledged and ignored', async () => {
    const ci = json('github-workflow-run-deploy.json');
    ci.workflow_run.name = 'Unit tests';
    ci.workflow_run.path = '.github/workflows/test.yml';
    ci.workflow.name = 'Unit tests';
    ci.workflow.path = '.github/workflows/test.yml';
    await expectIgnored('github', ci, { 'x-github-event': 'workflow_run' }, /does not deploy/);
    const failed = json('github-workflow-run-deploy.json');
    failed.workflow_run.conclusion = 'failure';
    await expectIgnored('github', failed, { 'x-github-event': 'workflow_run' }, /conclusion failure/);
    const requested = json('github-workflow-run-deploy.json');
    requested.action = 'requested';
    await expectIgnored('github', requested, { 'x-github-event': 'workflow_run' }, /action requested/);
  });

  it('a created deployment is a deploy in state created', async () => {
    const row = await stored('github', fixture('github-deployment.json'), { 'x-github-event': 'deployment' });
    expect(row).toMatchObject({ kind: 'deployment', service: 'checkout' });
    expect(row.labels).toMatchObject({
      change_type: 'deploy',
      state: 'created',
      environment: 'production',
      sha: '7c1e2d9a4b3f5e6d8c0a1b2c3d4e5f6a7b8c9d0e',
      author: 'mchen',
    });
  });

  it("a monorepo's deployment names its service in its payload", async () => {
    const body = json('github-deployment.json');
    body.deployment.id = 1523456791;
    body.deployment.payload = { service: 'cart-api', pipeline: 'cart-prod' };
    const row = await stored('github', body, { 'x-github-event': 'deployment' });
    expect(row).toMatchObject({ kind: 'deployment', service: 'cart-api' });
    expect(row.labels).toMatchObject({ repository: 'example-shop/checkout', change_type: 'deploy' });
  });

  it('a published release is a code change with its tag as version', async () => {
    const row = await stored('github', fixture('github-release-published.json'), { 'x-github-event': 'release' });
    expect(row).toMatchObject({ kind: 'code_change', service: 'checkout' });
    expect(row.labels).toMatchObject({ change_type: 'release', version: 'v2024.05.14', ref: 'main', author: 'mchen' });
    expect(row.title).toBe('Release v2024.05.14 of example-shop/checkout: Checkout 2024.05.14');
    const atCommit = json('github-release-published.json');
    atCommit.release.tag_name = 'v2024.05.15';
    atCommit.release.target_commitish = '7c1e2d9a4b3f5e6d8c0a1b2c3d4e5f6a7b8c9d0e';
    const pinned = await stored('github', atCommit, { 'x-github-event': 'release' });
    expect(pinned.labels).toMatchObject({ sha: '7c1e2d9a4b3f5e6d8c0a1b2c3d4e5f6a7b8c9d0e', version: 'v2024.05.15' });
    expect(pinned.labels.ref).toBeUndefined();
    const created = json('github-release-published.json');
    created.action = 'created';
    await expectIgnored('github', created, { 'x-github-event': 'release' }, /release action created/);
  });

  it("a merged Dependabot pull request is a dependency bump with what it bumped; a person's is a pull_request", async () => {
    const row = await stored('github', fixture('github-pull-request-dependabot.json'), {
      'x-github-event': 'pull_request',
    });
    expect(row).toMatchObject({ kind: 'code_change', service: 'checkout' });
    expect(row.labels).toMatchObject({
      change_type: 'dependency',
      dependency: 'axios',
      from: '1.6.8',
      to: '1.7.0',
      version: '1.7.0',
      author: 'dependabot[bot]',
      merged_by: 'mchen',
      sha: '4d5e6f7a8b9c0d1e2f3a4b5c6d7e8f9a0b1c2d3e',
      pull_request: '1433',
    });
    const person = json('github-pull-request-dependabot.json');
    person.pull_request.user = { login: 'mchen', id: 5823417, type: 'User' };
    person.pull_request.title = 'Lower payments-gateway client timeout to 10s';
    person.pull_request.merge_commit_sha = '9b1e4d2a0c3f5e7d9b1a3c5e7f9d1b3a5c7e9f1d';
    const merged = await stored('github', person, { 'x-github-event': 'pull_request' });
    expect(merged.labels).toMatchObject({ change_type: 'pull_request', author: 'mchen' });
    expect(merged.labels.dependency).toBeUndefined();
    const renovate = json('github-pull-request-dependabot.json');
    renovate.pull_request.user = { login: 'mchen', id: 5823417, type: 'User' };
    renovate.pull_request.title = 'chore(deps): update dependency pg to v8.11.5';
    renovate.pull_request.merge_commit_sha = '1b3a5c7e9f1d9b1e4d2a0c3f5e7d9b1a3c5e7f9d';
    const bumped = await stored('github', renovate, { 'x-github-event': 'pull_request' });
    expect(bumped.labels).toMatchObject({ change_type: 'dependency', dependency: 'pg', to: 'v8.11.5' });
  });

  it('a pull request closed without merging, or opened, is ignored', async () => {
    const closed = json('github-pull-request-dependabot.json');
    closed.pull_request.merged = false;
    await expectIgnored('github', closed, { 'x-github-event': 'pull_request' }, /without merging/);
    const opened = json('github-pull-request-dependabot.json');
    opened.action = 'opened';
    await expectIgnored('github', opened, { 'x-github-event': 'pull_request' }, /action opened/);
  });

  it('a push records its changed paths and reads as gitops, infrastructure, dependency or push by them', async () => {
    const gitops = await stored('github', fixture('github-push-gitops.json'), { 'x-github-event': 'push' });
    expect(gitops).toMatchObject({ kind: 'code_change', service: 'platform-config' });
    expect(gitops.labels).toMatchObject({
      change_type: 'gitops',
      repository: 'acme/platform-config',
      paths: 'apps/checkout/values.yaml\napps/checkout/values-production.yaml',
      sha: 'e8f9a0b1c2d3e4f5a6b7c8d9e0f1a2b3c4d5e6f7',
      author: 'lpark',
    });
    const withPaths = async (modified: string[], sha: string) => {
      const body = json('github-push-gitops.json');
      body.commits[0].modified = modified;
      body.commits[0].id = sha;
      body.head_commit.id = sha;
      return (await stored('github', body, { 'x-github-event': 'push' })).labels.change_type;
    };
    expect(
      await withPaths(['terraform/prod/checkout/main.tf', 'terraform/prod/checkout/prod.tfvars'], 'a'.repeat(40)),
    ).toBe('infrastructure');
    expect(await withPaths(['package.json', 'package-lock.json'], 'b'.repeat(40))).toBe('dependency');
    expect(await withPaths(['src/cart.ts', 'apps/checkout/values.yaml'], 'c'.repeat(40))).toBe('push');
  });

  it('bounds the paths label at 200 paths and 4000 characters', async () => {
    const many = json('github-push-gitops.json');
    many.commits[0].modified = Array.from({ length: 300 }, (_, i) => `k8s/${i}.yaml`);
    many.head_commit.id = 'd'.repeat(40);
    const paths = (await stored('github', many, { 'x-github-event': 'push' })).labels.paths!.split('\n');
    expect(paths).toHaveLength(200);
    expect([paths[0], paths[199]]).toEqual(['k8s/0.yaml', 'k8s/199.yaml']);
    const long = json('github-push-gitops.json');
    long.commits[0].modified = Array.from({ length: 100 }, (_, i) => `apps/checkout/${'x'.repeat(90)}-${i}.yaml`);
    long.head_commit.id = 'e'.repeat(40);
    const label = (await stored('github', long, { 'x-github-event': 'push' })).labels.paths!;
    expect(label.length).toBeLessThanOrEqual(4000);
    expect(label.split('\n').length).toBeGreaterThan(30);
  });

  it('keeps deployment_status as before, now with its change type', async () => {
    const row = await stored('github', fixture('github-deployment-status.json'), {
      'x-github-event': 'deployment_status',
    });
    expect(row).toMatchObject({ kind: 'deployment', service: 'checkout' });
    expect(row.labels).toMatchObject({ change_type: 'deploy', state: 'success', environment: 'production' });
  });
});

describe('feature flags', () => {
  it('LaunchDarkly: a flag turned on is a feature_flag change of the service its tags name', async () => {
    const row = await stored('launchdarkly', fixture('launchdarkly-flag-turned-on.json'));
    expect(row).toMatchObject({ kind: 'deployment', service: 'checkout', provider: 'launchdarkly' });
    expect(row.labels).toMatchObject({
      change_type: 'feature_flag',
      flag: 'new-payment-retry-policy',
      environment: 'production',
      project: 'checkout',
      state: 'on',
      author: 'ariel@example-shop.com',
      action: 'updateOn',
    });
    expect(row.occurredAt.toISOString()).toBe('2024-05-14T09:15:00.000Z');
    expect(row.title).toBe(
      'LaunchDarkly: ariel@example-shop.com turned on the flag new-payment-retry-policy in production',
    );
    expect(row.description).toContain('Comment: Rolling out the aggressive retry policy to everyone');
  });

  it('LaunchDarkly: renames and other kinds are ignored; a flag without service tags has no service', async () => {
    const renamed = json('launchdarkly-flag-turned-on.json');
    renamed.accesses = [
      { action: 'updateName', resource: 'proj/checkout:env/production:flag/new-payment-retry-policy' },
    ];
    await expectIgnored('launchdarkly', renamed, {}, /updateName do not change/);
    const member = json('launchdarkly-flag-turned-on.json');
    member.kind = 'member';
    await expectIgnored('launchdarkly', member, {}, /kind member is not used/);
    const untagged = json('launchdarkly-flag-turned-on.json');
    untagged.currentVersion.tags = [];
    untagged.date = 1715678160000;
    const row = await stored('launchdarkly', untagged);
    expect(row.service).toBeNull();
    expect(row.labels.flag).toBe('new-payment-retry-policy');
  });

  it('Unleash: a flag enabled in an environment; its plain tags are the candidate services', async () => {
    const row = await stored('unleash', fixture('unleash-feature-environment-enabled.json'));
    expect(row).toMatchObject({ kind: 'deployment', service: null, provider: 'unleash' });
    expect(row.labels).toMatchObject({
      change_type: 'feature_flag',
      flag: 'checkout.one-click-pay',
      environment: 'production',
      state: 'enabled',
      author: 'ivar@example-shop.com',
      services: 'checkout,payments',
    });
    const tagged = json('unleash-feature-environment-enabled.json');
    tagged.id = 4822;
    tagged.tags = [
      { type: 'simple', value: 'service:checkout' },
      { type: 'simple', value: 'payments' },
    ];
    expect((await stored('unleash', tagged)).service).toBe('checkout');
    const created = json('unleash-feature-environment-enabled.json');
    created.id = 4823;
    created.type = 'feature-created';
    await expectIgnored('unleash', created, {}, /feature-created is not used/);
  });

  it('Flagsmith: FLAG_UPDATED is a feature_flag change with its value; other event types are ignored', async () => {
    const row = await stored('flagsmith', fixture('flagsmith-flag-updated.json'));
    expect(row).toMatchObject({ kind: 'deployment', service: null, provider: 'flagsmith' });
    expect(row.labels).toMatchObject({
      change_type: 'feature_flag',
      flag: 'pricing_engine_v2',
      environment: 'Production',
      state: 'enabled',
      version: 'eu-west-1',
      author: 'Ben Rometsch',
      project: 'Example Shop',
    });
    expect(row.description).toContain('Was disabled.');
    await expectIgnored('flagsmith', { event_type: 'AUDIT_LOG_CREATED', data: {} }, {}, /AUDIT_LOG_CREATED/);
  });
});

describe('GitOps controllers', () => {
  it('Argo CD: a sync is a gitops deployment of the app, with repository, path and revision', async () => {
    const row = await stored('argocd', fixture('argocd-sync-succeeded.json'));
    expect(row).toMatchObject({ kind: 'deployment', service: 'checkout', provider: 'argocd' });
    expect(row.labels).toMatchObject({
      change_type: 'gitops',
      repository: 'acme/platform-config',
      paths: 'apps/checkout',
      sha: 'e8f9a0b1c2d3e4f5a6b7c8d9e0f1a2b3c4d5e6f7',
      ref: 'main',
      namespace: 'checkout',
      project: 'shop',
      state: 'succeeded',
      health: 'healthy',
    });
    expect(row.labels.chart).toBeUndefined();
    expect(row.occurredAt.toISOString()).toBe('2024-05-14T09:22:05.000Z');
  });

  it('Argo CD: a failed and degraded sync is still a change with its state; a running sync is ignored', async () => {
    const failed = json('argocd-sync-succeeded.json');
    failed.operationState.phase = 'Failed';
    failed.operationState.message = 'one or more objects failed to apply';
    failed.health.status = 'Degraded';
    failed.operationState.finishedAt = '2024-05-14T09:30:00Z';
    const row = await stored('argocd', failed);
    expect(row.labels).toMatchObject({ state: 'failed', health: 'degraded' });
    expect(row.description).toContain('one or more objects failed to apply');
    const running = json('argocd-sync-succeeded.json');
    running.operationState.phase = 'Running';
    await expectIgnored('argocd', running, {}, /running/);
  });

  it('Argo CD: a body without the app is a 400 naming it', async () => {
    const body = json('argocd-sync-succeeded.json');
    delete body.app;
    const res = await send('argocd', body);
    expect(res.status).toBe(400);
    expect(res.body.error).toBe('validation_error');
    expect(res.body.details.map((d: { path: string }) => d.path)).toEqual(['app']);
  });

  it('Flux: a HelmRelease upgrade is a gitops deployment with its chart version; a dependency wait is ignored', async () => {
    const row = await stored('flux', fixture('flux-helmrelease-upgrade-succeeded.json'));
    expect(row).toMatchObject({ kind: 'deployment', service: 'checkout', provider: 'flux' });
    expect(row.labels).toMatchObject({
      change_type: 'gitops',
      object_kind: 'HelmRelease',
      namespace: 'checkout',
      reason: 'UpgradeSucceeded',
      state: 'succeeded',
      version: '1.14.2',
      controller: 'helm-controller',
    });
    await expectIgnored('flux', fixture('flux-kustomization-progressing.json'), {}, /DependencyNotReady/);
    const changeSet = await stored('flux', fixture('flux-kustomization-applied.json'));
    expect(changeSet).toMatchObject({ service: 'checkout' });
    expect(changeSet.labels).toMatchObject({
      reason: 'Progressing',
      state: 'applied',
      services: 'checkout,checkout-api',
      objects: 'ConfigMap/checkout/checkout-config-7g2k9h configured; Deployment/checkout/checkout-api configured',
      sha: 'e8f9a0b1c2d3e4f5a6b7c8d9e0f1a2b3c4d5e6f7',
    });
    const starting = JSON.parse(fixture('flux-helmrelease-upgrade-succeeded.json'));
    starting.reason = 'Progressing';
    starting.message = "Running 'upgrade' action with timeout of 5m0s";
    await expectIgnored('flux', starting, {}, /Progressing is not an applied change/);
    const applied = json('flux-kustomization-progressing.json');
    applied.reason = 'ReconciliationSucceeded';
    applied.message = 'Reconciliation finished in 2.1s, next run in 10m0s';
    const kustomization = await stored('flux', applied);
    expect(kustomization).toMatchObject({ service: 'apps' });
    expect(kustomization.labels).toMatchObject({
      ref: 'main',
      sha: 'e8f9a0b1c2d3e4f5a6b7c8d9e0f1a2b3c4d5e6f7',
      state: 'succeeded',
    });
  });
});

describe('generic changes', () => {
  it('a change body is stored as the change its kind says', async () => {
    const row = await stored('generic', fixture('generic-change.json'));
    expect(row).toMatchObject({ kind: 'deployment', service: 'checkout', provider: 'generic' });
    expect(row.title).toBe("Raised checkout's payment timeout to 30s in Consul");
    expect(row.labels).toMatchObject({
      change_type: 'config',
      author: 'lpark',
      environment: 'production',
      paths: 'config/checkout/payment_timeout',
    });
    expect(row.occurredAt.toISOString()).toBe('2024-05-14T09:18:00.000Z');
    const bump = await stored('generic', {
      type: 'change',
      change: {
        kind: 'dependency',
        title: 'libssl 3.0.13 on every image',
        services: ['checkout', 'payments'],
        repository: 'acme/base-images',
        version: '3.0.13',
      },
    });
    expect(bump).toMatchObject({ kind: 'code_change', service: 'checkout' });
    expect(bump.labels).toMatchObject({
      services: 'checkout,payments',
      repository: 'acme/base-images',
      version: '3.0.13',
    });
  });

  it('every invalid field is a 400 naming it', async () => {
    const res = await send('generic', {
      type: 'change',
      change: {
        kind: 'reboot',
        title: '',
        repository: 'not a repo',
        services: Array.from({ length: 21 }, (_, i) => `s${i}`),
        occurredAt: 'yesterday',
        url: 'not a url',
      },
    });
    expect(res.status).toBe(400);
    expect(res.body.error).toBe('validation_error');
    const paths = res.body.details.map((d: { path: string }) => d.path).sort();
    expect(paths).toEqual([
      'change.kind',
      'change.occurredAt',
      'change.repository',
      'change.services',
      'change.title',
      'change.url',
    ]);
    const missing = await send('generic', { type: 'change' });
    expect(missing.status).toBe(400);
    expect(missing.body.details).toEqual([{ path: 'change', message: 'change is required' }]);
  });

  it('an alert body is still an alert', async () => {
    const res = await send('generic', fixture('generic-single.json'));
    expect(res.status).toBe(202);
    expect(res.body.incidentIds).toHaveLength(1);
  });
});

describe('no change opened an incident', () => {
  it('the only incident of the tenant is the generic alert', async () => {
    const rows = await svc.database.db.select().from(incidents).where(eq(incidents.tenantId, tenant.tenantId));
    expect(rows).toHaveLength(1);
    expect(rows[0]!.fingerprint).toMatch(/^generic:/);
  });
});
