import { eq, inArray } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { incidents } from '../../src/db/schema/incidents.js';
import { ingestedEvents } from '../../src/db/schema/ingestion.js';
import { startTestService, type TestService } from '../helpers/service.js';
import { createKey, eventually, fixture, postWebhook, type WebhookKey } from '../helpers/webhooks.js';

let svc: TestService;
let tenant: { tenantId: string; admin: string; member: string };
let key: WebhookKey;

beforeAll(async () => {
  svc = await startTestService();
  tenant = await svc.newTenant();
  key = await createKey(svc, tenant.admin);
});
afterAll(() => svc?.stop());

async function incidentsOf(ids: string[]) {
  return ids.length ? svc.database.db.select().from(incidents).where(inArray(incidents.id, ids)) : [];
}

describe('real payloads of every provider, end to end', () => {
  it('alertmanager: two firing alerts open two incidents; the resolved notification attaches to both', async () => {
    const firing = await postWebhook(svc, tenant.tenantId, 'alertmanager', fixture('alertmanager-firing.json'), {
      key: key.key,
      sign: key.signingSecret,
    });
    expect(firing.status).toBe(202);
    expect(firing.body.eventIds).toHaveLength(2);
    expect(firing.body.incidentIds).toHaveLength(2);
    const opened = await incidentsOf(firing.body.incidentIds);
    expect(opened).toHaveLength(2);
    expect(
      opened.every(
        (i) => i.source === 'automated' && i.status === 'open' && i.fingerprint?.startsWith('alertmanager:'),
      ),
    ).toBe(true);
    const resolved = await postWebhook(svc, tenant.tenantId, 'alertmanager', fixture('alertmanager-resolved.json'), {
      key: key.key,
    });
    expect(resolved.status).toBe(202);
    expect(resolved.body.deduplicated).toBe(true);
    expect([...resolved.body.incidentIds].sort()).toEqual([...firing.body.incidentIds].sort());
    const after = await incidentsOf(firing.body.incidentIds);
    expect(after).toHaveLength(2);
    expect(after.every((i) => i.recoveredAt !== null && i.occurrenceCount === 1)).toBe(true);
  });

  it('grafana: a unified-alerting notification opens an incident with the mapped severity', async () => {
    const res = await postWebhook(svc, tenant.tenantId, 'grafana', fixture('grafana-firing.json'), { key: key.key });
    expect(res.status).toBe(202);
    const [incident] = await incidentsOf(res.body.incidentIds);
    expect(incident).toMatchObject({ source: 'automated', status: 'open' });
    expect(incident!.fingerprint).toMatch(/^grafana:/);
  });

  it('datadog: triggered opens, recovered attaches and records the recovery', async () => {
    const triggered = await postWebhook(svc, tenant.tenantId, 'datadog', fixture('datadog-triggered.json'), {
      key: key.key,
    });
    expect(triggered.status).toBe(202);
    expect(triggered.body.incidentIds).toHaveLength(1);
    const recovered = await postWebhook(svc, tenant.tenantId, 'datadog', fixture('datadog-recovered.json'), {
      key: key.key,
    });
    expect(recovered.body).toMatchObject({ incidentIds: triggered.body.incidentIds, deduplicated: true });
    const [incident] = await incidentsOf(triggered.body.incidentIds);
    expect(incident!.recoveredAt).not.toBeNull();
  });

  it('sentry: the integration-platform issue alert and the legacy webhook both open incidents', async () => {
    const platform = await postWebhook(svc, tenant.tenantId, 'sentry', fixture('sentry-event-alert.json'), {
      key: key.key,
      headers: { 'sentry-hook-resource': 'event_alert', 'request-id': 'sentry-req-1' },
    });
    expect(platform.status).toBe(202);
    expect(platform.body.incidentIds).toHaveLength(1);
    const legacy = await postWebhook(svc, tenant.tenantId, 'sentry', fixture('sentry-legacy.json'), { key: key.key });
    expect(legacy.status).toBe(202);
    expect(legacy.body.incidentIds).toHaveLength(1);
    const [a, b] = await incidentsOf([...platform.body.incidentIds, ...legacy.body.incidentIds]);
    expect(a!.fingerprint).toMatch(/^sentry:/);
    expect(b!.fingerprint).toMatch(/^sentry:/);
  });

  it("sentry: an issue resolved in Sentry resolves its issue alert's incident (autoResolve); other issue actions are ignored", async () => {
    const auto = await svc.newTenant();
    const autoKey = await createKey(svc, auto.admin);
    expect(
      (
        await svc.api('PATCH', `/v1/tenants/${auto.tenantId}`, {
          token: auto.admin,
          body: { settings: { autoResolve: true } },
        })
      ).status,
    ).toBe(200);
    const opened = await postWebhook(svc, auto.tenantId, 'sentry', fixture('sentry-event-alert.json'), {
      key: autoKey.key,
      headers: { 'sentry-hook-resource': 'event_alert' },
    });
    expect(opened.status).toBe(202);
    const [incidentId] = opened.body.incidentIds;
    const resolvedBody = JSON.parse(fixture('sentry-issue-resolved.json'));
    const assigned = await postWebhook(
      svc,
      auto.tenantId,
      'sentry',
      JSON.stringify({ ...resolvedBody, action: 'assigned' }),
      {
        key: autoKey.key,
        headers: { 'sentry-hook-resource': 'issue' },
      },
    );
    expect(assigned.status).toBe(202);
    expect(assigned.body).toMatchObject({
      eventIds: [],
      incidentIds: [],
      ignored: 'sentry issue action assigned is not used',
    });
    const resolved = await postWebhook(svc, auto.tenantId, 'sentry', fixture('sentry-issue-resolved.json'), {
      key: autoKey.key,
      headers: { 'sentry-hook-resource': 'issue' },
    });
    expect(resolved.status).toBe(202);
    expect(resolved.body).toMatchObject({ incidentIds: [incidentId], deduplicated: true });
    const [stored] = await svc.database.db
      .select()
      .from(ingestedEvents)
      .where(inArray(ingestedEvents.id, resolved.body.eventIds));
    expect(stored).toMatchObject({ status: 'resolved', incidentId });
    const incident = await eventually(async () => {
      const [row] = await incidentsOf([incidentId]);
      return row?.status === 'resolved' ? row : undefined;
    });
    expect(incident.recoveredAt).not.toBeNull();
    expect(incident.occurrenceCount).toBe(1);
  });

  it('sentry: a metric alert opens an incident on critical, attaches on warning and records the recovery', async () => {
    const critical = JSON.parse(fixture('sentry-metric-alert-critical.json'));
    critical.data.metric_alert.alert_rule.id = `rule-${Date.now()}`;
    const send = (action: string) =>
      postWebhook(svc, tenant.tenantId, 'sentry', JSON.stringify({ ...critical, action }), {
        key: key.key,
        headers: { 'sentry-hook-resource': 'metric_alert' },
      });
    const fired = await send('critical');
    expect(fired.status).toBe(202);
    expect(fired.body).toMatchObject({ deduplicated: false });
    const [incidentId] = fired.body.incidentIds;
    const [opened] = await incidentsOf([incidentId]);
    expect(opened).toMatchObject({
      source: 'automated',
      severity: 'critical',
      service: 'checkout',
      fingerprint: `sentry:metric:${critical.data.metric_alert.alert_rule.id}`,
    });
    expect((await send('warning')).body).toMatchObject({ incidentIds: [incidentId], deduplicated: true });
    expect((await send('resolved')).body).toMatchObject({ incidentIds: [incidentId], deduplicated: true });
    const [after] = await incidentsOf([incidentId]);
    expect(after).toMatchObject({ occurrenceCount: 2 });
    expect(after!.recoveredAt).not.toBeNull();
  });

  it('github: deployment_status and push are recorded as deployment and code-change events, not incidents', async () => {
    const deployment = await postWebhook(svc, tenant.tenantId, 'github', fixture('github-deployment-status.json'), {
      key: key.key,
      headers: { 'x-github-event': 'deployment_status', 'x-github-delivery': '72d3162e-cc78-11e3-81ab-4c9367dc0958' },
    });
    const push = await postWebhook(svc, tenant.tenantId, 'github', fixture('github-push.json'), {
      key: key.key,
      headers: { 'x-github-event': 'push', 'x-github-delivery': '8b4f9a2e-cc78-11e3-81ab-4c9367dc0958' },
    });
    expect(deployment.status).toBe(202);
    expect(push.status).toBe(202);
    expect(deployment.body.incidentIds).toEqual([]);
    expect(push.body.incidentIds).toEqual([]);
    const stored = await svc.database.db
      .select()
      .from(ingestedEvents)
      .where(inArray(ingestedEvents.id, [...deployment.body.eventIds, ...push.body.eventIds]));
    expect(stored.map((e) => e.kind).sort()).toEqual(['code_change', 'deployment']);
    expect(stored.every((e) => e.incidentId === null && e.deliveredAt !== null)).toBe(true);
    const ping = await postWebhook(
      svc,
      tenant.tenantId,
      'github',
      { zen: 'Keep it logically awesome.', hook_id: 1 },
      {
        key: key.key,
        headers: { 'x-github-event': 'ping', 'x-github-delivery': 'ping-1' },
      },
    );
    expect(ping.status).toBe(202);
    expect(ping.body).toMatchObject({ eventIds: [], incidentIds: [], ignored: 'ping' });
    const retried = await postWebhook(svc, tenant.tenantId, 'github', fixture('github-push.json'), {
      key: key.key,
      headers: { 'x-github-event': 'push', 'x-github-delivery': '8b4f9a2e-cc78-11e3-81ab-4c9367dc0958' },
    });
    expect(retried.body).toEqual(push.body);
  });

  it('generic: a single alert and a batch', async () => {
    const single = await postWebhook(svc, tenant.tenantId, 'generic', fixture('generic-single.json'), { key: key.key });
    expect(single.status).toBe(202);
    expect(single.body.incidentIds).toHaveLength(1);
    const batch = await postWebhook(svc, tenant.tenantId, 'generic', fixture('generic-batch.json'), { key: key.key });
    expect(batch.status).toBe(202);
    expect(batch.body.eventIds).toHaveLength(3);
  });

  it('starts a workflow for every automated incident it opened', async () => {
    const rows = await svc.database.db.select().from(incidents).where(eq(incidents.tenantId, tenant.tenantId));
    expect(rows.length).toBeGreaterThanOrEqual(7);
    await eventually(async () => {
      const fresh = await svc.database.db.select().from(incidents).where(eq(incidents.tenantId, tenant.tenantId));
      return fresh.every((r) => r.workflowStartedAt !== null);
    });
    for (const row of rows) {
      const description = await svc.client.workflow.getHandle(row.id).describe();
      expect(description.typedSearchAttributes.getAll().find((p) => p.key.name === 'TenantId')?.value).toBe(
        tenant.tenantId,
      );
    }
  });
});
