import { and, eq } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { patternConfidence, signatureKey, type PatternCategory } from '../../src/domain/patterns.js';
import { auditLog } from '../../src/db/schema/audit.js';
import { events } from '../../src/db/schema/events.js';
import { incidents } from '../../src/db/schema/incidents.js';
import { investigations } from '../../src/db/schema/investigation.js';
import { feedback, patternOccurrences, patterns, rootCauseRevisions } from '../../src/db/schema/knowledge.js';
import { newId } from '../../src/ids.js';
import { signatureLockKey } from '../../src/db/repositories/patterns.js';
import { startTestService, type TestService } from '../helpers/service.js';
import { eventually } from '../helpers/webhooks.js';

let svc: TestService;
let tenant: { tenantId: string; admin: string; member: string };
let other: { tenantId: string; admin: string; member: string };

beforeAll(async () => {
  svc = await startTestService({ withoutDispatcher: true });
  tenant = await svc.newTenant();
  other = await svc.newTenant();
});
afterAll(() => svc?.stop());

const db = () => svc.database.db;
let serial = 0;
/** A fresh service name, so each test's patterns stand apart. */
const freshService = () => `svc-${Date.now().toString(36)}-${++serial}`;

async function manualIncident(service: string, token = tenant.member): Promise<string> {
  const res = await svc.api('POST', '/v1/incidents/chat', {
    token,
    body: { title: `${service} errors`, description: `${service} answers 502 errors to most requests`, service },
  });
  expect(res.status, JSON.stringify(res.body)).toBe(201);
  return res.body.incidentId as string;
}

/** The investigation's conclusion, as synthesis stores it (the engine itself is proven elsewhere). */
async function concluded(incidentId: string, tenantId: string, kind: string, statement: string) {
  await db()
    .insert(investigations)
    .values({
      incidentId,
      tenantId,
      status: 'completed',
      rootCause: `${statement}. Evidence: …`,
      confidence: 0.8,
      recommendedActions: ['Restart pgbouncer', 'Raise max_connections'],
      hypotheses: [
        { kind, statement, subject: 'orders-db', score: 0.8, status: 'kept', reason: 'highest', evidenceIds: [] },
        {
          kind: 'traffic_spike',
          statement: 'Traffic',
          subject: 'x',
          score: 0.3,
          status: 'discarded',
          reason: 'weak',
          evidenceIds: [],
        },
      ],
    });
  await db()
    .update(incidents)
    .set({ rootCause: `${statement}. Evidence: …`, recommendedActions: ['Restart pgbouncer', 'Raise max_connections'] })
    .where(eq(incidents.id, incidentId));
}

async function resolve(incidentId: string, token = tenant.member) {
  const res = await svc.api('PATCH', `/v1/incidents/${incidentId}`, { token, body: { status: 'resolved' } });
  expect(res.status, JSON.stringify(res.body)).toBe(200);
}

async function insertPattern(
  tenantId: string,
  over: {
    service?: string;
    category?: PatternCategory;
    confirms?: number;
    rejects?: number;
    occurrences?: number;
    createdAt?: Date;
  } = {},
) {
  const service = over.service ?? freshService();
  const category = over.category ?? 'connection_pool';
  const confirms = over.confirms ?? 0;
  const rejects = over.rejects ?? 0;
  const occurrences = over.occurrences ?? 1;
  const confidence = patternConfidence(confirms, rejects);
  const [row] = await db()
    .insert(patterns)
    .values({
      id: newId('pat'),
      tenantId,
      title: `Connection pool exhaustion on ${service}`,
      signatureKey: signatureKey({ service, category, alertNames: [], rootCause: 'pool' }),
      service,
      category,
      rootCause: 'The pool was exhausted',
      fix: ['Restart pgbouncer'],
      confirms,
      rejects,
      occurrences,
      confidence,
      status: occurrences >= 5 && confidence >= 0.85 ? 'stable' : 'emerging',
      ...(over.createdAt ? { createdAt: over.createdAt } : {}),
    })
    .returning();
  return row!;
}

