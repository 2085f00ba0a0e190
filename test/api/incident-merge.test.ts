/**
 * People correct the grouping: merging one open incident into another and splitting an alert out
 * to an incident of its own, through real webhooks, HTTP, PostgreSQL and Temporal.
 */
import { and, asc, eq } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { auditLog } from '../../src/db/schema/audit.js';
import { alerts } from '../../src/db/schema/correlation.js';
import { events } from '../../src/db/schema/events.js';
import { incidents } from '../../src/db/schema/incidents.js';
import { ingestedEvents } from '../../src/db/schema/ingestion.js';
import { approvals } from '../../src/db/schema/remediation.js';
import { getStateQuery } from '../../src/workflows/messages.js';
import { investigateToPendingApproval } from '../helpers/remediation.js';
import { startTestService, type TestService } from '../helpers/service.js';
import { createKey, eventually, postWebhook, type WebhookKey } from '../helpers/webhooks.js';

let svc: TestService;
let tenant: { tenantId: string; admin: string; member: string };
let other: { tenantId: string; admin: string; member: string };
let key: WebhookKey;
let serial = 0;

beforeAll(async () => {
  svc = await startTestService();
  tenant = await svc.newTenant({ plan: 'plan_business' });
  other = await svc.newTenant({ plan: 'plan_business' });
  key = await createKey(svc, tenant.admin);
});
afterAll(() => svc?.stop());

const db = () => svc.database.db;

/** Posts one generic alert (a fresh fingerprint and service of its own unless given); its incident's id. */
async function alert(
  fields: { name?: string; severity?: string; service?: string; fingerprint?: string; status?: string } = {},
  as: { tenantId: string; key: string } = { tenantId: tenant.tenantId, key: key.key },
): Promise<string> {
  serial++;
  const res = await postWebhook(
    svc,
    as.tenantId,
    'generic',
    {
      name: fields.name ?? `MergeAlert${serial}`,
      severity: fields.severity ?? 'medium',
      service: fields.service ?? `merge-svc-${serial}-${Date.now()}`,
      summary: `symptom ${serial}`,
      fingerprint: fields.fingerprint ?? `merge-fp-${serial}-${Date.now()}`,
      ...(fields.status ? { status: fields.status } : {}),
    },
    { key: as.key },
  );
  expect(res.status).toBe(202);
  return res.body.incidentIds[0] as string;
}

/** The incident's workflow is running and has triaged and investigated it (so nothing rewrites its severity after). */
async function settledAutomation(incidentId: string): Promise<void> {
  const handle = svc.client.workflow.getHandle(incidentId);
  await eventually(async () => {
    const state = await handle.query(getStateQuery).catch(() => undefined);
    return state?.investigationStatus === 'completed' || state?.investigationStatus === 'failed';
  }, 30_000);
}

const alertsOf = (incidentId: string) =>
  db().select().from(alerts).where(eq(alerts.incidentId, incidentId)).orderBy(asc(alerts.firstSeenAt), asc(alerts.id));

const incidentRow = async (id: string) => (await db().select().from(incidents).where(eq(incidents.id, id)))[0]!;

const eventsOf = (incidentId: string, type: string) =>
  db()
    .select()
    .from(events)
    .where(and(eq(events.incidentId, incidentId), eq(events.type, type)))
    .orderBy(asc(events.seq));

const auditOf = (incidentId: string, action: string) =>
  db()
    .select()
    .from(auditLog)
    .where(and(eq(auditLog.incidentId, incidentId), eq(auditLog.action, action)));

const merge = (into: string, incidentId: unknown, token = tenant.member) =>
  svc.api('POST', `/v1/incidents/${into}/merge`, { token, body: { incidentId } });

const split = (incidentId: string, alertId: string, token = tenant.member) =>
  svc.api('POST', `/v1/incidents/${incidentId}/alerts/${alertId}/split`, { token });

