import { asc, eq } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { alerts, correlationRules } from '../../src/db/schema/correlation.js';
import { incidents } from '../../src/db/schema/incidents.js';
import { ingestedEvents } from '../../src/db/schema/ingestion.js';
import { newId } from '../../src/ids.js';
import { releaseHeldAlerts } from '../../src/ingest/release-held.js';
import { startTestService, type TestService } from '../helpers/service.js';
import { createKey, eventually, postWebhook } from '../helpers/webhooks.js';

let svc: TestService;
beforeAll(async () => {
  svc = await startTestService();
}, 120_000);
afterAll(async () => {
  await svc?.stop();
});

type Rule = Partial<typeof correlationRules.$inferInsert>;

async function tenantWithRules(rules: Rule[]) {
  const tenant = await svc.newTenant({ grouping: true });
  const key = await createKey(svc, tenant.admin);
  const ids: string[] = [];
  for (const [n, rule] of rules.entries()) {
    const id = newId('crl');
    ids.push(id);
    await svc.database.db
      .insert(correlationRules)
      .values({ id, tenantId: tenant.tenantId, name: `rule ${n}`, ...rule });
  }
  return { tenant, key: key.key, ruleIds: ids };
}

let sequence = 0;
/** A Prometheus alert through Alertmanager, one notification per call (its own group key). */
function prometheusAlert(name: string, labels: Record<string, string>, status: 'firing' | 'resolved' = 'firing') {
  const fingerprint = `${name}-${Object.values(labels).join('-')}`.toLowerCase();
  return {
    receiver: 'oncall',
    status,
    alerts: [
      {
        status,
        labels: { alertname: name, severity: 'warning', ...labels },
        annotations: {
          summary: `${name} (${Object.values(labels).join(', ')})`,
          description: `${name} is firing on ${labels.instance ?? 'a target'}.`,
        },
        startsAt: '2026-11-27T02:58:00Z',
        endsAt: status === 'resolved' ? '2026-11-27T03:10:00Z' : '0001-01-01T00:00:00Z',
        generatorURL: 'http://prometheus:9090/graph',
        fingerprint,
      },
    ],
    groupLabels: {},
    commonLabels: {},
    commonAnnotations: {},
    externalURL: 'http://alertmanager:9093',
    version: '4',
    groupKey: `{}:{alertname="${name}"}/${++sequence}`,
    truncatedAlerts: 0,
  };
}

async function send(t: { tenant: { tenantId: string }; key: string }, body: object) {
  const res = await postWebhook(svc, t.tenant.tenantId, 'alertmanager', body, { key: t.key });
  expect(res.status).toBe(202);
  return res.body as { incidentIds: Array<string | null>; alertIds: Array<string | null> };
}
const alertRow = async (alertId: string) =>
  (await svc.database.db.select().from(alerts).where(eq(alerts.id, alertId)))[0]!;

