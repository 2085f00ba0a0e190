/**
 * An approval is asked for only when the remediation plan has a step the service can execute
 * (ADR 0258): through real webhooks, the real workflow and its recorded history.
 */
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { historyToJSON } from '@temporalio/common/lib/proto-utils.js';
import { Worker } from '@temporalio/worker';
import { and, eq } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it, inject } from 'vitest';
import { buildPlan, isExecutableStep } from '../../src/activities/remediation/plan.js';
import { auditLog } from '../../src/db/schema/audit.js';
import { events } from '../../src/db/schema/events.js';
import { incidents } from '../../src/db/schema/incidents.js';
import { investigations } from '../../src/db/schema/investigation.js';
import { approvals, notifications, remediations } from '../../src/db/schema/remediation.js';
import { getStateQuery } from '../../src/workflows/messages.js';
import { startTestService, type TestService } from '../helpers/service.js';
import { createKey, eventually, postWebhook } from '../helpers/webhooks.js';

const recordedHistory = path.join(
  path.dirname(fileURLToPath(import.meta.url)),
  'histories',
  'incident-manual-only-v1.json',
);

let svc: TestService;
type Tenant = Awaited<ReturnType<TestService['newTenant']>>;

beforeAll(async () => {
  svc = await startTestService();
});
afterAll(() => svc?.stop());

/** A tenant whose admin the api has seen (approval requests go to known admins). */
async function tenantWithKey(): Promise<Tenant & { key: string }> {
  const tenant = await svc.newTenant();
  expect((await svc.api('GET', `/v1/tenants/${tenant.tenantId}`, { token: tenant.admin })).status).toBe(200);
  return { ...tenant, key: (await createKey(svc, tenant.admin)).key };
}

/** An alert through the generic webhook; the incident it opened once its investigation concluded. */
async function alertInvestigated(tenant: Tenant & { key: string }, service: string) {
  const posted = await postWebhook(
    svc,
    tenant.tenantId,
    'generic',
    { name: `${service} errors`, severity: 'high', service, summary: '5xx above 5% for 10 minutes' },
    { key: tenant.key },
  );
  expect(posted.status).toBe(202);
  const incidentId = posted.body.incidentIds[0] as string;
  const handle = svc.client.workflow.getHandle(incidentId);
  // The remediation has been decided on once the conclusion's proposal answered.
  const state = await eventually(async () => {
    const s = await handle.query(getStateQuery).catch(() => undefined);
    return s?.investigationStatus === 'completed' && s.remediationStatus ? s : undefined;
  }, 60_000);
  return { incidentId, handle, state };
}

const rowsOf = async <T>(query: Promise<T[]>) => query;

