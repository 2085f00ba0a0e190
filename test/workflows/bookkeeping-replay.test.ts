/**
 * Determinism of the incident workflow's bookkeeping as local activities (patch
 * `bookkeeping-local-activities`, ADR 0269): an automated incident whose status moves, triage and
 * investigation start are written while people's updates (a PATCH, a start, a triage) arrive.
 * ADR 0132 rejected local activities once because such a history failed to replay. The v1 history
 * was recorded before the patch (activity tasks), v2 after it (markers); both must replay, and so
 * must one made just now.
 */
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { historyToJSON } from '@temporalio/common/lib/proto-utils.js';
import { Worker } from '@temporalio/worker';
import pino from 'pino';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { reconcileIncidents } from '../../src/outbox/workflow-dispatcher.js';
import { getStateQuery } from '../../src/workflows/messages.js';
import { startTestService, type TestService } from '../helpers/service.js';
import { createKey, eventually, postWebhook } from '../helpers/webhooks.js';

const historiesDir = path.join(path.dirname(fileURLToPath(import.meta.url)), 'histories');
const beforePatch = path.join(historiesDir, 'incident-updates-during-bookkeeping-v1.json');
const afterPatch = path.join(historiesDir, 'incident-updates-during-bookkeeping-v2.json');

let svc: TestService;
let tenant: { tenantId: string; admin: string; member: string };

beforeAll(async () => {
  // No dispatcher: the test starts the workflow itself, so its updates race the first steps.
  svc = await startTestService({ withoutDispatcher: true });
  tenant = await svc.newTenant({ plan: 'plan_business' });
});
afterAll(() => svc?.stop());

type HistoryEvent = Record<string, any>;

/** An automated incident that people PATCH, investigate and triage while its first steps run. */
async function updatesDuringBookkeeping(): Promise<{ events: HistoryEvent[] }> {
  const key = await createKey(svc, tenant.admin);
  const posted = await postWebhook(
    svc,
    tenant.tenantId,
    'generic',
    {
      name: `CheckoutErrors${Date.now()}`,
      severity: 'high',
      service: `checkout-${Date.now()}`,
      summary: '5xx above 5%',
    },
    { key: key.key },
  );
  expect(posted.status).toBe(202);
  const id = posted.body.incidentIds[0] as string;
  const handle = svc.client.workflow.getHandle(id);
  const deps = {
    db: svc.database.db,
    sql: svc.database.sql,
    workflows: svc.workflows,
    logger: pino({ level: 'silent' }),
  };
  expect(await reconcileIncidents(deps)).toBeGreaterThanOrEqual(1);
  // Sent at once, while the workflow's first task writes `triaging` and triages.
  const [patched, started, triaged] = await Promise.all([
    svc.api('PATCH', `/v1/incidents/${id}`, { token: tenant.member, body: { status: 'investigating' } }),
    svc.api('POST', '/v1/investigation/', { token: tenant.member, body: { incidentId: id } }),
    svc.api('POST', `/v1/triage/${id}`, { token: tenant.member }),
  ]);
  expect(patched.status).toBe(200);
  // The start is refused when the automatic one got the lock first.
  expect([202, 409]).toContain(started.status);
  expect(triaged.status).toBe(200);
  await eventually(async () => {
    const state = await handle.query(getStateQuery);
    return state.investigationStatus === 'completed' && (state.syntheses ?? 0) >= 1;
  }, 60_000);
  const [row] = await svc.database.sql<{ status: string; root_cause: string | null }[]>`
    select status, root_cause from investigations where incident_id = ${id} and tenant_id = ${tenant.tenantId}`;
  expect(row).toMatchObject({ status: 'completed' });
  expect(row!.root_cause).toBeTruthy();
  expect(
    (await svc.api('PATCH', `/v1/incidents/${id}`, { token: tenant.member, body: { status: 'closed' } })).status,
  ).toBe(200);
  await handle.result();
  return JSON.parse(historyToJSON(await handle.fetchHistory()));
}

