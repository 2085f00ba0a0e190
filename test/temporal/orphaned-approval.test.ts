/**
 * An approval whose workflow run an SRE terminated from the Temporal UI is expired by the next
 * run of the incident (ADR 0284): the real workflow, terminated through the Temporal client.
 */
import { and, eq } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { auditLog } from '../../src/db/schema/audit.js';
import { events } from '../../src/db/schema/events.js';
import { approvals, remediations } from '../../src/db/schema/remediation.js';
import { expiredApproval, investigateToPendingApproval } from '../helpers/remediation.js';
import { startTestService, type TestService } from '../helpers/service.js';

let svc: TestService;
beforeAll(async () => {
  svc = await startTestService();
});
afterAll(() => svc?.stop());

/** The activity types a run of the workflow scheduled, in order. */
async function activityTypes(incidentId: string, runId: string): Promise<string[]> {
  const history = await svc.client.workflow.getHandle(incidentId, runId).fetchHistory();
  return (history.events ?? []).flatMap((e) =>
    e.activityTaskScheduledEventAttributes?.activityType?.name
      ? [e.activityTaskScheduledEventAttributes.activityType.name]
      : [],
  );
}

describe('an approval left pending by a terminated run', () => {
  it('is expired by the next run, audited, announced, and its answer is 409 approval_expired', async () => {
    const tenant = await svc.newTenant();
    expect((await svc.api('GET', `/v1/tenants/${tenant.tenantId}`, { token: tenant.admin })).status).toBe(200);
    const { incidentId, approval } = await investigateToPendingApproval(svc, tenant);
    const handle = svc.client.workflow.getHandle(incidentId);
    const terminated = (await handle.describe()).runId;
    await handle.terminate('SRE: stuck, terminated from the UI');

    // Nothing wrote anything: the row still says pending (the defect this fixes).
    const [stillPending] = await svc.database.db.select().from(approvals).where(eq(approvals.id, approval.id));
    expect(stillPending!.status).toBe('pending');

    // A person acts through the api: the update starts a new run from the stored row.
    const moved = await svc.api('PATCH', `/v1/incidents/${incidentId}`, {
      token: tenant.member,
      body: { status: 'investigating' },
    });
    expect(moved.status).toBe(200);
    const expired = await expiredApproval(svc, approval.id, 30_000);
    expect(expired.expiredReason).toBe('run_ended');
    const newRun = (await handle.describe()).runId;
    expect(newRun).not.toBe(terminated);

    const [remediation] = await svc.database.db
      .select()
      .from(remediations)
      .where(eq(remediations.id, approval.remediationId));
    expect(remediation!.status).toBe('cancelled');
    const audit = await svc.database.db
      .select()
      .from(auditLog)
      .where(and(eq(auditLog.tenantId, tenant.tenantId), eq(auditLog.targetId, approval.id)));
    expect(audit.map((a) => a.action)).toEqual(['approval.expired']);
    expect(audit[0]!).toMatchObject({ actorType: 'system', workflowId: incidentId, incidentId });
    expect(audit[0]!.details).toMatchObject({ reason: 'run_ended', remediationStatus: 'cancelled' });
    const [event] = await svc.database.db
      .select()
      .from(events)
      .where(and(eq(events.tenantId, tenant.tenantId), eq(events.idempotencyKey, `${approval.id}:expired`)));
    expect(event).toMatchObject({ type: 'approval.expired', incidentId });
    expect(event!.payload).toMatchObject({ approvalId: approval.id, reason: 'run_ended' });

    const answer = await svc.api('POST', `/v1/notifications/approvals/${approval.id}/respond`, {
      token: tenant.admin,
      body: { decision: 'approve' },
    });
    expect(answer.status).toBe(409);
    expect(answer.body.error).toBe('approval_expired');

    // The new run swept first; the first run, which found nothing to sweep, never asked.
    expect((await activityTypes(incidentId, newRun))[0]).toBe('expireOrphanedApprovals');
    expect(await activityTypes(incidentId, terminated)).not.toContain('expireOrphanedApprovals');
  }, 90_000);
});
