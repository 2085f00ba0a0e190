/**
 * The rules behind change sources, as functions: how a push's paths classify it, which workflow
 * deploys, what a bump title says, flag tags, revisions, and how a change is tied to a service
 * (globs, path conventions, mentions). Needs no service.
 */
import { describe, expect, it } from 'vitest';
import { changeMatcher, flagNames, globMatcher, namesInPath } from '../../src/activities/investigation/change-ties.js';
import {
  classifyPath,
  environmentFrom,
  isDeployWorkflow,
  pathsLabel,
  pushChangeType,
  repositoryFromUrl,
  servicesFromTags,
} from '../../src/ingest/providers/change-common.js';
import { splitRevision } from '../../src/ingest/providers/flux.js';
import { dependencyBump } from '../../src/ingest/providers/github-events.js';
import { parseResource } from '../../src/ingest/providers/launchdarkly.js';

describe('a push classified by its paths', () => {
  it.each([
    [['apps/checkout/values.yaml'], 'gitops'],
    [['charts/checkout/Chart.yaml', 'charts/checkout/templates/deployment.yaml'], 'gitops'],
    [['overlays/prod/kustomization.yaml'], 'gitops'],
    [['values-production.yaml'], 'gitops'],
    [['terraform/prod/checkout/main.tf', 'terraform/prod/checkout/prod.tfvars'], 'infrastructure'],
    [['apps/checkout/values.yaml', 'terraform/prod/main.tf'], 'gitops'],
    [['package.json', 'package-lock.json'], 'dependency'],
    [['services/api/go.mod', 'services/api/go.sum'], 'dependency'],
    [['requirements-dev.txt'], 'dependency'],
    [['src/cart.ts', 'package.json'], 'push'],
    [['README.md'], 'push'],
    [['src/config.yaml'], 'push'],
    [[], 'push'],
  ])('%j → %s', (paths, type) => {
    expect(pushChangeType(paths)).toBe(type);
  });

  it('tells each path apart', () => {
    expect(classifyPath('k8s/checkout/deployment.yml')).toBe('gitops');
    expect(classifyPath('infra/.terraform.lock.hcl')).toBe('infrastructure');
    expect(classifyPath('Cargo.lock')).toBe('dependency');
    expect(classifyPath('docs/apps.md')).toBe('other');
  });

  it('keeps paths distinct, one line each, within 200 paths and 4,000 characters', () => {
    expect(pathsLabel(['a', 'b', 'a', ' ', 'c\nd'])).toBe('a\nb\nc d');
    expect(pathsLabel([])).toBeUndefined();
    expect(pathsLabel(Array.from({ length: 500 }, (_, i) => `p${i}`))!.split('\n')).toHaveLength(200);
    expect(pathsLabel(Array.from({ length: 100 }, (_, i) => `${'x'.repeat(99)}${i}`))!.length).toBeLessThanOrEqual(
      4000,
    );
  });
});

describe('GitHub reading', () => {
  it('knows a deploy workflow by its name or file, and the environment they name', () => {
    expect(isDeployWorkflow('Deploy production', '.github/workflows/deploy-production.yml')).toBe(true);
    expect(isDeployWorkflow('CI/CD', null)).toBe(true);
    expect(isDeployWorkflow('Release', undefined)).toBe(true);
    expect(isDeployWorkflow('Unit tests', '.github/workflows/test.yml')).toBe(false);
    expect(isDeployWorkflow('Redeploy docs preview', null)).toBe(false);
    expect(environmentFrom('Deploy', 'deploy-prod.yml')).toBe('production');
    expect(environmentFrom('Rollout to staging')).toBe('staging');
    expect(environmentFrom('Deploy')).toBeUndefined();
  });

  it('reads dependency bumps off Dependabot and Renovate titles', () => {
    expect(dependencyBump('Bump axios from 1.6.8 to 1.7.0')).toEqual({
      dependency: 'axios',
      from: '1.6.8',
      to: '1.7.0',
    });
    expect(dependencyBump('chore(deps): bump golang.org/x/net from 0.17.0 to 0.23.0 in /api')).toEqual({
      dependency: 'golang.org/x/net',
      from: '0.17.0',
      to: '0.23.0',
    });
    expect(dependencyBump('Update dependency pg to v8.11.5')).toEqual({ dependency: 'pg', to: 'v8.11.5' });
    expect(dependencyBump('fix(deps): update dependency @types/node to v20.12.12')).toEqual({
      dependency: '@types/node',
      to: 'v20.12.12',
    });
    expect(dependencyBump('Update README to v2 wording')).toBeUndefined();
    expect(dependencyBump('Lower the payments timeout')).toBeUndefined();
  });
});