describe('POST /v1/incidents/{incidentId}/merge', () => {
  it("moves the other incident's alerts and deliveries here and closes it with mergedInto, through its workflow", async () => {
    const survivorId = await alert({ severity: 'low' });
    const fingerprint = `merge-moved-${Date.now()}`;
    const mergedId = await alert({ severity: 'critical', fingerprint });
    expect(await alert({ severity: 'critical', fingerprint })).toBe(mergedId); // a repeat: two deliveries
    await Promise.all([settledAutomation(survivorId), settledAutomation(mergedId)]);
    const [moving] = await alertsOf(mergedId);
    expect(moving).toBeDefined();
    const before = { survivor: await incidentRow(survivorId), merged: await incidentRow(mergedId) };

    const res = await merge(survivorId, mergedId);
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({
      incidentId: survivorId,
      severity: 'critical',
      occurrenceCount: before.survivor.occurrenceCount + before.merged.occurrenceCount,
      mergedInto: null,
    });

    // Rows: the alert record and both deliveries moved; the merged incident closed, naming the survivor.
    expect((await alertsOf(survivorId)).map((a) => a.id)).toContain(moving!.id);
    expect(await alertsOf(mergedId)).toEqual([]);
    const deliveries = await db()
      .select()
      .from(ingestedEvents)
      .where(eq(ingestedEvents.fingerprint, `generic:${fingerprint}`));
    expect(deliveries).toHaveLength(2);
    expect(deliveries.every((d) => d.incidentId === survivorId)).toBe(true);
    expect(await incidentRow(mergedId)).toMatchObject({ status: 'closed', mergedInto: survivorId });
    const survivor = await incidentRow(survivorId);
    expect(survivor).toMatchObject({ severity: 'critical', mergedInto: null });
    expect(survivor.lastSeenAt!.getTime()).toBeGreaterThanOrEqual(before.merged.lastSeenAt!.getTime());

    // Reads: the merged incident names the survivor, in GET and in the list.
    const read = await svc.api('GET', `/v1/incidents/${mergedId}`, { token: tenant.member });
    expect(read.body).toMatchObject({ incidentId: mergedId, status: 'closed', mergedInto: survivorId });
    const list = await svc.api('GET', '/v1/incidents?status=closed&limit=100', { token: tenant.member });
    expect(list.body.incidents.find((i: { incidentId: string }) => i.incidentId === mergedId)).toMatchObject({
      mergedInto: survivorId,
    });

    // Events: the close carries mergedInto; the survivor's severity rose, said as a severity change.
    const [closed] = await eventsOf(mergedId, 'incident.status_changed').then((rows) =>
      rows.filter((e) => (e.payload as { to: string }).to === 'closed'),
    );
    expect(closed!.payload).toMatchObject({
      incidentId: mergedId,
      to: 'closed',
      actorType: 'user',
      mergedInto: survivorId,
    });
    expect((await eventsOf(survivorId, 'incident.severity_changed')).at(-1)!.payload).toMatchObject({
      incidentId: survivorId,
      from: before.survivor.severity,
      to: 'critical',
      reason: 'merge',
    });

    // Audit: the close on the merged incident, the merge on the survivor, with the request's id.
    const [closeAudit] = await auditOf(mergedId, 'incident.status_changed').then((rows) =>
      rows.filter((r) => (r.details as { to: string }).to === 'closed'),
    );
    expect(closeAudit).toMatchObject({ actorType: 'user', details: { mergedInto: survivorId } });
    expect(closeAudit!.requestId).toBeTruthy();
    const [mergedAudit] = await auditOf(survivorId, 'incident.merged');
    expect(mergedAudit).toMatchObject({
      actorType: 'user',
      targetId: survivorId,
      details: { mergedIncidentId: mergedId, alertsMoved: 1, eventsMoved: 2 },
    });

    // The merged incident's workflow ended as a close ends it; the survivor's heard of the firing alert.
    await svc.client.workflow.getHandle(mergedId).result();
    const survivorHandle = svc.client.workflow.getHandle(survivorId);
    await eventually(async () => ((await survivorHandle.query(getStateQuery)).alertsReceived ?? 0) >= 1, 20_000);
    await eventually(async () =>
      (
        await db()
          .select()
          .from(ingestedEvents)
          .where(eq(ingestedEvents.fingerprint, `generic:${fingerprint}`))
      ).every((d) => d.deliveredAt !== null),
    );
  });

  it('sends a later delivery of a merged alert to the survivor, where its record now is', async () => {
    const survivorId = await alert();
    const fingerprint = `merge-later-${Date.now()}`;
    const mergedId = await alert({ fingerprint });
    await Promise.all([settledAutomation(survivorId), settledAutomation(mergedId)]);
    expect((await merge(survivorId, mergedId)).status).toBe(200);
    const before = await incidentRow(survivorId);
    expect(await alert({ fingerprint })).toBe(survivorId);
    expect((await incidentRow(survivorId)).occurrenceCount).toBe(before.occurrenceCount + 1);
    const [record] = await db()
      .select()
      .from(alerts)
      .where(eq(alerts.fingerprint, `generic:${fingerprint}`));
    expect(record).toMatchObject({ incidentId: survivorId, occurrenceCount: 2 });
  });

  it('loses no delivery of the merged alert that arrives while the merge runs', async () => {
    const survivorId = await alert();
    const fingerprint = `merge-race-${Date.now()}`;
    const mergedId = await alert({ fingerprint });
    await Promise.all([settledAutomation(survivorId), settledAutomation(mergedId)]);
    const repeats = 8;
    const [merged, ...answered] = await Promise.all([
      merge(survivorId, mergedId),
      ...Array.from({ length: repeats }, () => alert({ fingerprint })),
    ]);
    expect(merged.status).toBe(200);
    // Each repeat joined the merged incident before the merge (and moved with it) or the survivor after.
    for (const id of answered) expect([mergedId, survivorId]).toContain(id);
    const deliveries = await db()
      .select()
      .from(ingestedEvents)
      .where(eq(ingestedEvents.fingerprint, `generic:${fingerprint}`));
    expect(deliveries).toHaveLength(1 + repeats);
    expect(deliveries.every((d) => d.incidentId === survivorId)).toBe(true);
    const records = await db()
      .select()
      .from(alerts)
      .where(eq(alerts.fingerprint, `generic:${fingerprint}`));
    expect(records).toEqual([expect.objectContaining({ incidentId: survivorId, occurrenceCount: 1 + repeats })]);
    expect(new Set(deliveries.map((d) => d.alertId))).toEqual(new Set([records[0]!.id]));
    expect(await alertsOf(mergedId)).toEqual([]);
  });

  it('withdraws the pending approval of the incident merged', async () => {
    const survivorId = await alert();
    const { incidentId: mergedId, approval } = await investigateToPendingApproval(svc, tenant);
    const res = await merge(survivorId, mergedId);
    expect(res.status).toBe(200);
    expect(await incidentRow(mergedId)).toMatchObject({ status: 'closed', mergedInto: survivorId });
    const expired = await eventually(async () => {
      const [row] = await db().select().from(approvals).where(eq(approvals.id, approval.id));
      return row?.status === 'expired' ? row : undefined;
    });
    expect(expired.expiredReason).toBe('closed');
    expect((await eventsOf(mergedId, 'approval.expired')).map((e) => e.payload)).toEqual([
      expect.objectContaining({ approvalId: approval.id, reason: 'closed' }),
    ]);
    await svc.client.workflow.getHandle(mergedId).result();
  });

  it('refuses a merge into itself, a bad body and a caller without the role', async () => {
    const id = await alert();
    const self = await merge(id, id);
    expect(self.status).toBe(400);
    expect(self.body).toMatchObject({ error: 'validation_error', details: [{ path: 'incidentId' }] });
    expect(self.body.message).toMatch(/^incidentId: .*itself/);
    for (const body of [{}, { incidentId: '' }, { incidentId: 42 }, { incidentId: 'x'.repeat(65) }]) {
      const res = await svc.api('POST', `/v1/incidents/${id}/merge`, { token: tenant.member, body });
      expect(res.status, JSON.stringify(body)).toBe(400);
      expect(res.body.error).toBe('validation_error');
      expect(res.body.message).toMatch(/incidentId/);
    }
    const extra = await svc.api('POST', `/v1/incidents/${id}/merge`, {
      token: tenant.member,
      body: { incidentId: 'inc_x', into: 'y' },
    });
    expect(extra.status).toBe(400);
    expect((await svc.api('POST', `/v1/incidents/${id}/merge`, { body: { incidentId: 'inc_x' } })).status).toBe(401);
    const viewer = svc.token(tenant.tenantId, 'viewer' as never);
    expect((await merge(id, 'inc_x', viewer)).status).toBe(403);
    expect(await incidentRow(id)).toMatchObject({ mergedInto: null });
  });

  it('answers 404 for an unknown incident or one of another tenant, either side', async () => {
    const mine = await alert();
    const otherKey = await createKey(svc, other.admin);
    const theirs = await alert({}, { tenantId: other.tenantId, key: otherKey.key });
    for (const [into, from] of [
      ['inc_unknown', mine],
      [mine, 'inc_unknown'],
      [theirs, mine],
      [mine, theirs],
    ]) {
      const res = await merge(into!, from);
      expect(res.status, `${into} <- ${from}`).toBe(404);
      expect(res.body.error).toBe('incident_not_found');
    }
    expect(await incidentRow(theirs)).toMatchObject({ mergedInto: null });
    expect((await incidentRow(theirs)).status).not.toBe('closed');
  });

  it('refuses a closed or resolved incident on either side with a 409 naming it', async () => {
    const open = await alert();
    const closedId = await alert();
    const resolvedId = await alert();
    await Promise.all([settledAutomation(closedId), settledAutomation(resolvedId)]);
    for (const [id, status] of [
      [closedId, 'closed'],
      [resolvedId, 'resolved'],
    ] as const) {
      const moved = await svc.api('PATCH', `/v1/incidents/${id}`, { token: tenant.member, body: { status } });
      expect(moved.status).toBe(200);
    }
    for (const [into, from, named, status] of [
      [open, closedId, closedId, 'closed'],
      [open, resolvedId, resolvedId, 'resolved'],
      [closedId, open, closedId, 'closed'],
      [resolvedId, open, resolvedId, 'resolved'],
    ]) {
      const res = await merge(into!, from);
      expect(res.status, `${into} <- ${from}`).toBe(409);
      expect(res.body.error).toBe('conflict');
      expect(res.body.message).toContain(named);
      expect(res.body.message).toContain(`is ${status}`);
    }
    expect((await alertsOf(closedId)).length + (await alertsOf(resolvedId)).length).toBeGreaterThanOrEqual(2);
    expect(await incidentRow(open)).toMatchObject({ mergedInto: null });
  });

  it('lets one of two opposite concurrent merges win, so no alert is lost or in two incidents', async () => {
    const a = await alert();
    const b = await alert();
    await Promise.all([settledAutomation(a), settledAutomation(b)]);
    const ids = [...(await alertsOf(a)), ...(await alertsOf(b))].map((r) => r.id).sort();
    const [ab, ba] = await Promise.all([merge(a, b), merge(b, a)]);
    expect([ab.status, ba.status].sort()).toEqual([200, 409]);
    const survivor = ab.status === 200 ? a : b;
    const mergedId = survivor === a ? b : a;
    expect((await alertsOf(survivor)).map((r) => r.id).sort()).toEqual(ids);
    expect(await alertsOf(mergedId)).toEqual([]);
    expect(await incidentRow(mergedId)).toMatchObject({ status: 'closed', mergedInto: survivor });
    expect(await incidentRow(survivor)).toMatchObject({ mergedInto: null });
    expect((await incidentRow(survivor)).status).not.toBe('closed');
  });
});