/** Event types by name, as the JSON history spells them (`EVENT_TYPE_MARKER_RECORDED`). */
const types = (history: { events: HistoryEvent[] }): string[] => history.events.map((e) => String(e.eventType));
const activityTypes = (history: { events: HistoryEvent[] }): string[] =>
  history.events
    .map((e) => e.activityTaskScheduledEventAttributes?.activityType?.name as string | undefined)
    .filter((name): name is string => Boolean(name));
const localActivityTypes = (history: { events: HistoryEvent[] }): string[] =>
  history.events
    .filter((e) => e.markerRecordedEventAttributes?.markerName === 'core_local_activity')
    .map((e) => {
      const data = e.markerRecordedEventAttributes.details.data.payloads[0].data as string;
      return JSON.parse(Buffer.from(data, 'base64').toString('utf8')).activity_type as string;
    });

async function replay(history: unknown, name: string): Promise<void> {
  // Throws DeterminismViolationError when the code no longer matches the history.
  await Worker.runReplayHistory({ workflowBundle: { codePath: inject('workflowBundlePath') } }, history, name);
}

describe('incident workflow determinism with bookkeeping as local activities', () => {
  it('replays the history recorded before the patch: bookkeeping as activity tasks, updates meanwhile', async () => {
    if (process.env.RECORD_HISTORIES === 'bookkeeping-v1')
      writeFileSync(beforePatch, JSON.stringify(await updatesDuringBookkeeping()));
    // A missing fixture fails: recording it here and replaying it at once would prove nothing.
    expect(existsSync(beforePatch)).toBe(true);
    const history = JSON.parse(readFileSync(beforePatch, 'utf8'));
    expect(activityTypes(history)).toEqual(
      expect.arrayContaining(['projectStatusChange', 'beginInvestigation', 'deploymentAgent']),
    );
    expect(localActivityTypes(history)).toEqual([]);
    expect(types(history).filter((t) => t.includes('UPDATE_ACCEPTED')).length).toBeGreaterThanOrEqual(3);
    await replay(history, 'bookkeeping-v1');
  });

  it('replays the history recorded after the patch: bookkeeping as local activities, updates meanwhile', async () => {
    if (process.env.RECORD_HISTORIES === 'bookkeeping-v2')
      writeFileSync(afterPatch, JSON.stringify(await updatesDuringBookkeeping()));
    expect(existsSync(afterPatch)).toBe(true);
    const history = JSON.parse(readFileSync(afterPatch, 'utf8'));
    const local = localActivityTypes(history);
    expect(local).toEqual(expect.arrayContaining(['projectStatusChange', 'beginInvestigation']));
    // Only the quick writes moved: the agents stay activity tasks, visible by name.
    const scheduled = activityTypes(history);
    expect(scheduled).not.toContain('projectStatusChange');
    expect(scheduled).not.toContain('beginInvestigation');
    for (const agent of ['deploymentAgent', 'logsAgent', 'metricsAgent', 'runbookAgent'])
      expect(scheduled).toContain(agent);
    // The updates were accepted while the bookkeeping ran: before the agents were scheduled.
    const firstAgent = history.events.findIndex(
      (e: HistoryEvent) => e.activityTaskScheduledEventAttributes?.activityType?.name === 'deploymentAgent',
    );
    const accepted = types(history)
      .map((t, i) => (t.includes('UPDATE_ACCEPTED') ? i : -1))
      .filter((i) => i >= 0);
    expect(accepted.filter((i) => i < firstAgent).length).toBeGreaterThanOrEqual(1);
    await replay(history, 'bookkeeping-v2');
  });

  it('replays such a history made just now', async () => {
    const history = await updatesDuringBookkeeping();
    expect(localActivityTypes(history)).toContain('projectStatusChange');
    await replay(history, 'bookkeeping-now');
  });
});
