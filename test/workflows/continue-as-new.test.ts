import { eq } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { approvals } from '../../src/db/schema/remediation.js';
import { tenants } from '../../src/db/schema/tenants.js';
import { widgetSessions } from '../../src/db/schema/widget.js';
import type { WidgetSessionInput } from '../../src/widget/session-messages.js';
import { alertsReceivedSignal, getStateQuery, type IncidentWorkflowInput } from '../../src/workflows/messages.js';
import type { RunningDevServer } from '../../src/temporal/dev-server.js';
import { startTestService, type TestService } from '../helpers/service.js';
import { createKey, eventually, postWebhook } from '../helpers/webhooks.js';
import { startContinueAsNewServer } from '../helpers/workers.js';
import { restartRunbook } from '../helpers/remediation.js';

// A Temporal server of its own that suggests continuing as new after a few history events, so an
// incident's workflow runs its whole life with the suggestion on.
let server: RunningDevServer;
let svc: TestService;

beforeAll(async () => {
  server = await startContinueAsNewServer();
  svc = await startTestService({ temporalAddress: server.address });
}, 120_000);
afterAll(async () => {
  await svc?.stop();
  await server?.stop();
});

describe('an incident workflow told to continue as new', () => {
  it('first proposes the remediation its investigation asked for, and handles an alert that arrives while the approval waits', async () => {
    const tenant = await svc.newTenant({ plan: 'plan_business' });
    await svc.database.db
      .update(tenants)
      .set({ settings: { autoResolve: true, approvalTimeoutMinutes: 30 } })
      .where(eq(tenants.id, tenant.tenantId));
    await restartRunbook(svc, tenant.member, 'checkout-api'); // a step to run: manual steps ask nothing
    const key = await createKey(svc, tenant.admin);
    const alert = {
      name: 'CheckoutErrors',
      severity: 'high',
      service: 'checkout-api',
      summary: '5xx above 5%',
      fingerprint: `can-${Date.now()}`,
    };
    const opened = await postWebhook(svc, tenant.tenantId, 'generic', alert, { key: key.key });
    expect(opened.status).toBe(202);
    const incidentId = opened.body.incidentIds[0] as string;

    // Triaged and investigated on its own; the conclusion's remediation is proposed (the run used
    // to continue as new as soon as the investigation ended, dropping the request).
    const approval = await eventually(async () => {
      const [row] = await svc.database.db.select().from(approvals).where(eq(approvals.incidentId, incidentId));
      return row?.status === 'pending' ? row : undefined;
    }, 60_000);
    expect(approval.incidentId).toBe(incidentId);
    const handle = svc.client.workflow.getHandle(incidentId);
    expect((await handle.describe()).status.name).toBe('RUNNING');

    // The alert recovers while the approval waits: with autoResolve the incident is resolved (the
    // run used to wait for the approval before anything else, then continue as new without it).
    const resolved = await postWebhook(
      svc,
      tenant.tenantId,
      'generic',
      { ...alert, status: 'resolved' },
      { key: key.key },
    );
    expect(resolved.status).toBe(202);
    const incident = await eventually(async () => {
      const res = await svc.api('GET', `/v1/incidents/${incidentId}`, { token: tenant.member });
      return res.body.status === 'resolved' ? res.body : undefined;
    }, 60_000);
    expect(incident).toMatchObject({ incidentId, status: 'resolved' });
    const history = await handle.fetchHistory();
    expect((history.events ?? []).filter((e) => e.workflowTaskFailedEventAttributes)).toEqual([]);
  }, 150_000);

  it('remembers the alert event ids it received across the continue-as-new, so a redelivery counts once', async () => {
    const tenant = await svc.newTenant({ plan: 'plan_business' });
    const created = await svc.api('POST', '/v1/incidents/chat', {
      token: tenant.member,
      body: { title: 'Queue lag', description: 'billing-worker lags 5 min' },
    });
    expect(created.status).toBe(201);
    const incidentId = created.body.incidentId as string;
    const handle = svc.client.workflow.getHandle(incidentId);

    // Alerts delivered to the first run one signal at a time until, past the suggestion, it
    // continues as new.
    const first = (await handle.describe()).runId;
    const firstRun = svc.client.workflow.getHandle(incidentId, first);
    const delivered: string[] = [];
    for (let i = 0; i < 20; i++) {
      const eventId = `evt_seen_${i}_${Date.now()}`;
      const sent = await firstRun
        .signal(alertsReceivedSignal, {
          alerts: [{ eventId, status: 'firing', occurredAt: new Date().toISOString() }],
          autoResolve: false,
        })
        .then(
          () => true,
          () => false,
        ); // the run has continued as new
      if (!sent) break;
      delivered.push(eventId);
      const handled = await eventually(async () => {
        const { runId } = await handle.describe();
        if (runId !== first) return 'continued';
        return (await firstRun.query(getStateQuery)).alertsReceived === delivered.length ? 'handled' : undefined;
      }, 30_000);
      if (handled === 'continued') break;
    }
    const next = await eventually(async () => {
      const { runId } = await handle.describe();
      return runId !== first ? runId : undefined;
    }, 30_000);
    expect(delivered.length).toBeGreaterThan(0);
    const [started] = (await svc.client.workflow.getHandle(incidentId, next).fetchHistory()).events ?? [];
    const payload = started!.workflowExecutionStartedEventAttributes!.input!.payloads![0]!;
    const carried = JSON.parse(Buffer.from(payload.data!).toString('utf8')) as IncidentWorkflowInput;
    expect(carried.seenEventIds).toEqual(delivered);
    const redelivered = { eventId: delivered.at(-1)!, status: 'firing' as const, occurredAt: new Date().toISOString() };

    // The dispatcher redelivers it (it crashed before marking it delivered) with a new one: the
    // new run counts only the new one.
    const fresh = {
      eventId: `evt_fresh_${Date.now()}`,
      status: 'firing' as const,
      occurredAt: new Date().toISOString(),
    };
    const run = svc.client.workflow.getHandle(incidentId, next);
    await run.signal(alertsReceivedSignal, { alerts: [redelivered, fresh], autoResolve: false });
    const state = await eventually(async () => {
      const current = await run.query(getStateQuery);
      return (current.alertsReceived ?? 0) > 0 ? current : undefined;
    }, 30_000);
    expect(state.alertsReceived).toBe(1);
    const history = await handle.fetchHistory();
    expect((history.events ?? []).filter((e) => e.workflowTaskFailedEventAttributes)).toEqual([]);
  }, 150_000);
});

