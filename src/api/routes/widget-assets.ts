import { createHash } from 'node:crypto';
import type { OpenAPIHono } from '@hono/zod-openapi';
import { DEMO_PAGE, WIDGET_SCRIPT } from '../../widget/widget-script.js';
import type { AppEnv } from '../context.js';

const SCRIPT_ETAG = `"${createHash('sha256').update(WIDGET_SCRIPT).digest('base64url').slice(0, 22)}"`;
/** The demo page loads only its own origin's script and talks only to its own origin; no inline code. */
const DEMO_POLICY =
  "default-src 'none'; script-src 'self'; connect-src 'self'; img-src 'self'; style-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'";

/** `GET /widget.js` (embeddable anywhere) and `GET /widget/demo` (a page that embeds it). */
export function registerWidgetAssetRoutes(app: OpenAPIHono<AppEnv>): void {
  app.get('/widget.js', (c) => {
    c.header('ETag', SCRIPT_ETAG);
    c.header('Cache-Control', 'public, max-age=300');
    c.header('X-Content-Type-Options', 'nosniff');
    // Any page may embed it; its calls carry their own credential (the publishable key, the session token).
    c.header('Cross-Origin-Resource-Policy', 'cross-origin');
    if (c.req.header('if-none-match') === SCRIPT_ETAG) return c.body(null, 304);
    return c.body(WIDGET_SCRIPT, 200, { 'content-type': 'text/javascript; charset=utf-8' });
  });
  app.get('/widget/demo', (c) => {
    c.header('Content-Security-Policy', DEMO_POLICY);
    c.header('X-Content-Type-Options', 'nosniff');
    c.header('Cache-Control', 'no-cache');
    return c.html(DEMO_PAGE);
  });
}
