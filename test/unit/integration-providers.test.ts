import { describe, expect, it } from 'vitest';
import { integrationCatalog } from '../../src/domain/catalog.js';
import { confinedPath, resolveAction } from '../../src/integrations/actions.js';
import { apiKeySpecOf } from '../../src/integrations/api-key-providers.js';
import { authorizationUrl } from '../../src/integrations/oauth.js';
import { endpoint, oauthSpecOf } from '../../src/integrations/providers.js';

describe('provider tables', () => {
  it('cover every oauth2 and api_key provider of the catalog, with exactly its required fields', () => {
    for (const d of integrationCatalog) {
      if (d.authType === 'oauth2') expect(oauthSpecOf(d.provider), d.provider).toBeDefined();
      if (d.authType === 'api_key')
        expect(Object.keys(apiKeySpecOf(d.provider)?.fields ?? {}).sort(), d.provider).toEqual(
          [...d.requiredFields].sort(),
        );
      if (d.authType === 'webhook_only') expect(oauthSpecOf(d.provider) ?? apiKeySpecOf(d.provider)).toBeUndefined();
    }
  });

  it('an operator URL replaces the origin and keeps the path', () => {
    expect(endpoint('https://slack.com/api/oauth.v2.access', {})).toBe('https://slack.com/api/oauth.v2.access');
    expect(endpoint('https://slack.com/api/oauth.v2.access', { override: 'http://127.0.0.1:9000/' })).toBe(
      'http://127.0.0.1:9000/api/oauth.v2.access',
    );
    expect(endpoint('https://api.github.com', { override: 'https://ghe.example.com/api/v3' })).toBe(
      'https://ghe.example.com/api/v3',
    );
    expect(endpoint('https://{subdomain}.zendesk.com/oauth/tokens', { subdomain: 'acme' })).toBe(
      'https://acme.zendesk.com/oauth/tokens',
    );
  });

  it("joins the catalog's scopes as each provider expects", () => {
    const client = { clientId: 'id', clientSecret: 's', url: undefined };
    const slack = new URL(
      authorizationUrl(oauthSpecOf('slack')!, client, {
        state: 'st',
        redirectUri: 'https://x/cb',
        scopes: ['a:b', 'c:d'],
      }),
    );
    expect(slack.searchParams.get('scope')).toBe('a:b,c:d');
    const gcp = new URL(
      authorizationUrl(oauthSpecOf('gcp')!, client, { state: 'st', redirectUri: 'https://x/cb', scopes: ['s1', 's2'] }),
    );
    expect(gcp.searchParams.get('scope')).toBe('s1 s2');
    expect(gcp.searchParams.get('access_type')).toBe('offline');
  });
});

describe('actions', () => {
  it('keep api_request paths under the API base', () => {
    const base = 'https://api.pagerduty.com';
    expect(confinedPath(base, '/incidents?limit=1')).toBe('/incidents?limit=1');
    for (const bad of ['incidents', '//evil.test/x', '/a/../../b', '/a/%2e%2e/b', '/a/%2F/b', '/a\\b', '/a b'])
      expect(() => confinedPath(base, bad), bad).toThrow();
    expect(() => confinedPath('https://sentry.io/api/0', '/projects/')).not.toThrow();
  });

  it('are named provider.action, or action with a provider', () => {
    expect(resolveAction({ action: 'github.create_issue' }).provider).toBe('github');
    expect(resolveAction({ action: 'add_note', provider: 'pagerduty' }).name).toBe('add_note');
    expect(resolveAction({ action: 'datadog.api_request' }).name).toBe('api_request');
    expect(() => resolveAction({ action: 'github.delete_everything' })).toThrow(/not an integration action/);
    expect(() => resolveAction({ action: 'myspace.api_request' })).toThrow(/no provider/);
  });
});