describe('a widget session workflow told to continue as new', () => {
  it('carries its deadline into the new run, which takes the next message and the close', async () => {
    const tenant = await svc.newTenant();
    const opened = await svc.api('POST', '/v1/widget/sessions', { token: tenant.member });
    expect(opened.status).toBe(201);
    const { sessionId, token } = opened.body as { sessionId: string; token: string };
    const ask = (message: string) =>
      svc.api('POST', `/v1/widget/sessions/${sessionId}/messages`, { token, body: { message } });
    const handle = svc.client.workflow.getHandle(sessionId);
    const first = (await handle.describe()).runId;

    // A message's signal and its bookkeeping take the history past the server's suggestion.
    expect((await ask('What broke checkout last week?')).status).toBe(200);
    const next = await eventually(async () => {
      const { runId } = await handle.describe();
      return runId !== first ? runId : undefined;
    }, 30_000);
    const [row] = await svc.database.db.select().from(widgetSessions).where(eq(widgetSessions.id, sessionId));
    const [started] = (await svc.client.workflow.getHandle(sessionId, next).fetchHistory()).events ?? [];
    const payload = started!.workflowExecutionStartedEventAttributes!.input!.payloads![0]!;
    const carried = JSON.parse(Buffer.from(payload.data!).toString('utf8')) as WidgetSessionInput;
    expect(carried.expiresAt).toBe(row!.expiresAt.toISOString());

    // The new run is the session: a message moves its deadline, a close ends it.
    const asked = await ask('And the one before?');
    expect(asked.status).toBe(200);
    expect((await svc.api('DELETE', `/v1/widget/sessions/${sessionId}`, { token })).status).toBe(204);
    await handle.result();
    const history = await handle.fetchHistory();
    expect((history.events ?? []).filter((e) => e.workflowTaskFailedEventAttributes)).toEqual([]);
    const [closed] = await svc.database.db.select().from(widgetSessions).where(eq(widgetSessions.id, sessionId));
    expect(closed!.status).toBe('closed');
    expect(closed!.expiresAt.getTime()).toBeGreaterThanOrEqual(row!.expiresAt.getTime());
  }, 60_000);
});
