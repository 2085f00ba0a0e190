import { createHash, createHmac } from 'node:crypto';
import { request } from 'node:http';
import { Client, Connection } from '@temporalio/client';
import { and, eq, inArray } from 'drizzle-orm';
import pino from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { events } from '../../src/db/schema/events.js';
import { incidents } from '../../src/db/schema/incidents.js';
import { ingestedEvents, webhookDeliveries } from '../../src/db/schema/ingestion.js';
import { usageCounters } from '../../src/db/schema/limits.js';
import { usagePeriod } from '../../src/domain/plans.js';
import { createTemporalWorkflowPort, type WorkflowPort } from '../../src/temporal/port.js';
import { temporalConnectionOptions } from '../../src/temporal/connection.js';
import { purgeWebhookDeliveries } from '../../src/db/repositories/webhook-deliveries.js';
import { createLogger } from '../../src/logger.js';
import { toWorkflowInput } from '../../src/db/repositories/incidents.js';
import { BODY_REPLAY_WINDOW_MS, DELIVERY_ID_RETENTION_MS } from '../../src/ingest/ingest.js';
import { deliverPendingAlerts, reconcileIncidents } from '../../src/outbox/workflow-dispatcher.js';
import { startDispatcher } from '../../src/temporal/reconciler.js';
import { getStateQuery } from '../../src/workflows/messages.js';
import { freePort } from '../helpers/ports.js';
import { startTestService, type TestService } from '../helpers/service.js';
import { createKey, eventually, fixture, postWebhook, type WebhookKey } from '../helpers/webhooks.js';
import { signBody } from '../../src/auth/api-keys.js';
import { tenants } from '../../src/db/schema/tenants.js';

let svc: TestService;
let tenant: { tenantId: string; admin: string; member: string };
let key: WebhookKey;

beforeAll(async () => {
  svc = await startTestService();
  tenant = await svc.newTenant({ plan: 'plan_business' });
  key = await createKey(svc, tenant.admin);
});
afterAll(() => svc?.stop());

let counter = 0;
function uniqueAlert(extra: Record<string, unknown> = {}) {
  counter++;
  return {
    name: `HighErrorRate${counter}`,
    severity: 'critical',
    service: 'checkout',
    summary: `5xx above 5% (${counter})`,
    ...extra,
  };
}

/** Runs `use` against a service of its own, with no dispatcher: the test drives the passes. */
async function withOwnService(use: (isolated: TestService) => Promise<void>): Promise<void> {
  const isolated = await startTestService({ withoutDispatcher: true });
  try {
    await use(isolated);
  } finally {
    await isolated.stop();
  }
}

/** What a dispatcher pass needs: the service's database and a workflow port (its own by default). */
const passDeps = (s: TestService, workflows: WorkflowPort = s.workflows) => ({
  db: s.database.db,
  sql: s.database.sql,
  workflows,
  logger: pino({ level: 'silent' }),
});

async function incidentRow(id: string) {
  const [row] = await svc.database.db.select().from(incidents).where(eq(incidents.id, id));
  return row!;
}

async function workflowRunning(id: string) {
  return eventually(
    async () =>
      (
        await svc.client.workflow
          .getHandle(id)
          .describe()
          .catch(() => undefined)
      )?.status.name === 'RUNNING',
  );
}

