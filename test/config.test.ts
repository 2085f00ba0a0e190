import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { ConfigError, loadConfig, projectRoot } from '../src/config.js';

describe('loadConfig', () => {
  it('has sensible defaults for npm start', () => {
    const config = loadConfig({});
    expect(config).toMatchObject({
      nodeEnv: 'development',
      port: 8080,
      host: '127.0.0.1',
      publicBaseUrl: 'http://127.0.0.1:8080',
      databaseUrl: undefined,
      temporal: { address: undefined, namespace: 'default', taskQueue: 'incidents', port: 7233, uiPort: 8233 },
      pgPort: 5433,
      auth: { tokenTtlSeconds: 3600 },
      dataDir: path.join(projectRoot, '.data'),
      logLevel: 'info',
      apiStatementTimeoutMs: 30_000,
      workerStatementTimeoutMs: 300_000,
    });
  });

  it('reads every documented variable', () => {
    const config = loadConfig({
      PORT: '9000',
      HOST: '0.0.0.0',
      DATABASE_URL: 'postgres://u:p@db:5432/x',
      TEMPORAL_ADDRESS: 'temporal:7233',
      TEMPORAL_NAMESPACE: 'prod',
      TEMPORAL_CLI_PATH: '/usr/local/bin/temporal',
      JWT_SECRET: 'x'.repeat(32),
      JWKS_URL: 'https://idp.example.com/.well-known/jwks.json',
      DATA_DIR: '/var/lib/incidents',
      LOG_LEVEL: 'debug',
      TEMPORAL_ANSWER_TIMEOUT_MS: '90000',
      S3_ACCESS_KEY_ID: 'AKIA',
      S3_SECRET_ACCESS_KEY: 'secret',
      S3_ALLOWED_BUCKETS: 'audit-a, audit-b',
      WORKER_STATEMENT_TIMEOUT_MS: '600000',
    });
    expect(config).toMatchObject({
      port: 9000,
      host: '0.0.0.0',
      publicBaseUrl: 'http://localhost:9000',
      databaseUrl: 'postgres://u:p@db:5432/x',
      temporal: {
        address: 'temporal:7233',
        namespace: 'prod',
        cliPath: '/usr/local/bin/temporal',
        answerTimeoutMs: 90_000,
      },
      exports: { s3: { accessKeyId: 'AKIA', allowedBuckets: ['audit-a', 'audit-b'] } },
      auth: { jwtSecret: 'x'.repeat(32), jwksUrl: 'https://idp.example.com/.well-known/jwks.json' },
      dataDir: '/var/lib/incidents',
      logLevel: 'debug',
      workerStatementTimeoutMs: 600_000,
    });
    expect(loadConfig({ WORKER_STATEMENT_TIMEOUT_MS: '0' }).workerStatementTimeoutMs).toBe(0);
    expect(loadConfig({}).workerMaxCachedWorkflows).toBe(1000);
    expect(loadConfig({ WORKER_MAX_CACHED_WORKFLOWS: '0' }).workerMaxCachedWorkflows).toBe(0);
    expect(loadConfig({ WORKER_MAX_CACHED_WORKFLOWS: '2' }).workerMaxCachedWorkflows).toBe(2);
  });

  it.each([
    [{ PORT: 'eighty' }, 'PORT'],
    [{ PORT: '70000' }, 'PORT'],
    [{ DATABASE_URL: 'mysql://x' }, 'DATABASE_URL'],
    [{ TEMPORAL_ADDRESS: 'http://temporal' }, 'TEMPORAL_ADDRESS'],
    [{ JWT_SECRET: 'short' }, 'JWT_SECRET'],
    [{ JWKS_URL: 'not a url' }, 'JWKS_URL'],
    [{ LOG_LEVEL: 'loud' }, 'LOG_LEVEL'],
    [{ S3_ALLOWED_BUCKETS: 'Bad_Bucket' }, 'S3_ALLOWED_BUCKETS'],
    [{ TEMPORAL_ANSWER_TIMEOUT_MS: '10' }, 'TEMPORAL_ANSWER_TIMEOUT_MS'],
    [{ LLM_TIMEOUT_MS: '60000' }, 'LLM_TIMEOUT_MS'],
    [{ WORKER_STATEMENT_TIMEOUT_MS: '30000' }, 'WORKER_STATEMENT_TIMEOUT_MS'],
    [{ WORKER_MAX_CACHED_WORKFLOWS: '1' }, 'WORKER_MAX_CACHED_WORKFLOWS'],
    [{ WORKER_MAX_CACHED_WORKFLOWS: '-5' }, 'WORKER_MAX_CACHED_WORKFLOWS'],
    [{ NODE_ENV: 'production' }, 'JWT_SECRET'],
  ])('rejects %j naming %s', (env, variable) => {
    expect(() => loadConfig(env)).toThrow(ConfigError);
    expect(() => loadConfig(env)).toThrow(new RegExp(variable));
  });

  it.each(['LLM_BASE_URL', 'S3_ENDPOINT', 'JWKS_URL', 'PUBLIC_BASE_URL'])(
    'refuses credentials in %s, without quoting them',
    (variable) => {
      const env = {
        [variable]: 'https://someone:canary-password@example.com/v1',
        S3_ACCESS_KEY_ID: 'AKIA',
        S3_SECRET_ACCESS_KEY: 'secret',
      };
      const refused = (() => {
        try {
          loadConfig(env);
        } catch (err) {
          return err;
        }
      })();
      expect(refused).toBeInstanceOf(ConfigError);
      expect(String((refused as Error).message)).toMatch(new RegExp(`${variable}: must not hold credentials`));
      expect(String((refused as Error).message)).not.toContain('canary-password');
      // The same URL without them is taken.
      expect(() => loadConfig({ ...env, [variable]: 'https://example.com/v1' })).not.toThrow();
    },
  );

  it('accepts production with a JWKS URL and no secret, and treats empty values as unset', () => {
    expect(
      loadConfig({ NODE_ENV: 'production', JWKS_URL: 'https://idp.example.com/jwks' }).auth.jwtSecret,
    ).toBeUndefined();
    expect(loadConfig({ PORT: '', DATABASE_URL: '' }).port).toBe(8080);
  });
});
