/**
 * Issue 36's noise, end to end: alerts through the real webhook, incidents investigated by the
 * real workflow, notifications written by the real notifier. One admin had 72 unread
 * notifications for 10 incidents; this counts what each person is told now, beside what the
 * former rule (every event to every member and admin, every proposal an approval) would have
 * told them of the same incidents. `SCENARIO_VERBOSE=1` prints the counts.
 */
import { and, eq, inArray, max } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { auditLog } from '../../src/db/schema/audit.js';
import { events } from '../../src/db/schema/events.js';
import { approvals, eventConsumers, notifications } from '../../src/db/schema/remediation.js';
import { notificationsFor, NOTIFIER_CONSUMER } from '../../src/notifications/notifier.js';
import { getStateQuery } from '../../src/workflows/messages.js';
import { restartRunbook } from '../helpers/remediation.js';
import { startTestService, type TestService } from '../helpers/service.js';
import { createKey, eventually, postWebhook } from '../helpers/webhooks.js';

let svc: TestService;
type Tenant = Awaited<ReturnType<TestService['newTenant']>> & { key: string };

beforeAll(async () => {
  svc = await startTestService();
});
afterAll(() => svc?.stop());

/** A tenant whose admin and member have used the api (people are notified once the api has seen them). */
async function tenantOfTwo(): Promise<Tenant> {
  const tenant = await svc.newTenant();
  for (const token of [tenant.admin, tenant.member])
    expect((await svc.api('GET', `/v1/tenants/${tenant.tenantId}`, { token })).status).toBe(200);
  return { ...tenant, key: (await createKey(svc, tenant.admin)).key };
}

interface Alert {
  service: string;
  severity: 'critical' | 'high' | 'medium' | 'low';
  /** A runbook step for the service: the conclusion has a step to run, so an approval is asked for. */
  runbook?: boolean;
}

/** Each alert through the generic webhook, each its own incident, investigated to the remediation decision. */
async function incidentsOf(tenant: Tenant, alerts: Alert[]): Promise<Map<string, Alert>> {
  for (const a of alerts) if (a.runbook) await restartRunbook(svc, tenant.member, a.service);
  const opened = new Map<string, Alert>();
  for (const a of alerts) {
    const posted = await postWebhook(
      svc,
      tenant.tenantId,
      'generic',
      { name: `${a.service} 5xx`, severity: a.severity, service: a.service, summary: `${a.service} answers 5xx` },
      { key: tenant.key },
    );
    expect(posted.status).toBe(202);
    opened.set(posted.body.incidentIds[0] as string, a);
  }
  expect(opened.size).toBe(alerts.length); // unrelated services: one incident each
  for (const id of opened.keys()) {
    await eventually(async () => {
      const s = await svc.client.workflow
        .getHandle(id)
        .query(getStateQuery)
        .catch(() => undefined);
      return s?.investigationStatus === 'completed' && s.remediationStatus !== undefined;
    }, 120_000);
  }
  return opened;
}

/** Waits until the notifier has taken every event of the tenant so far. */
async function notifierCaughtUp(tenantId: string): Promise<void> {
  const [top] = await svc.database.db
    .select({ seq: max(events.seq) })
    .from(events)
    .where(eq(events.tenantId, tenantId));
  await eventually(async () => {
    const [row] = await svc.database.db.select().from(eventConsumers).where(eq(eventConsumers.name, NOTIFIER_CONSUMER));
    return (row?.lastSeq ?? 0) >= (top?.seq ?? 0);
  }, 30_000);
}

/** Each person's notifications as `type@incident`, in the order written. */
async function toldTo(tenantId: string): Promise<Record<string, string[]>> {
  const rows = await svc.database.db.select().from(notifications).where(eq(notifications.tenantId, tenantId));
  const out: Record<string, string[]> = {};
  rows.sort((a, b) => a.createdAt.getTime() - b.createdAt.getTime() || a.id.localeCompare(b.id));
  for (const r of rows) (out[r.userId] ??= []).push(`${r.type}@${r.incidentId}`);
  return out;
}

/**
 * What the former rule would have written for the same incidents: each event of the tenant to
 * each member and admin (exports to admins), an approval request per admin for every proposal,
 * and for each plan of manual steps only the approval and the move to `awaiting_approval` it
 * used to cost too. A lower bound: the former flow's later events (expiry, the move back) are
 * not counted.
 */
async function formerCounts(tenantId: string): Promise<Record<string, number>> {
  const rows = await svc.database.db.select().from(events).where(eq(events.tenantId, tenantId));
  const fannedOut = await notificationsFor(
    svc.database.db,
    rows
      .filter((r) => r.type !== 'approval.requested')
      .map((r) => ({ ...r, seq: Number(r.seq), incidentTitle: null, occurredAt: r.occurredAt })),
  );
  const counts: Record<string, number> = {};
  for (const n of fannedOut) counts[n.userId] = (counts[n.userId] ?? 0) + 1;
  const proposals = rows.filter((r) => r.type === 'approval.requested').length;
  const manualOnly = (
    await svc.database.db
      .select()
      .from(auditLog)
      .where(and(eq(auditLog.tenantId, tenantId), eq(auditLog.action, 'remediation.manual_only')))
  ).length;
  counts['user-admin'] = (counts['user-admin'] ?? 0) + proposals + manualOnly * 2;
  counts['user-member'] = (counts['user-member'] ?? 0) + manualOnly;
  return counts;
}

const verbose = (line: string) => {
  if (process.env.SCENARIO_VERBOSE) console.log(line);
};

