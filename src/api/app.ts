import { randomBytes } from 'node:crypto';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { OpenAPIHono } from '@hono/zod-openapi';
import { HTTPException } from 'hono/http-exception';
import type { ContentfulStatusCode } from 'hono/utils/http-status';
import { ZodError } from 'zod';
import { AppError, type ErrorBody } from '../errors.js';
import { incidentCommands } from '../incidents/commands.js';
import type { AppDeps, AppEnv } from './context.js';
import { traceRequests } from '../tracing/http.js';
import type { Tracing } from '../tracing/tracing.js';
import { activeTenant } from './middleware/active-tenant.js';
import { bearerAuth } from './middleware/bearer-auth.js';
import { clientAddress } from './middleware/client-address.js';
import { behind, exceptBehind } from './middleware/gates.js';
import { probeRateLimit } from './middleware/probe-window.js';
import { addressRateLimit, countAddress, tenantRateLimit } from './middleware/rate-limit.js';
import { recordUser } from './middleware/record-user.js';
import { streamToken } from './middleware/stream-token.js';
import { bodyDeadline } from './middleware/body-deadline.js';
import { bodyLimit } from './middleware/body-limit.js';
import { watchDatabase } from './middleware/database-watch.js';
import { refusedWebhookWindow } from './middleware/webhook-key-gate.js';
import { requestContext } from './middleware/request-context.js';
import { storableText } from './middleware/unstorable-input.js';
import { registerHealthRoutes } from './routes/health.js';
import { registerMetricsRoute } from './routes/metrics.js';
import { createApiMetrics } from '../metrics/api-metrics.js';
import type { Config } from '../config.js';
import { withResponseConventions } from './openapi-conventions.js';
import { registerIncidentRoutes } from './routes/incidents.js';
import { registerIncidentMergeRoutes } from './routes/incident-merge.js';
import { registerPublicRoutes } from './routes/public.js';
import { registerTenantRoutes } from './routes/tenants.js';
import { registerApiKeyRoutes } from './routes/api-keys.js';
import { registerApprovalRoutes } from './routes/approvals.js';
import { registerGraphRoutes } from './routes/graph.js';
import { registerNotificationRoutes } from './routes/notifications.js';
import { registerKnowledgeRoutes } from './routes/knowledge.js';
import { registerRunbookRoutes } from './routes/runbooks.js';
import { registerTriggerRoutes } from './routes/triggers.js';
import { registerSkillRoutes } from './routes/skills.js';
import { registerInvestigationRoutes } from './routes/investigation.js';
import { registerApprovalRespondRoute } from './routes/remediation-respond.js';
import { registerTriageRoutes } from './routes/triage.js';
import { createWebhookKeyGateOf, registerWebhookRoutes } from './routes/webhooks.js';
import { registerStreamRoutes } from './routes/stream.js';
import { registerMemoryRoutes } from './routes/memory.js';
import { registerAuditExportRoutes } from './routes/audit-export.js';
import { registerAuditRoutes } from './routes/audit.js';
import { registerCorrelationRuleRoutes } from './routes/correlation-rules.js';
import { registerAlertRoutes } from './routes/alerts.js';
import { registerDocsRoutes } from './routes/docs.js';
import { registerMemberRoutes } from './routes/members.js';
import { registerSignInRoutes } from './routes/sign-in.js';
import { registerIntegrationRoutes } from './routes/integrations.js';
import { registerAuthTokenRoutes } from './routes/auth-tokens.js';
import { registerBillingRoutes, registerBillingWebhookRoute, type BillingAppDeps } from './routes/billing.js';
import { registerWidgetRoutes } from './routes/widget.js';
import { registerWidgetKeyRoutes } from './routes/widget-keys.js';
import { registerWidgetAssetRoutes } from './routes/widget-assets.js';
import { widgetCredentials } from './middleware/widget-auth.js';
import { defaultWidgetApiSettings, type WidgetApiDeps } from '../widget/sessions.js';
import { authFailureOf, createAuthFailureAuditor } from './auth-audit.js';
import {
  DEPENDENCY_UNAVAILABLE_MESSAGE,
  failureReason,
  isDependencyUnavailable,
  isStatementTimeout,
  isWorkflowEngineUnavailable,
} from '../dependency-failures.js';