const patternRow = async (id: string) => (await db().select().from(patterns).where(eq(patterns.id, id)))[0]!;
const eventsOf = async (tenantId: string, type: string) =>
  (
    await db()
      .select()
      .from(events)
      .where(and(eq(events.tenantId, tenantId), eq(events.type, type)))
      .orderBy(events.seq)
  ).map((e) => e.payload);
const feedbackPost = (body: unknown, token = tenant.member) =>
  svc.api('POST', '/v1/knowledge/feedback', { token, body });

describe('GET /v1/knowledge', () => {
  it('lists the tenant’s patterns newest first, filtered, with count and cursor', async () => {
    const t = await svc.newTenant();
    const base = Date.now() - 60_000;
    const rows = [];
    for (let i = 0; i < 5; i++) {
      rows.push(
        await insertPattern(t.tenantId, { createdAt: new Date(base + i * 1000), confirms: i * 4, occurrences: i + 2 }),
      );
    }
    await insertPattern(other.tenantId); // never visible to t

    const all = await svc.api('GET', '/v1/knowledge', { token: t.member });
    expect(all.status).toBe(200);
    expect(all.body.count).toBe(5);
    expect(all.body.cursor).toBeNull();
    expect(all.body.patterns.map((p: { patternId: string }) => p.patternId)).toEqual(rows.map((r) => r.id).reverse());
    expect(all.body.patterns[0]).toMatchObject({
      patternId: rows[4]!.id,
      title: rows[4]!.title,
      confidence: patternConfidence(16, 0),
      occurrences: 6,
      status: 'stable',
      createdAt: rows[4]!.createdAt.toISOString(),
      lastSeenAt: rows[4]!.lastSeenAt.toISOString(),
    });

    const first = await svc.api('GET', '/v1/knowledge?limit=2', { token: t.admin });
    expect(first.body).toMatchObject({ count: 5, cursor: expect.any(String) });
    expect(first.body.patterns).toHaveLength(2);
    const second = await svc.api('GET', `/v1/knowledge?limit=2&cursor=${first.body.cursor}`, { token: t.admin });
    const third = await svc.api('GET', `/v1/knowledge?limit=2&cursor=${second.body.cursor}`, { token: t.admin });
    expect(third.body.cursor).toBeNull();
    expect(
      [...first.body.patterns, ...second.body.patterns, ...third.body.patterns].map(
        (p: { patternId: string }) => p.patternId,
      ),
    ).toEqual(rows.map((r) => r.id).reverse());

    const stable = await svc.api('GET', '/v1/knowledge?status=stable', { token: t.member });
    expect(stable.body.patterns.map((p: { patternId: string }) => p.patternId)).toEqual([rows[4]!.id, rows[3]!.id]);
    expect(stable.body.count).toBe(2);
    // minConfidence is inclusive: 13/14 and 17/18 pass 13/14; 9/10 does not.
    const min = await svc.api('GET', `/v1/knowledge?minConfidence=${patternConfidence(12, 0)}`, { token: t.member });
    expect(min.body.count).toBe(2);
    expect((await svc.api('GET', '/v1/knowledge?minConfidence=0', { token: t.member })).body.count).toBe(5);
    expect((await svc.api('GET', '/v1/knowledge?minConfidence=1', { token: t.member })).body.count).toBe(0);
    expect(
      (await svc.api('GET', '/v1/knowledge?status=emerging&minConfidence=0.5&limit=100', { token: t.member })).body
        .count,
    ).toBe(3);
  });

  it('answers 400 validation_error for bad parameters and 401 without a token', async () => {
    for (const query of [
      'status=closed',
      'minConfidence=1.01',
      'minConfidence=-0.1',
      'minConfidence=abc',
      'minConfidence=',
      'minConfidence=0x1',
      'minConfidence=1e-1',
      'minConfidence=Infinity',
      'limit=0',
      'limit=101',
      'limit=x',
      'cursor=nope',
    ]) {
      const res = await svc.api('GET', `/v1/knowledge?${query}`, { token: tenant.member });
      expect(res.status, query).toBe(400);
      expect(res.body.error, query).toBe('validation_error');
    }
    expect((await svc.api('GET', '/v1/knowledge')).status).toBe(401);
  });
});

