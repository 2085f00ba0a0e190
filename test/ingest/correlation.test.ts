import { and, asc, eq } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { alerts } from '../../src/db/schema/correlation.js';
import { events } from '../../src/db/schema/events.js';
import { incidents } from '../../src/db/schema/incidents.js';
import { ingestedEvents } from '../../src/db/schema/ingestion.js';
import { startTestService, type TestService } from '../helpers/service.js';
import { createKey, eventually, postWebhook } from '../helpers/webhooks.js';

let svc: TestService;
beforeAll(async () => {
  svc = await startTestService();
}, 120_000);
afterAll(async () => {
  await svc?.stop();
});

type Tenant = Awaited<ReturnType<TestService['newTenant']>>;

/** A tenant with a webhook key and a topology: `edges` as [source, target] = source depends on target. */
async function tenantWithTopology(edges: Array<[string, string]>, settings: Record<string, unknown> = {}) {
  const tenant = await svc.newTenant({ plan: 'plan_business', grouping: true, settings });
  const key = await createKey(svc, tenant.admin);
  const ids = new Map<string, string>();
  for (const name of new Set(edges.flat())) {
    const type = /db|postgres|redis/.test(name) ? 'database' : 'api';
    const res = await svc.api('POST', '/v1/graph/nodes', { token: tenant.admin, body: { name, type } });
    expect(res.status).toBe(201);
    ids.set(name, res.body.serviceId as string);
  }
  for (const [source, target] of edges) {
    const res = await svc.api('POST', '/v1/graph/edges', {
      token: tenant.admin,
      body: { sourceServiceId: ids.get(source), targetServiceId: ids.get(target) },
    });
    expect(res.status).toBe(201);
  }
  return { tenant, key: key.key };
}

let sequence = 0;
/** One Alertmanager notification, as its webhook receiver sends it, with its own group key. */
function alertmanager(
  alertsOf: Array<{ name: string; service: string; severity?: string; status?: 'firing' | 'resolved'; fp?: string }>,
  groupKey = `{}:{alertname="${alertsOf[0]!.name}", service="${alertsOf[0]!.service}"}-${++sequence}`,
) {
  const items = alertsOf.map((a) => ({
    status: a.status ?? 'firing',
    labels: { alertname: a.name, service: a.service, severity: a.severity ?? 'warning', namespace: 'shop' },
    annotations: {
      summary: `${a.name} on ${a.service}`,
      description: `${a.name} has fired for ${a.service} for 5 minutes.`,
    },
    startsAt: '2026-11-27T03:00:00Z',
    endsAt: a.status === 'resolved' ? '2026-11-27T03:20:00Z' : '0001-01-01T00:00:00Z',
    generatorURL: 'http://prometheus:9090/graph',
    fingerprint: a.fp ?? `${a.service}-${a.name}-${sequence}`.toLowerCase(),
  }));
  return {
    receiver: 'incident-investigation',
    status: items.every((i) => i.status === 'resolved') ? 'resolved' : 'firing',
    alerts: items,
    groupLabels: { alertname: alertsOf[0]!.name },
    commonLabels: {},
    commonAnnotations: {},
    externalURL: 'http://alertmanager:9093',
    version: '4',
    groupKey,
    truncatedAlerts: 0,
  };
}

async function send(t: { tenant: Tenant; key: string }, body: object) {
  const res = await postWebhook(svc, t.tenant.tenantId, 'alertmanager', body, { key: t.key });
  expect(res.status).toBe(202);
  return res.body as { incidentIds: Array<string | null>; alertIds: Array<string | null>; deduplicated: boolean };
}

const alertsOfIncident = (incidentId: string) =>
  svc.database.db
    .select()
    .from(alerts)
    .where(eq(alerts.incidentId, incidentId))
    .orderBy(asc(alerts.firstSeenAt), asc(alerts.id));
const incidentRow = async (incidentId: string) =>
  (await svc.database.db.select().from(incidents).where(eq(incidents.id, incidentId)))[0]!;

