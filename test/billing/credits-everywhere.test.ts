import { and, eq } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { operatorGrantCredits } from '../../src/billing/operator.js';
import { ingestedEvents } from '../../src/db/schema/ingestion.js';
import { usageCounters } from '../../src/db/schema/limits.js';
import { usagePeriod } from '../../src/domain/plans.js';
import { startTestService, type TestService } from '../helpers/service.js';
import { createKey, postWebhook } from '../helpers/webhooks.js';

// Credits bought (here granted as the operator's `tenant credits` does) must count on every path
// that judges or reports the monthly quotas, not only on the ones that call consumeQuota.
let svc: TestService;

beforeAll(async () => {
  svc = await startTestService({ withoutWorker: true });
});
afterAll(() => svc?.stop());

let alertNo = 0;
/** One firing alert of the generic webhook format, a fingerprint of its own each time. */
function alert() {
  alertNo++;
  return {
    name: `PaymentsDbConnectionErrors${alertNo}`,
    severity: 'critical',
    service: 'payments-db',
    summary: `pg connection pool exhausted on payments-db-${alertNo}`,
  };
}
const alerts = (n: number) => ({ alerts: Array.from({ length: n }, alert) });

async function setEventsUsed(tenantId: string, period: string, count: number) {
  await svc.database.db
    .update(usageCounters)
    .set({ count })
    .where(
      and(eq(usageCounters.tenantId, tenantId), eq(usageCounters.period, period), eq(usageCounters.metric, 'events')),
    );
}

describe('event credits in webhook ingestion', () => {
  it('refuses alerts once the quota is used, accepts them again up to the credits bought, and refuses after', async () => {
    const t = await svc.newTenant({ plan: 'plan_starter' });
    const key = await createKey(svc, t.admin);
    const period = usagePeriod(new Date());
    await svc.database.db.insert(usageCounters).values({ tenantId: t.tenantId, period, metric: 'events', count: 500 });

    const before = await postWebhook(svc, t.tenantId, 'generic', alerts(1), { key: key.key });
    expect(before.status).toBe(429);
    expect(before.body.error).toBe('event_quota_exceeded');

    expect(await operatorGrantCredits(svc.database.db, t.tenantId, 'events_1000', new Date())).toEqual({
      period,
      credits: { investigations: 0, events: 1000 },
    });
    const three = await postWebhook(svc, t.tenantId, 'generic', alerts(3), { key: key.key });
    expect(three.status).toBe(202);
    expect(three.body.eventIds).toHaveLength(3);

    // 1,498 of 500 + 1,000: 3 more do not fit, 2 do, then nothing.
    await setEventsUsed(t.tenantId, period, 1498);
    const over = await postWebhook(svc, t.tenantId, 'generic', alerts(3), { key: key.key });
    expect(over.status).toBe(429);
    expect(over.body).toEqual({
      error: 'event_quota_exceeded',
      message: `The monthly event quota of 500 and the 1000 credit(s) bought leave 2 event(s) for ${period}; this delivery has 3 firing alerts`,
    });
    expect((await postWebhook(svc, t.tenantId, 'generic', alerts(2), { key: key.key })).status).toBe(202);
    const last = await postWebhook(svc, t.tenantId, 'generic', alerts(1), { key: key.key });
    expect(last.status).toBe(429);
    expect(last.body.message).toBe(
      `The monthly event quota of 500 and the 1000 credit(s) bought are used up for ${period}`,
    );

    const [counter] = await svc.database.db
      .select()
      .from(usageCounters)
      .where(and(eq(usageCounters.tenantId, t.tenantId), eq(usageCounters.metric, 'events')));
    expect([counter!.count, counter!.credits]).toEqual([1500, 1000]);
    const stored = await svc.database.db
      .select({ id: ingestedEvents.id })
      .from(ingestedEvents)
      .where(eq(ingestedEvents.tenantId, t.tenantId));
    expect(stored).toHaveLength(5);
  });

  it("does not let one tenant's credits raise another tenant's limit", async () => {
    const [rich, poor] = [await svc.newTenant({ plan: 'plan_starter' }), await svc.newTenant({ plan: 'plan_starter' })];
    const poorKey = await createKey(svc, poor.admin);
    const period = usagePeriod(new Date());
    await svc.database.db
      .insert(usageCounters)
      .values({ tenantId: poor.tenantId, period, metric: 'events', count: 500 });
    await operatorGrantCredits(svc.database.db, rich.tenantId, 'events_10000', new Date());
    const res = await postWebhook(svc, poor.tenantId, 'generic', alerts(1), { key: poorKey.key });
    expect(res.status).toBe(429);
    expect(res.body.message).toBe(`The monthly event quota of 500 is reached for ${period}`);
  });
});

describe('what is left, reported with the credits', () => {
  it("a manual incident's investigationsRemaining and eventsRemaining count the credits left", async () => {
    const t = await svc.newTenant({ plan: 'plan_starter' });
    const period = usagePeriod(new Date());
    await svc.database.db.insert(usageCounters).values([
      { tenantId: t.tenantId, period, metric: 'events', count: 500 },
      { tenantId: t.tenantId, period, metric: 'investigations', count: 12 },
    ]);
    await operatorGrantCredits(svc.database.db, t.tenantId, 'events_1000', new Date());
    await operatorGrantCredits(svc.database.db, t.tenantId, 'investigations_10', new Date());

    const res = await svc.api('POST', '/v1/incidents/chat', {
      token: t.member,
      body: { title: 'Payments DB connection errors', description: 'pg pool exhausted since 03:12 UTC' },
    });
    expect(res.status).toBe(201);
    // Events: 501 used of 500 + 1,000 → 999 left. Investigations: 3 of the quota + 10 credits.
    expect(res.body).toMatchObject({ eventsRemaining: 999, investigationsRemaining: 13 });

    // With quota and credits used up, the refusal names both, as ingestion's does.
    await setEventsUsed(t.tenantId, period, 1500);
    const refused = await svc.api('POST', '/v1/incidents/chat', {
      token: t.member,
      body: { title: 'Payments DB connection errors again', description: 'pg pool exhausted again' },
    });
    expect(refused.status).toBe(429);
    expect(refused.body).toEqual({
      error: 'event_quota_exceeded',
      message: `The monthly event quota of 500 and the 1000 credit(s) bought are used up for ${period}`,
    });
  });

  it("the tenant usage route's remaining counts the credits left, the quota first", async () => {
    const t = await svc.newTenant({ plan: 'plan_starter' });
    const period = usagePeriod(new Date());
    await svc.database.db.insert(usageCounters).values([
      { tenantId: t.tenantId, period, metric: 'events', count: 700 },
      { tenantId: t.tenantId, period, metric: 'investigations', count: 5 },
    ]);
    await operatorGrantCredits(svc.database.db, t.tenantId, 'events_1000', new Date());
    await operatorGrantCredits(svc.database.db, t.tenantId, 'investigations_10', new Date());

    const res = await svc.api('GET', `/v1/tenants/${t.tenantId}/usage`, { token: t.member });
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({
      period,
      investigations: { limit: 15, used: 5, remaining: 20 },
      events: { limit: 500, used: 700, remaining: 800 },
      chatMessages: { limit: 200, used: 0, remaining: 200 },
    });
  });
});