describe('learning when an incident is resolved', () => {
  it('creates an emerging pattern from the investigation, then counts each similar resolution once', async () => {
    const service = freshService();
    const a = await manualIncident(service);
    await concluded(a, tenant.tenantId, 'connection_pool', `The orders-db connection pool of ${service} is exhausted`);
    await resolve(a);

    const [created] = await db()
      .select()
      .from(patterns)
      .where(and(eq(patterns.tenantId, tenant.tenantId), eq(patterns.service, service)));
    expect(created).toMatchObject({
      title: `Connection pool exhaustion on ${service}`,
      category: 'connection_pool',
      status: 'emerging',
      occurrences: 1,
      confirms: 0,
      confidence: 0.5,
      rootCause: `The orders-db connection pool of ${service} is exhausted`,
      fix: ['Restart pgbouncer', 'Raise max_connections'],
    });
    expect(await eventsOf(tenant.tenantId, 'knowledge.pattern_created')).toContainEqual(
      expect.objectContaining({ patternId: created!.id, source: 'resolution', incidentId: a }),
    );
    const [audit] = await db()
      .select()
      .from(auditLog)
      .where(and(eq(auditLog.targetId, created!.id), eq(auditLog.action, 'knowledge.pattern_created')))
      .orderBy(auditLog.seq);
    expect(audit).toMatchObject({ actorType: 'system', workflowId: a, incidentId: a });

    // A similar incident resolves: the same pattern, one more occurrence.
    const b = await manualIncident(service);
    await concluded(b, tenant.tenantId, 'connection_pool', 'Pool exhausted again');
    await resolve(b);
    // Reopened and resolved again: still counted once.
    const reopened = await svc.api('PATCH', `/v1/incidents/${b}`, {
      token: tenant.member,
      body: { status: 'investigating' },
    });
    expect(reopened.status).toBe(200);
    expect(reopened.body.status).toBe('investigating');
    await resolve(b);
    expect(
      await db()
        .select()
        .from(events)
        .where(and(eq(events.incidentId, b), eq(events.type, 'incident.resolved'))),
    ).toHaveLength(2);
    const after = await patternRow(created!.id);
    expect(after.occurrences).toBe(2);
    expect(after.lastSeenAt.getTime()).toBeGreaterThan(created!.lastSeenAt.getTime());
    expect(
      await db().select().from(patternOccurrences).where(eq(patternOccurrences.patternId, created!.id)),
    ).toHaveLength(2);
    expect(await db().select().from(patterns).where(eq(patterns.service, service))).toHaveLength(1);

    // Another cause on the same service is another pattern.
    const c = await manualIncident(service);
    await concluded(c, tenant.tenantId, 'dns_failure', 'DNS lookups fail');
    await resolve(c);
    expect(
      (await db().select().from(patterns).where(eq(patterns.service, service))).map((p) => p.category).sort(),
    ).toEqual(['connection_pool', 'dns_failure']);
  });

  it('learns nothing without a root cause (no investigation, or an undetermined one)', async () => {
    const service = freshService();
    const a = await manualIncident(service);
    await resolve(a);
    const b = await manualIncident(service);
    await concluded(b, tenant.tenantId, 'undetermined', 'No single cause stands out');
    await resolve(b);
    expect(await db().select().from(patterns).where(eq(patterns.service, service))).toHaveLength(0);
  });

  it('promotes a pattern at its fifth occurrence when confidence is high enough', async () => {
    const service = freshService();
    const pattern = await insertPattern(tenant.tenantId, { service, confirms: 10, occurrences: 4 });
    expect(pattern.status).toBe('emerging');
    const id = await manualIncident(service);
    await concluded(id, tenant.tenantId, 'connection_pool', 'Pool exhausted');
    await resolve(id);
    expect(await patternRow(pattern.id)).toMatchObject({
      occurrences: 5,
      status: 'stable',
      confidence: patternConfidence(10, 0),
    });
    expect(await eventsOf(tenant.tenantId, 'knowledge.pattern_promoted')).toContainEqual(
      expect.objectContaining({ patternId: pattern.id, occurrences: 5, status: 'stable' }),
    );
  });
});

