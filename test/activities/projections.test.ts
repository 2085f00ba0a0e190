import { MockActivityEnvironment } from '@temporalio/testing';
import { and, eq } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createProjectionActivities, type StatusChange } from '../../src/activities/projections.js';
import { connectDatabase, type Database } from '../../src/db/client.js';
import { createTenant } from '../../src/db/repositories/tenants.js';
import { auditLog } from '../../src/db/schema/audit.js';
import { events } from '../../src/db/schema/events.js';
import { incidents } from '../../src/db/schema/incidents.js';
import type { IncidentView } from '../../src/workflows/messages.js';
import { createTestDatabase } from '../helpers/service.js';

let database: Database;
let activities: ReturnType<typeof createProjectionActivities>;
let tenantId: string;
const env = new MockActivityEnvironment(undefined, {
  logger: { log() {}, trace() {}, debug() {}, info() {}, warn() {}, error() {} },
});

beforeAll(async () => {
  database = connectDatabase((await createTestDatabase()).url, { max: 4 });
  activities = createProjectionActivities({ db: database.db });
  tenantId = (await createTenant(database.db, { name: 'Projection tests', plan: 'plan_pro' })).id;
});
afterAll(() => database?.close());

async function newIncident(id: string) {
  await database.db.insert(incidents).values({
    id,
    tenantId,
    title: 't',
    description: 'projection test incident',
    severity: 'medium',
    status: 'open',
    source: 'manual',
  });
}

const change = (
  incidentId: string,
  to: StatusChange['to'],
  version: number,
  from: StatusChange['from'] = 'open',
): StatusChange => ({
  incidentId,
  tenantId,
  from,
  to,
  version,
  workflowId: incidentId,
  actor: { type: 'user', id: 'u1', requestId: 'req_1' },
});

describe('projectStatusChange', () => {
  it('is idempotent: a retried write records the change, its event and its audit row once', async () => {
    await newIncident('inc_proj_retry');
    const first: IncidentView = await env.run(activities.projectStatusChange, change('inc_proj_retry', 'triaging', 2));
    const retry: IncidentView = await env.run(activities.projectStatusChange, change('inc_proj_retry', 'triaging', 2));
    expect(first.status).toBe('triaging');
    expect(retry).toEqual(first);
    const emitted = await database.db
      .select()
      .from(events)
      .where(and(eq(events.incidentId, 'inc_proj_retry'), eq(events.type, 'incident.status_changed')))
      .orderBy(events.seq);
    expect(emitted).toHaveLength(1);
    const audits = await database.db
      .select()
      .from(auditLog)
      .where(eq(auditLog.incidentId, 'inc_proj_retry'))
      .orderBy(auditLog.seq);
    expect(audits).toHaveLength(1);
    expect(audits[0]).toMatchObject({
      actorType: 'user',
      actorId: 'u1',
      requestId: 'req_1',
      workflowId: 'inc_proj_retry',
    });
  });

  it('never moves a record backwards: a late write with an older version is ignored', async () => {
    await newIncident('inc_proj_late');
    await env.run(activities.projectStatusChange, change('inc_proj_late', 'investigating', 3));
    const late: IncidentView = await env.run(activities.projectStatusChange, change('inc_proj_late', 'triaging', 2));
    expect(late.status).toBe('investigating');
    const [row] = await database.db.select().from(incidents).where(eq(incidents.id, 'inc_proj_late'));
    expect(row).toMatchObject({ status: 'investigating', version: 3 });
    const emitted = await database.db
      .select()
      .from(events)
      .where(eq(events.incidentId, 'inc_proj_late'))
      .orderBy(events.seq);
    expect(emitted.map((e) => e.payload.to)).toEqual(['investigating']);
  });

  it('emits incident.resolved alongside the status change into resolved', async () => {
    await newIncident('inc_proj_resolved');
    await env.run(activities.projectStatusChange, change('inc_proj_resolved', 'resolved', 2));
    const emitted = await database.db
      .select()
      .from(events)
      .where(eq(events.incidentId, 'inc_proj_resolved'))
      .orderBy(events.seq);
    expect(emitted.map((e) => e.type)).toEqual(['incident.status_changed', 'incident.resolved']);
  });

  it('fails without retry when the incident has no projection', async () => {
    await expect(env.run(activities.readIncident, { incidentId: 'inc_nowhere', tenantId })).rejects.toMatchObject({
      nonRetryable: true,
      type: 'IncidentMissing',
    });
  });

  it('is scoped to the tenant', async () => {
    await newIncident('inc_proj_tenant');
    const other = await createTenant(database.db, { name: 'Other', plan: 'plan_pro' });
    // For the other tenant there is no such incident: refused for good, nothing written.
    await expect(
      env.run(activities.projectStatusChange, { ...change('inc_proj_tenant', 'closed', 2), tenantId: other.id }),
    ).rejects.toMatchObject({
      nonRetryable: true,
      type: 'IncidentMissing',
    });
    const [row] = await database.db.select().from(incidents).where(eq(incidents.id, 'inc_proj_tenant'));
    expect(row).toMatchObject({ status: 'open', version: 1 });
    expect(await database.db.select().from(events).where(eq(events.incidentId, 'inc_proj_tenant'))).toEqual([]);
    expect(await database.db.select().from(auditLog).where(eq(auditLog.incidentId, 'inc_proj_tenant'))).toEqual([]);
  });
});
