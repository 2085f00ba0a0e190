/**
 * The API docs page (`/docs`): Swagger UI served from the pinned `swagger-ui-dist` package on
 * our own origin, so the page works without internet and loads nothing from elsewhere
 * Assets live under `/docs/assets/`, public and rate limited per address.
 */
import { createHash } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import { createRequire } from 'node:module';
import path from 'node:path';
import { promisify } from 'node:util';
import { gzip } from 'node:zlib';
import type { OpenAPIHono } from '@hono/zod-openapi';
import type { Context } from 'hono';
import type { AppDeps, AppEnv } from '../context.js';

const require = createRequire(import.meta.url);
const distDir = path.dirname(require.resolve('swagger-ui-dist/package.json'));
const { version: swaggerUiVersion } = require('swagger-ui-dist/package.json') as { version: string };

const ASSETS = '/docs/assets';
/** The package's files carry its version in their path, so a browser may keep them for good. */
const versioned = `${ASSETS}/${swaggerUiVersion}`;
const IMMUTABLE = 'public, max-age=31536000, immutable';
const REVALIDATE = 'no-cache';

const JS = 'text/javascript; charset=utf-8';
const CSS = 'text/css; charset=utf-8';
const PNG = 'image/png';

/**
 * Our initializer, a file rather than an inline script so the policy can be `script-src 'self'`.
 * validatorUrl null: Swagger UI would otherwise send the document to validator.swagger.io.
 */
const INITIALIZER = `window.addEventListener('load', function () {
  var root = document.getElementById('swagger-ui');
  window.ui = SwaggerUIBundle({ url: root.dataset.url, dom_id: '#swagger-ui', validatorUrl: null, deepLinking: true });
});
`;

interface Asset {
  type: string;
  cacheControl: string;
  load(): Promise<Buffer>;
}

const fromPackage = (file: string, type: string): Asset => ({
  type,
  cacheControl: IMMUTABLE,
  load: () => readFile(path.join(distDir, file)),
});

/** The only files served: a fixed map, so no request names a path on disk. */
const assets = new Map<string, Asset>([
  [`${versioned}/swagger-ui.css`, fromPackage('swagger-ui.css', CSS)],
  [`${versioned}/swagger-ui-bundle.js`, fromPackage('swagger-ui-bundle.js', JS)],
  [`${versioned}/favicon-32x32.png`, fromPackage('favicon-32x32.png', PNG)],
  [`${ASSETS}/init.js`, { type: JS, cacheControl: REVALIDATE, load: async () => Buffer.from(INITIALIZER) }],
]);

const page = (title: string) => `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>${title}</title>
<link rel="icon" type="image/png" sizes="32x32" href="${versioned}/favicon-32x32.png">
<link rel="stylesheet" href="${versioned}/swagger-ui.css">
</head>
<body>
<div id="swagger-ui" data-url="/openapi.json"></div>
<script src="${versioned}/swagger-ui-bundle.js"></script>
<script src="${ASSETS}/init.js"></script>
</body>
</html>
`;

/**
 * Nothing but our own files; styles inline too (Swagger UI sets style attributes), images also
 * as data: URLs (its stylesheet's icons). "Try it out" calls the document's server URL.
 */
function contentSecurityPolicy(publicBaseUrl: string): string {
  const apiOrigin = new URL(publicBaseUrl).origin;
  return [
    "default-src 'none'",
    "script-src 'self'",
    "style-src 'self' 'unsafe-inline'",
    "img-src 'self' data:",
    "font-src 'self' data:",
    `connect-src 'self' ${apiOrigin}`,
    "base-uri 'none'",
    "form-action 'none'",
    "frame-ancestors 'none'",
  ].join('; ');
}

interface Loaded {
  body: Buffer;
  gzipped: Buffer;
  etag: string;
}

const compress = promisify(gzip);

export function registerDocsRoutes(app: OpenAPIHono<AppEnv>, deps: AppDeps): void {
  const html = page('Incident investigation service API');
  const policy = contentSecurityPolicy(deps.config.publicBaseUrl);
  // Read and compressed once, on first request (the bundle is 1.7 MB, 0.5 MB gzipped).
  const loaded = new Map<string, Promise<Loaded>>();
  const load = (key: string, asset: Asset): Promise<Loaded> => {
    let entry = loaded.get(key);
    if (!entry) {
      entry = asset.load().then(async (body) => ({
        body,
        gzipped: await compress(body),
        etag: `"${createHash('sha256').update(body).digest('base64url').slice(0, 22)}"`,
      }));
      entry.catch(() => loaded.delete(key)); // a failed read is tried again by the next request
      loaded.set(key, entry);
    }
    return entry;
  };

  app.get('/docs', (c) => {
    c.header('Content-Security-Policy', policy);
    c.header('X-Content-Type-Options', 'nosniff');
    c.header('Cache-Control', REVALIDATE);
    return c.html(html);
  });

  app.get(`${ASSETS}/*`, async (c: Context<AppEnv>) => {
    const asset = assets.get(c.req.path);
    if (!asset) return c.notFound();
    const { body, gzipped, etag } = await load(c.req.path, asset);
    c.header('Content-Type', asset.type);
    c.header('Cache-Control', asset.cacheControl);
    c.header('ETag', etag);
    c.header('Vary', 'Accept-Encoding');
    c.header('X-Content-Type-Options', 'nosniff');
    if (c.req.header('if-none-match') === etag) return c.body(null, 304);
    if (/\bgzip\b/.test(c.req.header('accept-encoding') ?? '')) {
      c.header('Content-Encoding', 'gzip');
      return c.body(new Uint8Array(gzipped), 200);
    }
    return c.body(new Uint8Array(body), 200);
  });
}