describe('POST /v1/webhooks/{tenantId}/{provider}', () => {
  it('opens an automated incident from an alert, answers 202 after commit, and starts its workflow', async () => {
    const alert = uniqueAlert({ description: 'error budget burning fast', labels: { region: 'eu-west-1' } });
    const res = await postWebhook(svc, tenant.tenantId, 'generic', alert, { key: key.key });
    expect(res.status).toBe(202);
    expect(res.body).toEqual({
      eventIds: [expect.stringMatching(/^evt_/)],
      incidentIds: [expect.stringMatching(/^inc_/)],
      alertIds: [expect.stringMatching(/^alt_/)],
      deduplicated: false,
    });
    const incident = await incidentRow(res.body.incidentIds[0]);
    expect(incident).toMatchObject({
      tenantId: tenant.tenantId,
      source: 'automated',
      status: 'open',
      severity: 'critical',
      service: 'checkout',
      occurrenceCount: 1,
      title: `[${alert.name}] ${alert.summary}`,
    });
    expect(incident.description).toContain('error budget burning fast');
    const [stored] = await svc.database.db
      .select()
      .from(ingestedEvents)
      .where(eq(ingestedEvents.id, res.body.eventIds[0]));
    expect(stored).toMatchObject({
      kind: 'alert',
      status: 'firing',
      provider: 'generic',
      incidentId: incident.id,
      alertName: alert.name,
    });
    await workflowRunning(incident.id);
    const description = await svc.client.workflow.getHandle(incident.id).describe();
    expect(description.typedSearchAttributes.getAll().find((p) => p.key.name === 'Source')?.value).toBe('automated');
    await eventually(async () => (await incidentRow(incident.id)).workflowStartedAt !== null);
    const created = await svc.database.db
      .select()
      .from(events)
      .where(and(eq(events.incidentId, incident.id), eq(events.type, 'incident.created')))
      .orderBy(events.seq);
    expect(created[0]!.payload).toMatchObject({ source: 'automated', provider: 'generic' });
  });

  it('deduplicates: 100 repeats of one alert make one incident with occurrence count 100', async () => {
    const alert = uniqueAlert();
    const first = await postWebhook(svc, tenant.tenantId, 'generic', alert, { key: key.key });
    const incidentId = first.body.incidentIds[0];
    // 99 repeats, 10 at a time, each a distinct delivery (the tool re-sends with a new timestamp).
    const repeats = Array.from({ length: 99 }, (_, i) => ({
      ...alert,
      startsAt: new Date(Date.now() + i * 1000).toISOString(),
    }));
    const responses = [];
    for (let i = 0; i < repeats.length; i += 10) {
      responses.push(
        ...(await Promise.all(
          repeats.slice(i, i + 10).map((r) => postWebhook(svc, tenant.tenantId, 'generic', r, { key: key.key })),
        )),
      );
    }
    expect(
      responses.every((r) => r.status === 202 && r.body.deduplicated === true && r.body.incidentIds[0] === incidentId),
    ).toBe(true);
    const open = await svc.database.db
      .select()
      .from(incidents)
      .where(and(eq(incidents.tenantId, tenant.tenantId), eq(incidents.title, `[${alert.name}] ${alert.summary}`)));
    expect(open).toHaveLength(1);
    expect(open[0]!.occurrenceCount).toBe(100);
    // Each repeat rewrites the incident row: its pages keep room for the new version beside the
    // old (a HOT update, no index entries), from migration 0011.
    const [table] = await svc.database.sql<
      { reloptions: string[] }[]
    >`select reloptions from pg_class where relname = 'incidents'`;
    expect(table!.reloptions).toContain('fillfactor=40');
    // A firing repeat of a firing alert changes nothing the workflow decides on: it is stored as
    // delivered and never signalled, so an alert storm costs Temporal nothing.
    const stored = await svc.database.db.select().from(ingestedEvents).where(eq(ingestedEvents.incidentId, incidentId));
    expect(stored).toHaveLength(100);
    expect(stored.every((e) => e.deliveredAt !== null)).toBe(true);
    await workflowRunning(incidentId);
    // Automated incidents are triaged (then investigated, then a remediation proposed) on their own.
    const state = await eventually(async () => {
      const s = await svc.client.workflow.getHandle(incidentId).query(getStateQuery);
      return s.triageRuns === 1 ? s : undefined;
    });
    expect(state.alertsReceived ?? 0).toBe(0);
    expect(state.status).toMatch(/^(triaging|investigating|awaiting_approval)$/);
  });

  it('keeps one incident per alert and every occurrence in a storm spread over many batches (200 deliveries at once)', async () => {
    // Each batch must find the incidents the batches before it opened.
    const alerts = Array.from({ length: 20 }, () => uniqueAlert());
    const deliveries = alerts.flatMap((alert) =>
      Array.from({ length: 10 }, (_, i) => ({ ...alert, startsAt: new Date(Date.now() + i * 1000).toISOString() })),
    );
    deliveries.sort(() => Math.random() - 0.5);
    const responses = await Promise.all(
      deliveries.map((d) => postWebhook(svc, tenant.tenantId, 'generic', d, { key: key.key })),
    );
    expect(responses.every((r) => r.status === 202)).toBe(true);
    const opened = await svc.database.db
      .select()
      .from(incidents)
      .where(
        and(
          eq(incidents.tenantId, tenant.tenantId),
          inArray(
            incidents.title,
            alerts.map((a) => `[${a.name}] ${a.summary}`),
          ),
        ),
      );
    expect(opened).toHaveLength(20);
    expect(opened.map((i) => i.occurrenceCount)).toEqual(Array(20).fill(10));
    expect(responses.filter((r) => r.body.deduplicated === false)).toHaveLength(20);
    const stored = await svc.database.db
      .select()
      .from(ingestedEvents)
      .where(
        inArray(
          ingestedEvents.incidentId,
          opened.map((i) => i.id),
        ),
      );
    expect(stored).toHaveLength(200);
  });

  it('opens a new incident for the same alert once the previous one is resolved', async () => {
    const alert = uniqueAlert();
    const first = await postWebhook(svc, tenant.tenantId, 'generic', alert, { key: key.key });
    const id = first.body.incidentIds[0];
    await workflowRunning(id);
    expect(
      (await svc.api('PATCH', `/v1/incidents/${id}`, { token: tenant.member, body: { status: 'resolved' } })).status,
    ).toBe(200);
    const again = await postWebhook(
      svc,
      tenant.tenantId,
      'generic',
      { ...alert, startsAt: new Date().toISOString() },
      { key: key.key },
    );
    expect(again.body.deduplicated).toBe(false);
    expect(again.body.incidentIds[0]).not.toBe(id);
  });

  it('records recovery when the alert resolves, and leaves the incident open without autoResolve', async () => {
    const alert = uniqueAlert();
    const first = await postWebhook(svc, tenant.tenantId, 'generic', alert, { key: key.key });
    const id = first.body.incidentIds[0];
    const resolved = await postWebhook(
      svc,
      tenant.tenantId,
      'generic',
      { ...alert, status: 'resolved' },
      { key: key.key },
    );
    expect(resolved.status).toBe(202);
    expect(resolved.body).toMatchObject({ incidentIds: [id], deduplicated: true });
    expect((await incidentRow(id)).recoveredAt).not.toBeNull();
    await eventually(
      async () => (await svc.client.workflow.getHandle(id).query(getStateQuery)).lastAlertStatus === 'resolved',
    );
    expect((await incidentRow(id)).status).toMatch(/^(triaging|investigating)$/); // worked on, not resolved
    // Firing again clears the recovery and reaches the workflow; a repeat after it does not.
    await postWebhook(
      svc,
      tenant.tenantId,
      'generic',
      { ...alert, startsAt: new Date().toISOString() },
      { key: key.key },
    );
    expect((await incidentRow(id)).recoveredAt).toBeNull();
    await eventually(
      async () => (await svc.client.workflow.getHandle(id).query(getStateQuery)).lastAlertStatus === 'firing',
    );
    const repeat = await postWebhook(
      svc,
      tenant.tenantId,
      'generic',
      { ...alert, startsAt: new Date(Date.now() + 1000).toISOString() },
      { key: key.key },
    );
    const [stored] = await svc.database.db
      .select()
      .from(ingestedEvents)
      .where(eq(ingestedEvents.id, repeat.body.eventIds[0]));
    expect(stored!.deliveredAt).not.toBeNull();
    expect((await svc.client.workflow.getHandle(id).query(getStateQuery)).alertsReceived).toBe(2);
    expect((await incidentRow(id)).occurrenceCount).toBe(3);
  });

  it('moves the incident to resolved on recovery when the tenant enables autoResolve', async () => {
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
    const alert = uniqueAlert();
    const first = await postWebhook(svc, auto.tenantId, 'generic', alert, { key: autoKey.key });
    const id = first.body.incidentIds[0];
    await postWebhook(svc, auto.tenantId, 'generic', { ...alert, status: 'resolved' }, { key: autoKey.key });
    const row = await eventually(async () => {
      const r = await incidentRow(id);
      return r.status === 'resolved' ? r : undefined;
    });
    expect(row.recoveredAt).not.toBeNull();
    const changes = await svc.database.db
      .select()
      .from(events)
      .where(and(eq(events.incidentId, id), eq(events.type, 'incident.status_changed')))
      .orderBy(events.seq);
    expect(changes[0]!.payload).toMatchObject({
      from: 'open',
      to: 'triaging',
      actorType: 'system',
      actorId: 'auto-triage',
    });
    expect(changes.filter((c) => c.payload.to === 'resolved').map((c) => c.payload)).toEqual([
      expect.objectContaining({ to: 'resolved', actorType: 'system', actorId: 'auto-resolve' }),
    ]);
  });

  it('stores a resolved notification with no open incident without opening one', async () => {
    const res = await postWebhook(svc, tenant.tenantId, 'generic', uniqueAlert({ status: 'resolved' }), {
      key: key.key,
    });
    expect(res.status).toBe(202);
    // One entry per alert: this one is in no incident.
    expect(res.body).toMatchObject({ incidentIds: [null], alertIds: [null], deduplicated: false });
    expect(res.body.eventIds).toHaveLength(1);
    const [stored] = await svc.database.db
      .select()
      .from(ingestedEvents)
      .where(eq(ingestedEvents.id, res.body.eventIds[0]));
    expect(stored).toMatchObject({ tenantId: tenant.tenantId, kind: 'alert', status: 'resolved', incidentId: null });
    // Nor was one opened for its fingerprint.
    expect(
      await svc.database.db
        .select()
        .from(incidents)
        .where(and(eq(incidents.tenantId, tenant.tenantId), eq(incidents.fingerprint, stored!.fingerprint!))),
    ).toEqual([]);
  });

  it('moves lastSeenAt to when a repeat arrived, though the tool repeats the alert with its first start time', async () => {
    const startsAt = '2026-01-01T00:00:00.000Z';
    const first = uniqueAlert({ startsAt });
    const opened = await postWebhook(svc, tenant.tenantId, 'generic', first, { key: key.key });
    const incidentId = opened.body.incidentIds[0];
    const before = await incidentRow(incidentId);
    expect(before.lastSeenAt!.getTime()).toBeGreaterThan(Date.parse(startsAt));
    await new Promise((r) => setTimeout(r, 20));
    const repeat = await postWebhook(
      svc,
      tenant.tenantId,
      'generic',
      { ...first, summary: 'still failing' },
      { key: key.key },
    );
    expect(repeat.body).toMatchObject({ incidentIds: [incidentId], deduplicated: true });
    const after = await incidentRow(incidentId);
    expect(after.occurrenceCount).toBe(2);
    expect(after.lastSeenAt!.getTime()).toBeGreaterThan(before.lastSeenAt!.getTime());
    const res = await svc.api('GET', `/v1/incidents/${incidentId}`, { token: tenant.member });
    expect(res.body.lastSeenAt).toBe(after.lastSeenAt!.toISOString());
  });

  it('says deduplicated only when every alert of the delivery attached to an open incident', async () => {
    const open = uniqueAlert();
    const opened = await postWebhook(svc, tenant.tenantId, 'generic', open, { key: key.key });
    const mixed = await postWebhook(
      svc,
      tenant.tenantId,
      'generic',
      { alerts: [open, { ...uniqueAlert(), status: 'resolved' }] },
      { key: key.key },
    );
    expect(mixed.status).toBe(202);
    // incidentIds are aligned with the alerts: the repeat's incident, then none for the recovery.
    expect(mixed.body).toMatchObject({ incidentIds: [opened.body.incidentIds[0], null], deduplicated: false });
    const all = await postWebhook(
      svc,
      tenant.tenantId,
      'generic',
      { alerts: [{ ...open, summary: 'again' }] },
      { key: key.key },
    );
    expect(all.body).toMatchObject({ incidentIds: opened.body.incidentIds, deduplicated: true });
  });

  it('stores labels as one line: a newline or an escape in a service or name becomes a space', async () => {
    const res = await postWebhook(
      svc,
      tenant.tenantId,
      'generic',
      uniqueAlert({ service: 'check\nout\u001b[2J', summary: 'line one\nline two' }),
      { key: key.key },
    );
    expect(res.status).toBe(202);
    const row = await incidentRow(res.body.incidentIds[0]);
    expect(row.service).toBe('check out [2J');
    expect(row.title).not.toMatch(/\p{Cc}/u);
    const [event] = await svc.database.db
      .select()
      .from(ingestedEvents)
      .where(eq(ingestedEvents.id, res.body.eventIds[0]));
    expect(event!.service).toBe('check out [2J');
  });

  it('answers a retried delivery with the same result and stores it once (delivery id, then same body)', async () => {
    const alert = uniqueAlert();
    const headers = { 'x-delivery-id': `delivery-${counter}` };
    const first = await postWebhook(svc, tenant.tenantId, 'generic', alert, { key: key.key, headers });
    const retry = await postWebhook(
      svc,
      tenant.tenantId,
      'generic',
      { ...alert, summary: 'changed body, same delivery id' },
      { key: key.key, headers },
    );
    expect(retry.status).toBe(202);
    expect(retry.body).toEqual(first.body);
    expect(retry.headers.get('idempotent-replayed')).toBe('true');
    const sameBody = uniqueAlert();
    const a = await postWebhook(svc, tenant.tenantId, 'generic', sameBody, { key: key.key });
    const [b, c] = await Promise.all([
      postWebhook(svc, tenant.tenantId, 'generic', sameBody, { key: key.key }),
      postWebhook(svc, tenant.tenantId, 'generic', sameBody, { key: key.key }),
    ]);
    expect(b.body).toEqual(a.body);
    expect(c.body).toEqual(a.body);
    const stored = await svc.database.db
      .select()
      .from(ingestedEvents)
      .where(inArray(ingestedEvents.id, [...first.body.eventIds, ...a.body.eventIds]));
    expect(stored).toHaveLength(2);
    const opened = await svc.database.db
      .select()
      .from(incidents)
      .where(eq(incidents.title, `[${sameBody.name}] ${sameBody.summary}`));
    expect(opened).toHaveLength(1);
  });

  it('recognises a base64 delivery id (with / + =) on retry, and reads a body that starts with a byte-order mark', async () => {
    const headers = { 'x-delivery-id': `a/b+c=${counter}==` };
    const alert = uniqueAlert();
    const first = await postWebhook(svc, tenant.tenantId, 'generic', alert, { key: key.key, headers });
    expect(first.status).toBe(202);
    const retry = await postWebhook(
      svc,
      tenant.tenantId,
      'generic',
      { ...alert, summary: 'other body' },
      { key: key.key, headers },
    );
    expect(retry.body).toEqual(first.body);
    expect(retry.headers.get('idempotent-replayed')).toBe('true');
    const withBom = await postWebhook(svc, tenant.tenantId, 'generic', `\uFEFF${JSON.stringify(uniqueAlert())}`, {
      key: key.key,
    });
    expect(withBom.status).toBe(202);
    expect(withBom.body.incidentIds).toHaveLength(1);
  });

  it('stores a Sentry issue alert retried with a new Request-ID once: the event id is the delivery', async () => {
    // Sentry makes a new Request-ID for every send, its retries (3, five minutes apart) included.
    const alert = JSON.parse(fixture('sentry-event-alert.json'));
    const issueId = `${Date.now()}${counter}`;
    alert.data.event.issue_id = issueId;
    alert.data.event.event_id = createHash('sha256').update(issueId).digest('hex').slice(0, 32);
    const send = (requestId: string) =>
      postWebhook(svc, tenant.tenantId, 'sentry', alert, {
        key: key.key,
        headers: { 'sentry-hook-resource': 'event_alert', 'request-id': requestId },
      });
    const first = await send(createHash('md5').update('first').digest('hex'));
    expect(first.status).toBe(202);
    const retry = await send(createHash('md5').update('retry').digest('hex'));
    expect(retry.status).toBe(202);
    expect(retry.body).toEqual(first.body);
    expect(retry.headers.get('idempotent-replayed')).toBe('true');
    expect(
      await svc.database.db
        .select()
        .from(ingestedEvents)
        .where(eq(ingestedEvents.fingerprint, `sentry:${issueId}`)),
    ).toHaveLength(1);
    expect((await incidentRow(first.body.incidentIds[0])).occurrenceCount).toBe(1);
    // Another event of the same issue is another delivery, attached to the same incident.
    const next = await postWebhook(
      svc,
      tenant.tenantId,
      'sentry',
      {
        ...alert,
        data: {
          ...alert.data,
          event: {
            ...alert.data.event,
            event_id: createHash('sha256').update(`${issueId}-2`).digest('hex').slice(0, 32),
          },
        },
      },
      { key: key.key, headers: { 'sentry-hook-resource': 'event_alert' } },
    );
    expect(next.headers.get('idempotent-replayed')).toBeNull();
    expect(next.body).toMatchObject({ incidentIds: first.body.incidentIds, deduplicated: true });
    expect((await incidentRow(first.body.incidentIds[0])).occurrenceCount).toBe(2);
  });

  it('takes a Datadog delivery encoded as a form ("Encode as form"): the template keys as fields', async () => {
    const aggregKey = `ddk-${Date.now()}-${counter}`;
    const form = (transition: string) =>
      new URLSearchParams({
        id: String(Date.now()),
        title: `[${transition} on {host:db-1}] Disk almost full`,
        alert_transition: transition,
        alert_priority: 'P1',
        aggreg_key: aggregKey,
        alert_id: '5',
        date: String(Date.now()),
        tags: 'host:db-1, service:storage',
      }).toString();
    const deliver = (raw: string) =>
      svc.api('POST', `/v1/webhooks/${tenant.tenantId}/datadog`, {
        rawBody: raw,
        headers: { authorization: `Bearer ${key.key}`, 'content-type': 'application/x-www-form-urlencoded' },
      });
    const triggered = await deliver(form('Triggered'));
    expect(triggered.status).toBe(202);
    const incident = await incidentRow(triggered.body.incidentIds[0]);
    expect(incident).toMatchObject({
      fingerprint: `datadog:${aggregKey}`,
      severity: 'critical',
      service: 'storage',
      source: 'automated',
      recoveredAt: null,
    });
    const recovered = await deliver(form('Recovered'));
    expect(recovered.status).toBe(202);
    expect(recovered.body.incidentIds).toEqual([incident.id]);
    expect((await incidentRow(incident.id)).recoveredAt).not.toBeNull();
    // A form with no field the template fills is still a payload error.
    const empty = await deliver('');
    expect([empty.status, empty.body.error]).toEqual([400, 'validation_error']);
  });

  it('treats the same body after the 10-minute window as a new delivery', async () => {
    const alert = uniqueAlert();
    const first = await postWebhook(svc, tenant.tenantId, 'generic', alert, { key: key.key });
    await svc.database.db
      .update(webhookDeliveries)
      .set({ createdAt: new Date(Date.now() - 11 * 60 * 1000) })
      .where(eq(webhookDeliveries.tenantId, tenant.tenantId));
    const later = await postWebhook(svc, tenant.tenantId, 'generic', alert, { key: key.key });
    expect(later.body.eventIds[0]).not.toBe(first.body.eventIds[0]);
    expect(later.body).toMatchObject({ incidentIds: first.body.incidentIds, deduplicated: true });
    // The new delivery's answer replaced the old one, and its window starts again.
    const again = await postWebhook(svc, tenant.tenantId, 'generic', alert, { key: key.key });
    expect(again.body).toEqual(later.body);
    expect(again.headers.get('idempotent-replayed')).toBe('true');
    const rows = await svc.database.db
      .select()
      .from(webhookDeliveries)
      .where(eq(webhookDeliveries.tenantId, tenant.tenantId));
    expect(
      rows.filter((r) => (r.response as { eventIds?: string[] } | null)?.eventIds?.[0] === later.body.eventIds[0]),
    ).toHaveLength(1);
  });
});