describe('grouping alerts into incidents', () => {
  it('joins an alert of a dependency to the open incident of its dependent, and keeps an unrelated one apart', async () => {
    const t = await tenantWithTopology([
      ['checkout', 'orders-db'],
      ['cart', 'orders-db'],
      ['search', 'search-index'],
      ['gateway', 'checkout'],
    ]);
    const first = await send(t, alertmanager([{ name: 'HighErrorRate', service: 'checkout', severity: 'warning' }]));
    const incidentId = first.incidentIds[0]!;
    expect(incidentId).toMatch(/^inc_/);
    expect(first.alertIds[0]).toMatch(/^alt_/);

    // One delivery of two alerts: the database (1 hop) and the gateway (1 hop, the reverse);
    // incidentIds stay aligned with the alerts. An unrelated search alert stays apart.
    const storm = await send(
      t,
      alertmanager([
        { name: 'PostgresTooManyConnections', service: 'orders-db', severity: 'critical' },
        { name: 'GatewayUpstreamErrors', service: 'gateway' },
      ]),
    );
    expect(storm.incidentIds).toEqual([incidentId, incidentId]);
    const unrelated = await send(t, alertmanager([{ name: 'SearchLatencyHigh', service: 'search' }]));
    expect(unrelated.incidentIds[0]).toMatch(/^inc_/);
    expect(unrelated.incidentIds[0]).not.toBe(incidentId);

    const grouped = await alertsOfIncident(incidentId);
    expect(grouped.map((a) => a.service)).toEqual(['checkout', 'orders-db', 'gateway']);
    expect(grouped[0]!.correlation).toEqual({ reason: 'fingerprint' });
    expect(grouped[1]!.correlation).toEqual({ reason: 'topology', relatedAlertId: grouped[0]!.id, hops: 1 });
    // The gateway came in the database alert's notification, but the topology says more than the
    // tool's grouping: it depends on checkout.
    expect(grouped[2]!.correlation).toEqual({ reason: 'topology', relatedAlertId: grouped[0]!.id, hops: 1 });

    // A sibling through the shared database (cart → orders-db ← checkout) joins at 2 hops.
    const sibling = await send(t, alertmanager([{ name: 'CartCheckoutFailures', service: 'cart' }]));
    expect(sibling.incidentIds).toEqual([incidentId]);

    // The incident's severity is its highest alert's; its title stays the first alert's.
    const row = await incidentRow(incidentId);
    expect(row.severity).toBe('critical');
    expect(row.title).toContain('HighErrorRate');
    const raised = await svc.database.db
      .select({ payload: events.payload })
      .from(events)
      .where(and(eq(events.incidentId, incidentId), eq(events.type, 'incident.severity_changed')));
    expect(raised.map((e) => e.payload)).toEqual([{ incidentId, from: 'medium', to: 'critical', reason: 'alert' }]);
    expect(row.occurrenceCount).toBe(4);

    // The workflow hears of the grouped alerts (events delivered by signal).
    await eventually(async () => {
      const pending = await svc.database.db
        .select({ id: ingestedEvents.id, deliveredAt: ingestedEvents.deliveredAt })
        .from(ingestedEvents)
        .where(eq(ingestedEvents.incidentId, incidentId));
      return pending.length === 4 && pending.every((e) => e.deliveredAt !== null);
    }, 30_000);
  });

  it('joins the closest of two related incidents, never both', async () => {
    const t = await tenantWithTopology([
      ['web', 'api'],
      ['api', 'db'],
      ['reports', 'warehouse'],
      ['warehouse', 'db'],
    ]);
    const near = (await send(t, alertmanager([{ name: 'ApiErrors', service: 'api' }]))).incidentIds[0]!;
    const far = (await send(t, alertmanager([{ name: 'ReportsSlow', service: 'reports' }]))).incidentIds[0]!;
    expect(far).not.toBe(near);
    // db: 1 hop from api, 2 from reports (reports → warehouse → db).
    const db = await send(t, alertmanager([{ name: 'DbDown', service: 'db', severity: 'critical' }]));
    expect(db.incidentIds).toEqual([near]);
    const [joined] = (await alertsOfIncident(near)).filter((a) => a.service === 'db');
    expect(joined!.correlation).toMatchObject({ reason: 'topology', hops: 1 });
    expect((await alertsOfIncident(far)).map((a) => a.service)).toEqual(['reports']);
  });

  it("groups alerts of one origin (the tool's own group) even without a topology", async () => {
    const t = await tenantWithTopology([]);
    const groupKey = '{}/{severity="critical"}:{alertname="NodeDown"}';
    const a = await send(t, alertmanager([{ name: 'NodeDown', service: 'node-a' }], groupKey));
    const b = await send(t, alertmanager([{ name: 'NodeDown', service: 'node-b' }], groupKey));
    expect(b.incidentIds).toEqual(a.incidentIds);
    const grouped = await alertsOfIncident(a.incidentIds[0]!);
    expect(grouped[1]!.correlation).toEqual({ reason: 'origin', relatedAlertId: grouped[0]!.id });
    // Another group of the same tool, unrelated services: its own incident.
    const c = await send(t, alertmanager([{ name: 'DiskFull', service: 'node-c' }]));
    expect(c.incidentIds[0]).not.toBe(a.incidentIds[0]);
  });

  it('opens a new incident for a related alert after the correlation window', async () => {
    const t = await tenantWithTopology([['checkout', 'payments']], { correlationWindowMinutes: 5 });
    const first = (await send(t, alertmanager([{ name: 'CheckoutErrors', service: 'checkout' }]))).incidentIds[0]!;
    // The incident's latest alert 4 minutes ago: within the window.
    await svc.database.db
      .update(incidents)
      .set({ lastSeenAt: new Date(Date.now() - 4 * 60_000) })
      .where(eq(incidents.id, first));
    const within = await send(t, alertmanager([{ name: 'PaymentsTimeouts', service: 'payments' }]));
    expect(within.incidentIds).toEqual([first]);
    // Its latest alert (the join above moved it) 6 minutes ago: past the window.
    await svc.database.db
      .update(incidents)
      .set({ lastSeenAt: new Date(Date.now() - 6 * 60_000) })
      .where(eq(incidents.id, first));
    const after = await send(t, alertmanager([{ name: 'PaymentsErrors', service: 'payments' }]));
    expect(after.incidentIds[0]).not.toBe(first);
  });

  it('counts a repeat on its alert, and resolves (autoResolve) only when every grouped alert has recovered', async () => {
    const t = await tenantWithTopology([['checkout', 'orders-db']], { autoResolve: true });
    const opened = await send(t, alertmanager([{ name: 'CheckoutErrors', service: 'checkout', fp: 'fp-checkout' }]));
    const incidentId = opened.incidentIds[0]!;
    await send(t, alertmanager([{ name: 'DbDown', service: 'orders-db', fp: 'fp-db' }]));
    const repeat = await send(t, alertmanager([{ name: 'CheckoutErrors', service: 'checkout', fp: 'fp-checkout' }]));
    expect(repeat).toMatchObject({ incidentIds: [incidentId], alertIds: [opened.alertIds[0]], deduplicated: true });
    const [checkoutAlert] = (await alertsOfIncident(incidentId)).filter((a) => a.fingerprint.endsWith('fp-checkout'));
    expect(checkoutAlert!.occurrenceCount).toBe(2);

    await send(
      t,
      alertmanager([{ name: 'CheckoutErrors', service: 'checkout', fp: 'fp-checkout', status: 'resolved' }]),
    );
    // The database alert still fires: not recovered, not resolved.
    await new Promise((r) => setTimeout(r, 1500));
    expect((await incidentRow(incidentId)).recoveredAt).toBeNull();
    expect((await incidentRow(incidentId)).status).not.toBe('resolved');

    await send(t, alertmanager([{ name: 'DbDown', service: 'orders-db', fp: 'fp-db', status: 'resolved' }]));
    expect((await incidentRow(incidentId)).recoveredAt).not.toBeNull();
    await eventually(async () => (await incidentRow(incidentId)).status === 'resolved', 30_000);
  });

  it('marks an alert that fires and recovers over four times in 30 minutes as flapping, and stops signalling it', async () => {
    const t = await tenantWithTopology([]);
    const opened = await send(t, alertmanager([{ name: 'Flappy', service: 'queue', fp: 'fp-flap' }]));
    const incidentId = opened.incidentIds[0]!;
    for (let i = 0; i < 5; i++) {
      await send(t, alertmanager([{ name: 'Flappy', service: 'queue', fp: 'fp-flap', status: 'resolved' }]));
      await send(t, alertmanager([{ name: 'Flappy', service: 'queue', fp: 'fp-flap' }]));
    }
    const [record] = await alertsOfIncident(incidentId);
    expect(record!.flapping).toBe(true);
    // The state changes after it began flapping are stored as delivered: no signal re-triggers the incident.
    const events = await svc.database.db
      .select({
        status: ingestedEvents.status,
        deliveredAt: ingestedEvents.deliveredAt,
        receivedAt: ingestedEvents.receivedAt,
      })
      .from(ingestedEvents)
      .where(and(eq(ingestedEvents.incidentId, incidentId), eq(ingestedEvents.alertId, record!.id)))
      .orderBy(asc(ingestedEvents.receivedAt), asc(ingestedEvents.id));
    expect(events).toHaveLength(11);
    const last = await send(t, alertmanager([{ name: 'Flappy', service: 'queue', fp: 'fp-flap', status: 'resolved' }]));
    expect(last.incidentIds).toEqual([incidentId]);
    const [lastEvent] = await svc.database.db
      .select({ deliveredAt: ingestedEvents.deliveredAt })
      .from(ingestedEvents)
      .where(
        eq(
          ingestedEvents.id,
          (
            await svc.database.db
              .select()
              .from(ingestedEvents)
              .where(eq(ingestedEvents.alertId, record!.id))
              .orderBy(asc(ingestedEvents.receivedAt))
          ).at(-1)!.id,
        ),
      );
    expect(lastEvent!.deliveredAt).not.toBeNull();
  });

  it("keeps each tenant's grouping to itself", async () => {
    const a = await tenantWithTopology([['checkout', 'orders-db']]);
    const b = await tenantWithTopology([['checkout', 'orders-db']]);
    const inA = (await send(a, alertmanager([{ name: 'CheckoutErrors', service: 'checkout' }]))).incidentIds[0]!;
    const inB = (await send(b, alertmanager([{ name: 'DbDown', service: 'orders-db' }]))).incidentIds[0]!;
    expect(inB).not.toBe(inA);
    expect((await alertsOfIncident(inA)).map((x) => x.tenantId)).toEqual([a.tenant.tenantId]);
  });
});
