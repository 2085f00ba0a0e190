import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { Connection } from '@temporalio/client';
import { historyToJSON } from '@temporalio/common/lib/proto-utils.js';
import { Worker } from '@temporalio/worker';
import { eq } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it, inject } from 'vitest';
import { incidents } from '../../src/db/schema/incidents.js';
import { reconcileIncidents } from '../../src/outbox/workflow-dispatcher.js';
import { ensureSearchAttributes } from '../../src/temporal/search-attributes.js';
import { getStateQuery, type IncidentWorkflowInput } from '../../src/workflows/messages.js';
import { startTestService, type TestService } from '../helpers/service.js';
import { createKey, eventually, postWebhook } from '../helpers/webhooks.js';
import Long from 'long';
import pino from 'pino';
import { randomBytes } from 'node:crypto';

const historiesDir = path.join(path.dirname(fileURLToPath(import.meta.url)), 'histories');
const recordedHistory = path.join(historiesDir, 'incident-lifecycle-v1.json');
const recordedAlertsHistory = path.join(historiesDir, 'incident-alerts-v1.json');
const recordedInvestigationHistory = path.join(historiesDir, 'incident-investigation-v1.json');

let svc: TestService;
let tenant: { tenantId: string; admin: string; member: string };

beforeAll(async () => {
  svc = await startTestService({ withoutDispatcher: true });
  tenant = await svc.newTenant();
});
afterAll(() => svc?.stop());

async function lifeOfAnIncident(): Promise<string> {
  const created = await svc.api('POST', '/v1/incidents/chat', {
    token: tenant.member,
    body: { title: 'Replay me', description: 'an incident that goes through its whole life' },
  });
  const id = created.body.incidentId as string;
  for (const status of [
    'triaging',
    'investigating',
    'investigating',
    'awaiting_approval',
    'remediating',
    'resolved',
    'closed',
  ]) {
    expect((await svc.api('PATCH', `/v1/incidents/${id}`, { token: tenant.member, body: { status } })).status).toBe(
      200,
    );
  }
  await svc.client.workflow.getHandle(id).result();
  return id;
}

describe('incident workflow determinism', () => {
  it('replays the recorded history of a whole incident life with the current code', async () => {
    if (process.env.RECORD_HISTORIES) {
      const id = await lifeOfAnIncident();
      const history = await svc.client.workflow.getHandle(id).fetchHistory();
      writeFileSync(recordedHistory, historyToJSON(history));
    }
    expect(existsSync(recordedHistory)).toBe(true);
    const history = JSON.parse(readFileSync(recordedHistory, 'utf8'));
    expect(history.events.length).toBeGreaterThan(20);
    // Throws DeterminismViolationError if the workflow code no longer matches the history.
    await Worker.runReplayHistory(
      { workflowBundle: { codePath: inject('workflowBundlePath') } },
      history,
      'recorded-incident',
    );
  });

  it('replays the recorded history of an automated incident triaged, investigated and re-synthesised', async () => {
    if (process.env.RECORD_HISTORIES) {
      const key = await createKey(svc, tenant.admin);
      const posted = await postWebhook(
        svc,
        tenant.tenantId,
        'generic',
        { name: 'ReplayErrors', severity: 'high', service: 'replay-api', summary: '5xx above 5%' },
        { key: key.key },
      );
      const id = posted.body.incidentIds[0] as string;
      const deps = {
        db: svc.database.db,
        sql: svc.database.sql,
        workflows: svc.workflows,
        logger: pino({ level: 'silent' }),
      };
      expect(await reconcileIncidents(deps)).toBeGreaterThanOrEqual(1);
      const handle = svc.client.workflow.getHandle(id);
      await eventually(async () => (await handle.query(getStateQuery)).syntheses === 1, 30_000);
      const context = await svc.api('POST', `/v1/investigation/${id}/context`, {
        token: tenant.member,
        body: { content: 'We rotated the DNS provider at 03:00' },
      });
      expect(context.status).toBe(202);
      await eventually(async () => (await handle.query(getStateQuery)).syntheses === 2, 30_000);
      // The conclusion proposed a remediation, which waits for its approval until the close ends it.
      expect(await handle.query(getStateQuery)).toMatchObject({
        status: 'awaiting_approval',
        triageRuns: 1,
        investigationStatus: 'completed',
      });
      expect(
        (await svc.api('PATCH', `/v1/incidents/${id}`, { token: tenant.member, body: { status: 'closed' } })).status,
      ).toBe(200);
      await handle.result();
      writeFileSync(recordedInvestigationHistory, historyToJSON(await handle.fetchHistory()));
    }
    // A missing fixture fails: recording it here and replaying it at once would prove nothing.
    expect(existsSync(recordedInvestigationHistory)).toBe(true);
    const history = JSON.parse(readFileSync(recordedInvestigationHistory, 'utf8'));
    const text = JSON.stringify(history);
    for (const name of [
      'triageIncident',
      'beginInvestigation',
      'deploymentAgent',
      'synthesizeInvestigation',
      'investigationContext',
      'proposeRemediation',
      'expireApproval',
    ])
      expect(text).toContain(name);
    await Worker.runReplayHistory(
      { workflowBundle: { codePath: inject('workflowBundlePath') } },
      history,
      'recorded-investigation',
    );
  });

  it('replays the recorded history of an incident that received alert signals and auto-resolved', async () => {
    if (process.env.RECORD_HISTORIES) {
      const created = await svc.api('POST', '/v1/incidents/chat', {
        token: tenant.member,
        body: { title: 'Signals', description: 'an incident that hears its alerts repeat and recover' },
      });
      const id = created.body.incidentId as string;
      const at = new Date().toISOString();
      await svc.workflows.signalAlerts(id, {
        alerts: [{ eventId: 'evt_a', status: 'firing', occurredAt: at }],
        autoResolve: true,
      });
      await svc.workflows.signalAlerts(id, {
        alerts: [
          { eventId: 'evt_a', status: 'firing', occurredAt: at }, // a redelivery, ignored
          { eventId: 'evt_b', status: 'resolved', occurredAt: at },
        ],
        autoResolve: true,
      });
      const handle = svc.client.workflow.getHandle(id);
      await eventually(async () => (await handle.query(getStateQuery)).status === 'resolved');
      expect(await handle.query(getStateQuery)).toMatchObject({
        alertsReceived: 2,
        lastAlertStatus: 'resolved',
        version: 2,
      });
      expect(
        (await svc.api('PATCH', `/v1/incidents/${id}`, { token: tenant.member, body: { status: 'closed' } })).status,
      ).toBe(200);
      await handle.result();
      writeFileSync(recordedAlertsHistory, historyToJSON(await handle.fetchHistory()));
    }
    expect(existsSync(recordedAlertsHistory)).toBe(true);
    const history = JSON.parse(readFileSync(recordedAlertsHistory, 'utf8'));
    expect(JSON.stringify(history)).toContain('alertsReceived');
    await Worker.runReplayHistory(
      { workflowBundle: { codePath: inject('workflowBundlePath') } },
      history,
      'recorded-alerts',
    );
  });

  it('replays a history made just now, including a reopen run', async () => {
    const id = await lifeOfAnIncident();
    expect(
      (await svc.api('PATCH', `/v1/incidents/${id}`, { token: tenant.member, body: { status: 'open' } })).status,
    ).toBe(200);
    const handle = svc.client.workflow.getHandle(id);
    // At least the seven moves and the reopen (triage and investigation run on the way).
    const reopened = await handle.query(getStateQuery);
    expect(reopened.status).toBe('open');
    expect(reopened.version).toBeGreaterThanOrEqual(8);
    const histories = svc.client.workflow.list({ query: `WorkflowId = '${id}'` }).intoHistories();
    let replayed = 0;
    for await (const result of Worker.runReplayHistories(
      { workflowBundle: { codePath: inject('workflowBundlePath') } },
      histories,
    )) {
      expect(result.error).toBeUndefined();
      replayed++;
    }
    expect(replayed).toBe(2);
  });
});

