import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { and, eq } from 'drizzle-orm';
import jwt from 'jsonwebtoken';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BUILTIN_MODEL } from '../../src/analysis/builtin-triage.js';
import { createBuiltinProvider, createOpenAiCompatibleProvider } from '../../src/analysis/providers.js';
import type { ModelProvider } from '../../src/analysis/types.js';
import { auditLog } from '../../src/db/schema/audit.js';
import { chatMessages, chatSessions } from '../../src/db/schema/knowledge.js';
import { usageCounters } from '../../src/db/schema/limits.js';
import { usagePeriod } from '../../src/domain/plans.js';
import {
  startTestService,
  TEST_JWT_SECRET,
  TOKEN_AUDIENCE,
  TOKEN_ISSUER,
  type TestService,
} from '../helpers/service.js';
import { seedHistory, type SeededHistory } from '../memory/fixtures/history.js';

/** The api's model: the built-in responder unless a test switches it to a model. */
let currentModel: ModelProvider = createBuiltinProvider();
const switchableModel: ModelProvider = {
  name: 'switchable',
  triage: (input) => currentModel.triage(input),
  synthesize: (input, builtin) => currentModel.synthesize(input, builtin),
  answer: (input) => currentModel.answer(input),
};

describe('assistant chat api', () => {
  let svc: TestService;
  let tenant: { tenantId: string; admin: string; member: string };
  let other: { tenantId: string; admin: string; member: string };
  let history: SeededHistory;
  let otherHistory: SeededHistory;

  const chat = (token: string, body: unknown) => svc.api('POST', '/v1/memory/chat', { token, body });

  beforeAll(async () => {
    svc = await startTestService({ withoutWorker: true, model: switchableModel });
    tenant = await svc.newTenant();
    other = await svc.newTenant();
    history = await seedHistory(svc.database.db, tenant.tenantId);
    otherHistory = await seedHistory(svc.database.db, other.tenantId);
  });
  afterAll(async () => {
    await svc?.stop();
  });

  it('answers a question from the history and stores the exchange, its sources and an audit entry', async () => {
    const res = await chat(tenant.member, { message: 'What caused the last checkout outage?' });
    expect(res.status).toBe(200);
    expect(Object.keys(res.body).sort()).toEqual(['messageId', 'reply', 'sessionId', 'sources', 'timestamp']);
    expect(res.body.sessionId).toMatch(/^sess_/);
    expect(res.body.messageId).toMatch(/^msg_/);
    expect(new Date(res.body.timestamp).toISOString()).toBe(res.body.timestamp);
    const incidentId = history.ids['checkout-config']!;
    expect(res.body.sources.slice(0, 2)).toEqual([
      { type: 'incident', id: incidentId, title: 'Checkout outage after a configuration push' },
      { type: 'investigation', id: incidentId, title: 'Investigation of "Checkout outage after a configuration push"' },
    ]);
    expect(res.body.reply).toContain(incidentId);
    expect(res.body.reply).toContain('payment gateway timeout to 50 ms');

    const [session] = await svc.database.db.select().from(chatSessions).where(eq(chatSessions.id, res.body.sessionId));
    expect(session).toMatchObject({
      tenantId: tenant.tenantId,
      userId: 'user-member',
      incidentId: null,
      title: 'What caused the last checkout outage?',
      messageCount: 2,
    });
    const messages = await svc.database.db
      .select()
      .from(chatMessages)
      .where(eq(chatMessages.sessionId, res.body.sessionId))
      .orderBy(chatMessages.createdAt);
    expect(messages.map((m) => m.role)).toEqual(['user', 'assistant']);
    expect(messages[0]).toMatchObject({ content: 'What caused the last checkout outage?', sources: [], model: null });
    expect(messages[1]).toMatchObject({
      id: res.body.messageId,
      content: res.body.reply,
      sources: res.body.sources,
      model: BUILTIN_MODEL,
      tokensUsed: 0,
      costUsd: 0,
    });
    expect(messages[1]!.createdAt.toISOString()).toBe(res.body.timestamp);

    const audit = await svc.database.db
      .select()
      .from(auditLog)
      .where(
        and(
          eq(auditLog.tenantId, tenant.tenantId),
          eq(auditLog.action, 'memory.chat_message'),
          eq(auditLog.targetId, res.body.sessionId),
        ),
      )
      .orderBy(auditLog.seq);
    expect(audit).toHaveLength(1);
    expect(audit[0]).toMatchObject({ actorType: 'user', actorId: 'user-member', targetType: 'chat_session' });
    expect(audit[0]!.details).toMatchObject({
      messageId: res.body.messageId,
      userMessageId: messages[0]!.id,
      sourceCount: res.body.sources.length,
      newSession: true,
    });
    expect(JSON.stringify(audit[0]!.details)).not.toContain('checkout');
  });

  it('continues a session: a follow-up uses the earlier subject and the session counts both exchanges', async () => {
    const first = await chat(tenant.admin, { message: 'How many incidents did payments-db have this month?' });
    expect(first.status).toBe(200);
    expect(first.body.reply).toMatch(/^payments-db had 3 incidents this month/);
    expect(first.body.sources.map((s: { id: string }) => s.id)).toEqual([
      history.ids['pdb-pool'],
      history.ids['pdb-lag'],
      history.ids['pdb-disk'],
    ]);

    const second = await chat(tenant.admin, { message: 'and last month?', sessionId: first.body.sessionId });
    expect(second.status).toBe(200);
    expect(second.body.sessionId).toBe(first.body.sessionId);
    expect(second.body.reply).toMatch(/^payments-db had 1 incident last month/);
    expect(second.body.sources).toEqual([
      { type: 'incident', id: history.ids['pdb-failover'], title: 'payments-db failover after the primary crashed' },
    ]);

    const third = await chat(tenant.admin, {
      message: 'What caused the payments-db connection pool exhaustion?',
      sessionId: first.body.sessionId,
    });
    const fourth = await chat(tenant.admin, { message: 'And how was it fixed?', sessionId: first.body.sessionId });
    expect(third.body.sources[0]).toMatchObject({ type: 'incident', id: history.ids['pdb-pool'] });
    expect(fourth.body.sources.slice(0, 2).map((s: { type: string; id: string }) => `${s.type}:${s.id}`)).toEqual([
      `incident:${history.ids['pdb-pool']}`,
      `investigation:${history.ids['pdb-pool']}`,
    ]);
    expect(fourth.body.reply).toContain('Terminate the idle-in-transaction analytics sessions');

    const [session] = await svc.database.db
      .select()
      .from(chatSessions)
      .where(eq(chatSessions.id, first.body.sessionId));
    expect(session!.messageCount).toBe(8);
    expect(session!.userId).toBe('user-admin');
  });

  it('anchors the conversation to an incident and keeps the anchor for the session', async () => {
    const incidentId = history.ids['checkout-502']!;
    const res = await chat(tenant.member, { message: 'What evidence do we have?', incidentId });
    expect(res.status).toBe(200);
    expect(res.body.sources.map((s: { id: string }) => s.id)).toEqual(
      expect.arrayContaining([history.ids['checkout-502-deploy'], history.ids['checkout-502-alert']]),
    );
    expect(res.body.sources.every((s: { type: string }) => s.type === 'evidence')).toBe(true);
    const [session] = await svc.database.db.select().from(chatSessions).where(eq(chatSessions.id, res.body.sessionId));
    expect(session!.incidentId).toBe(incidentId);

    const next = await chat(tenant.member, { message: 'What was the root cause?', sessionId: res.body.sessionId });
    expect(next.body.sources[0]).toEqual({
      type: 'incident',
      id: incidentId,
      title: 'Checkout outage: 502 errors from checkout-api',
    });
    expect(next.body.reply).toContain('nil pointer dereference');
  });

  it('says so, with no sources, when nothing in the history matches', async () => {
    const res = await chat(tenant.member, { message: 'quantum entanglement of the llamas' });
    expect(res.status).toBe(200);
    expect(res.body.sources).toEqual([]);
    expect(res.body.reply).toMatch(/found nothing/);
  });

  it("retrieves only the caller's tenant's records", async () => {
    for (const message of [
      'What caused the last checkout outage?',
      'Which runbook fixes connection pool exhaustion?',
      'Have we seen redis memory evictions before?',
      'How many incidents did we have last month?',
    ]) {
      const mine = await chat(other.member, { message });
      expect(mine.status).toBe(200);
      expect(mine.body.sources.length).toBeGreaterThan(0);
      for (const source of mine.body.sources) {
        expect(otherHistory.all.has(source.id)).toBe(true);
        expect(history.all.has(source.id)).toBe(false);
      }
    }
  });

  it('refuses an invalid message with 400 validation_error and stores nothing', async () => {
    const stored = async () => ({
      sessions: (await svc.database.db.select().from(chatSessions).where(eq(chatSessions.tenantId, tenant.tenantId)))
        .length,
      messages: (await svc.database.db.select().from(chatMessages).where(eq(chatMessages.tenantId, tenant.tenantId)))
        .length,
      counted: (
        await svc.database.db
          .select()
          .from(usageCounters)
          .where(and(eq(usageCounters.tenantId, tenant.tenantId), eq(usageCounters.metric, 'chat_messages')))
      ).map((r) => r.count),
      audited: (await svc.database.db.select().from(auditLog).where(eq(auditLog.tenantId, tenant.tenantId))).length,
    });
    const before = await stored();
    const bodies: unknown[] = [
      {},
      { message: '' },
      { message: '   \n ' },
      { message: '\u200b\u2060' },
      { message: 'x'.repeat(4001) },
      { message: 42 },
      { message: 'hi', sessionId: '' },
      { message: 'hi', unknown: true },
    ];
    for (const body of bodies) {
      const res = await chat(tenant.member, body);
      expect(res.status, JSON.stringify(body).slice(0, 60)).toBe(400);
      expect(res.body.error).toBe('validation_error');
    }
    const malformed = await svc.api('POST', '/v1/memory/chat', {
      token: tenant.member,
      rawBody: '{"message":',
      headers: { 'content-type': 'application/json' },
    });
    expect(malformed.status).toBe(400);
    expect(await stored()).toEqual(before);
    // The longest message allowed is answered.
    expect((await chat(tenant.member, { message: `payments-db ${'x'.repeat(3988)}` })).status).toBe(200);
  });

  it('needs a token with the member or admin role', async () => {
    expect((await svc.api('POST', '/v1/memory/chat', { body: { message: 'hi' } })).status).toBe(401);
    expect((await svc.api('GET', '/v1/memory/sessions')).status).toBe(401);
    const viewer = jwt.sign({ tenant_id: tenant.tenantId, roles: ['viewer'] }, TEST_JWT_SECRET, {
      algorithm: 'HS256',
      issuer: TOKEN_ISSUER,
      audience: TOKEN_AUDIENCE,
      subject: 'u-viewer',
      expiresIn: 600,
    });
    const refused = await svc.api('POST', '/v1/memory/chat', { token: viewer, body: { message: 'hi' } });
    expect(refused.status).toBe(403);
    expect(refused.body.error).toBe('forbidden');
  });

  it("answers 404 not_found for an unknown session, another user's or another tenant's, and an unknown incident", async () => {
    const mine = await chat(tenant.member, { message: 'What runbook covers kafka consumer lag?' });
    const colleague = svc.token(tenant.tenantId, 'member', { sub: 'user-colleague' });
    const cases: Array<[string, unknown]> = [
      [tenant.member, { message: 'hi', sessionId: 'sess_unknown' }],
      [colleague, { message: 'and how was it fixed?', sessionId: mine.body.sessionId }],
      [other.member, { message: 'and how was it fixed?', sessionId: mine.body.sessionId }],
      [tenant.member, { message: 'what happened?', incidentId: 'inc_unknown' }],
      [tenant.member, { message: 'what happened?', incidentId: otherHistory.ids['checkout-502'] }],
      [tenant.admin, { message: 'what happened?', sessionId: mine.body.sessionId }],
    ];
    for (const [token, body] of cases) {
      const res = await chat(token, body);
      expect(res.status, JSON.stringify(body)).toBe(404);
      expect(res.body.error).toBe('not_found');
    }
    for (const token of [colleague, other.member]) {
      const res = await svc.api('GET', `/v1/memory/sessions/${mine.body.sessionId}/messages`, { token });
      expect(res.status).toBe(404);
      expect(res.body.error).toBe('not_found');
    }
    const [session] = await svc.database.db.select().from(chatSessions).where(eq(chatSessions.id, mine.body.sessionId));
    expect(session!.messageCount).toBe(2);
  });

  it('answers 429 quota_exceeded past the monthly chat messages and stores nothing for a refused question', async () => {
    const limited = await svc.newTenant({ plan: 'plan_enterprise', settings: { quotas: { chatMessagesPerMonth: 2 } } });
    await seedHistory(svc.database.db, limited.tenantId);
    const period = usagePeriod(new Date());
    expect((await chat(limited.member, { message: 'Which runbook fixes connection pool exhaustion?' })).status).toBe(
      200,
    );
    // Two questions at once with one message left: exactly one is answered, whichever check refuses the other.
    const racing = await Promise.all([
      chat(limited.member, { message: 'What caused the last checkout outage?' }),
      chat(limited.admin, { message: 'Have we seen redis memory evictions before?' }),
      chat(limited.admin, { message: 'Why did search-api time out?' }),
    ]);
    expect(racing.map((r) => r.status).sort()).toEqual([200, 429, 429]);
    for (const refused of racing.filter((r) => r.status === 429)) {
      expect(refused.body.error).toBe('quota_exceeded');
      expect(refused.body.message).toContain('quota of 2 messages');
    }
    const [counter] = await svc.database.db
      .select()
      .from(usageCounters)
      .where(
        and(
          eq(usageCounters.tenantId, limited.tenantId),
          eq(usageCounters.metric, 'chat_messages'),
          eq(usageCounters.period, period),
        ),
      );
    expect(counter!.count).toBe(2);
    const sessions = await svc.database.db
      .select()
      .from(chatSessions)
      .where(eq(chatSessions.tenantId, limited.tenantId));
    const messages = await svc.database.db
      .select()
      .from(chatMessages)
      .where(eq(chatMessages.tenantId, limited.tenantId));
    expect(sessions).toHaveLength(2);
    expect(messages).toHaveLength(4);
    const audits = await svc.database.db
      .select()
      .from(auditLog)
      .where(and(eq(auditLog.tenantId, limited.tenantId), eq(auditLog.action, 'memory.chat_message')))
      .orderBy(auditLog.seq);
    expect(audits).toHaveLength(2);
    // Continuing a session is refused too.
    const more = await chat(limited.member, { message: 'and how was it fixed?', sessionId: sessions[0]!.id });
    expect(more.status).toBe(429);
  });

  it("lists the caller's own sessions, newest first, in pages", async () => {
    const user = svc.token(tenant.tenantId, 'member', { sub: 'user-pager' });
    const asked: string[] = [];
    for (const message of [
      'Why did search-api time out?',
      'What runbook covers kafka consumer lag?',
      'bcrypt cost factor',
    ]) {
      asked.push((await chat(user, { message })).body.sessionId);
    }
    await chat(svc.token(tenant.tenantId, 'member', { sub: 'user-someone-else' }), {
      message: 'Why did search-api time out?',
    });

    const first = await svc.api('GET', '/v1/memory/sessions?limit=2', { token: user });
    expect(first.status).toBe(200);
    expect(first.body.total).toBe(3);
    expect(first.body.items.map((s: { sessionId: string }) => s.sessionId)).toEqual([asked[2], asked[1]]);
    expect(first.body.items[0]).toMatchObject({ title: 'bcrypt cost factor', incidentId: null, messageCount: 2 });
    expect(Object.keys(first.body.items[0]).sort()).toEqual([
      'createdAt',
      'incidentId',
      'messageCount',
      'sessionId',
      'title',
      'updatedAt',
    ]);
    expect(first.body.nextCursor).toEqual(expect.any(String));
    const second = await svc.api('GET', `/v1/memory/sessions?limit=2&cursor=${first.body.nextCursor}`, { token: user });
    expect(second.body.items.map((s: { sessionId: string }) => s.sessionId)).toEqual([asked[0]]);
    expect(second.body.nextCursor).toBeNull();

    expect((await svc.api('GET', '/v1/memory/sessions?cursor=not-a-cursor', { token: user })).status).toBe(400);
    expect((await svc.api('GET', '/v1/memory/sessions?limit=101', { token: user })).status).toBe(400);
    const none = await svc.api('GET', '/v1/memory/sessions', {
      token: svc.token(other.tenantId, 'member', { sub: 'user-pager' }),
    });
    expect(none.body).toEqual({ items: [], total: 0, nextCursor: null });
  });

  it("lists a session's messages oldest first, in pages, with the assistant's sources", async () => {
    const user = svc.token(tenant.tenantId, 'admin', { sub: 'user-history' });
    const first = await chat(user, { message: 'What caused the payments-db connection pool exhaustion?' });
    const second = await chat(user, { message: 'And how was it fixed?', sessionId: first.body.sessionId });

    const page1 = await svc.api('GET', `/v1/memory/sessions/${first.body.sessionId}/messages?limit=3`, { token: user });
    expect(page1.status).toBe(200);
    expect(page1.body.sessionId).toBe(first.body.sessionId);
    expect(page1.body.total).toBe(4);
    expect(page1.body.items.map((m: { role: string }) => m.role)).toEqual(['user', 'assistant', 'user']);
    expect(page1.body.items[0]).toMatchObject({
      content: 'What caused the payments-db connection pool exhaustion?',
      sources: [],
      model: null,
      tokensUsed: 0,
      costUsd: 0,
    });
    expect(page1.body.items[1]).toMatchObject({
      messageId: first.body.messageId,
      content: first.body.reply,
      sources: first.body.sources,
      model: BUILTIN_MODEL,
    });
    expect(Object.keys(page1.body.items[1]).sort()).toEqual([
      'content',
      'costUsd',
      'createdAt',
      'messageId',
      'model',
      'role',
      'sources',
      'tokensUsed',
    ]);
    const page2 = await svc.api(
      'GET',
      `/v1/memory/sessions/${first.body.sessionId}/messages?limit=3&cursor=${page1.body.nextCursor}`,
      { token: user },
    );
    expect(page2.body.items.map((m: { messageId: string }) => m.messageId)).toEqual([second.body.messageId]);
    expect(page2.body.nextCursor).toBeNull();

    const unknown = await svc.api('GET', '/v1/memory/sessions/sess_unknown/messages', { token: user });
    expect(unknown.status).toBe(404);
    expect(unknown.body.error).toBe('not_found');
    // A cursor of the newest-first session list does not page an oldest-first conversation.
    const sessions = await svc.api('GET', '/v1/memory/sessions?limit=1', { token: tenant.member });
    expect(
      (
        await svc.api(
          'GET',
          `/v1/memory/sessions/${first.body.sessionId}/messages?cursor=${sessions.body.nextCursor}`,
          { token: user },
        )
      ).status,
    ).toBe(400);
  });

  it('documents the chat endpoints in the OpenAPI document', async () => {
    const doc = await svc.api('GET', '/openapi.json');
    expect(doc.status).toBe(200);
    expect(Object.keys(doc.body.paths)).toEqual(
      expect.arrayContaining(['/v1/memory/chat', '/v1/memory/sessions', '/v1/memory/sessions/{sessionId}/messages']),
    );
    expect(Object.keys(doc.body.paths['/v1/memory/chat'].post.responses).sort()).toEqual([
      '200',
      '400',
      '401',
      '403',
      '404',
      '413',
      '429',
      '503',
    ]);
  });

  describe('with an OpenAI-compatible model', () => {
    let server: Server;
    let baseUrl: string;
    let content = '';
    const requests: any[] = [];

    beforeAll(async () => {
      server = createServer((req, res) => {
        let body = '';
        req.on('data', (c: Buffer) => (body += c.toString()));
        req.on('end', () => {
          requests.push(JSON.parse(body));
          res.setHeader('content-type', 'application/json');
          res.end(
            JSON.stringify({
              model: 'fake-gpt-1',
              choices: [{ message: { role: 'assistant', content } }],
              usage: { total_tokens: 1500 },
            }),
          );
        });
      });
      await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
      baseUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1`;
      currentModel = createOpenAiCompatibleProvider({
        baseUrl,
        model: 'fake-gpt-1',
        timeoutMs: 5000,
        costPer1kTokens: 0.2,
      });
    });
    afterAll(async () => {
      currentModel = createBuiltinProvider();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    });

    it('writes the reply with the model and records its tokens and cost on the assistant message', async () => {
      const runbookId = history.ids['rb-pool']!;
      content = JSON.stringify({
        reply: `Follow the runbook [${runbookId}]: terminate idle sessions, then restart pgbouncer.`,
        sources: [{ type: 'runbook', id: runbookId }],
      });
      const res = await chat(tenant.member, { message: 'Which runbook fixes connection pool exhaustion?' });
      expect(res.status).toBe(200);
      expect(res.body.reply).toBe(
        `Follow the runbook [${runbookId}]: terminate idle sessions, then restart pgbouncer.`,
      );
      expect(res.body.sources).toEqual([
        { type: 'runbook', id: runbookId, title: 'Postgres connection pool exhaustion' },
      ]);
      const input = JSON.parse(requests.at(-1).messages[1].content);
      expect(input.question).toBe('Which runbook fixes connection pool exhaustion?');
      expect(input.intent).toEqual({ kind: 'runbook' });
      expect(input.facts[0]).toMatchObject({
        type: 'runbook',
        id: runbookId,
        actions: expect.arrayContaining(['Restart the pgbouncer pool']),
      });
      const [message] = await svc.database.db
        .select()
        .from(chatMessages)
        .where(eq(chatMessages.id, res.body.messageId));
      expect(message).toMatchObject({ model: 'fake-gpt-1', tokensUsed: 1500, costUsd: 0.3 });
    });

    it('falls back to the built-in responder when the model cites a record it was not given', async () => {
      content = JSON.stringify({ reply: 'See [rbk_made_up].', sources: [{ type: 'runbook', id: 'rbk_made_up' }] });
      const res = await chat(tenant.member, { message: 'Which runbook fixes connection pool exhaustion?' });
      expect(res.status).toBe(200);
      expect(res.body.reply).toMatch(/^Runbook "Postgres connection pool exhaustion"/);
      expect(res.body.sources[0]).toMatchObject({ type: 'runbook', id: history.ids['rb-pool'] });
      const [message] = await svc.database.db
        .select()
        .from(chatMessages)
        .where(eq(chatMessages.id, res.body.messageId));
      expect(message).toMatchObject({ model: BUILTIN_MODEL, tokensUsed: 0, costUsd: 0 });
    });
  });
});