describe('delivery record retention', () => {
  const retention = { bodyWindowMs: BODY_REPLAY_WINDOW_MS, idRetentionMs: DELIVERY_ID_RETENTION_MS };
  const minutesAgo = (m: number) => new Date(Date.now() - m * 60 * 1000);

  async function age(deliveryKey: string, createdAt: Date) {
    const updated = await svc.database.db
      .update(webhookDeliveries)
      .set({ createdAt })
      .where(
        and(eq(webhookDeliveries.tenantId, retentionTenant.tenantId), eq(webhookDeliveries.deliveryKey, deliveryKey)),
      )
      .returning();
    expect(updated).toHaveLength(1);
  }

  async function storedKeys() {
    const rows = await svc.database.db
      .select()
      .from(webhookDeliveries)
      .where(eq(webhookDeliveries.tenantId, retentionTenant.tenantId));
    return rows.map((r) => r.deliveryKey).sort();
  }

  let retentionTenant: { tenantId: string; admin: string };
  let retentionKey: WebhookKey;
  beforeAll(async () => {
    retentionTenant = await svc.newTenant({ plan: 'plan_business' });
    retentionKey = await createKey(svc, retentionTenant.admin);
  });

  it('purges a body hash after its replay window and a delivery id after 7 days, and a purged retry is judged afresh', async () => {
    const send = (alert: object, deliveryId?: string) =>
      postWebhook(svc, retentionTenant.tenantId, 'generic', alert, {
        key: retentionKey.key,
        headers: deliveryId ? { 'x-delivery-id': deliveryId } : {},
      });
    const expiredId = await send(uniqueAlert(), 'expired-id');
    const keptId = await send(uniqueAlert(), 'kept-id');
    const expiredBodyAlert = uniqueAlert();
    const expiredBody = await send(expiredBodyAlert);
    const keptBodyAlert = uniqueAlert();
    const keptBody = await send(keptBodyAlert);
    for (const res of [expiredId, keptId, expiredBody, keptBody]) expect(res.status).toBe(202);
    const bodyKey = (alert: object) => `body:${createHash('sha256').update(JSON.stringify(alert)).digest('hex')}`;
    expect(await storedKeys()).toEqual(
      ['id:expired-id', 'id:kept-id', bodyKey(expiredBodyAlert), bodyKey(keptBodyAlert)].sort(),
    );

    await age('id:expired-id', minutesAgo(7 * 24 * 60 + 1));
    await age('id:kept-id', minutesAgo(7 * 24 * 60 - 60)); // older than a body's window, within an id's
    await age(bodyKey(expiredBodyAlert), minutesAgo(11));
    await age(bodyKey(keptBodyAlert), minutesAgo(9));

    const deleted = await purgeWebhookDeliveries(svc.database.sql, retention);
    expect(deleted).toBeGreaterThanOrEqual(2); // other tests' aged rows may go too
    expect(await storedKeys()).toEqual(['id:kept-id', bodyKey(keptBodyAlert)].sort());
    expect(await purgeWebhookDeliveries(svc.database.sql, retention)).toBe(0);

    // A kept record still answers its retry; a purged one is a new delivery (its events stored
    // again), attached to the incident its first delivery opened.
    const keptRetry = await send(uniqueAlert(), 'kept-id');
    expect(keptRetry.body).toEqual(keptId.body);
    expect(keptRetry.headers.get('idempotent-replayed')).toBe('true');
    const keptBodyRetry = await send(keptBodyAlert);
    expect(keptBodyRetry.body).toEqual(keptBody.body);
    expect(keptBodyRetry.headers.get('idempotent-replayed')).toBe('true');
    const expiredBodyRetry = await send(expiredBodyAlert);
    expect(expiredBodyRetry.headers.get('idempotent-replayed')).toBeNull();
    expect(expiredBodyRetry.body.eventIds[0]).not.toBe(expiredBody.body.eventIds[0]);
    expect(expiredBodyRetry.body).toMatchObject({ incidentIds: expiredBody.body.incidentIds, deduplicated: true });
    const stored = await svc.database.db
      .select()
      .from(ingestedEvents)
      .where(eq(ingestedEvents.tenantId, retentionTenant.tenantId));
    expect(stored).toHaveLength(5);
  });

  it('deletes a backlog in chunks, oldest first, and stops between chunks when told', async () => {
    await purgeWebhookDeliveries(svc.database.sql, retention); // nothing else expired is left
    for (let i = 0; i < 5; i++) {
      const res = await postWebhook(svc, retentionTenant.tenantId, 'generic', uniqueAlert(), {
        key: retentionKey.key,
        headers: { 'x-delivery-id': `backlog-${i}` },
      });
      expect(res.status).toBe(202);
      await age(`id:backlog-${i}`, minutesAgo(8 * 24 * 60 - i));
    }
    let statements = 0;
    // Stopped after the first statement of the id purge: the oldest two went, three are left.
    const partial = await purgeWebhookDeliveries(svc.database.sql, retention, {
      chunkSize: 2,
      shouldStop: () => statements++ > 1, // the body purge's one statement, then one id statement
    });
    expect(partial).toBe(2);
    expect((await storedKeys()).filter((k) => k.startsWith('id:backlog-'))).toEqual([
      'id:backlog-2',
      'id:backlog-3',
      'id:backlog-4',
    ]);
    await purgeWebhookDeliveries(svc.database.sql, retention, { chunkSize: 2 });
    expect((await storedKeys()).filter((k) => k.startsWith('id:backlog-'))).toEqual([]);
  });

  it('is run by the dispatcher at start and on its own timer', async () => {
    const send = (id: string) =>
      postWebhook(svc, retentionTenant.tenantId, 'generic', uniqueAlert(), {
        key: retentionKey.key,
        headers: { 'x-delivery-id': id },
      });
    expect((await send('before-start')).status).toBe(202);
    await age('id:before-start', minutesAgo(8 * 24 * 60));
    const dispatcher = startDispatcher(passDeps(svc, createTemporalWorkflowPort(svc.client, svc.taskQueue)), {
      listen: false,
      intervalMs: 60_000,
      housekeepingIntervalMs: 300,
    });
    try {
      await eventually(async () => !(await storedKeys()).includes('id:before-start'), 5_000);
      expect((await send('on-timer')).status).toBe(202);
      await age('id:on-timer', minutesAgo(8 * 24 * 60));
      await eventually(async () => !(await storedKeys()).includes('id:on-timer'));
    } finally {
      await dispatcher.stop();
    }
  });
});

