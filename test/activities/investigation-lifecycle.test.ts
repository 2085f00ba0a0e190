import { and, eq } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createInvestigationLifecycleActivities } from '../../src/activities/investigation-lifecycle.js';
import { connectDatabase, type Database } from '../../src/db/client.js';
import { createTenant } from '../../src/db/repositories/tenants.js';
import { auditLog } from '../../src/db/schema/audit.js';
import { events } from '../../src/db/schema/events.js';
import { incidents } from '../../src/db/schema/incidents.js';
import { investigations } from '../../src/db/schema/investigation.js';
import { usageCounters } from '../../src/db/schema/limits.js';
import { createTestDatabase } from '../helpers/service.js';

let database: Database;
let tenantId: string;

beforeAll(async () => {
  database = connectDatabase((await createTestDatabase()).url, { max: 6 });
  tenantId = (await createTenant(database.db, { name: 'Lifecycle tests', plan: 'plan_pro' })).id;
});
afterAll(() => database?.close());

describe('beginInvestigation', () => {
  it('two attempts of one start at once (a timed-out attempt beside its retry) begin one run and count it once', async () => {
    const { beginInvestigation } = createInvestigationLifecycleActivities({ db: database.db });
    const incidentId = 'inc_lifecycle_race';
    await database.db.insert(incidents).values({ id: incidentId, tenantId, title: 't', description: 'd', severity: 'high', status: 'investigating', source: 'manual' });
    await database.db.insert(investigations).values({ incidentId, tenantId, status: 'completed', run: 1 });
    const request = { incidentId, tenantId, actor: { type: 'user' as const, id: 'u1' }, workflowId: incidentId, requestKey: 'run-x:2', automatic: false };

    // Both attempts pass the check for a recorded start, then queue on the investigation row
    // another session holds, so they really run together.
    let locked!: () => void;
    const held = new Promise<void>((resolve) => (locked = resolve));
    const holder = database.sql.begin(async (tx) => {
      await tx`select 1 from investigations where incident_id = ${incidentId} for update`;
      locked();
      await new Promise((r) => setTimeout(r, 700));
    });
    await held;
    const [a, b] = await Promise.all([beginInvestigation(request), beginInvestigation(request)]);
    await holder;

    expect(a).toEqual({ run: 2, triaged: false });
    expect(b).toEqual(a);
    const [row] = await database.db.select().from(investigations).where(eq(investigations.incidentId, incidentId));
    expect(row).toMatchObject({ run: 2, status: 'running' });
    const [usage] = await database.db.select().from(usageCounters).where(and(eq(usageCounters.tenantId, tenantId), eq(usageCounters.metric, 'investigations')));
    expect(usage!.count).toBe(1);
    expect(await database.db.select().from(events).where(and(eq(events.incidentId, incidentId), eq(events.type, 'investigation.started')))).toHaveLength(1);
    expect(await database.db.select().from(auditLog).where(and(eq(auditLog.incidentId, incidentId), eq(auditLog.action, 'investigation.started')))).toHaveLength(1);
  });
});
