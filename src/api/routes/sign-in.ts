import type { OpenAPIHono } from '@hono/zod-openapi';
import type { AppDeps, AppEnv } from '../context.js';

/** `/auth/{provider}` and its callback: sign-in with GitHub, Google or an OpenID Connect provider. */
export function registerSignInRoutes(app: OpenAPIHono<AppEnv>, deps: AppDeps): void {
  void app;
  void deps;
}