describe('flags, GitOps controllers', () => {
  it('reads services off flag tags', () => {
    expect(servicesFromTags(['service:checkout', 'payments'])).toEqual({ service: 'checkout', services: ['checkout'] });
    expect(servicesFromTags(['checkout'])).toEqual({ service: 'checkout', services: ['checkout'] });
    expect(servicesFromTags(['checkout', 'payments'])).toEqual({ service: null, services: ['checkout', 'payments'] });
    expect(servicesFromTags(['service=a', 'service:b'])).toEqual({ service: 'a', services: ['a', 'b'] });
    expect(servicesFromTags(['has space', '', null])).toEqual({ service: null, services: [] });
  });

  it('reads LaunchDarkly resources, git URLs and Flux revisions', () => {
    expect(parseResource('proj/checkout:env/production:flag/new-flow;service:checkout,web')).toEqual({
      project: 'checkout',
      env: 'production',
      flag: 'new-flow',
      tags: ['service:checkout', 'web'],
    });
    expect(repositoryFromUrl('https://github.com/acme/platform-config.git')).toBe('acme/platform-config');
    expect(repositoryFromUrl('git@github.com:acme/platform-config.git')).toBe('acme/platform-config');
    expect(repositoryFromUrl('https://gitlab.example.com/group/sub/repo')).toBe('sub/repo');
    expect(repositoryFromUrl('oci://ghcr.io')).toBeUndefined();
    expect(splitRevision('main@sha1:e8f9a0b1c2d3e4f5a6b7c8d9e0f1a2b3c4d5e6f7')).toEqual({
      ref: 'main',
      sha: 'e8f9a0b1c2d3e4f5a6b7c8d9e0f1a2b3c4d5e6f7',
    });
    expect(splitRevision(`main/${'a'.repeat(40)}`)).toEqual({ ref: 'main', sha: 'a'.repeat(40) });
    expect(splitRevision('1.14.2')).toEqual({ version: '1.14.2' });
  });
});