describe('POST /v1/knowledge/feedback', () => {
  it('confirms and rejects: one verdict per user, the same verdict counts once, a changed one replaces it', async () => {
    const service = freshService();
    const id = await manualIncident(service);
    const pattern = await insertPattern(tenant.tenantId, { service });

    const confirm = await feedbackPost({ incidentId: id, patternId: pattern.id, type: 'confirm_rca' });
    expect(confirm.status).toBe(201);
    expect(confirm.body).toMatchObject({
      feedbackId: expect.stringMatching(/^fbk_/),
      incidentId: id,
      patternId: pattern.id,
      type: 'confirm_rca',
      updatedConfidence: patternConfidence(1, 0),
      createdAt: expect.any(String),
    });
    const again = await feedbackPost({ incidentId: id, patternId: pattern.id, type: 'confirm_rca' });
    expect(again.status).toBe(201);
    expect(again.body.feedbackId).toBe(confirm.body.feedbackId);
    expect(await patternRow(pattern.id)).toMatchObject({ confirms: 1, rejects: 0 });

    const admin = await feedbackPost({ incidentId: id, patternId: pattern.id, type: 'confirm_rca' }, tenant.admin);
    expect(admin.body.updatedConfidence).toBe(patternConfidence(2, 0));

    const changed = await feedbackPost({
      incidentId: id,
      patternId: pattern.id,
      type: 'reject_rca',
      comment: 'Not the pool this time',
    });
    expect(changed.status).toBe(201);
    expect(changed.body).toMatchObject({
      feedbackId: confirm.body.feedbackId,
      type: 'reject_rca',
      updatedConfidence: patternConfidence(1, 1),
      comment: 'Not the pool this time',
    });
    expect(await patternRow(pattern.id)).toMatchObject({ confirms: 1, rejects: 1, confidence: 0.5 });
    expect(await db().select().from(feedback).where(eq(feedback.incidentId, id))).toHaveLength(2);

    const received = (await eventsOf(tenant.tenantId, 'knowledge.feedback_received')).filter(
      (p) => p.incidentId === id,
    );
    expect(received.map((p) => [p.type, p.previousType])).toEqual([
      ['confirm_rca', null],
      ['confirm_rca', null],
      ['reject_rca', 'confirm_rca'],
    ]);
  });

  it('applies to the one pattern the incident matched when patternId is omitted, else is free-form', async () => {
    const service = freshService();
    const id = await manualIncident(service);
    const free = await feedbackPost({ incidentId: id, type: 'confirm_rca' });
    expect(free.status).toBe(201);
    expect(free.body).toMatchObject({ patternId: null, updatedConfidence: null, type: 'confirm_rca' });

    await concluded(id, tenant.tenantId, 'connection_pool', 'Pool exhausted');
    await resolve(id);
    const [learned] = await db().select().from(patterns).where(eq(patterns.service, service));
    const matched = await feedbackPost({ incidentId: id, type: 'confirm_rca' }, tenant.admin);
    expect(matched.body).toMatchObject({ patternId: learned!.id, updatedConfidence: patternConfidence(1, 0) });
  });

  it('promotes at exactly 0.85 with 5 occurrences, and demotes when the verdict turns', async () => {
    const service = freshService();
    const id = await manualIncident(service);
    const pattern = await insertPattern(tenant.tenantId, { service, confirms: 15, rejects: 2, occurrences: 5 });
    expect(pattern.status).toBe('emerging'); // 16/19

    const confirm = await feedbackPost({ incidentId: id, patternId: pattern.id, type: 'confirm_rca' });
    expect(confirm.body.updatedConfidence).toBe(0.85);
    expect(await patternRow(pattern.id)).toMatchObject({ status: 'stable', confidence: 0.85 });
    expect(await eventsOf(tenant.tenantId, 'knowledge.pattern_promoted')).toContainEqual(
      expect.objectContaining({ patternId: pattern.id, confidence: 0.85 }),
    );
    const listed = await svc.api('GET', '/v1/knowledge?status=stable&minConfidence=0.85', { token: tenant.member });
    expect(listed.body.patterns.map((p: { patternId: string }) => p.patternId)).toContain(pattern.id);

    const reject = await feedbackPost({ incidentId: id, patternId: pattern.id, type: 'reject_rca' });
    expect(reject.body.updatedConfidence).toBe(patternConfidence(15, 3));
    expect((await patternRow(pattern.id)).status).toBe('emerging');
    const [demoted] = await db()
      .select()
      .from(auditLog)
      .where(and(eq(auditLog.targetId, pattern.id), eq(auditLog.action, 'knowledge.pattern_demoted')))
      .orderBy(auditLog.seq);
    expect(demoted).toMatchObject({ actorType: 'user', actorId: 'user-member' });
  });

  it('a corrected root cause stays on the incident through a new investigation', async () => {
    const id = await manualIncident(freshService());
    await concluded(id, tenant.tenantId, 'bad_deploy', 'Deployment 42 broke it');
    const comment = 'The orders-db connection pool was exhausted by a leaked cursor';
    expect((await feedbackPost({ incidentId: id, type: 'correct_rca', comment })).status).toBe(201);
    const started = await svc.api('POST', '/v1/investigation/', { token: tenant.member, body: { incidentId: id } });
    expect(started.status, JSON.stringify(started.body)).toBe(202);
    // While it runs, and once it has concluded: the person's root cause, not null, not the machine's.
    const [running] = await db().select().from(incidents).where(eq(incidents.id, id));
    expect(running!.rootCause).toBe(comment);
    const done = await eventually(async () => {
      const [row] = await db().select().from(investigations).where(eq(investigations.incidentId, id));
      return row?.status === 'completed' && row.run === 2 ? row : undefined;
    }, 60_000);
    expect(done.rootCause).not.toBe(comment); // the investigation keeps its own conclusion
    const [after] = await db().select().from(incidents).where(eq(incidents.id, id));
    expect(after!.rootCause).toBe(comment);
  });

  it('correct_rca needs a comment, records the corrected root cause with its history, and creates the pattern it describes', async () => {
    const service = freshService();
    const id = await manualIncident(service);
    await concluded(id, tenant.tenantId, 'bad_deploy', 'Deployment 42 broke it');
    for (const comment of [undefined, '', '   ', '\u200b\u200c']) {
      const res = await feedbackPost({
        incidentId: id,
        type: 'correct_rca',
        ...(comment !== undefined ? { comment } : {}),
      });
      expect(res.status).toBe(400);
      expect(res.body.error).toBe('comment_required');
    }

    const comment =
      'The orders-db connection pool was exhausted by a leaked cursor; restart pgbouncer and kill the idle connections';
    const res = await feedbackPost({ incidentId: id, type: 'correct_rca', comment });
    expect(res.status).toBe(201);
    expect(res.body).toMatchObject({ type: 'correct_rca', patternId: null, updatedConfidence: null, comment });
    expect(res.body.correctedPattern).toMatchObject({
      title: `Connection pool exhaustion on ${service}`,
      category: 'connection_pool',
      rootCause: comment,
      fix: ['Restart pgbouncer and kill the idle connections'],
      occurrences: 1,
      confidence: patternConfidence(1, 0),
      status: 'emerging',
    });
    const [incident] = await db().select().from(incidents).where(eq(incidents.id, id));
    expect(incident!.rootCause).toBe(comment);
    const revisions = await db().select().from(rootCauseRevisions).where(eq(rootCauseRevisions.incidentId, id));
    expect(revisions).toMatchObject([
      {
        previousRootCause: 'Deployment 42 broke it. Evidence: …',
        rootCause: comment,
        source: 'feedback',
        actorId: 'user-member',
      },
    ]);
    const patternId = res.body.correctedPattern.patternId as string;
    expect(await eventsOf(tenant.tenantId, 'knowledge.pattern_created')).toContainEqual(
      expect.objectContaining({ patternId, source: 'correction' }),
    );
    expect(await eventsOf(tenant.tenantId, 'knowledge.feedback_received')).toContainEqual(
      expect.objectContaining({ incidentId: id, type: 'correct_rca', correctedPatternId: patternId }),
    );

    // The same correction again changes nothing.
    const again = await feedbackPost({ incidentId: id, type: 'correct_rca', comment });
    expect(again.body).toMatchObject({
      feedbackId: res.body.feedbackId,
      correctedPattern: { patternId, confidence: patternConfidence(1, 0) },
    });
    expect(await db().select().from(rootCauseRevisions).where(eq(rootCauseRevisions.incidentId, id))).toHaveLength(1);

    // Resolving counts no second occurrence; a correction of the matched pattern by another user rejects it.
    await resolve(id);
    expect(await patternRow(patternId)).toMatchObject({ occurrences: 1, confirms: 1 });
    const other = await feedbackPost(
      { incidentId: id, type: 'correct_rca', comment: 'Actually the DNS resolvers failed' },
      tenant.admin,
    );
    expect(other.body).toMatchObject({ patternId, updatedConfidence: patternConfidence(1, 1) });
    expect(other.body.correctedPattern).toMatchObject({ category: 'dns_failure', confidence: patternConfidence(1, 0) });
  });

  it('a correction given on a pattern waits for a resolution learning that pattern instead of deadlocking with it (decision 235)', async () => {
    const service = freshService();
    const id = await manualIncident(service);
    const pattern = await insertPattern(tenant.tenantId, { service, category: 'connection_pool' });
    // What learning from a similar resolution holds: the signature's lock, then the pattern's row.
    let signatureHeld!: () => void;
    const held = new Promise<void>((resolve) => (signatureHeld = resolve));
    const learning = svc.database.sql.begin(async (tx) => {
      await tx`select pg_advisory_xact_lock(hashtext(${signatureLockKey(tenant.tenantId, service, 'connection_pool')}))`;
      signatureHeld();
      await new Promise((r) => setTimeout(r, 300)); // the correction has begun meanwhile
      await tx`select 1 from patterns where id = ${pattern.id} for update`;
      return 'learned';
    });
    await held;
    const comment = 'The connection pool was exhausted by a leaked cursor; restart pgbouncer';
    const res = await feedbackPost({ incidentId: id, patternId: pattern.id, type: 'correct_rca', comment });
    expect(await learning).toBe('learned');
    expect(res.status, JSON.stringify(res.body)).toBe(201);
    expect(res.body).toMatchObject({ patternId: pattern.id, type: 'correct_rca', comment });
    const [incident] = await db().select().from(incidents).where(eq(incidents.id, id));
    expect(incident!.rootCause).toBe(comment);
  });

  it('answers 400 validation_error, 404 not_found (another tenant’s too) and 401', async () => {
    const id = await manualIncident(freshService());
    for (const body of [
      {},
      { incidentId: id },
      { type: 'confirm_rca' },
      { incidentId: id, type: 'approve' },
      { incidentId: id, type: 'confirm_rca', extra: 1 },
      { incidentId: '', type: 'confirm_rca' },
    ]) {
      const res = await feedbackPost(body);
      expect(res.status, JSON.stringify(body)).toBe(400);
      expect(res.body.error).toBe('validation_error');
    }
    const unknownIncident = await feedbackPost({ incidentId: 'inc_missing', type: 'confirm_rca' });
    expect(unknownIncident.status).toBe(404);
    expect(unknownIncident.body.error).toBe('not_found');
    const unknownPattern = await feedbackPost({ incidentId: id, patternId: 'pat_missing', type: 'confirm_rca' });
    expect(unknownPattern.status).toBe(404);
    expect(unknownPattern.body.error).toBe('not_found');

    const foreignPattern = await insertPattern(other.tenantId);
    expect((await feedbackPost({ incidentId: id, patternId: foreignPattern.id, type: 'confirm_rca' })).status).toBe(
      404,
    );
    expect((await feedbackPost({ incidentId: id, type: 'reject_rca' }, other.member)).status).toBe(404);
    expect((await patternRow(foreignPattern.id)).confirms).toBe(0);
    expect(
      (await svc.api('POST', '/v1/knowledge/feedback', { body: { incidentId: id, type: 'confirm_rca' } })).status,
    ).toBe(401);
  });
});
