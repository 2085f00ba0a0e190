import { describe, expect, it } from 'vitest';
import { ConfigError, loadConfig } from '../../src/config.js';

describe('sign-in and integration settings', () => {
  it('turns nothing on by default', () => {
    expect(loadConfig({}).identity).toEqual({
      providers: {},
      redirectOrigins: [],
      refreshTtlSeconds: 2_592_000,
      integrationClients: {},
    });
  });

  it('turns a provider on by its client id, with the documented defaults', () => {
    const { identity } = loadConfig({
      OAUTH_GITHUB_CLIENT_ID: 'Iv1.abc',
      OAUTH_GITHUB_CLIENT_SECRET: 'gh-secret',
      OAUTH_GOOGLE_CLIENT_ID: '123.apps.googleusercontent.com',
      OAUTH_GOOGLE_CLIENT_SECRET: 'g-secret',
      OIDC_ISSUER: 'https://login.example.com/realms/sre/',
      OIDC_CLIENT_ID: 'incidents',
      OIDC_CLIENT_SECRET: 'kc-secret',
      AUTH_REDIRECT_ORIGINS: 'https://app.example.com/, http://localhost:3000',
      REFRESH_TOKEN_TTL_SECONDS: '86400',
      INTEGRATION_PAGERDUTY_CLIENT_ID: 'pd-client',
      INTEGRATION_PAGERDUTY_CLIENT_SECRET: 'pd-secret',
      INTEGRATION_DATADOG_URL: 'https://api.datadoghq.eu/',
    });
    expect(identity.providers).toEqual({
      github: {
        clientId: 'Iv1.abc',
        clientSecret: 'gh-secret',
        url: 'https://github.com',
        apiUrl: 'https://api.github.com',
      },
      google: {
        clientId: '123.apps.googleusercontent.com',
        clientSecret: 'g-secret',
        issuer: 'https://accounts.google.com',
      },
      oidc: { clientId: 'incidents', clientSecret: 'kc-secret', issuer: 'https://login.example.com/realms/sre' },
    });
    expect(identity.redirectOrigins).toEqual(['https://app.example.com', 'http://localhost:3000']);
    expect(identity.refreshTtlSeconds).toBe(86_400);
    expect(identity.integrationClients).toEqual({
      pagerduty: { clientId: 'pd-client', clientSecret: 'pd-secret', url: undefined },
      datadog: { clientId: '', clientSecret: undefined, url: 'https://api.datadoghq.eu' },
    });
  });

  const refused: Array<[Record<string, string>, string]> = [
    [{ OAUTH_GITHUB_CLIENT_ID: 'x' }, 'OAUTH_GITHUB_CLIENT_SECRET'],
    [{ OIDC_CLIENT_ID: 'x', OIDC_CLIENT_SECRET: 'y' }, 'OIDC_ISSUER'],
    [{ OAUTH_GOOGLE_ISSUER: 'ftp://accounts.example.com' }, 'OAUTH_GOOGLE_ISSUER'],
    [{ AUTH_REDIRECT_ORIGINS: 'https://app.example.com/callback' }, 'AUTH_REDIRECT_ORIGINS'],
    [{ OIDC_ISSUER: 'http://keycloak.internal:8080/realms/sre' }, 'OIDC_ISSUER'],
    [{ OAUTH_GITHUB_API_URL: 'http://github.example.com/api/v3' }, 'OAUTH_GITHUB_API_URL'],
    [{ AUTH_REDIRECT_ORIGINS: 'app.example.com' }, 'AUTH_REDIRECT_ORIGINS'],
    [{ REFRESH_TOKEN_TTL_SECONDS: '10' }, 'REFRESH_TOKEN_TTL_SECONDS'],
    [{ INTEGRATION_GRAFANA_URL: 'not a url' }, 'INTEGRATION_GRAFANA_URL'],
  ];
  it('lets a provider on this machine use plain http (a local test provider)', () => {
    const env = { OIDC_ISSUER: 'http://127.0.0.1:9400/', OIDC_CLIENT_ID: 'a', OIDC_CLIENT_SECRET: 'b' };
    expect(loadConfig(env).identity.providers.oidc?.issuer).toBe('http://127.0.0.1:9400');
  });

  it.each(refused)('refuses %j, naming the setting', (env, name) => {
    expect(() => loadConfig(env)).toThrow(ConfigError);
    expect(() => loadConfig(env)).toThrow(name);
  });
});
