/**
 * The worker's workflow cache bounded below the number of running incidents (decision 229):
 * every task of an evicted workflow replays its history, so whole lives interleaved across more
 * incidents than the cache holds prove both the bound and that replay reaches the same state.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { getStateQuery } from '../../src/workflows/messages.js';
import { startTestService, type TestService } from '../helpers/service.js';
import { eventually } from '../helpers/webhooks.js';

const CACHE = 2;
let svc: TestService;
let tenant: { tenantId: string; admin: string; member: string };

beforeAll(async () => {
  svc = await startTestService({ withoutDispatcher: true, maxCachedWorkflows: CACHE });
  tenant = await svc.newTenant();
});
afterAll(() => svc?.stop());

describe('a workflow cache smaller than the running incidents', () => {
  it('keeps at most its bound in memory, and evicted incidents go through their lives unchanged', async () => {
    const cached: number[] = [];
    const sample = () => cached.push(svc.worker!.getStatus().numCachedWorkflows);
    const ids: string[] = [];
    for (let i = 0; i < 5; i++) {
      const created = await svc.api('POST', '/v1/incidents/chat', {
        token: tenant.member,
        body: { title: `Evicted ${i}`, description: 'an incident whose workflow leaves the cache between its tasks' },
      });
      expect(created.status).toBe(201);
      ids.push(created.body.incidentId);
      sample();
    }
    const patch = async (id: string, status: string) => {
      const res = await svc.api('PATCH', `/v1/incidents/${id}`, { token: tenant.member, body: { status } });
      expect(res.status, `${id} → ${status}`).toBe(200);
      sample();
      return res.body;
    };

    // Round robin: each step reaches a workflow another one has just pushed out of the cache.
    for (const id of ids) expect((await patch(id, 'triaging')).status).toBe('triaging');
    for (const id of ids)
      await eventually(
        async () => (await svc.client.workflow.getHandle(id).query(getStateQuery)).triageRuns === 1,
        30_000,
      );
    sample();
    // Five investigations at once: their activities complete into workflows that are not cached.
    await Promise.all(ids.map((id) => patch(id, 'investigating')));
    for (const id of ids) {
      const state = await eventually(async () => {
        const s = await svc.client.workflow.getHandle(id).query(getStateQuery);
        sample();
        return s.investigationStatus === 'completed' ? s : null;
      }, 60_000);
      expect(state.triageRuns).toBe(1);
      expect(state.syntheses).toBe(1);
    }
    const running = await Promise.all(
      ids.map(async (id) => (await svc.client.workflow.getHandle(id).describe()).status.name),
    );
    expect(running).toEqual(ids.map(() => 'RUNNING'));
    for (const id of ids) expect((await patch(id, 'resolved')).status).toBe('resolved');
    for (const id of ids) expect((await patch(id, 'closed')).status).toBe('closed');

    for (const id of ids) {
      const handle = svc.client.workflow.getHandle(id);
      await handle.result();
      const history = await handle.fetchHistory();
      // A replay that went another way than the history fails its workflow task.
      expect(
        history
          .events!.filter((e) => e.workflowTaskFailedEventAttributes)
          .map((e) => e.workflowTaskFailedEventAttributes!.failure?.message),
      ).toEqual([]);
      const stored = await svc.api('GET', `/v1/incidents/${id}`, { token: tenant.member });
      expect(stored.body).toMatchObject({ status: 'closed' });
    }
    expect(Math.max(...cached)).toBeLessThanOrEqual(CACHE);
    expect(Math.max(...cached)).toBeGreaterThan(0);
  });
});