describe('a plan of manual steps only', () => {
  it('is recommended actions on the incident: no approval, no approval.requested, no wait; the incident stays investigating', async () => {
    const tenant = await tenantWithKey();
    const { incidentId, handle, state } = await alertInvestigated(tenant, 'ledger-api');
    expect(state).toMatchObject({ remediationStatus: 'manual_only', investigationStatus: 'completed' });
    expect(state.pendingApprovalId).toBeUndefined();

    const [incident] = await svc.database.db.select().from(incidents).where(eq(incidents.id, incidentId));
    const [investigation] = await svc.database.db
      .select()
      .from(investigations)
      .where(eq(investigations.incidentId, incidentId));
    // The conclusion's actions are the incident's, and none is something the service runs.
    expect(incident!.recommendedActions.length).toBeGreaterThan(0);
    expect(incident!.recommendedActions).toEqual(investigation!.recommendedActions);
    const plan = buildPlan(incident!.recommendedActions, incident!, []);
    expect(plan.map((s) => s.action)).toEqual(plan.map(() => 'manual_step'));
    expect(plan.some(isExecutableStep)).toBe(false);

    expect(await rowsOf(svc.database.db.select().from(approvals).where(eq(approvals.incidentId, incidentId)))).toEqual(
      [],
    );
    expect(
      await rowsOf(svc.database.db.select().from(remediations).where(eq(remediations.incidentId, incidentId))),
    ).toEqual([]);
    const types = (
      await svc.database.db.select({ type: events.type }).from(events).where(eq(events.incidentId, incidentId))
    ).map((e) => e.type);
    expect(types).toContain('investigation.completed');
    expect(types).not.toContain('approval.requested');
    expect(
      await rowsOf(
        svc.database.db
          .select()
          .from(notifications)
          .where(and(eq(notifications.incidentId, incidentId), eq(notifications.type, 'approval.requested'))),
      ),
    ).toEqual([]);
    // Why nobody was asked is in the audit log.
    const [audit] = await svc.database.db
      .select()
      .from(auditLog)
      .where(and(eq(auditLog.incidentId, incidentId), eq(auditLog.action, 'remediation.manual_only')));
    expect(audit).toMatchObject({ actorType: 'system', targetType: 'incident', targetId: incidentId });
    expect(audit!.details).toMatchObject({ investigationRun: 1, recommendedActions: incident!.recommendedActions });

    // Nothing waits: no approval timer in the history, and the incident is where the
    // investigation left it, for a person to carry the steps out.
    const history = await handle.fetchHistory();
    expect((history.events ?? []).filter((e) => e.timerStartedEventAttributes)).toEqual([]);
    expect(incident!.status).toBe('investigating');
    expect((await svc.api('GET', `/v1/incidents/${incidentId}`, { token: tenant.member })).body).toMatchObject({
      status: 'investigating',
      recommendedActions: incident!.recommendedActions,
    });
    const approvalsList = await svc.api('GET', '/v1/approvals', { token: tenant.admin });
    expect(approvalsList.body.total).toBe(0);
  });

  it('an executable step (a runbook step for the service) still asks the admins for approval', async () => {
    const tenant = await tenantWithKey();
    const runbook = await svc.api('POST', '/v1/runbooks', {
      token: tenant.member,
      body: {
        title: 'Billing errors',
        service: 'billing-api',
        content: '# Billing errors\n\n1. Restart the billing-api pods\n2. Check the error rate\n',
      },
    });
    expect(runbook.status).toBe(201);
    const { incidentId, state } = await alertInvestigated(tenant, 'billing-api');
    expect(state.remediationStatus).toBe('awaiting_approval');
    const approval = await eventually(async () => {
      const [row] = await svc.database.db.select().from(approvals).where(eq(approvals.incidentId, incidentId));
      return row;
    });
    expect(approval.status).toBe('pending');
    const [rem] = await svc.database.db.select().from(remediations).where(eq(remediations.id, approval.remediationId));
    expect(rem!.plan.some(isExecutableStep)).toBe(true);
    expect(rem!.plan.map((s) => s.action)).toContain('follow_runbook');
    const types = (
      await svc.database.db.select({ type: events.type }).from(events).where(eq(events.incidentId, incidentId))
    ).map((e) => e.type);
    expect(types).toContain('approval.requested');
    const sent = await svc.database.db
      .select()
      .from(notifications)
      .where(and(eq(notifications.incidentId, incidentId), eq(notifications.type, 'approval.requested')));
    expect(sent.map((n) => n.userId)).toEqual(['user-admin']);
    await eventually(
      async () =>
        (await svc.database.db.select().from(incidents).where(eq(incidents.id, incidentId)))[0]?.status ===
        'awaiting_approval',
    );
  });
});

describe('manual-only determinism', () => {
  it('replays the recorded history of an incident whose plan was manual only', async () => {
    if (process.env.RECORD_HISTORIES) {
      const tenant = await tenantWithKey();
      const { incidentId, handle } = await alertInvestigated(tenant, 'replay-ledger');
      const closed = await svc.api('PATCH', `/v1/incidents/${incidentId}`, {
        token: tenant.member,
        body: { status: 'closed' },
      });
      expect(closed.status).toBe(200);
      await handle.result();
      writeFileSync(recordedHistory, historyToJSON(await handle.fetchHistory()));
    }
    // A missing fixture fails: recording it here and replaying it at once would prove nothing.
    expect(existsSync(recordedHistory)).toBe(true);
    const history = JSON.parse(readFileSync(recordedHistory, 'utf8'));
    // The proposal answered with no step to approve, and nothing waited on an approval after it.
    const names = (history.events as Array<Record<string, any>>)
      .map((e) => e.activityTaskScheduledEventAttributes?.activityType?.name as string | undefined)
      .filter((n) => n !== undefined);
    expect(names).toContain('proposeRemediation');
    expect(names).not.toContain('expireApproval');
    expect(names).not.toContain('recordApprovalDecision');
    const answers = (history.events as Array<Record<string, any>>).flatMap(
      (e) => (e.activityTaskCompletedEventAttributes?.result?.payloads ?? []) as Array<{ data: string }>,
    );
    const decoded = answers.map((p) => Buffer.from(p.data, 'base64').toString('utf8'));
    expect(decoded.some((d) => d.includes('"steps":0') && d.includes('"manualSteps":2'))).toBe(true);
    expect(history.events.some((e: Record<string, unknown>) => e.timerStartedEventAttributes)).toBe(false);
    await Worker.runReplayHistory(
      { workflowBundle: { codePath: inject('workflowBundlePath') } },
      history,
      'recorded-manual-only',
    );
  });
});
