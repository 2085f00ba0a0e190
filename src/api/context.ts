import type { Logger } from 'pino';
import type { ModelProvider } from '../analysis/types.js';
import type postgres from 'postgres';
import type { TokenVerifier, Principal } from '../auth/tokens.js';
import type { SessionSettings } from '../auth/sessions.js';
import type { IdentitySettings } from '../auth/settings.js';
import type { Config, HttpSettings, S3Config } from '../config.js';
import type { IncidentCommands, Requester } from '../incidents/commands.js';
import type { Db } from '../db/client.js';
import type { TenantRow } from '../db/schema/tenants.js';
import type { WidgetSessionRow } from '../db/repositories/widget.js';
import type { SkillRuntime } from '../skills/invoke.js';
import type { WorkflowPort } from '../temporal/port.js';
import type { RealtimeHub } from '../realtime/hub.js';
import type { StreamSettings } from '../realtime/sse.js';
import type { IngestBatcherLimits } from '../ingest/batcher.js';
import type { DeliveryParserSettings } from '../ingest/parse-pool.js';

/** What the api needs for exports: the directory it serves files from, the URL key, object storage. */
export interface ExportApiSettings {
  dir: string;
  /** HMAC key of download URLs (see exports/signed-url.ts). */
  urlKey: Buffer;
  s3?: S3Config;
}

/** Everything the api needs, injected (no module singletons). */
export interface AppDeps {
  db: Db;
  sql: postgres.Sql;
  /** Pool for rate-limit counters (asynchronous commit). */
  relaxedSql: postgres.Sql;
  workflows: WorkflowPort;
  tokens: TokenVerifier;
  clock: () => Date;
  logger: Logger;
  config: Pick<Config, 'publicBaseUrl' | 'trustProxy' | 'publicRateLimitPerMinute' | 'webhookRateLimitPerMinute'> & {
    /** Webhook requests with a refused key per address and minute before 429 (default 600). */
    webhookKeyFailuresPerMinute?: number;
    /** How long a request's body may take after its headers before 408; no bound when absent. */
    http?: Pick<HttpSettings, 'requestTimeoutMs'>;
  };
  /** Encrypts skill header values; its allowlist judges skill URLs at creation. */
  skills: SkillRuntime;
  /**
   * The event stream: the process's one LISTEN hub (createApp makes one when absent; the owner
   * closes it on shutdown) and the heartbeat and slow-client bounds (defaults when absent).
   */
  realtime?: { hub?: RealtimeHub; settings?: Partial<StreamSettings> };
  /**
   * Audit exports: the directory the worker writes them to, the download URL key and object
   * storage (a temporary directory and a per-process key when absent).
   */
  exports?: ExportApiSettings;
  /** The model behind the assistant chat (the same provider as investigations); built-in when absent. */
  model?: ModelProvider;
  /** Where webhook deliveries are parsed: threads, and the body size from which one goes to a thread (ADR 0252). */
  webhookParse?: Partial<DeliveryParserSettings>;
  /** Webhook ingestion's batch bounds (defaults when absent; tests shorten the timeout). */
  ingest?: Partial<IngestBatcherLimits>;
  /**
   * A request not answered after `everyMs` has PostgreSQL probed (`answers`, on a fresh
   * connection), and again every `everyMs`; when it does not answer, the request is answered 503.
   * No watch when absent.
   */
  databaseWatch?: { answers: () => Promise<boolean>; everyMs: number };
  /**
   * Sign-in providers, the tokens the service issues (`sessions`: absent when it has no signing
   * secret, only an external JWKS, so it issues none) and integration OAuth clients. Absent:
   * every provider is off.
   */
  identity?: { settings: IdentitySettings; sessions?: SessionSettings };
}

/** An admitted caller: its tenant exists and is active (the route's `access` then judges its role). */
export interface AuthContext extends Principal {
  tenant: TenantRow;
}

export interface Identified {
  principal: Principal;
  tenant: TenantRow;
  /** A stream token (`?token=` of the stream route) or a JWT. */
  by: 'bearer' | 'stream-token';
}

/** What handlers call, on the context (`c.var.services`): built once by createApp from its deps. */
export interface AppServices {
  incidents: IncidentCommands;
}

export interface AppEnv {
  Variables: {
    requestId: string;
    logger: Logger;
    services: AppServices;
    auth?: AuthContext;
    /** A webhook's API key once it matched (for the audit entry of a refused signature). */
    apiKeyId?: string;
    /** The caller a credential named (bearer-auth, stream-token), before its tenant is admitted. */
    identified?: Identified;
    /** The 503 the database watch answered the request with while its handler ran on. */
    givenUp?: Error;
    /** A widget's publishable key or session token, once widget-auth admitted it. */
    widgetCaller?: WidgetCaller;
  };
}

export type WidgetCaller =
  { kind: 'key'; keyId: string; origin: string } | { kind: 'session'; session: WidgetSessionRow };

/** The admitted caller of a JWT route, as the commands take it. */
export function requesterOf(c: { var: { auth: AuthContext; requestId: string; logger: Logger } }): Requester {
  return { tenant: c.var.auth.tenant, userId: c.var.auth.userId, requestId: c.var.requestId, logger: c.var.logger };
}
