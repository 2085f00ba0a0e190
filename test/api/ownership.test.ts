import { and, eq } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { events } from '../../src/db/schema/events.js';
import { incidents } from '../../src/db/schema/incidents.js';
import { services } from '../../src/db/schema/topology.js';
import { newId } from '../../src/ids.js';
import { startTestService, type TestService } from '../helpers/service.js';
import { createKey, postWebhook, type WebhookKey } from '../helpers/webhooks.js';

let svc: TestService;
let tenant: { tenantId: string; admin: string; member: string };
let other: { tenantId: string; admin: string; member: string };
let key: WebhookKey;

async function addService(tenantId: string, name: string, team: string | null, criticality: number) {
  const id = newId('svc');
  await svc.database.db.insert(services).values({ id, tenantId, name, type: 'api', team, criticality });
  return id;
}

async function createdEvent(incidentId: string) {
  const [row] = await svc.database.db
    .select()
    .from(events)
    .where(and(eq(events.incidentId, incidentId), eq(events.type, 'incident.created')))
    .orderBy(events.seq);
  return row!.payload;
}

beforeAll(async () => {
  svc = await startTestService({ withoutWorker: true, withoutDispatcher: true });
  tenant = await svc.newTenant({ plan: 'plan_business' });
  other = await svc.newTenant({ plan: 'plan_business' });
  key = await createKey(svc, tenant.admin);
});
afterAll(() => svc?.stop());

describe('incident ownership from the topology graph', () => {
  it('gives a manual incident the named service team, and marks a critical service for immediate attention', async () => {
    const serviceId = await addService(tenant.tenantId, 'payments-api', 'payments', 9);
    // The same name in another tenant must not leak into this one.
    await addService(other.tenantId, 'payments-api', 'intruders', 10);
    const res = await svc.api('POST', '/v1/incidents/chat', {
      token: tenant.member,
      body: {
        title: 'Card payments failing',
        description: 'Authorisations time out since 03:10',
        service: 'payments-api',
      },
    });
    expect(res.status).toBe(201);
    const got = await svc.api('GET', `/v1/incidents/${res.body.incidentId}`, { token: tenant.member });
    expect(got.body).toMatchObject({
      service: 'payments-api',
      serviceId,
      ownerTeam: 'payments',
      immediateAttention: true,
      occurrenceCount: 1,
    });
    expect(await createdEvent(res.body.incidentId)).toMatchObject({
      service: 'payments-api',
      serviceId,
      ownerTeam: 'payments',
      immediateAttention: true,
      criticality: 9,
    });
  });

  it('leaves the owner empty when no service node has that name, or none is named', async () => {
    const named = await svc.api('POST', '/v1/incidents/chat', {
      token: tenant.member,
      body: { title: 'Unknown service down', description: 'Nobody registered this one', service: 'ghost-service' },
    });
    const none = await svc.api('POST', '/v1/incidents/chat', {
      token: tenant.member,
      body: { title: 'No service', description: 'Something is off somewhere' },
    });
    expect(
      (await svc.api('GET', `/v1/incidents/${named.body.incidentId}`, { token: tenant.member })).body,
    ).toMatchObject({
      service: 'ghost-service',
      serviceId: null,
      ownerTeam: null,
      immediateAttention: false,
    });
    expect(
      (await svc.api('GET', `/v1/incidents/${none.body.incidentId}`, { token: tenant.member })).body,
    ).toMatchObject({ service: null, ownerTeam: null });
    expect(await createdEvent(named.body.incidentId)).toMatchObject({
      service: 'ghost-service',
      ownerTeam: null,
      immediateAttention: false,
    });
    const bad = await svc.api('POST', '/v1/incidents/chat', {
      token: tenant.member,
      body: { title: 'x', description: 'long enough text', service: 'y'.repeat(201) },
    });
    expect(bad.status).toBe(400);
    expect(bad.body.error).toBe('validation_error');
  });

  it('gives automated incidents the owner of the service their alert names, criticality deciding attention', async () => {
    const coreId = await addService(tenant.tenantId, 'search-worker', 'discovery', 5);
    const dbId = await addService(tenant.tenantId, 'orders-db', 'data', 8);
    await addService(tenant.tenantId, 'no-team', null, 10);
    const res = await postWebhook(
      svc,
      tenant.tenantId,
      'generic',
      {
        alerts: [
          { name: 'QueueLag', severity: 'warning', service: 'search-worker', summary: 'lag above 5 min' },
          { name: 'ReplicaDown', severity: 'critical', service: 'orders-db', summary: 'replica 2 down' },
          { name: 'Crashloop', severity: 'high', service: 'no-team', summary: 'pods restarting' },
          { name: 'DiskFull', severity: 'high', service: 'unregistered', summary: 'disk 95%' },
        ],
      },
      { key: key.key },
    );
    expect(res.status).toBe(202);
    expect(res.body.incidentIds).toHaveLength(4);
    const rows = await Promise.all(
      res.body.incidentIds.map(
        async (id: string) => (await svc.database.db.select().from(incidents).where(eq(incidents.id, id)))[0]!,
      ),
    );
    const byService = new Map(rows.map((r) => [r.service, r]));
    expect(byService.get('search-worker')).toMatchObject({
      serviceId: coreId,
      ownerTeam: 'discovery',
      immediateAttention: false,
    });
    expect(byService.get('orders-db')).toMatchObject({ serviceId: dbId, ownerTeam: 'data', immediateAttention: true });
    expect(byService.get('no-team')).toMatchObject({ ownerTeam: null, immediateAttention: true });
    expect(byService.get('unregistered')).toMatchObject({
      serviceId: null,
      ownerTeam: null,
      immediateAttention: false,
    });
    expect(await createdEvent(byService.get('orders-db')!.id)).toMatchObject({
      ownerTeam: 'data',
      immediateAttention: true,
      criticality: 8,
      provider: 'generic',
    });
    expect(await createdEvent(byService.get('search-worker')!.id)).toMatchObject({
      ownerTeam: 'discovery',
      immediateAttention: false,
    });
  });
});