describe('webhook authentication', () => {
  const body = () => uniqueAlert();

  it('accepts the key as Bearer or X-API-Key, and a valid signature over the raw body', async () => {
    expect(
      (await postWebhook(svc, tenant.tenantId, 'generic', body(), { key: key.key, via: 'x-api-key' })).status,
    ).toBe(202);
    expect(
      (await postWebhook(svc, tenant.tenantId, 'generic', body(), { key: key.key, sign: key.signingSecret })).status,
    ).toBe(202);
  });

  it.each([
    ['no key', () => ({})],
    ['an unknown key', () => ({ key: 'flo_' + 'A'.repeat(43) })],
    ['a wrong signature', () => ({ key: key.key, signature: `sha256=${'0'.repeat(64)}` })],
    ['a malformed signature header', () => ({ key: key.key, signature: 'md5=abc' })],
    ['a signature made with another secret', () => ({ key: key.key, sign: 'whsec_not-the-secret' })],
  ])('answers 401 for %s', async (_name, options) => {
    const res = await postWebhook(svc, tenant.tenantId, 'generic', body(), options());
    expect(res.status).toBe(401);
    expect(res.body.error).toBe('unauthorized');
  });

  it('takes the key from a Bearer scheme in any case, Basic credentials or the api_key query parameter, for tools that send only a URL', async () => {
    expect(
      (await postWebhook(svc, tenant.tenantId, 'generic', body(), { headers: { authorization: `bearer ${key.key}` } }))
        .status,
    ).toBe(202);
    const basic = (user: string, password: string) => `Basic ${Buffer.from(`${user}:${password}`).toString('base64')}`;
    expect(
      (await postWebhook(svc, tenant.tenantId, 'generic', body(), { headers: { authorization: basic(key.key, '') } }))
        .status,
    ).toBe(202);
    expect(
      (
        await postWebhook(svc, tenant.tenantId, 'generic', body(), {
          headers: { authorization: basic('github', key.key) },
        })
      ).status,
    ).toBe(202);
    const viaQuery = await svc.api('POST', `/v1/webhooks/${tenant.tenantId}/generic?api_key=${key.key}`, {
      rawBody: JSON.stringify(body()),
      headers: { 'content-type': 'application/json' },
    });
    expect(viaQuery.status).toBe(202);
    for (const authorization of [basic('user', 'not-a-key'), `Basic ${'!'.repeat(8)}`, `Token ${key.key}`]) {
      const res = await postWebhook(svc, tenant.tenantId, 'generic', body(), { headers: { authorization } });
      expect([res.status, res.body.error], authorization).toEqual([401, 'unauthorized']);
    }
    const wrongQuery = await svc.api('POST', `/v1/webhooks/${tenant.tenantId}/generic?api_key=flo_${'Z'.repeat(43)}`, {
      rawBody: JSON.stringify(body()),
      headers: { 'content-type': 'application/json' },
    });
    expect(wrongQuery.status).toBe(401);
  });

  it("accepts GitHub's own signature header and its default form encoding, also when the tenant requires signatures", async () => {
    const signed = await svc.newTenant({ plan: 'plan_business' });
    await svc.database.db
      .update(tenants)
      .set({ settings: { requireWebhookSignature: true } })
      .where(eq(tenants.id, signed.tenantId));
    const ghKey = await createKey(svc, signed.admin);
    const push = fixture('github-push.json');
    const form = `payload=${encodeURIComponent(push)}`;
    const deliver = (raw: string, contentType: string, signature: string, delivery: string) =>
      svc.api('POST', `/v1/webhooks/${signed.tenantId}/github`, {
        rawBody: raw,
        headers: {
          authorization: `Basic ${Buffer.from(`x:${ghKey.key}`).toString('base64')}`,
          'content-type': contentType,
          'x-github-event': 'push',
          'x-github-delivery': delivery,
          'x-hub-signature-256': signature,
        },
      });
    const json = await deliver(
      push,
      'application/json',
      signBody(ghKey.signingSecret, Buffer.from(push)),
      `d-json-${Date.now()}`,
    );
    expect(json.status).toBe(202);
    const formed = await deliver(
      form,
      'application/x-www-form-urlencoded',
      signBody(ghKey.signingSecret, Buffer.from(form)),
      `d-form-${Date.now()}`,
    );
    expect(formed.status).toBe(202);
    expect(formed.body.eventIds).toHaveLength(1);
    const [change] = await svc.database.db
      .select()
      .from(ingestedEvents)
      .where(eq(ingestedEvents.id, formed.body.eventIds[0]));
    expect(change).toMatchObject({ kind: 'code_change', provider: 'github' });
    const tampered = await deliver(
      form.replace('payload=', 'payload=%20'),
      'application/x-www-form-urlencoded',
      signBody(ghKey.signingSecret, Buffer.from(form)),
      `d-t-${Date.now()}`,
    );
    expect([tampered.status, tampered.body.message]).toEqual([401, 'X-Hub-Signature-256 does not match the body']);
    const noField = await deliver(
      'other=1',
      'application/x-www-form-urlencoded',
      signBody(ghKey.signingSecret, Buffer.from('other=1')),
      `d-n-${Date.now()}`,
    );
    expect([noField.status, noField.body.error]).toEqual([400, 'validation_error']);
  });

  it('answers 401 for a tampered body whose signature was made for the original', async () => {
    const original = JSON.stringify(body());
    const { signBody } = await import('../../src/auth/api-keys.js');
    const signature = signBody(key.signingSecret, Buffer.from(original));
    const tampered = original.replace('critical', 'low');
    const res = await postWebhook(svc, tenant.tenantId, 'generic', tampered, { key: key.key, signature });
    expect(res.status).toBe(401);
  });

  it('requires the signature when the tenant says so', async () => {
    const strict = await svc.newTenant();
    const strictKey = await createKey(svc, strict.admin);
    await svc.api('PATCH', `/v1/tenants/${strict.tenantId}`, {
      token: strict.admin,
      body: { settings: { requireWebhookSignature: true } },
    });
    const unsigned = await postWebhook(svc, strict.tenantId, 'generic', body(), { key: strictKey.key });
    expect(unsigned.status).toBe(401);
    expect(unsigned.body.message).toContain('X-Webhook-Signature');
    // Under the requirement a signature covers a timestamp (decision 249): the body alone is refused.
    const bodyOnly = await postWebhook(svc, strict.tenantId, 'generic', body(), {
      key: strictKey.key,
      sign: strictKey.signingSecret,
    });
    expect([bodyOnly.status, bodyOnly.body.message]).toEqual([401, expect.stringContaining('add X-Webhook-Timestamp')]);
    const raw = JSON.stringify(body());
    const timestamp = String(Math.floor(Date.now() / 1000));
    const signed = await postWebhook(svc, strict.tenantId, 'generic', raw, {
      key: strictKey.key,
      headers: {
        'x-webhook-timestamp': timestamp,
        'x-webhook-signature': `sha256=${createHmac('sha256', strictKey.signingSecret).update(`${timestamp}.${raw}`).digest('hex')}`,
      },
    });
    expect(signed.status).toBe(202);
  });

  it("answers 401 for a key used on another tenant's path, and stores nothing", async () => {
    const other = await svc.newTenant();
    const alert = body();
    const res = await postWebhook(svc, other.tenantId, 'generic', alert, { key: key.key });
    expect(res.status).toBe(401);
    const stored = await svc.database.db
      .select()
      .from(ingestedEvents)
      .where(eq(ingestedEvents.tenantId, other.tenantId));
    expect(stored).toHaveLength(0);
  });

  it('judges the key before the payload: an invalid payload is 401 without a good key, 400 with one', async () => {
    const wrongKey = await postWebhook(
      svc,
      tenant.tenantId,
      'generic',
      { severity: 'high' },
      { key: 'flo_' + 'C'.repeat(43) },
    );
    expect(wrongKey.status).toBe(401);
    expect(wrongKey.body.details).toBeUndefined();
    const otherTenant = await postWebhook(svc, 'ten_does_not_exist', 'generic', '{"name":', { key: key.key });
    expect(otherTenant.status).toBe(401);
    const good = await postWebhook(svc, tenant.tenantId, 'generic', { severity: 'high' }, { key: key.key });
    expect(good.status).toBe(400);
    expect(good.body.error).toBe('validation_error');
  });

  it('answers a retry with a revoked key 401, not with the stored answer', async () => {
    const revocable = await createKey(svc, tenant.admin, 'revocable');
    const alert = body();
    const first = await postWebhook(svc, tenant.tenantId, 'generic', alert, { key: revocable.key });
    expect(first.status).toBe(202);
    expect((await svc.api('DELETE', `/v1/api-keys/${revocable.keyId}`, { token: tenant.admin })).status).toBe(204);
    const retried = await postWebhook(svc, tenant.tenantId, 'generic', alert, { key: revocable.key });
    expect(retried.status).toBe(401);
    expect(retried.headers.get('idempotent-replayed')).toBeNull();
    // The same delivery with a good key of the tenant is still the one stored.
    const replayed = await postWebhook(svc, tenant.tenantId, 'generic', alert, { key: key.key });
    expect(replayed.status).toBe(202);
    expect(replayed.body).toEqual(first.body);
    expect(replayed.headers.get('idempotent-replayed')).toBe('true');
  });

  it('answers each delivery of a concurrent burst on its own key: bad keys and unknown tenants get 401 and store nothing', async () => {
    const bad = 'flo_' + 'D'.repeat(43);
    const good = Array.from({ length: 12 }, () => body());
    const posts = [
      ...good.map((alert) => postWebhook(svc, tenant.tenantId, 'generic', alert, { key: key.key })),
      // The same bodies with a wrong key, on a tenant that does not exist, and signed wrongly.
      ...good.map((alert) => postWebhook(svc, tenant.tenantId, 'generic', alert, { key: bad })),
      ...good.map((alert) => postWebhook(svc, 'ten_no_such_tenant', 'generic', alert, { key: key.key })),
      ...good.map((alert) =>
        postWebhook(svc, tenant.tenantId, 'generic', alert, { key: key.key, sign: 'whsec_wrong' }),
      ),
    ];
    const responses = await Promise.all(posts);
    const accepted = responses.slice(0, 12);
    expect(accepted.map((r) => r.status)).toEqual(Array(12).fill(202));
    // Each good delivery was written once, by its own request: none answered as a replay of another.
    expect(new Set(accepted.map((r) => r.body.eventIds[0])).size).toBe(12);
    expect(responses.slice(12).map((r) => r.status)).toEqual(Array(36).fill(401));
    const stored = await svc.database.db
      .select()
      .from(ingestedEvents)
      .where(
        inArray(
          ingestedEvents.id,
          accepted.map((r) => r.body.eventIds[0] as string),
        ),
      );
    expect(stored).toHaveLength(12);
    const titles = good.map((a) => `[${a.name}] ${a.summary}`);
    const opened = await svc.database.db.select().from(incidents).where(inArray(incidents.title, titles));
    expect(opened).toHaveLength(12);
    expect(opened.every((i) => i.occurrenceCount === 1)).toBe(true);
  });

  it('answers 404 for an unknown provider and 400 with details for an invalid payload', async () => {
    const unknown = await postWebhook(svc, tenant.tenantId, 'nagios', body(), { key: key.key });
    expect(unknown.status).toBe(404);
    const invalid = await postWebhook(svc, tenant.tenantId, 'generic', { severity: 'high' }, { key: key.key });
    expect(invalid.status).toBe(400);
    expect(invalid.body.error).toBe('validation_error');
    expect(invalid.body.details.length).toBeGreaterThan(0);
    const malformed = await postWebhook(svc, tenant.tenantId, 'generic', '{"name":', { key: key.key });
    expect(malformed.status).toBe(400);
  });

  it('keeps text PostgreSQL cannot store (NUL, a lone surrogate) as U+FFFD instead of refusing the delivery; a time past year 9999 is 400', async () => {
    const before = await svc.database.db
      .select({ id: ingestedEvents.id })
      .from(ingestedEvents)
      .where(eq(ingestedEvents.tenantId, tenant.tenantId));
    const stamp = Date.now();
    const cases: Array<[string, (row: typeof ingestedEvents.$inferSelect) => unknown, unknown]> = [
      [`{"name":"Disk\\u0000Full${stamp}","severity":"high"}`, (row) => row.alertName, `Disk\uFFFDFull${stamp}`],
      [`{"name":"DiskFull${stamp}","labels":{"zone\\u0000":"a"}}`, (row) => row.labels, { 'zone\uFFFD': 'a' }],
      [
        `{"name":"DiskLow${stamp}","description":"x\\ud800y"}`,
        (row) => (row.raw as { description: string }).description,
        'x\uFFFDy',
      ],
    ];
    for (const [raw, read, expected] of cases) {
      const res = await postWebhook(svc, tenant.tenantId, 'generic', raw, { key: key.key });
      expect(res.status, raw).toBe(202);
      const [row] = await svc.database.db
        .select()
        .from(ingestedEvents)
        .where(eq(ingestedEvents.id, res.body.eventIds[0]));
      expect(read(row!), raw).toEqual(expected);
    }
    // Without a good key, the same payload is 401.
    const unauthenticated = await postWebhook(svc, tenant.tenantId, 'generic', cases[0]![0], {
      key: 'flo_' + 'E'.repeat(43),
    });
    expect(unauthenticated.status).toBe(401);
    // An escaped backslash before "u0000" is text, not NUL: kept as written.
    const literal = await postWebhook(
      svc,
      tenant.tenantId,
      'generic',
      { name: `Literal${stamp}`, summary: 'path C:\\u0000 is fine' },
      { key: key.key },
    );
    expect(literal.status).toBe(202);
    const [kept] = await svc.database.db
      .select()
      .from(ingestedEvents)
      .where(eq(ingestedEvents.id, literal.body.eventIds[0]));
    expect((kept!.raw as { summary: string }).summary).toBe('path C:\\u0000 is fine');
    for (const startsAt of ['+010000-01-01T00:00:00Z', 1e15]) {
      const late = await postWebhook(
        svc,
        tenant.tenantId,
        'generic',
        { name: 'FarFuture', startsAt },
        { key: key.key },
      );
      expect(late.status).toBe(400);
      expect(late.body.details).toEqual([{ path: 'startsAt', message: expect.stringMatching(/ISO-8601/) }]);
    }
    const after = await svc.database.db
      .select({ id: ingestedEvents.id })
      .from(ingestedEvents)
      .where(eq(ingestedEvents.tenantId, tenant.tenantId));
    expect(after.length).toBe(before.length + 4);
  });

  it('stores an Alertmanager group whole when one alert has a NUL in an annotation or no alertname (decision 217)', async () => {
    const group = JSON.parse(fixture('alertmanager-firing.json'));
    const stamp = String(Date.now());
    group.alerts[0].fingerprint = `nul-${stamp}`;
    group.alerts[0].annotations.description = 'stack trace \u0000 here';
    group.alerts[1].fingerprint = `unnamed-${stamp}`;
    delete group.alerts[1].labels.alertname;
    group.commonAnnotations = { summary: 'shared \u0000 text' };
    const res = await postWebhook(svc, tenant.tenantId, 'alertmanager', group, { key: key.key });
    expect(res.status).toBe(202);
    expect(res.body.incidentIds).toHaveLength(2);
    const rows = await svc.database.db.select().from(incidents).where(inArray(incidents.id, res.body.incidentIds));
    expect(rows.find((row) => row.fingerprint === `alertmanager:nul-${stamp}`)!.description).toContain(
      'stack trace \uFFFD here',
    );
    expect(rows.find((row) => row.fingerprint === `alertmanager:unnamed-${stamp}`)!.title).toBe(
      group.alerts[1].annotations.summary,
    );
  });

  it('answers 400, not 500, for a payload nested deeper than 64 levels, and names what is wrong with a generic name', async () => {
    const deep = (levels: number) => `{"name":"Deep","extra":${'['.repeat(levels)}1${']'.repeat(levels)}}`;
    const refused = await postWebhook(svc, tenant.tenantId, 'generic', deep(5000), { key: key.key });
    expect([refused.status, refused.body.error]).toEqual([400, 'validation_error']);
    expect(refused.body.message).toMatch(/deeper than 64/);
    expect((await postWebhook(svc, tenant.tenantId, 'generic', deep(60), { key: key.key })).status).toBe(202);
    // A string holding brackets is not nesting.
    expect(
      (
        await postWebhook(
          svc,
          tenant.tenantId,
          'generic',
          { ...uniqueAlert(), summary: '['.repeat(500) + '\\"{' },
          { key: key.key },
        )
      ).status,
    ).toBe(202);
    // The same bound on the api's own JSON bodies.
    const api = await svc.api('POST', '/v1/incidents/chat', {
      token: tenant.member,
      rawBody: `{"title":"t","description":"long enough text","x":${'['.repeat(5000)}${']'.repeat(5000)}}`,
      headers: { 'content-type': 'application/json' },
    });
    expect([api.status, api.body.error]).toEqual([400, 'validation_error']);
    for (const [name, message] of [
      ['n'.repeat(201), 'name must be at most 200 characters'],
      ['   ', 'name must not be blank'],
      [7, 'name must be a string'],
      [undefined, 'name is required'],
    ] as const) {
      const res = await postWebhook(svc, tenant.tenantId, 'generic', { name, summary: 'x' }, { key: key.key });
      expect(
        [res.status, res.body.details?.find((d: { path: string }) => d.path === 'name')?.message],
        String(name),
      ).toEqual([400, message]);
    }
  });

  it('takes an Alertmanager group of 500 alerts over 1 MiB whole (decision 219)', async () => {
    // What a real Alertmanager sent with max_alerts: 500 and 2,100-character descriptions.
    const group = JSON.parse(fixture('alertmanager-firing.json'));
    const template = group.alerts[0];
    const stamp = Date.now();
    group.alerts = Array.from({ length: 500 }, (_, n) => ({
      ...template,
      labels: { ...template.labels, pod: `checkout-${n}` },
      annotations: { ...template.annotations, description: 'd'.repeat(2100) },
      fingerprint: `big-${stamp}-${n}`,
    }));
    const raw = JSON.stringify(group);
    expect(raw.length).toBeGreaterThan(1024 * 1024);
    // In a service of its own without a dispatcher: 500 incidents' triage and investigations
    // on the shared worker delayed the later tests of this file by a minute.
    await withOwnService(async (isolated) => {
      const t = await isolated.newTenant();
      const k = await createKey(isolated, t.admin);
      const res = await postWebhook(isolated, t.tenantId, 'alertmanager', raw, { key: k.key });
      expect(res.status).toBe(202);
      expect(res.body.eventIds).toHaveLength(500);
      expect(res.body.incidentIds).toHaveLength(500);
      const stored = await isolated.database.db
        .select({ id: ingestedEvents.id })
        .from(ingestedEvents)
        .where(eq(ingestedEvents.tenantId, t.tenantId));
      expect(stored).toHaveLength(500);
    });
  });

  it('answers 413 for a body over 4 MiB', async () => {
    const big = JSON.stringify({ ...body(), description: 'x'.repeat(4 * 1024 * 1024) });
    const res = await new Promise<number>((resolve, reject) => {
      const req = request(
        `${svc.baseUrl}/v1/webhooks/${tenant.tenantId}/generic`,
        {
          method: 'POST',
          headers: {
            authorization: `Bearer ${key.key}`,
            'content-type': 'application/json',
            'content-length': Buffer.byteLength(big),
          },
        },
        (response) => {
          response.resume();
          resolve(response.statusCode ?? 0);
        },
      );
      req.on('error', reject);
      req.end(big);
    });
    expect(res).toBe(413);
  });
});

