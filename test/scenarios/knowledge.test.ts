/**
 * Learning through the real pipeline: an alert opens an incident that the worker triages and
 * investigates; a person corrects its root cause, which creates a pattern; the same alert later
 * opens a new incident, whose investigation's knowledge agent finds the pattern and whose
 * synthesis concludes it, its fix first; resolving that incident counts a second occurrence.
 */
import { and, eq } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { evidenceItems, investigations } from '../../src/db/schema/investigation.js';
import { patterns } from '../../src/db/schema/knowledge.js';
import { getStateQuery } from '../../src/workflows/messages.js';
import { startTestService, type TestService } from '../helpers/service.js';
import { createKey, eventually, postWebhook } from '../helpers/webhooks.js';

let svc: TestService;
beforeAll(async () => {
  svc = await startTestService();
});
afterAll(() => svc?.stop());

describe('a correction teaches the next investigation', () => {
  it('creates a pattern that the next similar incident matches, and synthesis uses it', async () => {
    const tenant = await svc.newTenant();
    const otherTenant = await svc.newTenant();
    const key = await createKey(svc, tenant.admin);
    const alert = { name: 'ReportingErrors', severity: 'high', service: 'reporting-api' };

    const open = async (summary: string) => {
      const res = await postWebhook(svc, tenant.tenantId, 'generic', { ...alert, summary }, { key: key.key });
      expect(res.status, JSON.stringify(res.body)).toBe(202);
      return res.body.incidentIds[0] as string;
    };
    const investigated = (id: string) =>
      eventually(async () => {
        const res = await svc.api('GET', `/v1/investigation/${id}`, { token: tenant.member });
        return res.status === 200 && res.body.status === 'completed' ? res.body : undefined;
      }, 60_000);

    const first = await open('reporting-api answers errors to most requests');
    await investigated(first);
    const comment =
      'The reporting-db connection pool was exhausted by a leaked cursor in the nightly export; restart pgbouncer and kill the idle connections of the export job';
    const corrected = await svc.api('POST', '/v1/knowledge/feedback', {
      token: tenant.member,
      body: { incidentId: first, type: 'correct_rca', comment },
    });
    expect(corrected.status).toBe(201);
    const pattern = corrected.body.correctedPattern;
    expect(pattern).toMatchObject({
      category: 'connection_pool',
      status: 'emerging',
      occurrences: 1,
      alertNames: ['ReportingErrors'],
      fix: ['Restart pgbouncer and kill the idle connections of the export job'],
    });
    // New context re-synthesises the investigation: the person's correction stays the incident's root cause.
    const context = await svc.api('POST', `/v1/investigation/${first}/context`, {
      token: tenant.member,
      body: { content: 'The nightly export ran right before the errors' },
    });
    expect(context.status).toBe(202);
    await eventually(
      async () => ((await svc.client.workflow.getHandle(first).query(getStateQuery)).syntheses ?? 0) >= 2,
      30_000,
    );
    expect((await svc.api('GET', `/v1/incidents/${first}`, { token: tenant.member })).body.rootCause).toBe(comment);
    const resolved = await svc.api('PATCH', `/v1/incidents/${first}`, {
      token: tenant.member,
      body: { status: 'resolved' },
    });
    expect(resolved.status).toBe(200);
    expect(resolved.body.rootCause).toBe(comment);

    // The same alert (a later notification) after the resolution opens a new incident.
    const second = await open('reporting-api answers errors to most requests again');
    expect(second).not.toBe(first);
    const result = await investigated(second);

    const found = await svc.database.db
      .select()
      .from(evidenceItems)
      .where(and(eq(evidenceItems.incidentId, second), eq(evidenceItems.agentRole, 'knowledge')));
    expect(found).toMatchObject([
      { source: 'knowledge', type: 'runbook', dedupeKey: `knowledge:${pattern.patternId}` },
    ]);
    expect(found[0]!.summary).toContain(pattern.title);
    expect(result.evidence.find((e: { agentRole: string }) => e.agentRole === 'knowledge').content).toContain(
      pattern.title,
    );

    const [row] = await svc.database.db.select().from(investigations).where(eq(investigations.incidentId, second));
    const kept = (row!.hypotheses as Array<{ kind: string; status: string; evidenceIds: string[] }>).find(
      (h) => h.status === 'kept',
    )!;
    expect(kept.kind).toBe('known_pattern');
    expect(kept.evidenceIds).toContain(found[0]!.id);
    expect(result.rootCause).toContain(comment);
    expect(result.recommendedActions[0]).toBe('Restart pgbouncer and kill the idle connections of the export job');

    // Resolving it is a second occurrence of the same pattern (the conclusion names it).
    expect(
      (await svc.api('PATCH', `/v1/incidents/${second}`, { token: tenant.member, body: { status: 'resolved' } }))
        .status,
    ).toBe(200);
    const [after] = await svc.database.db.select().from(patterns).where(eq(patterns.id, pattern.patternId));
    expect(after).toMatchObject({ occurrences: 2, status: 'emerging' });
    const listed = await svc.api('GET', '/v1/knowledge', { token: tenant.member });
    expect(listed.body).toMatchObject({ count: 1, patterns: [{ patternId: pattern.patternId, occurrences: 2 }] });

    // Another tenant learns nothing from it.
    expect((await svc.api('GET', '/v1/knowledge', { token: otherTenant.member })).body).toEqual({
      patterns: [],
      count: 0,
      cursor: null,
    });
  });
});
