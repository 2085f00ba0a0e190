/**
 * The widget in a real headless browser (Debian's chromium, driven by playwright-core): the demo
 * page opens a session with a publishable key, asks, and shows the reply with its sources.
 */
import { execFileSync } from 'node:child_process';
import path from 'node:path';
import { NativeConnection, Worker } from '@temporalio/worker';
import { chromium, type Browser } from 'playwright-core';
import { afterAll, beforeAll, expect, inject, it } from 'vitest';
import { createActivities } from '../../src/activities/index.js';
import { WIDGET_SCRIPT } from '../../src/widget/widget-script.js';
import { incidentWorkerInterceptors } from '../../src/temporal/incident-worker.js';
import { startTestService, type TestService } from '../helpers/service.js';
import { seedHistory } from '../memory/fixtures/history.js';

let svc: TestService;
let worker: Worker;
let running: Promise<void>;
let browser: Browser;

beforeAll(async () => {
  svc = await startTestService({ withoutWorker: true });
  worker = await Worker.create({
    connection: await NativeConnection.connect({ address: inject('temporalAddress') }),
    namespace: 'default',
    taskQueue: svc.taskQueue,
    workflowBundle: { codePath: inject('workflowBundlePath') },
    activities: createActivities({ db: svc.database.db, skills: svc.skills }),
    interceptors: incidentWorkerInterceptors,
    shutdownGraceTime: '100 milliseconds',
  });
  running = worker.run();
  const executablePath = execFileSync(path.resolve('.ci/install-chromium'), { encoding: 'utf8' })
    .trim()
    .split('\n')
    .at(-1)!;
  browser = await chromium.launch({ executablePath, args: ['--no-sandbox'] });
});

afterAll(async () => {
  await browser?.close();
  worker?.shutdown();
  await running;
  await svc?.stop();
});

it('opens a session from the demo page, asks a question and shows the reply with a source', async () => {
  const tenant = await svc.newTenant();
  await seedHistory(svc.database.db, tenant.tenantId);
  const key = await svc.api('POST', '/v1/widget/keys', {
    token: tenant.admin,
    body: { name: 'demo', allowedOrigins: [svc.baseUrl] },
  });
  expect(key.status).toBe(201);

  const page = await browser.newPage();
  const problems: string[] = [];
  // Every failed load is listed by its URL below (the browser's own favicon request excepted).
  page.on('console', (m) => {
    if (m.type() === 'error' && !m.text().startsWith('Failed to load resource')) problems.push(m.text());
  });
  page.on('response', (r) => {
    if (r.status() >= 400 && !r.url().endsWith('/favicon.ico')) problems.push(`${r.status()} ${r.url()}`);
  });
  page.on('pageerror', (e) => problems.push(e.message));
  const res = await page.goto(`${svc.baseUrl}/widget/demo?key=${encodeURIComponent(key.body.key)}`);
  expect(res?.status()).toBe(200);
  expect(res?.headers()['content-security-policy']).toContain("script-src 'self'");

  await page.getByLabel('Your question').fill('What caused the last checkout outage?');
  await page.getByRole('button', { name: 'Ask' }).click();
  const reply = page.locator('.iw-assistant').first();
  await reply.waitFor({ timeout: 20_000 });
  expect((await reply.textContent())!.length).toBeGreaterThan(10);
  await expect
    .poll(() => page.locator('.iw-source').allTextContents(), { timeout: 10_000 })
    .toContainEqual(expect.stringContaining('Checkout outage after a configuration push'));
  // The stream is connected (EventSource), and the reply is shown once though it also came through it.
  await expect.poll(() => page.locator('.iw-status').textContent(), { timeout: 10_000 }).not.toBe('Reconnecting…');
  expect(await page.locator('.iw-assistant').count()).toBe(1);
  expect(problems).toEqual([]);
});

it('reads a key from the page’s query string only when the script tag asks for it (data-key-query)', async () => {
  const tenant = await svc.newTenant();
  // Plain http, so the api's http script is no mixed content; the origin plays no part here.
  const portal = 'http://portal.test';
  // Anyone can make a key of their own tenant for the portal's origin and link to the portal with it.
  const foreign = await svc.api('POST', '/v1/widget/keys', {
    token: tenant.admin,
    body: { name: 'foreign', allowedOrigins: ['https://portal.example.com'] },
  });
  expect(foreign.status).toBe(201);
  const page = await browser.newPage();
  // The portal and its copy of widget.js, served by the browser itself (no page of ours is involved).
  await page.route(`${portal}/**`, (route) =>
    route.request().url().endsWith('/widget.js')
      ? route.fulfill({ contentType: 'text/javascript', body: WIDGET_SCRIPT })
      : route.fulfill({
          contentType: 'text/html',
          body: '<!doctype html><title>Help</title><div id="incident-widget"></div><script src="/widget.js" defer></script>',
        }),
  );
  await page.goto(`${portal}/help?key=${encodeURIComponent(foreign.body.key)}`);
  await expect
    .poll(() => page.locator('.iw-status').textContent({ timeout: 1000 }), { timeout: 10_000 })
    .toBe('No widget key: add data-key to the script tag');
  await page.close();
});