export const MAX_BODY_BYTES = 1024 * 1024;
/**
 * A webhook's body may be larger: Alertmanager and Grafana send a whole group in one
 * notification, and one refused for its size is lost (ADR 0219).
 */
export const MAX_WEBHOOK_BODY_BYTES = 4 * 1024 * 1024;

/** What a client is told when what cannot be reached is the workflow engine (incidents' lifecycles). */
const WORKFLOW_ENGINE_UNAVAILABLE_MESSAGE = 'The service cannot reach its workflow engine (Temporal); retry shortly';
/** What a client is told when its request's statement ran past the api's bound (or was cancelled). */
const STATEMENT_TIMEOUT_MESSAGE = 'The database did not answer in time (busy, or waiting on a lock); retry shortly';
/** Seconds a client is asked to wait before retrying after a 503. */
const UNAVAILABLE_RETRY_AFTER_SECONDS = 5;

/** At most this many problems are listed, each at most this long: a body of 60,000 unknown keys made a 1.4 MB answer. */
const MAX_LISTED_ISSUES = 20;
const MAX_ISSUE_TEXT = 300;

const clipText = (text: string) => (text.length <= MAX_ISSUE_TEXT ? text : `${text.slice(0, MAX_ISSUE_TEXT - 1)}…`);

function describeIssues(error: ZodError): { message: string; details: Array<{ path: string; message: string }> } {
  const details = error.issues
    .slice(0, MAX_LISTED_ISSUES)
    .map((i) => ({ path: clipText(i.path.join('.')), message: clipText(i.message) }));
  const more = error.issues.length - details.length;
  const message =
    details.map((d) => (d.path ? `${d.path}: ${d.message}` : d.message)).join('; ') +
    (more > 0 ? `; and ${more} more` : '');
  return { message: message || 'Invalid request', details };
}

/** Maps any thrown error to the one error body, and says what a 5xx is logged as. */
function toErrorResponse(err: unknown): { status: number; body: ErrorBody; logAs?: string } {
  if (err instanceof AppError) {
    return {
      status: err.status,
      body: { error: err.code, message: err.message, ...(err.details !== undefined ? { details: err.details } : {}) },
    };
  }
  if (err instanceof ZodError) {
    const { message, details } = describeIssues(err);
    return { status: 400, body: { error: 'validation_error', message, details } };
  }
  if (err instanceof HTTPException) {
    if (err.status === 413) {
      return { status: 413, body: { error: 'payload_too_large', message: 'The request body exceeds 1 MiB' } };
    }
    if (err.status === 400) {
      return { status: 400, body: { error: 'validation_error', message: err.message || 'Malformed request' } };
    }
    if (err.status === 401) return { status: 401, body: { error: 'unauthorized', message: err.message } };
    if (err.status === 415) {
      // The interface has no 415: a body that is not JSON is a malformed request like any other.
      return {
        status: 400,
        body: {
          error: 'validation_error',
          message: 'The request body must be JSON, sent with Content-Type: application/json',
        },
      };
    }
  }
  if (isWorkflowEngineUnavailable(err)) {
    return {
      status: 503,
      body: { error: 'service_unavailable', message: WORKFLOW_ENGINE_UNAVAILABLE_MESSAGE },
      logAs: 'a dependency is unavailable',
    };
  }
  if (isDependencyUnavailable(err)) {
    return {
      status: 503,
      body: { error: 'service_unavailable', message: DEPENDENCY_UNAVAILABLE_MESSAGE },
      logAs: 'a dependency is unavailable',
    };
  }
  if (isStatementTimeout(err)) {
    return {
      status: 503,
      body: { error: 'service_unavailable', message: STATEMENT_TIMEOUT_MESSAGE },
      logAs: 'a statement ran past its time bound',
    };
  }
  return { status: 500, body: { error: 'internal_error', message: 'Internal server error' }, logAs: 'unhandled error' };
}

