import type { OpenAPIHono } from '@hono/zod-openapi';
import type { AppDeps, AppEnv } from '../context.js';

/** `/v1/members`: a tenant's members and invitations. */
export function registerMemberRoutes(app: OpenAPIHono<AppEnv>, deps: AppDeps): void {
  void app;
  void deps;
}