describe('POST /v1/incidents/{incidentId}/alerts/{alertId}/split', () => {
  it('moves one alert and its deliveries out to a new automated incident with its own workflow', async () => {
    const keptId = await alert({ severity: 'low' });
    const fingerprint = `split-out-${Date.now()}`;
    const service = `split-svc-${Date.now()}`;
    const mergedId = await alert({ name: 'SplitMe', severity: 'high', service, fingerprint });
    await alert({ name: 'SplitMe', severity: 'high', service, fingerprint });
    await Promise.all([settledAutomation(keptId), settledAutomation(mergedId)]);
    expect((await merge(keptId, mergedId)).status).toBe(200);
    const [moving] = (await alertsOf(keptId)).filter((a) => a.fingerprint.endsWith(fingerprint));
    const before = await incidentRow(keptId);

    const res = await split(keptId, moving!.id);
    expect(res.status).toBe(201);
    const newId = res.body.incidentId as string;
    expect(newId).toMatch(/^inc_/);
    expect(newId).not.toBe(keptId);
    expect(res.body).toMatchObject({
      title: moving!.title,
      severity: 'high',
      service,
      source: 'automated',
      status: 'open',
      occurrenceCount: moving!.occurrenceCount,
      mergedInto: null,
    });

    // Rows: the alert stands alone in the new incident, its deliveries followed; the source keeps the rest.
    const [moved] = await db().select().from(alerts).where(eq(alerts.id, moving!.id));
    expect(moved).toMatchObject({ incidentId: newId, correlation: { reason: 'fingerprint' }, ruleId: null });
    const deliveries = await db().select().from(ingestedEvents).where(eq(ingestedEvents.alertId, moving!.id));
    expect(deliveries).toHaveLength(2);
    expect(deliveries.every((d) => d.incidentId === newId)).toBe(true);
    expect((await alertsOf(keptId)).map((a) => a.id)).not.toContain(moving!.id);
    expect((await alertsOf(keptId)).length).toBeGreaterThanOrEqual(1);
    const kept = await incidentRow(keptId);
    expect(kept.occurrenceCount).toBe(before.occurrenceCount - moving!.occurrenceCount);
    expect(kept.status).not.toBe('closed');

    // Event and audit: incident.created with splitFrom, and the split on the source.
    expect((await eventsOf(newId, 'incident.created')).map((e) => e.payload)).toEqual([
      expect.objectContaining({
        incidentId: newId,
        source: 'automated',
        severity: 'high',
        provider: 'generic',
        service,
        splitFrom: keptId,
      }),
    ]);
    expect(await auditOf(newId, 'incident.created')).toEqual([
      expect.objectContaining({ actorType: 'user', details: expect.objectContaining({ splitFrom: keptId }) }),
    ]);
    expect(await auditOf(keptId, 'incident.alert_split')).toEqual([
      expect.objectContaining({ targetType: 'alert', targetId: moving!.id, details: { newIncidentId: newId } }),
    ]);

    // Its workflow is started by the dispatcher, as for an incident a webhook opens, and triages it.
    await eventually(async () => (await incidentRow(newId)).workflowStartedAt !== null, 20_000);
    await settledAutomation(newId);
    expect((await svc.api('GET', `/v1/incidents/${newId}`, { token: tenant.member })).body).toMatchObject({
      incidentId: newId,
      source: 'automated',
    });
  });

  it("refuses the incident's only alert, an alert not in it, another tenant's and a settled incident", async () => {
    const lone = await alert();
    const elsewhere = await alert();
    await Promise.all([settledAutomation(lone), settledAutomation(elsewhere)]);
    const [only] = await alertsOf(lone);
    const [foreign] = await alertsOf(elsewhere);

    const onlyOne = await split(lone, only!.id);
    expect(onlyOne.status).toBe(409);
    expect(onlyOne.body).toMatchObject({ error: 'conflict', message: expect.stringContaining('only alert') });

    const notThere = await split(lone, foreign!.id);
    expect(notThere.status).toBe(404);
    expect(notThere.body.error).toBe('not_found');
    expect((await split(lone, 'alt_unknown')).status).toBe(404);

    const otherKey = await createKey(svc, other.admin, 'split-other');
    const theirs = await alert({}, { tenantId: other.tenantId, key: otherKey.key });
    const [theirAlert] = await alertsOf(theirs);
    expect((await split(theirs, theirAlert!.id)).status).toBe(404);
    expect((await split(lone, theirAlert!.id)).status).toBe(404);
    expect((await split(theirs, theirAlert!.id, other.member)).status).toBe(409); // its only alert, in its own tenant

    expect((await merge(lone, elsewhere)).status).toBe(200);
    const closed = await split(elsewhere, foreign!.id);
    expect(closed.status).toBe(409);
    expect(closed.body.message).toContain(`${elsewhere} is closed`);

    expect((await split(lone, 'x'.repeat(65))).status).toBe(400);
    expect((await svc.api('POST', `/v1/incidents/${lone}/alerts/${only!.id}/split`, {})).status).toBe(401);
    const viewer = svc.token(tenant.tenantId, 'viewer' as never);
    expect((await split(lone, only!.id, viewer)).status).toBe(403);
    expect((await alertsOf(lone)).map((a) => a.id).sort()).toEqual([only!.id, foreign!.id].sort());
  });
});

describe('the OpenAPI document', () => {
  it('describes both endpoints and mergedInto on the incident', async () => {
    const doc = (await svc.api('GET', '/openapi.json')).body;
    expect(doc.paths['/v1/incidents/{incidentId}/merge'].post.responses).toHaveProperty('200');
    expect(doc.paths['/v1/incidents/{incidentId}/merge'].post.responses).toHaveProperty('409');
    expect(doc.paths['/v1/incidents/{incidentId}/alerts/{alertId}/split'].post.responses).toHaveProperty('201');
    expect(doc.components.schemas.Incident.properties).toHaveProperty('mergedInto');
    expect(doc.components.schemas.IncidentSummary.properties).toHaveProperty('mergedInto');
  });
});