describe('tying a change to a service', () => {
  it('matches globs by segment: * within one, ** across any number', () => {
    const apps = globMatcher('apps/checkout/**');
    expect(apps('apps/checkout/values.yaml')).toBe(true);
    expect(apps('apps/checkout/overlays/prod/kustomization.yaml')).toBe(true);
    expect(apps('apps/checkout')).toBe(true);
    expect(apps('apps/checkout-v2/values.yaml')).toBe(false);
    expect(apps('other/apps/checkout/values.yaml')).toBe(false);
    const values = globMatcher('**/checkout/values-*.yaml');
    expect(values('env/prod/checkout/values-prod.yaml')).toBe(true);
    expect(values('checkout/values-prod.yaml')).toBe(true);
    expect(values('checkout/sub/values-prod.yaml')).toBe(false);
    expect(globMatcher('charts/?art/*.yaml')('charts/cart/values.yaml')).toBe(true);
    expect(globMatcher('charts/?art/*.yaml')('charts/cart/x/values.yaml')).toBe(false);
    expect(globMatcher('Apps/CHECKOUT/**')('apps/checkout/a')).toBe(true);
  });

  it('answers at once for a glob of many stars against a long path', () => {
    const glob = globMatcher(`${'**/'.repeat(40)}${'*a'.repeat(60)}b`);
    const path = `${'x/'.repeat(100)}${'a'.repeat(200)}`;
    const started = Date.now();
    expect(glob(path)).toBe(false);
    expect(Date.now() - started).toBeLessThan(500);
  });

  it('reads the service a path names by convention', () => {
    expect(namesInPath('apps/checkout/values.yaml')).toEqual(['checkout']);
    expect(namesInPath('clusters/prod/apps/checkout/helmrelease.yaml')).toEqual(['apps', 'checkout']);
    expect(namesInPath('environments/production/payments/kustomization.yaml')).toEqual(['payments']);
    expect(namesInPath('terraform/prod/checkout/main.tf')).toEqual(['prod', 'checkout']);
    expect(namesInPath('src/apps.ts')).toEqual([]);
  });

  it('reads the service a flag key names', () => {
    expect(flagNames('new-checkout-flow', 'checkout-api')).toBe(true);
    expect(flagNames('use-tax-service-v2', 'tax-api')).toBe(true);
    expect(flagNames('use-tax-service-v2', 'tax-service')).toBe(true);
    expect(flagNames('search-v2-ranking', 'search-index')).toBe(true);
    expect(flagNames('recommendations_batch_size', 'recommendations-api')).toBe(true);
    expect(flagNames('checkout-api.retries', 'checkout-api')).toBe(true);
    expect(flagNames('new-api-client', 'api-gateway')).toBe(false);
    expect(flagNames('dark-mode', 'checkout-api')).toBe(false);
    expect(flagNames('checkoutv2', 'checkout-api')).toBe(false);
  });

  it('ties a flag whose key names the service, a dependency, or a service of the incident’s alerts', () => {
    const byKey = changeMatcher(
      [
        { name: 'checkout-api', hops: 0, repositories: [] },
        { name: 'inventory-api', hops: 1, repositories: [] },
      ],
      'checkout-api 5xx above 5%',
      ['checkout-api', 'recommendations-api'],
    );
    expect(byKey({ service: null, labels: { flag: 'new-checkout-flow' } })).toEqual({ hops: 0, matchedBy: 'mention' });
    expect(byKey({ service: null, labels: { flag: 'inventory_reservations_v2' } })).toEqual({
      hops: 1,
      matchedBy: 'mention',
    });
    expect(byKey({ service: null, labels: { flag: 'recommendations_batch_size' } })).toEqual({
      hops: 0,
      matchedBy: 'mention',
    });
    expect(byKey({ service: null, labels: { flag: 'dark-mode' } })).toBeUndefined();
  });

  const targets = [
    { name: 'checkout', hops: 0, repositories: [{ repository: 'acme/platform-config', paths: ['apps/checkout/**'] }] },
    { name: 'payments', hops: 1, repositories: [{ repository: 'acme/payments' }] },
  ];
  const match = changeMatcher(
    targets,
    'retries rose after flag new-payment-retry-policy; see dashboards'.toLowerCase(),
  );

  it.each([
    ['its service', { service: 'Checkout', labels: {} }, { hops: 0, matchedBy: 'service' }],
    ['one of its services', { service: null, labels: { services: 'web,payments' } }, { hops: 1, matchedBy: 'service' }],
    [
      'a listed repository',
      { service: 'x', labels: { repository: 'ACME/payments' } },
      { hops: 1, matchedBy: 'repository' },
    ],
    [
      'a glob of a listed repository',
      {
        service: 'platform-config',
        labels: { repository: 'acme/platform-config', paths: 'apps/checkout/values.yaml' },
      },
      { hops: 0, matchedBy: 'path' },
    ],
    [
      'a path convention',
      {
        service: 'infra-live',
        labels: { repository: 'acme/infra-live', paths: 'README.md\ncharts/payments/values.yaml' },
      },
      { hops: 1, matchedBy: 'path' },
    ],
    [
      'a flag the alerts mention',
      { service: null, labels: { flag: 'new-payment-retry-policy' } },
      { hops: 0, matchedBy: 'mention' },
    ],
    [
      'the nearest target before the kind of tie',
      { service: 'payments', labels: { repository: 'acme/platform-config', paths: 'apps/checkout/a.yaml' } },
      { hops: 0, matchedBy: 'path' },
    ],
  ])('by %s', (_what, change, tie) => {
    expect(match(change)).toEqual(tie);
  });

  it.each([
    [
      'another service’s path in the shared repository',
      { service: 'platform-config', labels: { repository: 'acme/platform-config', paths: 'apps/search/values.yaml' } },
    ],
    [
      'an unrelated repository',
      { service: 'marketing-site', labels: { repository: 'acme/marketing-site', paths: 'src/index.html' } },
    ],
    ['a flag nobody mentions', { service: null, labels: { flag: 'dark-mode' } }],
    ['a flag whose key only starts a mentioned word', { service: null, labels: { flag: 'new-payment' } }],
    [
      'a shared repository without a changed path',
      { service: 'platform-config', labels: { repository: 'acme/platform-config' } },
    ],
  ])('not by %s', (_what, change) => {
    expect(match(change)).toBeUndefined();
  });
});