describe('event quota', () => {
  it('counts every alert, refuses past the quota with 429 event_quota_exceeded, and warns at 80% and 100% once', async () => {
    const starter = await svc.newTenant({ plan: 'plan_starter' });
    const starterKey = await createKey(svc, starter.admin);
    const period = usagePeriod(new Date());
    await svc.database.db
      .insert(usageCounters)
      .values({ tenantId: starter.tenantId, period, metric: 'events', count: 398 });
    // 2 alerts: 398 → 400 = 80% of 500.
    const two = { alerts: [uniqueAlert(), uniqueAlert()] };
    expect((await postWebhook(svc, starter.tenantId, 'generic', two, { key: starterKey.key })).status).toBe(202);
    await svc.database.db.update(usageCounters).set({ count: 498 }).where(eq(usageCounters.tenantId, starter.tenantId));
    // 3 alerts do not fit in the 2 left: the whole delivery is refused and nothing is stored.
    const three = { alerts: [uniqueAlert(), uniqueAlert(), uniqueAlert()] };
    const refused = await postWebhook(svc, starter.tenantId, 'generic', three, { key: starterKey.key });
    expect(refused.status).toBe(429);
    expect(refused.body).toEqual({
      error: 'event_quota_exceeded',
      message: `The monthly event quota of 500 leaves 2 event(s) for ${period}; this delivery has 3 firing alerts`,
    });
    expect(
      (
        await postWebhook(
          svc,
          starter.tenantId,
          'generic',
          { alerts: [uniqueAlert(), uniqueAlert()] },
          { key: starterKey.key },
        )
      ).status,
    ).toBe(202);
    expect((await postWebhook(svc, starter.tenantId, 'generic', uniqueAlert(), { key: starterKey.key })).status).toBe(
      429,
    );
    const [usage] = await svc.database.db
      .select()
      .from(usageCounters)
      .where(eq(usageCounters.tenantId, starter.tenantId));
    expect(usage!.count).toBe(500);
    const stored = await svc.database.db
      .select()
      .from(ingestedEvents)
      .where(eq(ingestedEvents.tenantId, starter.tenantId));
    expect(stored).toHaveLength(4);
    const warnings = await svc.database.db
      .select()
      .from(events)
      .where(and(eq(events.tenantId, starter.tenantId), eq(events.type, 'system.quota_warning')))
      .orderBy(events.seq);
    expect(warnings.map((w) => w.payload.percent).sort()).toEqual([100, 80]);
    // The same refused retry does not leave a delivery record behind: it works once quota allows.
    await svc.database.db.update(usageCounters).set({ count: 0 }).where(eq(usageCounters.tenantId, starter.tenantId));
    expect((await postWebhook(svc, starter.tenantId, 'generic', three, { key: starterKey.key })).status).toBe(202);
  });

  it('takes recoveries past the quota: they count, and the incidents they end are resolved (decision 218)', async () => {
    const starter = await svc.newTenant({ plan: 'plan_starter' });
    const starterKey = await createKey(svc, starter.admin);
    expect(
      (
        await svc.api('PATCH', `/v1/tenants/${starter.tenantId}`, {
          token: starter.admin,
          body: { settings: { autoResolve: true } },
        })
      ).status,
    ).toBe(200);
    const period = usagePeriod(new Date());
    const [a, b] = [uniqueAlert(), uniqueAlert()];
    const opened = await postWebhook(svc, starter.tenantId, 'generic', { alerts: [a, b] }, { key: starterKey.key });
    expect(opened.status).toBe(202);
    await svc.database.db
      .insert(usageCounters)
      .values({ tenantId: starter.tenantId, period, metric: 'events', count: 500 })
      .onConflictDoUpdate({
        target: [usageCounters.tenantId, usageCounters.period, usageCounters.metric],
        set: { count: 500 },
      });
    // A firing alert is refused, a repeat of an open incident's alert too; so is a recovery sent
    // with an alert that would open an incident (it does not fit).
    const firing = await postWebhook(svc, starter.tenantId, 'generic', uniqueAlert(), { key: starterKey.key });
    expect([firing.status, firing.body.message]).toEqual([
      429,
      `The monthly event quota of 500 is reached for ${period}`,
    ]);
    expect(
      (
        await postWebhook(
          svc,
          starter.tenantId,
          'generic',
          { ...b, startsAt: new Date().toISOString() },
          { key: starterKey.key },
        )
      ).status,
    ).toBe(429);
    expect(
      (
        await postWebhook(
          svc,
          starter.tenantId,
          'generic',
          { alerts: [{ ...a, status: 'resolved' }, uniqueAlert()] },
          { key: starterKey.key },
        )
      ).status,
    ).toBe(429);
    // A recovery sent with the group's still-firing alert (as Alertmanager sends it) is taken.
    const withRepeat = await postWebhook(
      svc,
      starter.tenantId,
      'generic',
      {
        alerts: [
          { ...a, status: 'resolved' },
          { ...b, startsAt: new Date().toISOString() },
        ],
      },
      { key: starterKey.key },
    );
    expect(withRepeat.status).toBe(202);
    // Then the other's recovery; every alert taken is counted.
    const recovered = await postWebhook(
      svc,
      starter.tenantId,
      'generic',
      { alerts: [{ ...b, status: 'resolved' }] },
      { key: starterKey.key },
    );
    expect(recovered.status).toBe(202);
    expect([...withRepeat.body.incidentIds].sort()).toEqual([...opened.body.incidentIds].sort());
    expect(recovered.body.incidentIds).toHaveLength(1);
    expect(opened.body.incidentIds).toContain(recovered.body.incidentIds[0]);
    const [usage] = await svc.database.db
      .select()
      .from(usageCounters)
      .where(and(eq(usageCounters.tenantId, starter.tenantId), eq(usageCounters.metric, 'events')));
    expect(usage!.count).toBe(503);
    // The recovery is recorded at once; the workflow resolves each incident once its triage step
    // is done, which a loaded machine (the whole suite) can take past 15 s.
    for (const id of opened.body.incidentIds as string[]) {
      expect((await incidentRow(id)).recoveredAt).not.toBeNull();
      await eventually(async () => (await incidentRow(id)).status === 'resolved', 60_000).catch(async (err: Error) => {
        const state = await svc.client.workflow
          .getHandle(id)
          .query(getStateQuery)
          .catch((e: Error) => e.message);
        const undelivered = await svc.database.db
          .select()
          .from(ingestedEvents)
          .where(eq(ingestedEvents.incidentId, id));
        throw new Error(
          `${err.message}; row ${JSON.stringify(await incidentRow(id))}; workflow ${JSON.stringify(state)}; events ${JSON.stringify(undelivered.map((e) => [e.status, e.deliveredAt]))}`,
        );
      });
    }
  }, 90_000);
});

