import type { OpenAPIHono } from '@hono/zod-openapi';
import type { AppDeps, AppEnv } from '../context.js';

/** `/v1/integrations`: connect, list and disconnect a tenant's integrations. */
export function registerIntegrationRoutes(app: OpenAPIHono<AppEnv>, deps: AppDeps): void {
  void app;
  void deps;
}