describe('ten incidents, one admin and one member', () => {
  it('tells each person only what needs them: far fewer notifications than before, none of their own status change', async () => {
    const tenant = await tenantOfTwo();
    const alerts: Alert[] = [
      { service: 'payments-api', severity: 'critical', runbook: true },
      { service: 'orders-db', severity: 'critical', runbook: true },
      { service: 'search-api', severity: 'critical' },
      { service: 'cart-api', severity: 'high', runbook: true },
      { service: 'profile-api', severity: 'high' },
      { service: 'email-worker', severity: 'high' },
      { service: 'reports-api', severity: 'medium', runbook: true },
      { service: 'thumbnails', severity: 'medium' },
      { service: 'docs-site', severity: 'low' },
      { service: 'status-page', severity: 'low' },
    ];
    const opened = await incidentsOf(tenant, alerts);
    const idOf = (service: string) => [...opened].find(([, a]) => a.service === service)![0];

    // The member resolves an incident themselves (search-api: nothing for the service to run).
    const resolved = idOf('search-api');
    const patched = await svc.api('PATCH', `/v1/incidents/${resolved}`, {
      token: tenant.member,
      body: { status: 'resolved' },
    });
    expect(patched.status).toBe(200);
    await notifierCaughtUp(tenant.tenantId);

    const told = await toldTo(tenant.tenantId);
    const admin = told['user-admin'] ?? [];
    const member = told['user-member'] ?? [];
    const approvalRows = await svc.database.db
      .select()
      .from(approvals)
      .where(inArray(approvals.incidentId, [...opened.keys()]));
    const asked = new Set(approvalRows.map((a) => a.incidentId));
    // Approvals only where the conclusion had a step to run: the four services with a runbook.
    expect([...asked].map((id) => opened.get(id)!.service).sort()).toEqual(
      alerts
        .filter((a) => a.runbook)
        .map((a) => a.service)
        .sort(),
    );

    const urgent = [...opened].filter(([, a]) => a.severity === 'critical' || a.severity === 'high').map(([id]) => id);
    const expectedAdmin = [
      ...urgent.map((id) => `incident.created@${id}`),
      ...urgent.map((id) => `investigation.completed@${id}`),
      ...[...asked].map((id) => `approval.requested@${id}`),
      `incident.resolved@${resolved}`, // the member resolved it: the admin, told of it, is told
    ].sort();
    const expectedMember = [
      ...urgent.map((id) => `incident.created@${id}`),
      ...urgent.map((id) => `investigation.completed@${id}`),
    ].sort(); // never their own resolve, never an approval request
    expect([...admin].sort()).toEqual(expectedAdmin);
    expect([...member].sort()).toEqual(expectedMember);

    const former = await formerCounts(tenant.tenantId);
    verbose(
      `10 incidents: admin ${former['user-admin']} notifications before → ${admin.length} now; member ${former['user-member']} → ${member.length}`,
    );
    expect(admin.length).toBe(6 + 6 + 4 + 1);
    expect(member.length).toBe(6 + 6);
    expect(former['user-admin']).toBeGreaterThanOrEqual(3 * admin.length);
    expect(former['user-member']).toBeGreaterThanOrEqual(3 * member.length);

    // What they read is what the api lists: the unread counts.
    const adminList = await svc.api('GET', '/v1/notifications?limit=200', { token: tenant.admin });
    expect(adminList.body.unreadCount).toBe(admin.length);
    const memberList = await svc.api('GET', '/v1/notifications?limit=200', { token: tenant.member });
    expect(memberList.body.unreadCount).toBe(member.length);
  }, 300_000);

  it('honours preferences set over the api; approval requests reach admins whatever their minimum severity', async () => {
    const tenant = await tenantOfTwo();
    const onCall = svc.token(tenant.tenantId, 'admin', { sub: 'user-admin2' });
    expect((await svc.api('GET', `/v1/tenants/${tenant.tenantId}`, { token: onCall })).status).toBe(200);
    const set = async (token: string, body: object) =>
      expect((await svc.api('PUT', '/v1/notifications/preferences', { token, body })).status).toBe(200);
    await set(tenant.admin, { disabledTypes: ['investigation.completed'], minSeverity: 'critical' });
    await set(tenant.member, { disabledTypes: [], minSeverity: 'critical' });
    await set(onCall, { disabledTypes: ['approval.requested'], minSeverity: 'low' });

    const opened = await incidentsOf(tenant, [
      { service: 'ledger-api', severity: 'critical', runbook: true },
      { service: 'invoice-api', severity: 'high', runbook: true },
    ]);
    const [crit, high] = [...opened.keys()];
    await eventually(async () => {
      const rows = await svc.database.db
        .select()
        .from(approvals)
        .where(inArray(approvals.incidentId, [crit!, high!]));
      return rows.length === 2;
    });
    await notifierCaughtUp(tenant.tenantId);
    const told = await toldTo(tenant.tenantId);
    // Minimum critical, conclusions off: the critical opening, and both approval requests.
    expect([...(told['user-admin'] ?? [])].sort()).toEqual(
      [`incident.created@${crit}`, `approval.requested@${crit}`, `approval.requested@${high}`].sort(),
    );
    // Minimum critical: the critical incident only.
    expect(told['user-member']).toEqual([`incident.created@${crit}`, `investigation.completed@${crit}`]);
    // Approval requests off: everything else of both.
    expect([...(told['user-admin2'] ?? [])].sort()).toEqual(
      [
        `incident.created@${crit}`,
        `incident.created@${high}`,
        `investigation.completed@${crit}`,
        `investigation.completed@${high}`,
      ].sort(),
    );
    // The proposal's audit names who was asked.
    const proposed = await svc.database.db
      .select()
      .from(auditLog)
      .where(and(eq(auditLog.tenantId, tenant.tenantId), eq(auditLog.action, 'remediation.proposed')));
    expect(proposed.map((p) => p.details.notified)).toEqual([['user-admin'], ['user-admin']]);
  }, 300_000);
});