describe('Temporal unavailable during ingestion', () => {
  it('keeps the event, answers 202, and opens the incident exactly once when Temporal is back', async () => {
    await withOwnService(async (isolated) => {
      const t = await isolated.newTenant();
      const k = await createKey(isolated, t.admin);
      const alert = uniqueAlert();
      const accepted = await postWebhook(isolated, t.tenantId, 'generic', alert, { key: k.key });
      expect(accepted.status).toBe(202);
      // The recovery must reach the workflow: it waits undelivered while Temporal is away.
      const repeat = await postWebhook(
        isolated,
        t.tenantId,
        'generic',
        { ...alert, status: 'resolved' },
        { key: k.key },
      );
      expect(repeat.body.incidentIds).toEqual(accepted.body.incidentIds);
      const id = accepted.body.incidentIds[0];

      // A dispatcher whose Temporal is unreachable: a real client to a port nobody listens on.
      const deadAddress = `127.0.0.1:${await freePort()}`;
      const deadConnection = Connection.lazy(temporalConnectionOptions(deadAddress, { connectTimeout: 500 }));
      const lines: string[] = [];
      const dead = {
        ...passDeps(
          isolated,
          createTemporalWorkflowPort(new Client({ connection: deadConnection }), isolated.taskQueue),
        ),
        logger: createLogger('warn', {}, { write: (line: string) => void lines.push(line) }),
      };
      expect(await reconcileIncidents(dead)).toBe(0);
      expect(await deliverPendingAlerts(dead)).toBe(0);
      // Told as an outage: one line a wave, with how many failed so and no stack (decision 223).
      const told = lines.map((line) => JSON.parse(line) as Record<string, unknown>);
      expect(told.map((l) => l.msg)).toEqual(['could not start the incident workflow; will retry']); // its alert waits for the start
      for (const line of told)
        expect(line).toMatchObject({ level: 'warn', failedInWave: 1, reason: expect.any(String), incidentId: id });
      expect(told.some((l) => 'err' in l)).toBe(false);
      const [row] = await isolated.database.db.select().from(incidents).where(eq(incidents.id, id));
      expect(row!.workflowStartedAt).toBeNull();
      const waiting = await isolated.database.db.select().from(ingestedEvents).where(eq(ingestedEvents.incidentId, id));
      expect(waiting.filter((e) => e.deliveredAt === null)).toHaveLength(1);
      await deadConnection.close().catch(() => undefined);

      // Temporal is back.
      const live = passDeps(isolated);
      expect(await reconcileIncidents(live)).toBe(1);
      expect(await deliverPendingAlerts(live)).toBe(1);
      expect(await reconcileIncidents(live)).toBe(0);
      expect(await deliverPendingAlerts(live)).toBe(0);
      const handle = isolated.client.workflow.getHandle(id);
      const state = await eventually(async () => {
        const s = await handle.query(getStateQuery);
        return s.alertsReceived === 1 ? s : undefined;
      });
      expect(state).toMatchObject({
        status: expect.stringMatching(/^(triaging|investigating)$/),
        lastAlertStatus: 'resolved',
        triageRuns: 1,
      });
      const all = await isolated.database.db.select().from(incidents).where(eq(incidents.tenantId, t.tenantId));
      expect(all).toHaveLength(1);
    });
  });
});

