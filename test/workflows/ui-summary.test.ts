// The Temporal UI reads like the incident: summary and details at start, current details as it
// moves, and a summary per agent activity, all read back through the client (ADR 0279).
import { defaultPayloadConverter } from '@temporalio/common';
import { and, eq } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { approvals } from '../../src/db/schema/remediation.js';
import { getStateQuery } from '../../src/workflows/messages.js';
import { startTestService, type TestService } from '../helpers/service.js';
import { createKey, eventually, fixture, postWebhook } from '../helpers/webhooks.js';

let svc: TestService;
let tenant: { tenantId: string; admin: string; member: string };

beforeAll(async () => {
  svc = await startTestService();
  tenant = await svc.newTenant();
});
afterAll(() => svc?.stop());

interface WorkflowMetadata {
  currentDetails?: string;
}

describe('the Temporal UI as the incident timeline', () => {
  it('describes an incident by its title, tenant and origin, and keeps its details current', async () => {
    // A runbook step the service can run, so the conclusion asks an admin for approval.
    const runbook = await svc.api('POST', '/v1/runbooks', {
      token: tenant.member,
      body: {
        title: 'Checkout errors',
        service: 'checkout',
        content: '# Checkout errors\n\n1. Restart the checkout pods\n2. Check the error rate\n',
      },
    });
    expect(runbook.status).toBe(201);
    const key = await createKey(svc, tenant.admin);
    const posted = await postWebhook(svc, tenant.tenantId, 'alertmanager', fixture('alertmanager-firing.json'), {
      key: key.key,
    });
    expect(posted.status).toBe(202);
    const id = posted.body.incidentIds[0] as string;
    const incident = await svc.api('GET', `/v1/incidents/${id}`, { token: tenant.member });
    expect(incident.status).toBe(200);

    // The dispatcher starts the workflow: the description carries what the list shows.
    const handle = svc.client.workflow.getHandle(id);
    const description = await eventually(() => handle.describe(), 30_000);
    expect(await description.staticSummary()).toBe(incident.body.title);
    const details = await description.staticDetails();
    expect(details).toContain(`\`${id}\``);
    expect(details).toContain(`\`${tenant.tenantId}\``);
    expect(details).toContain('**Source** automated');

    // Triaged, investigated, and waiting for an admin's approval of the proposed remediation.
    const state = await eventually(async () => {
      const s = await handle.query(getStateQuery);
      return s.status === 'awaiting_approval' && s.pendingApprovalId ? s : null;
    }, 60_000);
    const investigation = await svc.api('GET', `/v1/investigation/${id}`, { token: tenant.member });
    expect(investigation.status).toBe(200);
    const approvalRows = await svc.database.db
      .select({ deadline: approvals.deadline })
      .from(approvals)
      .where(and(eq(approvals.id, state.pendingApprovalId!), eq(approvals.tenantId, tenant.tenantId)));
    expect(approvalRows).toHaveLength(1);

    const metadata = await handle.query<WorkflowMetadata>('__temporal_workflow_metadata');
    const current = metadata.currentDetails ?? '';
    expect(current).toContain('**Status** awaiting_approval');
    expect(current).toContain(`**Severity** ${state.severity}`);
    expect(current).toContain(
      `**Root cause** (confidence ${(investigation.body.confidence as number).toFixed(2)}) ${investigation.body.rootCause as string}`,
    );
    expect(current).toContain(
      `**Approval pending** \`${state.pendingApprovalId}\` until ${approvalRows[0]!.deadline.toISOString()}`,
    );

    // Rejected: the approval leaves the details as soon as the workflow moves on.
    const rejected = await svc.api('POST', `/v1/notifications/approvals/${state.pendingApprovalId}/respond`, {
      token: tenant.admin,
      body: { decision: 'reject', notes: 'not this one' },
    });
    expect(rejected.status).toBe(200);
    const after = await eventually(async () => {
      const m = await handle.query<WorkflowMetadata>('__temporal_workflow_metadata');
      return m.currentDetails && !m.currentDetails.includes('Approval pending') ? m.currentDetails : null;
    });
    expect(after).toContain('**Remediation** rejected');
  }, 90_000);

  it('names each agent activity in the timeline, with at most one patch marker per patch', async () => {
    const key = await createKey(svc, tenant.admin, 'timeline');
    const posted = await postWebhook(svc, tenant.tenantId, 'sentry', fixture('sentry-event-alert.json'), {
      key: key.key,
    });
    expect(posted.status).toBe(202);
    const id = posted.body.incidentIds[0] as string;
    const handle = svc.client.workflow.getHandle(id);
    await eventually(async () => (await handle.query(getStateQuery)).investigationStatus === 'completed', 60_000);

    const history = await handle.fetchHistory();
    const summaries = new Map<string, string>();
    const markers: string[] = [];
    for (const event of history.events ?? []) {
      const scheduled = event.activityTaskScheduledEventAttributes;
      if (scheduled?.activityType?.name && event.userMetadata?.summary) {
        summaries.set(scheduled.activityType.name, defaultPayloadConverter.fromPayload(event.userMetadata.summary));
      }
      const marker = event.markerRecordedEventAttributes;
      if (marker?.markerName) markers.push(marker.markerName);
    }
    expect(summaries.get('logsAgent')).toMatch(/^logs agent: /);
    expect(summaries.get('deploymentAgent')).toMatch(/^deployment agent: /);
    expect(summaries.get('triageIncident')).toMatch(/^triage: /);
    expect(summaries.get('synthesizeInvestigation')).toMatch(/^synthesis: /);
    // The run's markers are its three patches, once each, and its local bookkeeping writes.
    const patchMarkers = markers.filter((name) => name === 'core_patch');
    expect(patchMarkers.length).toBeGreaterThan(0);
    expect(patchMarkers.length).toBeLessThanOrEqual(3);
    expect(markers.filter((name) => name !== 'core_patch').every((name) => name === 'core_local_activity')).toBe(true);
  });
});
