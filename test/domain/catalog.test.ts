import { describe, it, expect } from 'vitest';
import {
  catalogEntries,
  integrationCatalog,
  integrationCategories,
  type IntegrationDefinition,
} from '../../src/domain/catalog.js';

const baseUrl = 'https://incidents.example.com';

function byAuthType(authType: IntegrationDefinition['authType']): IntegrationDefinition[] {
  return integrationCatalog.filter((d) => d.authType === authType);
}

describe('integration catalog', () => {
  it('has at least 18 entries', () => {
    expect(integrationCatalog.length).toBeGreaterThanOrEqual(18);
  });

  it('has unique snake_case provider keys', () => {
    const providers = integrationCatalog.map((d) => d.provider);
    expect(new Set(providers).size).toBe(providers.length);
    for (const provider of providers) {
      expect(provider).toMatch(/^[a-z][a-z0-9]*(_[a-z0-9]+)*$/);
    }
  });

  it('has at least 3 entries in every category', () => {
    for (const category of integrationCategories) {
      const count = integrationCatalog.filter((d) => d.category === category).length;
      expect(count, category).toBeGreaterThanOrEqual(3);
    }
  });

  it('includes the required providers', () => {
    const providers = new Set(integrationCatalog.map((d) => d.provider));
    for (const required of [
      'alertmanager',
      'grafana',
      'datadog',
      'sentry',
      'pagerduty',
      'new_relic',
      'opsgenie',
      'github',
      'gitlab',
      'bitbucket',
      'jira',
      'linear',
      'servicenow',
      'zendesk',
      'slack',
      'microsoft_teams',
      'aws',
      'gcp',
      'azure',
    ]) {
      expect(providers.has(required), required).toBe(true);
    }
    expect(providers.has('discord') || providers.has('mattermost')).toBe(true);
  });

  it('is sorted by category then provider', () => {
    const keys = integrationCatalog.map((d) => [integrationCategories.indexOf(d.category), d.provider] as const);
    const sorted = [...keys].sort((a, b) => a[0] - b[0] || (a[1] < b[1] ? -1 : a[1] > b[1] ? 1 : 0));
    expect(keys).toEqual(sorted);
  });

  it('gives every entry a display name and a description', () => {
    for (const d of integrationCatalog) {
      expect(d.displayName.trim(), d.provider).not.toBe('');
      expect(d.description.trim(), d.provider).not.toBe('');
    }
  });

  it('gives oauth2 entries non-empty scopes and no required fields', () => {
    const oauth = byAuthType('oauth2');
    expect(oauth.length).toBeGreaterThan(0);
    for (const d of oauth) {
      expect(d.scopes.length, d.provider).toBeGreaterThan(0);
      expect(new Set(d.scopes).size, d.provider).toBe(d.scopes.length);
      expect(d.requiredFields, d.provider).toEqual([]);
    }
  });

  it('gives api_key entries non-empty camelCase required fields and no scopes', () => {
    const apiKey = byAuthType('api_key');
    expect(apiKey.length).toBeGreaterThan(0);
    for (const d of apiKey) {
      expect(d.requiredFields.length, d.provider).toBeGreaterThan(0);
      for (const field of d.requiredFields) expect(field, d.provider).toMatch(/^[a-z][a-zA-Z0-9]*$/);
      expect(d.scopes, d.provider).toEqual([]);
    }
    expect(integrationCatalog.find((d) => d.provider === 'datadog')?.requiredFields).toEqual([
      'apiKey',
      'applicationKey',
      'site',
    ]);
  });

  it('gives webhook_only entries neither scopes nor required fields', () => {
    const webhook = byAuthType('webhook_only');
    expect(webhook.map((d) => d.provider)).toContain('alertmanager');
    for (const d of webhook) {
      expect(d.scopes, d.provider).toEqual([]);
      expect(d.requiredFields, d.provider).toEqual([]);
    }
  });
});

describe('catalogEntries', () => {
  it('returns the whole catalog without a category', () => {
    const entries = catalogEntries(baseUrl);
    expect(entries.map((e) => e.provider)).toEqual(integrationCatalog.map((d) => d.provider));
  });

  it('filters by category', () => {
    for (const category of integrationCategories) {
      const entries = catalogEntries(baseUrl, category);
      expect(entries.length, category).toBeGreaterThanOrEqual(3);
      expect(
        entries.every((e) => e.category === category),
        category,
      ).toBe(true);
      expect(entries.map((e) => e.provider)).toEqual(
        integrationCatalog.filter((d) => d.category === category).map((d) => d.provider),
      );
    }
  });

  it('builds connect URLs from the base URL and provider', () => {
    for (const entry of catalogEntries(baseUrl)) {
      expect(entry.connectUrl).toBe(`${baseUrl}/v1/integrations/connect/${entry.provider}`);
    }
    const github = catalogEntries('http://localhost:8080', 'code').find((e) => e.provider === 'github');
    expect(github?.connectUrl).toBe('http://localhost:8080/v1/integrations/connect/github');
  });

  it('returns copies that do not alias the catalog', () => {
    const [first] = catalogEntries(baseUrl);
    expect(first).toBeDefined();
    if (!first) return;
    first.scopes.push('mutated');
    first.requiredFields.push('mutated');
    const original = integrationCatalog.find((d) => d.provider === first.provider);
    expect(original?.scopes).not.toContain('mutated');
    expect(original?.requiredFields).not.toContain('mutated');
  });
});