describe('signals to an incident signalled moments ago', () => {
  it('hold a firing repeat for the next signal but send a recovery at once', async () => {
    await withOwnService(async (isolated) => {
      const t = await isolated.newTenant({ plan: 'plan_enterprise' });
      const k = await createKey(isolated, t.admin);
      const alert = uniqueAlert();
      const at = (minutes: number) => new Date(Date.UTC(2026, 0, 1, 3, minutes)).toISOString();
      const post = async (status: 'firing' | 'resolved', minutes: number) => {
        const res = await postWebhook(
          isolated,
          t.tenantId,
          'generic',
          { ...alert, status, startsAt: at(minutes) },
          { key: k.key },
        );
        expect(res.status).toBe(202);
        return res.body.incidentIds[0] as string;
      };
      const live = passDeps(isolated);
      const recent = new Map<string, number>();
      const id = await post('firing', 0);
      expect(await reconcileIncidents(live)).toBe(1);
      expect(await post('resolved', 1)).toBe(id);
      expect(await deliverPendingAlerts(live, recent)).toBe(1); // the recovery
      expect([...recent.keys()]).toEqual([id]);
      // Firing again within the interval: it waits for the incident's next signal.
      expect(await post('firing', 2)).toBe(id);
      expect(await deliverPendingAlerts(live, recent)).toBe(0);
      // A recovery goes at once, with the repeat that waited.
      expect(await post('resolved', 3)).toBe(id);
      expect(await deliverPendingAlerts(live, recent)).toBe(2);
      const waiting = await isolated.database.db.select().from(ingestedEvents).where(eq(ingestedEvents.incidentId, id));
      expect(waiting.filter((e) => e.deliveredAt === null)).toEqual([]);
      const state = await eventually(async () => {
        const s = await isolated.client.workflow.getHandle(id).query(getStateQuery);
        return s.alertsReceived === 3 ? s : undefined;
      });
      expect(state.lastAlertStatus).toBe('resolved');
    });
  });
});