describe('reconciler', () => {
  it('starts the workflow of an incident whose start was lost, once', async () => {
    const id = `inc_${randomBytes(13).toString('hex')}`;
    await svc.database.db.insert(incidents).values({
      id,
      tenantId: tenant.tenantId,
      title: 'Accepted before a crash',
      description: 'the api stopped between commit and workflow start',
      severity: 'medium',
      status: 'open',
      source: 'manual',
      createdAt: new Date(Date.now() - 60_000),
    });
    const deps = {
      db: svc.database.db,
      sql: svc.database.sql,
      workflows: svc.workflows,
      logger: pino({ level: 'silent' }),
    };
    expect(await reconcileIncidents(deps, { olderThanMs: 10_000 })).toBeGreaterThanOrEqual(1);
    const description = await svc.client.workflow.getHandle(id).describe();
    expect(description.status.name).toBe('RUNNING');
    expect(description.typedSearchAttributes.getAll().find((p) => p.key.name === 'TenantId')?.value).toBe(
      tenant.tenantId,
    );
    const [row] = await svc.database.db.select().from(incidents).where(eq(incidents.id, id));
    expect(row!.workflowStartedAt).not.toBeNull();
    expect(await reconcileIncidents(deps, { olderThanMs: 10_000 })).toBe(0);
    // And the recovered incident works like any other.
    const patched = await svc.api('PATCH', `/v1/incidents/${id}`, {
      token: tenant.member,
      body: { status: 'triaging' },
    });
    expect(patched.body.status).toBe('triaging');
  });

  it('leaves incidents younger than the grace period to the api', async () => {
    const id = `inc_${randomBytes(13).toString('hex')}`;
    await svc.database.db.insert(incidents).values({
      id,
      tenantId: tenant.tenantId,
      title: 'Just accepted',
      description: 'the api is starting it right now',
      severity: 'medium',
      status: 'open',
      source: 'manual',
    });
    const deps = {
      db: svc.database.db,
      sql: svc.database.sql,
      workflows: svc.workflows,
      logger: pino({ level: 'silent' }),
    };
    await reconcileIncidents(deps, { olderThanMs: 60_000 });
    const [row] = await svc.database.db.select().from(incidents).where(eq(incidents.id, id));
    expect(row!.workflowStartedAt).toBeNull();
  });
});

describe('search attributes', () => {
  it('registers the custom search attributes on a namespace that lacks them', async () => {
    const connection = await Connection.connect({ address: inject('temporalAddress') });
    try {
      const namespace = `ns-${randomBytes(4).toString('hex')}`;
      await connection.workflowService.registerNamespace({
        namespace,
        workflowExecutionRetentionPeriod: { seconds: Long.fromNumber(86_400) },
      });
      const before = await connection.operatorService.listSearchAttributes({ namespace });
      expect(Object.keys(before.customAttributes ?? {})).not.toContain('IncidentStatus');
      await ensureSearchAttributes(connection, namespace);
      await ensureSearchAttributes(connection, namespace); // idempotent
      const after = await connection.operatorService.listSearchAttributes({ namespace });
      expect(Object.keys(after.customAttributes ?? {})).toEqual(
        expect.arrayContaining(['TenantId', 'IncidentStatus', 'Severity', 'Source']),
      );
    } finally {
      await connection.close();
    }
  });
});

export type { IncidentWorkflowInput };
