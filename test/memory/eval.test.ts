/**
 * Evaluation of the assistant chat's retrieval (npm run eval:chat): every question of
 * ./fixtures/questions.ts is asked through the api over a seeded history, and the expected record
 * must be among the first three sources. Prints recall@3; the target is at least 90 %. A second
 * tenant holds the same history, and none of its records may appear in the first tenant's sources.
 * CHAT_EVAL_VERBOSE=1 prints every question with its reply.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestService, type TestService } from '../helpers/service.js';
import { seedHistory, type SeededHistory } from './fixtures/history.js';
import { evalQuestions } from './fixtures/questions.js';

describe('assistant chat evaluation', () => {
  let service: TestService;
  let tenantA: { tenantId: string; member: string };
  let history: SeededHistory;
  let otherTenantIds: Set<string>;

  beforeAll(async () => {
    service = await startTestService({ withoutWorker: true });
    tenantA = await service.newTenant();
    const tenantB = await service.newTenant();
    const now = new Date();
    history = await seedHistory(service.database.db, tenantA.tenantId, now);
    otherTenantIds = (await seedHistory(service.database.db, tenantB.tenantId, now)).all;
  });
  afterAll(async () => {
    await service?.stop();
  });

  it('finds the expected record among the first three sources for at least 90 % of the questions', async () => {
    const misses: string[] = [];
    let hits = 0;
    for (const q of evalQuestions) {
      let sessionId: string | undefined;
      for (const earlier of q.before ?? []) {
        const turn = await service.api('POST', '/v1/memory/chat', {
          token: tenantA.member,
          body: { message: earlier, ...(sessionId ? { sessionId } : {}) },
        });
        expect(turn.status).toBe(200);
        sessionId = turn.body.sessionId;
      }
      const res = await service.api('POST', '/v1/memory/chat', {
        token: tenantA.member,
        body: {
          message: q.question,
          ...(sessionId ? { sessionId } : {}),
          ...(q.anchor ? { incidentId: history.ids[q.anchor] } : {}),
        },
      });
      expect(res.status).toBe(200);
      const sources = res.body.sources as Array<{ type: string; id: string; title: string }>;
      // Tenant isolation: only this tenant's records, ever.
      for (const s of sources) {
        expect(history.all.has(s.id)).toBe(true);
        expect(otherTenantIds.has(s.id)).toBe(false);
      }
      const expectedId = history.ids[q.expected.key]!;
      if (process.env.CHAT_EVAL_VERBOSE)
        console.log(`Q: ${q.question}\nA: ${res.body.reply}\nsources: ${sources.map((s) => s.type).join(', ')}\n`);
      const hit = sources.slice(0, 3).some((s) => s.type === q.expected.type && s.id === expectedId);
      if (hit) hits += 1;
      else
        misses.push(
          `${q.question} → expected ${q.expected.type} ${q.expected.key}; got ${
            sources
              .slice(0, 3)
              .map((s) => `${s.type}:${s.title}`)
              .join(' | ') || 'nothing'
          }`,
        );
    }
    const recall = hits / evalQuestions.length;
    console.log(`assistant chat recall@3: ${(recall * 100).toFixed(1)} % (${hits}/${evalQuestions.length})`);
    if (misses.length) console.log(`misses:\n  ${misses.join('\n  ')}`);
    expect(evalQuestions.length).toBeGreaterThanOrEqual(25);
    expect(recall).toBeGreaterThanOrEqual(0.9);
  });
});
