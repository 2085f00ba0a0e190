/**
 * Screenshots of the Temporal UI for docs/operations.md (`npm run docs:screenshots`): starts the
 * real stack as `npm start` does (Temporal dev server with its Web UI, PostgreSQL, api, worker),
 * posts a realistic Alertmanager notification so an incident is triaged, investigated and waits
 * for an approval, then photographs the workflow list, that incident's page and the Schedules page
 * with Debian's chromium (CHROMIUM_PATH, default /usr/bin/chromium) into docs/images/.
 */
import { readFileSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { chromium, type Page } from 'playwright-core';
import { startStack, type Stack } from '../bench/stack.js';
import { projectRoot } from '../src/config.js';

const imagesDir = path.join(projectRoot, 'docs', 'images');
const fixture = (name: string) => readFileSync(path.join(projectRoot, 'test/fixtures/webhooks', name), 'utf8');
/** Above this a screenshot is too heavy for the docs: the run fails rather than commit it. */
const MAX_IMAGE_BYTES = 300 * 1024;

async function call<T = unknown>(
  stack: Stack,
  method: string,
  route: string,
  body?: unknown,
  key?: string,
): Promise<T> {
  const res = await fetch(`${stack.baseUrl}${route}`, {
    method,
    headers: { authorization: `Bearer ${key ?? stack.token}`, 'content-type': 'application/json' },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
  const text = await res.text();
  if (res.status >= 300) throw new Error(`${method} ${route}: ${res.status} ${text}`);
  return (text ? JSON.parse(text) : undefined) as T;
}

async function until<T>(what: string, probe: () => Promise<T | undefined>, timeoutMs = 120_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await probe();
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 500));
  }
}

/**
 * Alertmanager's webhook (version 4) as the fixture records it, firing now: checkout's error rate
 * and latency, and a second group for the payments service.
 */
function alertGroups(): object[] {
  const now = Date.now();
  const checkout = JSON.parse(fixture('alertmanager-firing.json'));
  checkout.alerts.forEach((alert: { startsAt: string }, i: number) => {
    alert.startsAt = new Date(now - (6 - i) * 60_000).toISOString();
  });
  const payments = JSON.parse(fixture('alertmanager-firing.json'));
  payments.alerts = [payments.alerts[1]];
  Object.assign(payments.alerts[0].labels, { alertname: 'PaymentsQueueBacklog', service: 'payments', job: 'payments' });
  payments.alerts[0].annotations = {
    summary: 'payments settlement queue above 5,000 messages',
    description: 'The settlement queue has held more than 5,000 messages for 10 minutes.',
  };
  payments.alerts[0].fingerprint = '9b1e44c07a2d3f65';
  payments.alerts[0].startsAt = new Date(now - 12 * 60_000).toISOString();
  payments.groupLabels = { service: 'payments' };
  payments.commonLabels = { ...payments.commonLabels, service: 'payments', job: 'payments' };
  payments.groupKey = '{}/{env="production"}:{service="payments"}';
  return [payments, checkout];
}

/**
 * The list's columns as an SRE would set them (the UI keeps them in the browser): the incident's
 * status, severity and tenant from our search attributes, not its run id, type or end. The UI of the CLI we run
 * (2.42) offers no column for the workflow's summary; the title is on the workflow's page.
 */
async function incidentColumns(page: Page, listUrl: string): Promise<void> {
  await page.goto(listUrl, { waitUntil: 'networkidle' });
  await page.getByTestId('workflows-summary-table-configuration-button').click();
  for (const column of ['Run ID', 'Type', 'End']) {
    await page.getByTestId(`orderable-list-item-${column}-remove-button`).click();
  }
  for (const column of ['IncidentStatus', 'Severity', 'TenantId']) {
    await page.getByTestId(`orderable-list-item-${column}-add-button`).click();
  }
  await page.getByTestId('drawer-close-button').click();
}

/** Waits for `text` on the page, then saves it as docs/images/<name>.png and checks its size. */
async function shoot(page: Page, url: string | null, text: string | RegExp, name: string): Promise<void> {
  if (url) await page.goto(url, { waitUntil: 'load' });
  await page
    .getByText(text)
    .first()
    .waitFor({ timeout: 60_000 })
    .catch(async (err: unknown) => {
      // What the page showed instead, to see why.
      await page.screenshot({ path: path.join(tmpdir(), `${name}-failed.png`) });
      throw err;
    });
  await page.waitForTimeout(1_000); // the UI's transitions settle
  const file = path.join(imagesDir, `${name}.png`);
  await page.screenshot({ path: file });
  const bytes = statSync(file).size;
  console.log(`${file}: ${Math.round(bytes / 1024)} KB`);
  if (bytes > MAX_IMAGE_BYTES) throw new Error(`${name}.png is ${bytes} bytes, more than ${MAX_IMAGE_BYTES}`);
}

async function main(): Promise<void> {
  console.log('Starting the stack (npm start) ...');
  const stack = await startStack();
  const browser = await chromium.launch({ executablePath: process.env.CHROMIUM_PATH ?? '/usr/bin/chromium' });
  try {
    // A runbook step the service can run, so checkout's conclusion asks an admin for approval.
    await call(stack, 'POST', '/v1/runbooks', {
      title: 'Checkout error rate',
      service: 'checkout',
      content: '# Checkout error rate\n\n1. Restart the checkout pods\n',
    });
    await call(stack, 'GET', `/v1/tenants/${stack.tenantId}`); // the admin is known: approvals notify them
    const { key } = await call<{ key: string }>(stack, 'POST', '/v1/api-keys', { name: 'alertmanager' });
    let incidentId = '';
    for (const group of alertGroups()) {
      const posted = await call<{ incidentIds: string[] }>(
        stack,
        'POST',
        `/v1/webhooks/${stack.tenantId}/alertmanager`,
        group,
        key,
      );
      incidentId = posted.incidentIds[0] ?? '';
    }
    const incident = await until('the checkout incident to await approval', async () => {
      const found = await call<{ status: string; title: string }>(stack, 'GET', `/v1/incidents/${incidentId}`);
      return found.status === 'awaiting_approval' ? found : undefined;
    });
    console.log(`Incident ${incidentId} "${incident.title}" awaits approval.`);

    const ui = `http://127.0.0.1:${stack.ports.temporalUi}/namespaces/default`;
    const page = await browser.newPage({ viewport: { width: 1440, height: 1000 } });
    await incidentColumns(page, `${ui}/workflows`);
    await shoot(page, `${ui}/workflows`, 'awaiting_approval', 'temporal-ui-incident-list');
    // The page opens on its history: the timeline, each activity with its summary.
    await shoot(page, `${ui}/workflows/${incidentId}`, /runbook agent:/, 'temporal-ui-incident-timeline');
    // Its summary (the title), static details and current details are under User Metadata.
    await page.getByText('User Metadata', { exact: true }).first().click();
    await shoot(page, null, 'Current Details', 'temporal-ui-incident-details');
    await shoot(page, `${ui}/schedules`, /housekeeping-/, 'temporal-ui-schedules');
  } finally {
    await browser.close();
    await stack.stop();
  }
}

main().then(
  () => process.exit(0),
  (err: unknown) => {
    console.error(err);
    process.exit(1);
  },
);