describe('correlation rules on the webhook path', () => {
  it("groups by the rule's labels: one incident per cluster, whatever the services", async () => {
    const t = await tenantWithRules([{ match: { alertName: 'Kube*' }, groupBy: ['cluster'] }]);
    const a = await send(
      t,
      prometheusAlert('KubePodCrashLooping', { cluster: 'eu-1', service: 'cart', pod: 'cart-1' }),
    );
    const b = await send(t, prometheusAlert('KubeNodeNotReady', { cluster: 'eu-1', service: 'node', instance: 'n-4' }));
    const c = await send(
      t,
      prometheusAlert('KubePodCrashLooping', { cluster: 'us-2', service: 'cart', pod: 'cart-9' }),
    );
    expect(b.incidentIds).toEqual(a.incidentIds);
    expect(c.incidentIds[0]).not.toBe(a.incidentIds[0]);
    expect((await alertRow(b.alertIds[0]!)).correlation).toEqual({
      reason: 'rule',
      ruleId: t.ruleIds[0],
      relatedAlertId: a.alertIds[0],
    });
    const [rule] = await svc.database.db.select().from(correlationRules).where(eq(correlationRules.id, t.ruleIds[0]!));
    expect(rule!.matchCount).toBe(3);
    expect(rule!.lastMatchedAt).not.toBeNull();
  });

  it('suppresses in a maintenance window: kept and counted, never an incident; after the window it opens one', async () => {
    const now = Date.now();
    const t = await tenantWithRules([
      {
        match: { labels: { cluster: 'eu-*' } },
        action: 'suppress',
        activeFrom: new Date(now - 60_000),
        activeUntil: new Date(now + 60 * 60_000),
      },
    ]);
    const first = await send(t, prometheusAlert('NodeDiskPressure', { cluster: 'eu-3', instance: 'n-1' }));
    const again = await send(t, prometheusAlert('NodeDiskPressure', { cluster: 'eu-3', instance: 'n-1' }));
    expect(first.incidentIds).toEqual([null]);
    expect(again).toMatchObject({ incidentIds: [null], alertIds: first.alertIds });
    expect(await alertRow(first.alertIds[0]!)).toMatchObject({
      state: 'suppressed',
      ruleId: t.ruleIds[0],
      occurrenceCount: 2,
    });
    const listed = await svc.database.db.select().from(incidents).where(eq(incidents.tenantId, t.tenant.tenantId));
    expect(listed).toHaveLength(0);
    // The window ends: the same alert fires again and opens an incident.
    await svc.database.db
      .update(correlationRules)
      .set({ activeUntil: new Date(Date.now() - 1000) })
      .where(eq(correlationRules.id, t.ruleIds[0]!));
    const after = await send(t, prometheusAlert('NodeDiskPressure', { cluster: 'eu-3', instance: 'n-1' }));
    expect(after.incidentIds[0]).toMatch(/^inc_/);
  });

  it('opens an alert of an open_separately rule on its own, though it is related to an open incident', async () => {
    const t = await tenantWithRules([{ match: { alertName: 'SecurityScan*' }, action: 'open_separately' }]);
    const other = await send(t, prometheusAlert('HighErrorRate', { service: 'auth' }));
    const own = await send(t, prometheusAlert('SecurityScanFailed', { service: 'auth' }));
    expect(own.incidentIds[0]).not.toBe(other.incidentIds[0]);
    // Nothing related joins it either: a second alert of the service joins the first incident.
    const next = await send(t, prometheusAlert('HighLatency', { service: 'auth' }));
    expect(next.incidentIds).toEqual(other.incidentIds);
  });

  it('holds alerts until minAlerts have fired, then opens one incident with all of them', async () => {
    const t = await tenantWithRules([{ match: { alertName: 'TargetDown' }, groupBy: ['job'], minAlerts: 3 }]);
    const one = await send(t, prometheusAlert('TargetDown', { job: 'node', instance: 'n-1' }));
    const two = await send(t, prometheusAlert('TargetDown', { job: 'node', instance: 'n-2' }));
    expect(one.incidentIds).toEqual([null]);
    expect(two.incidentIds).toEqual([null]);
    const pending = await svc.api('GET', '/v1/alerts?state=pending', { token: t.tenant.admin });
    // Held alerts are visible while they wait.
    expect(pending.status).toBe(200);
    expect(pending.body.items.map((a: { alertId: string }) => a.alertId).sort()).toEqual(
      [one.alertIds[0], two.alertIds[0]].sort(),
    );
    const three = await send(t, prometheusAlert('TargetDown', { job: 'node', instance: 'n-3' }));
    const incidentId = three.incidentIds[0]!;
    expect(incidentId).toMatch(/^inc_/);
    for (const alertId of [one.alertIds[0]!, two.alertIds[0]!, three.alertIds[0]!]) {
      expect(await alertRow(alertId)).toMatchObject({ state: 'grouped', incidentId });
    }
    // The held alerts' deliveries moved into the incident with them.
    const events = await svc.database.db.select().from(ingestedEvents).where(eq(ingestedEvents.incidentId, incidentId));
    expect(events).toHaveLength(3);
    const [row] = await svc.database.db.select().from(incidents).where(eq(incidents.id, incidentId));
    expect(row!.occurrenceCount).toBe(3);
    await eventually(async () => {
      const [started] = await svc.database.db.select().from(incidents).where(eq(incidents.id, incidentId));
      return started?.workflowStartedAt !== null;
    }, 30_000);
  });

  it('drops a held alert that recovers first: it opens nothing', async () => {
    const t = await tenantWithRules([{ match: { alertName: 'CPUThrottlingHigh' }, forMinutes: 10 }]);
    const held = await send(t, prometheusAlert('CPUThrottlingHigh', { pod: 'api-1' }));
    expect(held.incidentIds).toEqual([null]);
    const recovered = await send(t, prometheusAlert('CPUThrottlingHigh', { pod: 'api-1' }, 'resolved'));
    expect(recovered.incidentIds).toEqual([null]);
    expect(await alertRow(held.alertIds[0]!)).toMatchObject({ state: 'dropped', status: 'resolved' });
    // Other tests' tenants share the database: each assertion reads this tenant's own rows.
    await releaseHeldAlerts(svc.database.sql, new Date(Date.now() + 11 * 60_000));
    expect(await alertRow(held.alertIds[0]!)).toMatchObject({ state: 'dropped', incidentId: null });
  });

  it('opens the incident of an alert that fired for forMinutes with no delivery since', async () => {
    const t = await tenantWithRules([{ match: { alertName: 'KubeJobFailed' }, forMinutes: 5 }]);
    const held = await send(t, prometheusAlert('KubeJobFailed', { job_name: 'nightly-backup' }));
    expect(held.incidentIds).toEqual([null]);
    await releaseHeldAlerts(svc.database.sql, new Date(Date.now() + 4 * 60_000));
    expect(await alertRow(held.alertIds[0]!)).toMatchObject({ state: 'pending' });
    expect(await releaseHeldAlerts(svc.database.sql, new Date(Date.now() + 6 * 60_000))).toBeGreaterThanOrEqual(1);
    const record = await alertRow(held.alertIds[0]!);
    expect(record).toMatchObject({ state: 'grouped', correlation: { reason: 'rule', ruleId: t.ruleIds[0] } });
    const [incident] = await svc.database.db.select().from(incidents).where(eq(incidents.id, record.incidentId!));
    expect(incident).toMatchObject({ source: 'automated', title: expect.stringContaining('KubeJobFailed') });
    const [event] = await svc.database.db
      .select()
      .from(ingestedEvents)
      .where(eq(ingestedEvents.alertId, record.id))
      .orderBy(asc(ingestedEvents.receivedAt));
    expect(event!.incidentId).toBe(incident!.id);
    // Its workflow is started, and its creation is on the stream like any other.
    await eventually(async () => {
      const [row] = await svc.database.db.select().from(incidents).where(eq(incidents.id, incident!.id));
      return row?.workflowStartedAt !== null;
    }, 30_000);
  });

  it('opens what a rule held once the rule is disabled: nothing stays pending for good', async () => {
    const t = await tenantWithRules([{ match: { alertName: 'ReplicationLag' }, minAlerts: 5 }]);
    const held = await send(t, prometheusAlert('ReplicationLag', { instance: 'pg-2' }));
    expect(held.incidentIds).toEqual([null]);
    await releaseHeldAlerts(svc.database.sql);
    expect(await alertRow(held.alertIds[0]!)).toMatchObject({ state: 'pending' });
    await svc.database.db
      .update(correlationRules)
      .set({ enabled: false })
      .where(eq(correlationRules.id, t.ruleIds[0]!));
    expect(await releaseHeldAlerts(svc.database.sql)).toBeGreaterThanOrEqual(1);
    expect(await alertRow(held.alertIds[0]!)).toMatchObject({
      state: 'grouped',
      incidentId: expect.stringMatching(/^inc_/),
    });
  });

  it("records a tool's test notification and a heartbeat, never as incidents", async () => {
    const t = await tenantWithRules([]);
    const watchdog = await send(t, prometheusAlert('Watchdog', { severity: 'none', prometheus: 'monitoring/k8s' }));
    const again = await send(t, prometheusAlert('Watchdog', { severity: 'none', prometheus: 'monitoring/k8s' }));
    expect(watchdog.incidentIds).toEqual([null]);
    expect(again.alertIds).toEqual(watchdog.alertIds);
    expect(await alertRow(watchdog.alertIds[0]!)).toMatchObject({ state: 'test', occurrenceCount: 2 });
    const generic = await postWebhook(
      svc,
      t.tenant.tenantId,
      'generic',
      {
        name: 'ContactPointTest',
        severity: 'critical',
        service: 'checkout',
        summary: 'test notification from the runbook',
        labels: { test: 'true' },
      },
      { key: t.key },
    );
    expect(generic.status).toBe(202);
    expect(generic.body.incidentIds).toEqual([null]);
    expect(
      (await svc.database.db.select().from(incidents).where(eq(incidents.tenantId, t.tenant.tenantId))).length,
    ).toBe(0);
  });
});
