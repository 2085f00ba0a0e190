import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { z } from 'zod';
import { loadBillingSettings, type BillingSettings } from './billing/settings.js';
import { isNetwork } from './skills/networks.js';
import { loadIdentitySettings, type IdentitySettings } from './auth/settings.js';
import type { TemporalSecurity } from './temporal/connection.js';

/** The project root (one level above src/). */
export const projectRoot = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');

const port = z.coerce.number().int().min(1).max(65535);
const optionalString = z
  .string()
  .trim()
  .transform((v) => (v === '' ? undefined : v))
  .optional();

/** Node's fetch refuses a URL with credentials, and its error quotes the URL whole: refused here. */
const withoutCredentials = (url: string) => {
  if (!URL.canParse(url)) return true; // refused as no URL already
  const parsed = new URL(url);
  return parsed.username === '' && parsed.password === '';
};
const CREDENTIALS_IN_URL = { message: 'must not hold credentials (user:password@); give them in their own setting' };

const envSchema = z.object({
  NODE_ENV: z.enum(['development', 'production', 'test']).default('development'),
  PORT: port.default(8080),
  HOST: z.string().min(1).default('127.0.0.1'),
  PUBLIC_BASE_URL: z.url().refine(withoutCredentials, CREDENTIALS_IN_URL).optional(),
  DATABASE_URL: z
    .string()
    .regex(/^postgres(ql)?:\/\//, 'must be a postgres:// or postgresql:// URL')
    .optional(),
  TEMPORAL_ADDRESS: z
    .string()
    .regex(/^[A-Za-z0-9.-]+:\d{1,5}$/, 'must be host:port')
    .optional(),
  TEMPORAL_NAMESPACE: z.string().min(1).default('default'),
  TEMPORAL_TASK_QUEUE: z.string().min(1).default('incidents'),
  TEMPORAL_CLI_PATH: optionalString,
  WORKFLOW_BUNDLE_PATH: optionalString,
  TEMPORAL_PORT: port.default(7233),
  TEMPORAL_UI_PORT: port.default(8233),
  TEMPORAL_ANSWER_TIMEOUT_MS: z.coerce.number().int().min(1000).max(3_600_000).default(120_000),
  /** mTLS and API key for a secured cluster or Temporal Cloud (ADR 0283). */
  TEMPORAL_TLS_CERT_PATH: optionalString,
  TEMPORAL_TLS_KEY_PATH: optionalString,
  TEMPORAL_TLS_CA_PATH: optionalString,
  TEMPORAL_TLS_SERVER_NAME: optionalString,
  TEMPORAL_API_KEY: optionalString,
  PG_PORT: port.default(5433),
  JWT_SECRET: z.string().min(32, 'must be at least 32 characters').optional(),
  JWKS_URL: z.url().refine(withoutCredentials, CREDENTIALS_IN_URL).optional(),
  JWT_TTL_SECONDS: z.coerce.number().int().min(60).max(86_400).default(3600),
  /** The longest lifetime (`exp` - `iat`) a token may claim. */
  JWT_MAX_LIFETIME_SECONDS: z.coerce.number().int().min(60).max(2_592_000).default(86_400),
  /** How far ahead of ours a token issuer's clock may be (`iat`, `nbf`). */
  JWT_CLOCK_SKEW_SECONDS: z.coerce.number().int().min(0).max(600).default(60),
  DATA_DIR: optionalString,
  LOG_LEVEL: z.enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']).default('info'),
  TRUST_PROXY: z.enum(['true', 'false']).default('false'),
  PUBLIC_RATE_LIMIT_PER_MINUTE: z.coerce.number().int().min(1).default(300),
  WEBHOOK_RATE_LIMIT_PER_MINUTE: z.coerce.number().int().min(1).default(120_000),
  /** Refused webhook keys one address may send one tenant path a minute before 429 (ADR 0253). */
  WEBHOOK_KEY_FAILURES_PER_MINUTE: z.coerce.number().int().min(1).default(600),
  /** Threads that parse webhook bodies of 64 KiB and more (ADR 0252); 0 parses on the api's thread. */
  WEBHOOK_PARSE_THREADS: z.coerce.number().int().min(0).max(16).default(1),
  API_STATEMENT_TIMEOUT_MS: z.coerce.number().int().min(0).max(3_600_000).default(30_000),
  // Above the 60 s idle timeout of common load balancers, so the balancer closes idle connections, not us.
  HTTP_KEEP_ALIVE_TIMEOUT_MS: z.coerce.number().int().min(1000).max(3_600_000).default(65_000),
  HTTP_HEADERS_TIMEOUT_MS: z.coerce.number().int().min(1000).max(3_600_000).default(66_000),
  HTTP_REQUEST_TIMEOUT_MS: z.coerce.number().int().min(1000).max(3_600_000).default(60_000),
  HTTP_MAX_CONNECTIONS: z.coerce.number().int().min(1).max(1_000_000).default(10_000),
  // Temporal long-polls for about 60 s, so a live worker's latest poll is at most about that old.
  WORKER_POLL_STALE_MS: z.coerce.number().int().min(1000).max(3_600_000).default(70_000),
  METRICS_TOKEN: z.string().min(16, 'must be at least 16 characters').optional(),
  WORKER_METRICS_PORT: z.coerce.number().int().min(0).max(65535).default(9464),
  WORKER_STATEMENT_TIMEOUT_MS: z.coerce
    .number()
    .int()
    .min(0)
    .max(3_600_000)
    .refine((ms) => ms === 0 || ms >= 150_000, {
      message: 'must be 0 (no bound) or at least 150000: above the longest activity timeout (2 minutes)',
    })
    .default(300_000),
  WORKER_MAX_CACHED_WORKFLOWS: z.coerce
    .number()
    .int()
    .min(0)
    .max(100_000)
    .refine((n) => n !== 1, { message: 'must be 0 (no cache) or at least 2' })
    .default(1000),
  SKILL_ENCRYPTION_KEY: z
    .string()
    .trim()
    .refine((v) => /^[A-Za-z0-9+/_-]+={0,2}$/.test(v) && Buffer.from(v, 'base64').length === 32, {
      message: 'must be 32 bytes in base64 (openssl rand -base64 32)',
    })
    .optional(),
  WIDGET_MAX_OPEN_SESSIONS_PER_KEY: z.coerce.number().int().min(1).max(1_000_000).default(1000),
  SKILL_ALLOWED_NETWORKS: z
    .string()
    .transform((v) =>
      v
        .split(',')
        .map((entry) => entry.trim())
        .filter((entry) => entry !== ''),
    )
    .refine((entries) => entries.every(isNetwork), {
      message: 'must be a comma-separated list of IP addresses or CIDR ranges (e.g. 10.1.0.0/16,127.0.0.1/32)',
    })
    .default([]),
  LLM_BASE_URL: z
    .url({ protocol: /^https?$/, message: 'must be an http(s) URL such as https://api.openai.com/v1' })
    .refine(withoutCredentials, { message: 'must not hold credentials (user:password@); give the key as LLM_API_KEY' })
    .optional(),
  LLM_API_KEY: optionalString,
  LLM_MODEL: z.string().trim().min(1).max(200).default('gpt-4o-mini'),
  // Below triage's 60 s activity timeout, so a slow model falls back to the built-in analyzer (ADR 0180).
  LLM_TIMEOUT_MS: z.coerce.number().int().min(100).max(50_000).default(20_000),
  LLM_COST_PER_1K_TOKENS: z.coerce.number().min(0).max(1000).default(0),
  EXPORT_DIR: optionalString,
  EXPORT_URL_SECRET: z.string().min(32, 'must be at least 32 characters').optional(),
  S3_ENDPOINT: z
    .url({ protocol: /^https?$/, message: 'must be an http(s) URL such as https://s3.eu-west-1.amazonaws.com' })
    .refine(withoutCredentials, {
      message: 'must not hold credentials (user:password@); give them as S3_ACCESS_KEY_ID and S3_SECRET_ACCESS_KEY',
    })
    .optional(),
  S3_REGION: z.string().trim().min(1).default('us-east-1'),
  S3_ACCESS_KEY_ID: optionalString,
  S3_SECRET_ACCESS_KEY: optionalString,
  S3_FORCE_PATH_STYLE: z.enum(['true', 'false']).default('false'),
  S3_ALLOWED_BUCKETS: z
    .string()
    .trim()
    .regex(
      /^[a-z0-9][a-z0-9.-]{1,61}[a-z0-9](\s*,\s*[a-z0-9][a-z0-9.-]{1,61}[a-z0-9])*$/,
      'must be a comma-separated list of bucket names',
    )
    .optional(),
});

/** S3-compatible object storage for audit exports with a destination. */
export interface S3Config {
  endpoint: string;
  region: string;
  accessKeyId: string;
  secretAccessKey: string;
  /** `https://endpoint/bucket/key` instead of `https://bucket.endpoint/key` (most non-AWS stores). */
  forcePathStyle: boolean;
  /** The buckets tenants may name as an export destination (`S3_ALLOWED_BUCKETS`); any when unset. */
  allowedBuckets?: string[];
}

/** The api's HTTP server bounds. */
export interface HttpSettings {
  /** How long an idle keep-alive connection is kept open. */
  keepAliveTimeoutMs: number;
  /** How long a request's headers may take to arrive (more than keepAliveTimeoutMs). */
  headersTimeoutMs: number;
  /** How long a request's body may take to arrive once its headers have: past it, 408 `request_timeout`. */
  requestTimeoutMs: number;
  /** Open connections at most; more are closed on arrival. */
  maxConnections: number;
}

export interface Config {
  nodeEnv: 'development' | 'production' | 'test';
  port: number;
  host: string;
  publicBaseUrl: string;
  databaseUrl: string | undefined;
  temporal: {
    address: string | undefined;
    namespace: string;
    taskQueue: string;
    cliPath: string | undefined;
    /** A prebuilt workflow bundle (`npm run build:workflows`); the worker bundles at start when unset. */
    workflowBundlePath: string | undefined;
    port: number;
    uiPort: number;
    /** How long an api request waits for a workflow's answer (an Update, a skill test) before 503. */
    answerTimeoutMs: number;
    /** Client certificate, CA, server name and API key of the connections (ADR 0283). */
    security: TemporalSecurity;
  };
  pgPort: number;
  /** Sign-in providers, refresh tokens, redirect origins, integration OAuth clients. */
  identity: IdentitySettings;
  auth: {
    jwtSecret: string | undefined;
    jwksUrl: string | undefined;
    tokenTtlSeconds: number;
    maxLifetimeSeconds: number;
    clockSkewSeconds: number;
  };
  dataDir: string;
  logLevel: string;
  trustProxy: boolean;
  publicRateLimitPerMinute: number;
  webhookRateLimitPerMinute: number;
  webhookKeyFailuresPerMinute: number;
  webhookParseThreads: number;
  /**
   * The api's bound on one SQL statement, and on a transaction idle between two (0: none): a
   * request stuck behind a lock is answered 503 instead of holding its connection. Audit
   * verification sets its own.
   */
  apiStatementTimeoutMs: number;
  /**
   * The worker's bound on one SQL statement, and on a transaction idle between two (0: none):
   * an activity's timeout ends the attempt, not the statement it waits on, and the worker's own
   * loops (dispatchers, purges) have no timeout at all. Above every activity timeout, so it
   * only ends what nothing else would.
   */
  workerStatementTimeoutMs: number;
  /**
   * How many incident workflows the worker keeps in memory between their tasks (about 85 KB
   * each); one evicted replays its history on its next task.
   */
  workerMaxCachedWorkflows: number;
  /** The api's HTTP server bounds. */
  http: HttpSettings;
  /** A task queue poller whose last poll is older than this counts as gone in /health/detailed. */
  workerPollStaleMs: number;
  /** `/metrics`: the bearer token a scrape must send (none when unset); the worker's port (0: off). */
  metrics: { token: string | undefined; workerPort: number };
  /** How many sessions one publishable widget key may have open at once (ADR 0293). */
  widget: { maxOpenSessionsPerKey: number };
  skills: {
    /** AES-256-GCM key for skill header values; generated into DATA_DIR by `npm start` when unset. */
    encryptionKey: Buffer | undefined;
    /** Addresses skills may reach although they are private, loopback or link-local. */
    allowedNetworks: string[];
  };
  /** The OpenAI-compatible model behind triage; the built-in analyzer when `baseUrl` is unset. */
  llm: {
    baseUrl: string | undefined;
    apiKey: string | undefined;
    model: string;
    timeoutMs: number;
    costPer1kTokens: number;
  };
  /** The payment provider (issue 40, docs/billing.md); undefined when self-hosted (no STRIPE_SECRET_KEY). */
  billing: BillingSettings | undefined;
  exports: {
    /** Where export files are written (shared by the worker that writes and the api that serves them). */
    dir: string;
    /** HMAC key of download URLs; derived from the JWT secret with HKDF when unset. */
    urlSecret: string | undefined;
    /** Object storage for exports with a destination; undefined when not configured. */
    s3: S3Config | undefined;
  };
}

export class ConfigError extends Error {
  constructor(readonly problems: string[]) {
    super(`Invalid configuration:\n${problems.map((p) => `  - ${p}`).join('\n')}`);
    this.name = 'ConfigError';
  }
}

/** Parses the environment into a Config. Pure: no I/O, no side effects. */
export function loadConfig(env: Record<string, string | undefined>): Config {
  // Empty strings count as unset, as shells and compose files produce them.
  const cleaned = Object.fromEntries(Object.entries(env).filter(([, v]) => v !== undefined && v !== ''));
  const parsed = envSchema.safeParse(cleaned);
  if (!parsed.success) {
    throw new ConfigError(parsed.error.issues.map((i) => `${i.path.join('.')}: ${i.message}`));
  }
  const e = parsed.data;
  if (e.HTTP_HEADERS_TIMEOUT_MS <= e.HTTP_KEEP_ALIVE_TIMEOUT_MS) {
    throw new ConfigError(['HTTP_HEADERS_TIMEOUT_MS: must be more than HTTP_KEEP_ALIVE_TIMEOUT_MS']);
  }
  if (e.JWT_TTL_SECONDS > e.JWT_MAX_LIFETIME_SECONDS) {
    // The token npm start prints (and the CLI's default) would be refused by the api itself.
    throw new ConfigError([
      `JWT_TTL_SECONDS: must be at most JWT_MAX_LIFETIME_SECONDS (${e.JWT_MAX_LIFETIME_SECONDS})`,
    ]);
  }
  if (e.NODE_ENV === 'production' && !e.JWT_SECRET && !e.JWKS_URL) {
    throw new ConfigError(['JWT_SECRET: required in production unless JWKS_URL is set']);
  }
  if (Boolean(e.TEMPORAL_TLS_CERT_PATH) !== Boolean(e.TEMPORAL_TLS_KEY_PATH)) {
    throw new ConfigError(['TEMPORAL_TLS_CERT_PATH, TEMPORAL_TLS_KEY_PATH: both are required for mTLS']);
  }
  const s3Keys = [e.S3_ACCESS_KEY_ID, e.S3_SECRET_ACCESS_KEY].filter((v) => v !== undefined).length;
  if (s3Keys === 1 || (e.S3_ENDPOINT && s3Keys === 0)) {
    throw new ConfigError([
      'S3_ACCESS_KEY_ID, S3_SECRET_ACCESS_KEY: both are required to use object storage (S3_ENDPOINT)',
    ]);
  }
  const identity = loadIdentitySettings(cleaned);
  if ('problems' in identity) throw new ConfigError(identity.problems);
  const billing = loadBillingSettings(cleaned);
  if ('problems' in billing) throw new ConfigError(billing.problems);
  const dataDir = path.resolve(e.DATA_DIR ?? path.join(projectRoot, '.data'));
  const publicHost = e.HOST === '0.0.0.0' || e.HOST === '::' ? 'localhost' : e.HOST;
  return {
    nodeEnv: e.NODE_ENV,
    port: e.PORT,
    host: e.HOST,
    publicBaseUrl: (e.PUBLIC_BASE_URL ?? `http://${publicHost}:${e.PORT}`).replace(/\/$/, ''),
    databaseUrl: e.DATABASE_URL,
    temporal: {
      address: e.TEMPORAL_ADDRESS,
      namespace: e.TEMPORAL_NAMESPACE,
      taskQueue: e.TEMPORAL_TASK_QUEUE,
      cliPath: e.TEMPORAL_CLI_PATH,
      workflowBundlePath: e.WORKFLOW_BUNDLE_PATH === undefined ? undefined : path.resolve(e.WORKFLOW_BUNDLE_PATH),
      port: e.TEMPORAL_PORT,
      uiPort: e.TEMPORAL_UI_PORT,
      answerTimeoutMs: e.TEMPORAL_ANSWER_TIMEOUT_MS,
      security: {
        certPath: e.TEMPORAL_TLS_CERT_PATH,
        keyPath: e.TEMPORAL_TLS_KEY_PATH,
        caPath: e.TEMPORAL_TLS_CA_PATH,
        serverName: e.TEMPORAL_TLS_SERVER_NAME,
        apiKey: e.TEMPORAL_API_KEY,
      },
    },
    pgPort: e.PG_PORT,
    identity: identity.settings,
    auth: {
      jwtSecret: e.JWT_SECRET,
      jwksUrl: e.JWKS_URL,
      tokenTtlSeconds: e.JWT_TTL_SECONDS,
      maxLifetimeSeconds: e.JWT_MAX_LIFETIME_SECONDS,
      clockSkewSeconds: e.JWT_CLOCK_SKEW_SECONDS,
    },
    dataDir,
    logLevel: e.LOG_LEVEL,
    trustProxy: e.TRUST_PROXY === 'true',
    publicRateLimitPerMinute: e.PUBLIC_RATE_LIMIT_PER_MINUTE,
    webhookRateLimitPerMinute: e.WEBHOOK_RATE_LIMIT_PER_MINUTE,
    webhookKeyFailuresPerMinute: e.WEBHOOK_KEY_FAILURES_PER_MINUTE,
    webhookParseThreads: e.WEBHOOK_PARSE_THREADS,
    apiStatementTimeoutMs: e.API_STATEMENT_TIMEOUT_MS,
    workerStatementTimeoutMs: e.WORKER_STATEMENT_TIMEOUT_MS,
    workerMaxCachedWorkflows: e.WORKER_MAX_CACHED_WORKFLOWS,
    http: {
      keepAliveTimeoutMs: e.HTTP_KEEP_ALIVE_TIMEOUT_MS,
      headersTimeoutMs: e.HTTP_HEADERS_TIMEOUT_MS,
      requestTimeoutMs: e.HTTP_REQUEST_TIMEOUT_MS,
      maxConnections: e.HTTP_MAX_CONNECTIONS,
    },
    workerPollStaleMs: e.WORKER_POLL_STALE_MS,
    metrics: { token: e.METRICS_TOKEN, workerPort: e.WORKER_METRICS_PORT },
    widget: { maxOpenSessionsPerKey: e.WIDGET_MAX_OPEN_SESSIONS_PER_KEY },
    skills: {
      encryptionKey: e.SKILL_ENCRYPTION_KEY ? Buffer.from(e.SKILL_ENCRYPTION_KEY, 'base64') : undefined,
      allowedNetworks: e.SKILL_ALLOWED_NETWORKS,
    },
    llm: {
      baseUrl: e.LLM_BASE_URL,
      apiKey: e.LLM_API_KEY,
      model: e.LLM_MODEL,
      timeoutMs: e.LLM_TIMEOUT_MS,
      costPer1kTokens: e.LLM_COST_PER_1K_TOKENS,
    },
    billing: billing.settings,
    exports: {
      dir: path.resolve(e.EXPORT_DIR ?? path.join(dataDir, 'exports')),
      urlSecret: e.EXPORT_URL_SECRET,
      s3:
        e.S3_ACCESS_KEY_ID && e.S3_SECRET_ACCESS_KEY
          ? {
              endpoint: (e.S3_ENDPOINT ?? `https://s3.${e.S3_REGION}.amazonaws.com`).replace(/\/$/, ''),
              region: e.S3_REGION,
              accessKeyId: e.S3_ACCESS_KEY_ID,
              secretAccessKey: e.S3_SECRET_ACCESS_KEY,
              forcePathStyle: e.S3_FORCE_PATH_STYLE === 'true',
              ...(e.S3_ALLOWED_BUCKETS ? { allowedBuckets: e.S3_ALLOWED_BUCKETS.split(',').map((b) => b.trim()) } : {}),
            }
          : undefined,
    },
  };
}
