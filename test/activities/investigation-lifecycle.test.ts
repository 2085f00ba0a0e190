/**
 * The start of an investigation run against a real PostgreSQL. An alert storm repeats the
 * incident's alert while the run starts, and every ingestion batch that carries a repeat
 * updates the incident row: a first run must not lock that row (a lock is held to the commit,
 * and the batch, with every webhook request in it, would wait behind it). A rerun clears the
 * root cause the last run found.
 */
import { MockActivityEnvironment } from '@temporalio/testing';
import { and, eq } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createInvestigationLifecycleActivities } from '../../src/activities/investigation-lifecycle.js';
import { connectDatabase, type Database } from '../../src/db/client.js';
import { createTenant } from '../../src/db/repositories/tenants.js';
import { events } from '../../src/db/schema/events.js';
import { incidents } from '../../src/db/schema/incidents.js';
import { investigations } from '../../src/db/schema/investigation.js';
import { createTestDatabase } from '../helpers/service.js';

let database: Database;
let activities: ReturnType<typeof createInvestigationLifecycleActivities>;
let tenantId: string;
const env = new MockActivityEnvironment(undefined, { logger: { log() {}, trace() {}, debug() {}, info() {}, warn() {}, error() {} } });

beforeAll(async () => {
  database = connectDatabase((await createTestDatabase()).url, { max: 4 });
  activities = createInvestigationLifecycleActivities({ db: database.db });
  tenantId = (await createTenant(database.db, { name: 'Investigation start tests', plan: 'plan_pro' })).id;
});
afterAll(() => database?.close());

const start = (incidentId: string, requestKey: string) =>
  env.run(activities.beginInvestigation, {
    incidentId,
    tenantId,
    actor: { type: 'system' as const, id: 'incident-workflow' },
    workflowId: incidentId,
    requestKey,
    automatic: true,
  });

async function newIncident(id: string, rootCause: string | null) {
  await database.db.insert(incidents).values({
    id, tenantId, title: 'Checkout errors', description: 'storm', severity: 'high', status: 'investigating', source: 'automated',
    fingerprint: `fp-${id}`, rootCause,
  });
}

describe('beginInvestigation', () => {
  it("starts a first run while an ingestion batch holds the incident's row, without waiting for it", async () => {
    await newIncident('inc_begin_first', null);
    const [before] = await database.db.select({ updatedAt: incidents.updatedAt }).from(incidents).where(eq(incidents.id, 'inc_begin_first'));
    // The row lock an ingestion batch takes with its repeat's update, held until released.
    const reserved = await database.sql.reserve();
    await reserved`begin`;
    await reserved`update incidents set occurrence_count = occurrence_count + 1 where id = 'inc_begin_first'`;
    let outcome: unknown;
    try {
      outcome = await Promise.race([start('inc_begin_first', 'first'), new Promise((resolve) => setTimeout(() => resolve('waited for the row lock'), 3_000))]);
    } finally {
      await reserved`commit`;
      reserved.release();
    }
    expect(outcome).toEqual({ run: 1, triaged: false });
    const [row] = await database.db.select().from(investigations).where(eq(investigations.incidentId, 'inc_begin_first'));
    expect(row).toMatchObject({ status: 'running', run: 1, tenantId });
    const started = await database.db.select().from(events).where(and(eq(events.incidentId, 'inc_begin_first'), eq(events.type, 'investigation.started')));
    expect(started.map((e) => e.payload)).toEqual([{ incidentId: 'inc_begin_first', run: 1, actorType: 'system', actorId: 'incident-workflow' }]);
    const [incident] = await database.db.select().from(incidents).where(eq(incidents.id, 'inc_begin_first'));
    expect(incident).toMatchObject({ rootCause: null, occurrenceCount: 2 });
    expect(incident!.updatedAt).toEqual(before!.updatedAt);
  });

  it('clears the root cause an earlier run found when the next run starts', async () => {
    await newIncident('inc_begin_rerun', null);
    expect(await start('inc_begin_rerun', 'one')).toEqual({ run: 1, triaged: false });
    await database.db.update(incidents).set({ rootCause: 'Connection pool exhausted by the 14:02 deploy' }).where(eq(incidents.id, 'inc_begin_rerun'));
    await database.db.update(investigations).set({ status: 'completed', rootCause: 'Connection pool exhausted by the 14:02 deploy' }).where(eq(investigations.incidentId, 'inc_begin_rerun'));

    expect(await start('inc_begin_rerun', 'two')).toEqual({ run: 2, triaged: false });
    const [incident] = await database.db.select().from(incidents).where(eq(incidents.id, 'inc_begin_rerun'));
    expect(incident!.rootCause).toBeNull();
    const [row] = await database.db.select().from(investigations).where(eq(investigations.incidentId, 'inc_begin_rerun'));
    expect(row).toMatchObject({ status: 'running', run: 2, rootCause: null });
    // A retried start (same request key) answers the same run and writes nothing again.
    expect(await start('inc_begin_rerun', 'two')).toEqual({ run: 2, triaged: false });
    const started = await database.db.select().from(events).where(and(eq(events.incidentId, 'inc_begin_rerun'), eq(events.type, 'investigation.started')));
    expect(started.map((e) => e.payload.run)).toEqual([1, 2]);
  });
});
