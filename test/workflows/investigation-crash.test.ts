import { Context } from '@temporalio/activity';
import { and, eq } from 'drizzle-orm';
import { describe, expect, it } from 'vitest';
import { evidenceItems, investigations } from '../../src/db/schema/investigation.js';
import { events } from '../../src/db/schema/events.js';
import { usageCounters } from '../../src/db/schema/limits.js';
import { checkoutIncident } from '../helpers/remediation.js';
import { startTestWorker, useWorkerlessService } from '../helpers/workers.js';
import { createKey, eventually, postWebhook } from '../helpers/webhooks.js';

// No worker of its own: the test runs one that dies mid-investigation, then a healthy one.
const env = useWorkerlessService();

describe('a worker killed in the middle of an investigation', () => {
  it('completes on the next worker, with no duplicate evidence', async () => {
    const { svc, connection } = env;
    const tenant = await svc.newTenant({ plan: 'plan_business' });
    const key = await createKey(svc, tenant.admin);
    // The first worker's deployment agent hangs (heartbeating) after the other agents stored their evidence.
    let hung = false;
    const first = await startTestWorker(svc, connection, {
      deploymentAgent: async () => {
        hung = true;
        for (;;) {
          Context.current().heartbeat();
          await Context.current().sleep(100); // rejects when the worker shuts down
        }
      },
    });
    const id = await checkoutIncident(svc, tenant.member);
    await postWebhook(
      svc,
      tenant.tenantId,
      'generic',
      { name: 'CheckoutErrors', severity: 'high', service: 'checkout-api', summary: '5xx above 5%' },
      { key: key.key },
    );
    const started = await svc.api('POST', '/v1/investigation/', { token: tenant.member, body: { incidentId: id } });
    expect(started.status).toBe(202);
    await eventually(
      async () =>
        hung && (await svc.database.db.select().from(evidenceItems).where(eq(evidenceItems.incidentId, id))).length > 0,
    );
    const before = await svc.database.db.select().from(evidenceItems).where(eq(evidenceItems.incidentId, id));

    // Kill it: the hanging activity is cut off, nothing more runs on this worker.
    await first.stop();
    const [midway] = await svc.database.db.select().from(investigations).where(eq(investigations.incidentId, id));
    expect(midway!.status).toBe('running');

    // A healthy worker picks the investigation up where it stood.
    const second = await startTestWorker(svc, connection);
    try {
      const done = await eventually(async () => {
        const [row] = await svc.database.db.select().from(investigations).where(eq(investigations.incidentId, id));
        return row?.status === 'completed' ? row : undefined;
      }, 60_000);
      expect(done.run).toBe(1);
      expect(done.rootCause).toEqual(expect.any(String));
      const after = await svc.database.db.select().from(evidenceItems).where(eq(evidenceItems.incidentId, id));
      expect(after.length).toBeGreaterThanOrEqual(before.length);
      expect(new Set(after.map((e) => `${e.agentRole}:${e.dedupeKey}`)).size).toBe(after.length);
      for (const item of before) expect(after.find((e) => e.id === item.id)).toBeDefined();
      const kinds = (
        await svc.database.db.select().from(events).where(eq(events.incidentId, id)).orderBy(events.seq)
      ).map((e) => e.type);
      expect(kinds.filter((k) => k === 'investigation.started')).toHaveLength(1);
      expect(kinds.filter((k) => k === 'investigation.completed')).toHaveLength(1);
    } finally {
      await second.stop();
    }
  }, 90_000);
});

describe('two investigation starts that pass their checks together', () => {
  it('begins one run and charges the quota once: the second start is refused as already running', async () => {
    const { svc, connection } = env;
    const tenant = await svc.newTenant({ plan: 'plan_business' });
    // The first start is slow, so the POST's check passes while it is in flight.
    let slowed = false;
    let begins = 0;
    const worker = await startTestWorker(svc, connection, (real) => ({
      beginInvestigation: async (req: Parameters<typeof real.beginInvestigation>[0]) => {
        begins++;
        if (!slowed) {
          slowed = true;
          await new Promise((r) => setTimeout(r, 1500));
        }
        return real.beginInvestigation(req);
      },
    }));
    try {
      const id = await checkoutIncident(svc, tenant.member);
      const patch = svc.api('PATCH', `/v1/incidents/${id}`, {
        token: tenant.member,
        body: { status: 'investigating' },
      });
      await eventually(async () => slowed);
      const post = await svc.api('POST', '/v1/investigation/', { token: tenant.member, body: { incidentId: id } });
      expect((await patch).status).toBe(200);
      expect(post.status).toBe(409);
      expect(post.body).toMatchObject({ error: 'conflict', message: expect.stringMatching(/already running/) });
      expect(begins).toBe(1);
      const started = await svc.database.db.select().from(events).where(eq(events.incidentId, id));
      expect(started.filter((e) => e.type === 'investigation.started')).toHaveLength(1);
      const [usage] = await svc.database.db
        .select()
        .from(usageCounters)
        .where(and(eq(usageCounters.tenantId, tenant.tenantId), eq(usageCounters.metric, 'investigations')));
      expect(usage!.count).toBe(1);
      const [run] = await svc.database.db.select().from(investigations).where(eq(investigations.incidentId, id));
      expect(run!.run).toBe(1);
    } finally {
      await worker.stop();
    }
  }, 60_000);
});
