import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestService, type TestService } from '../helpers/service.js';
import { createKey, eventually } from '../helpers/webhooks.js';

// A service of its own without a worker: the test locks the chain heads of every tenant, and
// nothing but its own verifications may wait on that lock (a worker's audit writes would hold
// the shared pool's connections while they wait).
let svc: TestService;

beforeAll(async () => {
  svc = await startTestService({ withoutWorker: true, withoutDispatcher: true });
});
afterAll(async () => {
  await svc?.stop();
});

const verify = (t: { admin: string }, query = '') => svc.api('GET', `/v1/audit/verify${query}`, { token: t.admin });

describe('GET /v1/audit/verify', () => {
  it('runs two verifications at once per api process: the same one asked twice shares the running one, a third is 429', async () => {
    const [a, b, c] = [await svc.newTenant(), await svc.newTenant(), await svc.newTenant()];
    for (const t of [a, b, c]) await createKey(svc, t.admin); // an audited action: a chain to verify
    // Verifications wait on a lock of the chain heads another session holds, so they overlap.
    let unlock!: () => void;
    const unlocked = new Promise<void>((resolve) => (unlock = resolve));
    let tableLocked!: () => void;
    const isTableLocked = new Promise<void>((resolve) => (tableLocked = resolve));
    const holder = svc.database.sql.begin(async (tx) => {
      await tx`lock table audit_chain_heads in access exclusive mode`;
      tableLocked();
      await unlocked;
    });
    await isTableLocked;
    const waitingOnTheLock = async (count: number) =>
      eventually(async () => {
        const [row] = await svc.database.sql<{ n: number }[]>`
          select count(*)::int as n from pg_stat_activity where wait_event_type = 'Lock' and query like '%audit_entry_hash(a)%' and pid <> pg_backend_pid()`;
        return row!.n >= count;
      });
    let first, again, other;
    try {
      first = verify(a);
      await waitingOnTheLock(1);
      again = verify(a);
      other = verify(b);
      await waitingOnTheLock(2);
      const third = await verify(c);
      expect(third.status).toBe(429);
      expect(third.body).toEqual({
        error: 'rate_limit_exceeded',
        message: 'Audit chain verifications are already running on this server; retry in a few seconds',
      });
      expect(third.headers.get('retry-after')).toBe('5');
    } finally {
      unlock();
      await holder;
    }
    const [r1, r2, r3] = await Promise.all([first, again, other]);
    expect([r1.status, r2.status, r3.status]).toEqual([200, 200, 200]);
    expect(r2.body).toEqual(r1.body);
    expect(r1.body.valid).toBe(true);
    // Once they are done, the third runs.
    expect((await verify(c)).status).toBe(200);
  });
});