describe('a backlog of unstarted incidents', () => {
  it('is started in waves: a failed start ends the pass after its wave, and the next pass starts the rest once', async () => {
    await withOwnService(async (isolated) => {
      const t = await isolated.newTenant({ plan: 'plan_enterprise' });
      const k = await createKey(isolated, t.admin);
      const ids: string[] = [];
      for (let i = 0; i < 20; i++) {
        const res = await postWebhook(isolated, t.tenantId, 'generic', uniqueAlert(), { key: k.key });
        expect(res.status).toBe(202);
        ids.push(res.body.incidentIds[0]);
      }
      const unstarted = async () =>
        (await isolated.database.db.select().from(incidents).where(eq(incidents.tenantId, t.tenantId)))
          .filter((r) => r.workflowStartedAt === null)
          .map((r) => r.id);
      expect((await unstarted()).sort()).toEqual([...ids].sort());

      // Our port in front of the real one, refusing the third incident's start once.
      const refused = ids[2]!;
      let refusals = 0;
      const failing = {
        ...isolated.workflows,
        startIncident: async (input: Parameters<typeof isolated.workflows.startIncident>[0], title: string) => {
          if (input.incidentId === refused && refusals++ === 0) throw new Error('Temporal went away');
          return isolated.workflows.startIncident(input, title);
        },
      };
      // The first wave is the eight oldest: seven start, the refused one waits, the rest wait.
      expect(await reconcileIncidents(passDeps(isolated, failing))).toBe(7);
      expect((await unstarted()).sort()).toEqual([refused, ...ids.slice(8)].sort());
      expect(await reconcileIncidents(passDeps(isolated))).toBe(13);
      expect(await unstarted()).toEqual([]);
      expect(await reconcileIncidents(passDeps(isolated))).toBe(0);
      // Every incident's workflow is running (an automated incident's run lasts until it is closed).
      for (const id of ids)
        expect((await isolated.client.workflow.getHandle(id).describe()).status.name, id).toBe('RUNNING');
    });
  }, 60_000);
});

describe('an automated incident closed before the dispatcher started its workflow', () => {
  it('is neither triaged nor investigated, and a start from the row read before the close runs nothing again', async () => {
    await withOwnService(async (isolated) => {
      const t = await isolated.newTenant();
      const k = await createKey(isolated, t.admin);
      const accepted = await postWebhook(isolated, t.tenantId, 'generic', uniqueAlert(), { key: k.key });
      expect(accepted.status).toBe(202);
      const id = accepted.body.incidentIds[0];
      // What a dispatcher pass read before the close (a backlog after an outage takes a while).
      const [stale] = await isolated.database.db.select().from(incidents).where(eq(incidents.id, id));
      expect(stale!.workflowStartedAt).toBeNull();

      // A person closes it first: the update starts the workflow, which ends with the close.
      const closed = await isolated.api('PATCH', `/v1/incidents/${id}`, { token: t.admin, body: { status: 'closed' } });
      expect(closed.status).toBe(200);
      expect(closed.body.status).toBe('closed');
      const handle = isolated.client.workflow.getHandle(id);
      const first = await eventually(async () => {
        const d = await handle.describe();
        return d.status.name === 'COMPLETED' ? d : undefined;
      }, 30_000);

      // The stale start: the pass goes on with the row it read.
      await isolated.workflows.startIncident(toWorkflowInput(stale!), stale!.title);
      // So do a triage and an investigation start whose route read the row before the close.
      const actor = { actor: { type: 'user' as const, id: 'late-reader' } };
      await expect(
        isolated.workflows.triageIncident(toWorkflowInput(stale!), stale!.title, actor),
      ).rejects.toMatchObject({ code: 'conflict' });
      await expect(
        isolated.workflows.startInvestigation(toWorkflowInput(stale!), stale!.title, actor),
      ).rejects.toMatchObject({ code: 'conflict' });
      // And a status change read before the close (a reopen reads the row as closed).
      await expect(
        isolated.workflows.setIncidentStatus(toWorkflowInput(stale!), stale!.title, {
          status: 'investigating',
          ...actor,
        }),
      ).rejects.toMatchObject({
        code: 'conflict',
        message: expect.stringMatching(/^The incident was closed meanwhile/),
      });
      const latest = await handle.describe();
      expect(latest.runId).toBe(first.runId);
      expect(latest.status.name).toBe('COMPLETED');

      const types = (
        await isolated.database.db.select().from(events).where(eq(events.incidentId, id)).orderBy(events.seq)
      ).map((e) => e.type);
      expect(types).toEqual(['incident.created', 'incident.status_changed']);
      const [row] = await isolated.database.db.select().from(incidents).where(eq(incidents.id, id));
      expect(row).toMatchObject({ status: 'closed', version: 2 });
      const counted = await isolated.database.db
        .select()
        .from(usageCounters)
        .where(and(eq(usageCounters.tenantId, t.tenantId), eq(usageCounters.metric, 'investigations')));
      expect(counted.map((c) => c.count).filter((n) => n > 0)).toEqual([]);
    });
  }, 60_000);
});
