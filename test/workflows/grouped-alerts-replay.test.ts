/**
 * Determinism of the incident workflow with grouped alerts: a recovery of one alert while another
 * grouped one fires does not auto-resolve the incident, the last one's does. (A firing alert heard
 * while the investigation runs takes patch `related-alert-context`; the built-in model ends an
 * investigation before a signal sent after its start arrives, so the recording does not hold it.)
 */
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { historyToJSON } from '@temporalio/common/lib/proto-utils.js';
import { Worker } from '@temporalio/worker';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { getStateQuery } from '../../src/workflows/messages.js';
import { startTestService, type TestService } from '../helpers/service.js';
import { eventually } from '../helpers/webhooks.js';

const recordedHistory = path.join(
  path.dirname(fileURLToPath(import.meta.url)),
  'histories',
  'incident-grouped-alerts-v1.json',
);

let svc: TestService;
let tenant: { tenantId: string; admin: string; member: string };

beforeAll(async () => {
  svc = await startTestService();
  tenant = await svc.newTenant({ plan: 'plan_business' });
});
afterAll(() => svc?.stop());

/** An investigated incident that hears of a grouped alert mid-run, then of recoveries. */
async function groupedAlertsLife() {
  const created = await svc.api('POST', '/v1/incidents/chat', {
    token: tenant.member,
    body: {
      title: 'Checkout errors',
      description: 'checkout 5xx above 5% since 03:00, orders-db connections saturated',
    },
  });
  expect(created.status).toBe(201);
  const id = created.body.incidentId as string;
  const handle = svc.client.workflow.getHandle(id);
  const started = await svc.api('POST', '/v1/investigation/', { token: tenant.member, body: { incidentId: id } });
  expect(started.status).toBe(202);
  const at = new Date().toISOString();
  // The database's alert is grouped in while the agents run.
  await svc.workflows.signalAlerts(id, {
    alerts: [{ eventId: 'evt_db', status: 'firing', occurredAt: at }],
    autoResolve: true,
    incidentRecovered: false,
  });
  await eventually(async () => {
    const state = await handle.query(getStateQuery);
    return state.investigationStatus === 'completed' && state.alertsReceived === 1 && (state.syntheses ?? 0) >= 1;
  }, 60_000);
  // One alert recovers, the other still fires: the incident stays open.
  await svc.workflows.signalAlerts(id, {
    alerts: [{ eventId: 'evt_checkout_ok', status: 'resolved', occurredAt: at }],
    autoResolve: true,
    incidentRecovered: false,
  });
  await eventually(async () => (await handle.query(getStateQuery)).alertsReceived === 2);
  expect((await handle.query(getStateQuery)).status).not.toBe('resolved');
  await svc.workflows.signalAlerts(id, {
    alerts: [{ eventId: 'evt_db_ok', status: 'resolved', occurredAt: at }],
    autoResolve: true,
    incidentRecovered: true,
  });
  await eventually(async () => (await handle.query(getStateQuery)).status === 'resolved');
  expect(
    (await svc.api('PATCH', `/v1/incidents/${id}`, { token: tenant.member, body: { status: 'closed' } })).status,
  ).toBe(200);
  await handle.result();
  return handle.fetchHistory();
}

describe('incident workflow determinism with grouped alerts', () => {
  it('replays the recorded history of an incident that heard of a grouped alert mid-investigation', async () => {
    if (process.env.RECORD_HISTORIES) writeFileSync(recordedHistory, historyToJSON(await groupedAlertsLife()));
    // A missing fixture fails: recording it here and replaying it at once would prove nothing.
    expect(existsSync(recordedHistory)).toBe(true);
    const history = JSON.parse(readFileSync(recordedHistory, 'utf8'));
    const text = JSON.stringify(history);
    for (const name of ['alertsReceived', 'synthesizeInvestigation']) expect(text).toContain(name);
    // The signals carry whether the incident has recovered (payloads are base64 JSON).
    const signalled = (history.events as Array<Record<string, any>>)
      .map((e) => e.workflowExecutionSignaledEventAttributes)
      .filter((a) => a?.signalName === 'alertsReceived')
      .map((a) => JSON.parse(Buffer.from(a.input.payloads[0].data, 'base64').toString('utf8')));
    expect(signalled.map((s) => s.incidentRecovered)).toEqual([false, false, true]);
    await Worker.runReplayHistory(
      { workflowBundle: { codePath: inject('workflowBundlePath') } },
      history,
      'recorded-grouped-alerts',
    );
  });

  it('replays a grouped-alerts history made just now', async () => {
    const history = await groupedAlertsLife();
    await Worker.runReplayHistory(
      { workflowBundle: { codePath: inject('workflowBundlePath') } },
      history,
      'grouped-now',
    );
  });
});
