/**
 * Evaluation of the assistant chat's retrieval (npm run eval:chat): every question of
 * ./fixtures/questions.ts and ./fixtures/questions-engineers.ts is asked through the api over a
 * seeded history. Prints and asserts three rates:
 * - recall@3: the expected record is among the first three sources (at least 90 %);
 * - newest cited: for broad and "latest …" questions, the newest matching incident is cited in the
 *   sources and the reply (at least 90 %);
 * - broad complete: a broad question cites every matching incident, in the sources and the reply,
 *   newest first (100 %).
 * A second tenant holds the same history, and none of its records may appear in the first
 * tenant's sources. CHAT_EVAL_VERBOSE=1 prints every question with its reply.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestService, type TestService } from '../helpers/service.js';
import { incidentSeeds, seedHistory, timeOf, type SeededHistory } from './fixtures/history.js';
import { engineerQuestions } from './fixtures/questions-engineers.js';
import { evalQuestions, type EvalQuestion } from './fixtures/questions.js';

const questions: EvalQuestion[] = [...evalQuestions, ...engineerQuestions];
type Source = { type: string; id: string; title: string };

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

  /** Incident keys newest first, by the times they were seeded at. */
  const newestFirst = (keys: string[]): string[] => {
    const at = (key: string) => timeOf(incidentSeeds.find((s) => s.key === key)!.when, history.now).getTime();
    return [...keys].sort((a, b) => at(b) - at(a));
  };

  async function ask(q: EvalQuestion): Promise<{ reply: string; sources: Source[] }> {
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
    return { reply: res.body.reply as string, sources: res.body.sources as Source[] };
  }

  it('meets the recall@3, newest-cited and broad-complete thresholds over at least 120 questions', async () => {
    const misses: string[] = [];
    let hits = 0;
    let newestAsked = 0;
    let newestCited = 0;
    let broadAsked = 0;
    let broadComplete = 0;
    for (const q of questions) {
      const { reply, sources } = await ask(q);
      // Tenant isolation: only this tenant's records, ever.
      for (const s of sources) {
        expect(history.all.has(s.id)).toBe(true);
        expect(otherTenantIds.has(s.id)).toBe(false);
      }
      const matching = q.all ?? q.newestOf;
      const expected = q.expected ?? { type: 'incident', key: newestFirst(matching!)[0]! };
      const expectedId = history.ids[expected.key]!;
      const cited = (key: string) =>
        sources.some((s) => s.type === 'incident' && s.id === history.ids[key]) && reply.includes(history.ids[key]!);
      if (process.env.CHAT_EVAL_VERBOSE)
        console.log(`Q: ${q.question}\nA: ${reply}\nsources: ${sources.map((s) => s.type).join(', ')}\n`);
      const problems: string[] = [];
      if (!sources.slice(0, 3).some((s) => s.type === expected.type && s.id === expectedId))
        problems.push(`expected ${expected.type} ${expected.key} in the first three`);
      else hits += 1;
      if (matching) {
        newestAsked += 1;
        if (cited(newestFirst(matching)[0]!)) newestCited += 1;
        else problems.push(`newest ${newestFirst(matching)[0]} not cited`);
      }
      if (q.all) {
        broadAsked += 1;
        const wanted = newestFirst(q.all);
        const order = sources
          .filter((s) => s.type === 'incident')
          .map((s) => wanted.find((k) => history.ids[k] === s.id))
          .filter((k): k is string => k !== undefined);
        const uncited = wanted.filter((k) => !cited(k));
        if (uncited.length === 0 && order.join() === wanted.join()) broadComplete += 1;
        else problems.push(`broad: uncited ${uncited.join(', ') || 'none'}; order ${order.join(', ')}`);
      }
      if (problems.length)
        misses.push(
          `${q.question} → ${problems.join('; ')}; got ${
            sources
              .slice(0, 3)
              .map((s) => `${s.type}:${s.title}`)
              .join(' | ') || 'nothing'
          }`,
        );
    }
    const recall = hits / questions.length;
    const newestRate = newestCited / newestAsked;
    const broadRate = broadComplete / broadAsked;
    const pct = (x: number) => `${(x * 100).toFixed(1)} %`;
    console.log(
      `assistant chat eval over ${questions.length} questions: recall@3 ${pct(recall)} (${hits}/${questions.length}); ` +
        `newest matching incident cited ${pct(newestRate)} (${newestCited}/${newestAsked}); ` +
        `broad questions complete and newest first ${pct(broadRate)} (${broadComplete}/${broadAsked})`,
    );
    if (misses.length) console.log(`misses:\n  ${misses.join('\n  ')}`);
    expect(questions.length).toBeGreaterThanOrEqual(120);
    expect(recall).toBeGreaterThanOrEqual(0.9);
    expect(newestRate).toBeGreaterThanOrEqual(0.9);
    expect(broadRate).toBe(1);
  });
});