/**
 * `tracing`: a span per request (OTEL_*; absent when off, and then no middleware at all).
 * `widget`: the widget sessions' workflows and settings (its session endpoints answer 503 when absent).
 */
export function createApp(
  deps: AppDeps & { widget?: WidgetApiDeps; billing?: BillingAppDeps['billing'] },
  tracing?: Tracing,
): OpenAPIHono<AppEnv> {
  const app = new OpenAPIHono<AppEnv>({
    defaultHook: (result) => {
      if (!result.success) {
        const { message, details } = describeIssues(result.error as ZodError);
        throw new AppError('validation_error', message, details);
      }
    },
  });

  const webhookKeyGate = createWebhookKeyGateOf(deps);
  const metrics = createApiMetrics({
    sql: deps.sql,
    poolMax: deps.sql.options.max,
    openStreams: () => deps.realtime?.hub?.size() ?? 0,
  });
  app.use('*', metrics.middleware);
  if (tracing) app.use('*', traceRequests(tracing)); // first, so the span covers every refusal too
  app.use('*', requestContext(deps));
  const services = { incidents: incidentCommands(deps) };
  app.use('*', (c, next) => {
    c.set('services', services);
    return next();
  });
  if (deps.config.http) app.use('*', bodyDeadline(deps.config.http.requestTimeoutMs));
  if (deps.databaseWatch)
    app.use(
      '*',
      watchDatabase(deps.databaseWatch, () => new AppError('service_unavailable', DEPENDENCY_UNAVAILABLE_MESSAGE)),
    );
  // The payment provider's webhook: its signature is its credential, so it comes before the api's gates.
  registerBillingWebhookRoute(app, deps);
  // Every answer carries the X-RateLimit headers (a webhook's refused ones its address's window,
  // an oversized body the caller's window): both come before the body limit.
  app.use(
    '/v1/webhooks/*',
    refusedWebhookWindow(webhookKeyGate, (c) => clientAddress(c, deps.config.trustProxy)),
  );
  // Who the caller is, per the path's gate (webhooks judge their API key in their route): probes
  // and public routes are counted per address; a JWT route's caller is identified (a refused
  // credential counted per address), counted in its tenant's window, admitted when the tenant
  // is active, and recorded.
  app.use('*', behind('probe', probeRateLimit(deps)));
  app.use('*', behind('address', addressRateLimit(deps)));
  const refusedCredential = countAddress(deps);
  app.use('*', behind('principal', widgetCredentials(deps, refusedCredential)));
  app.use('*', behind('principal', streamToken(deps, refusedCredential)));
  app.use('*', behind('principal', bearerAuth(deps, refusedCredential)));
  app.use('*', behind('principal', tenantRateLimit(deps)));
  app.use('*', behind('principal', activeTenant()));
  app.use('*', behind('principal', recordUser(deps)));
  const webhookBodyLimit = bodyLimit(MAX_WEBHOOK_BODY_BYTES, 'The request body exceeds 4 MiB');
  const bodyLimitOfApi = bodyLimit(MAX_BODY_BYTES, 'The request body exceeds 1 MiB');
  app.use('*', (c, next) => (c.req.path.startsWith('/v1/webhooks/') ? webhookBodyLimit : bodyLimitOfApi)(c, next));
  // A JWT route judges its raw input in its own middleware (`access`), after the caller's role:
  // a caller without the role is told 403, never what the route accepts.
  app.use('*', exceptBehind('principal', storableText()));

  registerHealthRoutes(app, deps);
  registerMetricsRoute(app, metrics.registry, (deps.config as Partial<Pick<Config, 'metrics'>>).metrics?.token);
  registerPublicRoutes(app, deps);
  registerIncidentRoutes(app, deps);
  registerIncidentMergeRoutes(app, deps);
  registerTenantRoutes(app, deps);
  registerApiKeyRoutes(app, deps);
  registerWebhookRoutes(app, deps, webhookKeyGate);
  registerTriageRoutes(app, deps);
  registerInvestigationRoutes(app, deps);
  registerApprovalRespondRoute(app);
  registerGraphRoutes(app, deps);
  registerRunbookRoutes(app, deps);
  registerKnowledgeRoutes(app, deps);
  registerTriggerRoutes(app, deps);
  registerNotificationRoutes(app, deps);
  registerSkillRoutes(app, deps);
  registerApprovalRoutes(app, deps);
  registerStreamRoutes(app, deps);
  registerMemoryRoutes(app, deps);
  registerAuditExportRoutes(app, {
    ...deps,
    exports: deps.exports ?? { dir: path.join(tmpdir(), 'audit-exports'), urlKey: randomBytes(32) },
  });
  registerAuditRoutes(app, deps);
  registerCorrelationRuleRoutes(app, deps);
  registerAlertRoutes(app, deps);
  registerMemberRoutes(app, deps);
  registerSignInRoutes(app, deps);
  registerAuthTokenRoutes(app, deps);
  registerIntegrationRoutes(app, deps);
  registerBillingRoutes(app, deps);
  registerWidgetRoutes(app, deps, deps.widget);
  registerWidgetKeyRoutes(app, deps, deps.widget?.settings ?? defaultWidgetApiSettings);
  registerWidgetAssetRoutes(app);

  app.openAPIRegistry.registerComponent('securitySchemes', 'bearerAuth', {
    type: 'http',
    scheme: 'bearer',
    bearerFormat: 'JWT',
  });
  app.openAPIRegistry.registerComponent('securitySchemes', 'apiKey', {
    type: 'apiKey',
    in: 'header',
    name: 'X-API-Key',
    description: 'A flo_… key, also accepted as Authorization: Bearer flo_…',
  });
  let document: ReturnType<typeof app.getOpenAPI31Document> | undefined; // built once, on first request
  app.get('/openapi.json', (c) =>
    c.json(
      (document ??= withResponseConventions(
        app.getOpenAPI31Document({
          openapi: '3.1.0',
          info: {
            title: 'Incident investigation service',
            version: '1.0.0',
            description: 'Multi-tenant incident investigation: incidents, triage, investigation, approvals, knowledge.',
          },
          servers: [{ url: deps.config.publicBaseUrl }],
        }),
      )),
    ),
  );
  registerDocsRoutes(app, deps);

  app.notFound((c) => c.json({ error: 'not_found', message: `No route for ${c.req.method} ${c.req.path}` }, 404));
  const auditAuthFailure = createAuthFailureAuditor(deps);
  app.onError(async (err, c) => {
    const { status, body, logAs } = toErrorResponse(err);
    const logger = c.get('logger') ?? deps.logger;
    const givenUp = c.get('givenUp');
    if (givenUp && givenUp !== err) {
      // Answered 503 already by the database watch; this is its handler failing afterwards.
      logger.debug({ reason: failureReason(err) }, 'a request given up on failed after its answer');
      return c.json(body, status as ContentfulStatusCode);
    }
    // An outage's 503s are expected and many: one line each, without the stack.
    if (status === 503)
      logger.warn({ reason: failureReason(err) }, logAs ?? 'unavailable'); // also a statement past its bound
    else if (status >= 500) logger.error({ err }, logAs ?? 'unhandled error');
    const failure =
      status === 401 || status === 403 ? authFailureOf(err, c, clientAddress(c, deps.config.trustProxy)) : null;
    if (failure) await auditAuthFailure(failure, c.get('requestId'));
    if (status === 503) c.header('Retry-After', String(UNAVAILABLE_RETRY_AFTER_SECONDS));
    return c.json(body, status as ContentfulStatusCode);
  });
  return app;
}
