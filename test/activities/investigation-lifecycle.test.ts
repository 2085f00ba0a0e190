import { and, eq } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createInvestigationLifecycleActivities } from '../../src/activities/investigation-lifecycle.js';
import { connectDatabase, type Database } from '../../src/db/client.js';
import { createTenant } from '../../src/db/repositories/tenants.js';
import { auditLog } from '../../src/db/schema/audit.js';
import { events } from '../../src/db/schema/events.js';
import { incidents } from '../../src/db/schema/incidents.js';
import { investigations } from '../../src/db/schema/investigation.js';
import { rootCauseRevisions } from '../../src/db/schema/knowledge.js';
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
    await database.db.insert(incidents).values({
      id: incidentId,
      tenantId,
      title: 't',
      description: 'd',
      severity: 'high',
      status: 'investigating',
      source: 'manual',
    });
    await database.db.insert(investigations).values({ incidentId, tenantId, status: 'completed', run: 1 });
    const request = {
      incidentId,
      tenantId,
      actor: { type: 'user' as const, id: 'u1' },
      workflowId: incidentId,
      requestKey: 'run-x:2',
      automatic: false,
    };

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
    const [usage] = await database.db
      .select()
      .from(usageCounters)
      .where(and(eq(usageCounters.tenantId, tenantId), eq(usageCounters.metric, 'investigations')));
    expect(usage!.count).toBe(1);
    expect(
      await database.db
        .select()
        .from(events)
        .where(and(eq(events.incidentId, incidentId), eq(events.type, 'investigation.started'))),
    ).toHaveLength(1);
    expect(
      await database.db
        .select()
        .from(auditLog)
        .where(and(eq(auditLog.incidentId, incidentId), eq(auditLog.action, 'investigation.started'))),
    ).toHaveLength(1);
  });

  it("keeps a person's correction committed while the start waited for the incident row (decision 234)", async () => {
    const { beginInvestigation } = createInvestigationLifecycleActivities({ db: database.db });
    const incidentId = 'inc_lifecycle_corrected';
    await database.db.insert(incidents).values({
      id: incidentId,
      tenantId,
      title: 't',
      description: 'd',
      severity: 'high',
      status: 'investigating',
      source: 'manual',
      rootCause: 'the machine said so',
    });
    // A second run: its investigation row is updated, which takes no key lock on the incident
    // (an insert's foreign key check would wait for the feedback's lock before the UPDATE began).
    await database.db.insert(investigations).values({ incidentId, tenantId, status: 'completed', run: 1 });
    // Feedback correct_rca, as submitFeedback writes it: the incident row locked, the revision
    // and the corrected root cause written, committed while the start waits for the row.
    let corrected!: () => void;
    const held = new Promise<void>((resolve) => (corrected = resolve));
    const feedback = database.sql.begin(async (tx) => {
      await tx`select 1 from incidents where id = ${incidentId} for update`;
      await tx`insert into root_cause_revisions (id, tenant_id, incident_id, previous_root_cause, root_cause, source, actor_id) values ('rcr_lifecycle', ${tenantId}, ${incidentId}, 'the machine said so', 'a person knows better', 'feedback', 'u1')`;
      await tx`update incidents set root_cause = 'a person knows better' where id = ${incidentId}`;
      corrected();
      await new Promise((r) => setTimeout(r, 700));
    });
    await held;
    const started = beginInvestigation({
      incidentId,
      tenantId,
      actor: { type: 'system' as const, id: 'workflow' },
      workflowId: incidentId,
      requestKey: 'run-y:1',
      automatic: true,
    });
    await feedback;
    expect(await started).toEqual({ run: 2, triaged: false });

    const [row] = await database.db
      .select({ rootCause: incidents.rootCause })
      .from(incidents)
      .where(eq(incidents.id, incidentId));
    expect(row!.rootCause).toBe('a person knows better');
    expect(
      await database.db.select().from(rootCauseRevisions).where(eq(rootCauseRevisions.incidentId, incidentId)),
    ).toHaveLength(1);
  });
});
