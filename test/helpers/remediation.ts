import { eq } from 'drizzle-orm';
import { expect } from 'vitest';
import { investigations } from '../../src/db/schema/investigation.js';
import { createRemediationActivities } from '../../src/activities/remediation.js';
import { approvals, remediations } from '../../src/db/schema/remediation.js';
import { tenants } from '../../src/db/schema/tenants.js';
import type { TestService } from './service.js';
import { eventually } from './webhooks.js';

/**
 * A runbook for `service` whose step the service can execute (restart), once per tenant: a
 * conclusion on the service then recommends it, where one without evidence recommends manual
 * steps only, which ask for no approval (ADR 0258).
 */
export async function restartRunbook(svc: TestService, token: string, service: string): Promise<void> {
  const runbooks = await svc.api('GET', `/v1/runbooks?service=${encodeURIComponent(service)}`, { token });
  expect(runbooks.status).toBe(200);
  if (runbooks.body.total > 0) return;
  const runbook = await svc.api('POST', '/v1/runbooks', {
    token,
    body: { title: `${service} errors`, service, content: `# ${service} errors\n\n1. Restart the ${service} pods\n` },
  });
  expect(runbook.status).toBe(201);
}

/**
 * A manual incident about checkout errors on `checkout-api` (201 checked); its id. The tenant has
 * a runbook for `checkout-api`, so the conclusion recommends a step the service can execute.
 */
export async function checkoutIncident(svc: TestService, token: string): Promise<string> {
  await restartRunbook(svc, token, 'checkout-api');
  const created = await svc.api('POST', '/v1/incidents/chat', {
    token,
    body: { title: 'Checkout errors', description: 'Checkout answers 502 errors since 03:10', service: 'checkout-api' },
  });
  expect(created.status).toBe(201);
  return created.body.incidentId as string;
}

/**
 * A manual incident whose workflow runs, with a completed investigation stored as the
 * investigation stores its conclusion (the workflow not told): for calling the remediation
 * activities directly, as the workflow would. Its id.
 */
export async function concludedIncident(
  svc: TestService,
  tenant: { tenantId: string; member: string },
  incident: { title: string; description: string; service?: string },
  recommendedActions: string[],
): Promise<string> {
  const created = await svc.api('POST', '/v1/incidents/chat', { token: tenant.member, body: incident });
  expect(created.status).toBe(201);
  const incidentId = created.body.incidentId as string;
  const running = async () =>
    (
      await svc.client.workflow
        .getHandle(incidentId)
        .describe()
        .catch(() => undefined)
    )?.status.name === 'RUNNING';
  await eventually(running);
  await svc.database.db.insert(investigations).values({
    incidentId,
    tenantId: tenant.tenantId,
    status: 'completed',
    rootCause: 'bad release',
    recommendedActions,
  });
  return incidentId;
}

/** A manual incident investigated to a conclusion, with its remediation approval pending. */
export async function investigateToPendingApproval(svc: TestService, tenant: { member: string }) {
  const incidentId = await checkoutIncident(svc, tenant.member);
  expect((await svc.api('POST', '/v1/investigation/', { token: tenant.member, body: { incidentId } })).status).toBe(
    202,
  );
  const approval = await eventually(async () => {
    const [row] = await svc.database.db.select().from(approvals).where(eq(approvals.incidentId, incidentId));
    return row?.status === 'pending' ? row : undefined;
  }, 30_000);
  return { incidentId, approval };
}

/** Waits until the approval has expired, and answers its row. */
export async function expiredApproval(svc: TestService, approvalId: string, timeoutMs: number) {
  return eventually(async () => {
    const [row] = await svc.database.db.select().from(approvals).where(eq(approvals.id, approvalId));
    return row?.status === 'expired' ? row : undefined;
  }, timeoutMs);
}

/** A Business tenant whose approvals wait `minutes`, its admin a known user (one who gets approval notifications). */
export async function tenantWithApprovalTimeout(svc: TestService, minutes: number) {
  const tenant = await svc.newTenant({ plan: 'plan_business' });
  await svc.database.db
    .update(tenants)
    .set({ settings: { approvalTimeoutMinutes: minutes } })
    .where(eq(tenants.id, tenant.tenantId));
  const seen = await svc.api('GET', `/v1/tenants/${tenant.tenantId}`, { token: tenant.admin });
  if (seen.status !== 200) throw new Error(`the admin could not read the tenant: ${seen.status}`);
  return tenant;
}

/**
 * The remediation the activities propose for a concluded incident (as its workflow would), with
 * the activities to execute its steps and the stored plan.
 */
export async function proposedRemediation(svc: TestService, tenantId: string, incidentId: string, requestKey: string) {
  const acts = createRemediationActivities({ db: svc.database.db, skills: svc.skills });
  const proposal = await acts.proposeRemediation({
    tenantId,
    incidentId,
    investigationRun: 1,
    workflowId: incidentId,
    requestKey,
  });
  const [remediation] = await svc.database.db
    .select()
    .from(remediations)
    .where(eq(remediations.id, proposal.remediationId));
  return { acts, proposal, remediation: remediation! };
}
