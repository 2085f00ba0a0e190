import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestService, type TestService } from '../helpers/service.js';

let svc: TestService;

beforeAll(async () => {
  svc = await startTestService({ withoutWorker: true });
});
afterAll(() => svc?.stop());

/** Every asset a page loads by itself: script src, link href (stylesheet, icon), img src. */
function assetUrls(html: string): string[] {
  const found: string[] = [];
  for (const [, tag, attrs] of html.matchAll(/<(script|link|img)\b([^>]*)>/gi)) {
    const attribute = tag!.toLowerCase() === 'link' ? 'href' : 'src';
    const value = new RegExp(`\\b${attribute}\\s*=\\s*["']([^"']*)["']`, 'i').exec(attrs!)?.[1];
    if (value !== undefined) found.push(value);
  }
  return found;
}

const expectedType: Array<[RegExp, RegExp]> = [
  [/\.js$/, /^(text|application)\/javascript\b/],
  [/\.css$/, /^text\/css\b/],
  [/\.png$/, /^image\/png$/],
];

describe('GET /docs', () => {
  it('references only assets of its own origin, and each is served with its content type', async () => {
    const page = await fetch(`${svc.baseUrl}/docs`);
    expect(page.status).toBe(200);
    expect(page.headers.get('content-type')).toContain('text/html');
    const html = await page.text();
    const assets = assetUrls(html);
    expect(assets.filter((a) => /\.js$/.test(a)).length).toBeGreaterThanOrEqual(1);
    expect(assets.filter((a) => /\.css$/.test(a)).length).toBeGreaterThanOrEqual(1);
    for (const asset of assets) {
      const url = new URL(asset, `${svc.baseUrl}/docs`);
      expect(url.origin, asset).toBe(svc.baseUrl);
      const res = await fetch(url);
      expect(res.status, asset).toBe(200);
      const type = expectedType.find(([ext]) => ext.test(url.pathname));
      expect(type, `an asset of a known kind: ${asset}`).toBeDefined();
      expect(res.headers.get('content-type'), asset).toMatch(type![1]);
      expect((await res.arrayBuffer()).byteLength, asset).toBeGreaterThan(0);
    }
  });

  it('names no other origin: no external URL in the page or its own script, and the online validator is off', async () => {
    const html = await (await fetch(`${svc.baseUrl}/docs`)).text();
    expect(html).not.toMatch(/(https?:)?\/\/[a-z0-9]/i);
    expect(html).toContain('/openapi.json');
    // The page's own initializer (not Swagger UI's bundle, which quotes RFC addresses in strings).
    const own = assetUrls(html).filter((a) => /\.js$/.test(a) && !/swagger-ui-bundle/.test(a));
    expect(own.length).toBe(1);
    const init = await (await fetch(new URL(own[0]!, `${svc.baseUrl}/docs`))).text();
    expect(init).not.toMatch(/https?:\/\//i);
    expect(init).toMatch(/validatorUrl:\s*null/);
  });

  it('carries a Content-Security-Policy that lets the page load only from its own origin', async () => {
    const res = await fetch(`${svc.baseUrl}/docs`);
    const csp = res.headers.get('content-security-policy');
    expect(csp).toBeTruthy();
    const directives = new Map(
      csp!
        .split(';')
        .map((d) => d.trim().split(/\s+/))
        .map(([name, ...values]) => [name!, values]),
    );
    expect(directives.get('default-src')).toEqual(["'none'"]);
    expect(directives.get('script-src')).toEqual(["'self'"]);
    expect(directives.get('frame-ancestors')).toEqual(["'none'"]);
    // Try it out calls the api at the document's server URL, here http://api.test.
    expect(directives.get('connect-src')).toEqual(["'self'", 'http://api.test']);
  });

  it('sends the 1.7 MB bundle gzipped to a client that takes gzip, and answers a revalidation with 304', async () => {
    const html = await (await fetch(`${svc.baseUrl}/docs`)).text();
    const bundle = new URL(
      assetUrls(html).find((a) => /swagger-ui-bundle\.js$/.test(a))!,
      `${svc.baseUrl}/docs`,
    );
    const gzipped = await fetch(bundle, { headers: { 'accept-encoding': 'gzip' } });
    expect(gzipped.headers.get('content-encoding')).toBe('gzip');
    expect(gzipped.headers.get('cache-control')).toContain('immutable');
    expect(await gzipped.text()).toContain('SwaggerUIBundle');
    const etag = gzipped.headers.get('etag');
    const again = await fetch(bundle, { headers: { 'if-none-match': etag! } });
    expect(again.status).toBe(304);
  });

  it('serves only the files it names: another name, or a path out of the folder, is 404', async () => {
    for (const path of [
      '/docs/assets/nope.js',
      '/docs/assets/5.0.0/swagger-ui.css',
      '/docs/assets/%2e%2e/package.json',
      '/docs/assets/',
    ]) {
      const res = await svc.api('GET', path);
      expect(res.status, path).toBe(404);
      expect(res.body.error, path).toBe('not_found');
    }
  });
});
