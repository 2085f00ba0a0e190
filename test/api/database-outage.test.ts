import { Client, Connection } from '@temporalio/client';
import postgres from 'postgres';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { AppError } from '../../src/errors.js';
import { hashApiKey } from '../../src/auth/api-keys.js';
import { IngestBatcher } from '../../src/ingest/batcher.js';
import type { IngestRequest } from '../../src/ingest/ingest.js';
import { createDatabaseProbe } from '../../src/db/probe.js';
import { parseDelivery } from '../../src/ingest/parse-delivery.js';
import { createTemporalWorkflowPort, TemporalUnavailableError } from '../../src/temporal/port.js';
import { temporalConnectionOptions } from '../../src/temporal/connection.js';
import { sdkLogFields } from '../../src/temporal/runtime-logger.js';
import { isDependencyUnavailable, isWorkflowEngineUnavailable } from '../../src/dependency-failures.js';
import { createApp } from '../../src/api/app.js';
import { tenants } from '../../src/db/schema/tenants.js';
import { createLogger } from '../../src/logger.js';
import { freePort } from '../helpers/ports.js';
import { startTestService, type TestService } from '../helpers/service.js';
import { startTcpProxy, type TcpProxy } from '../helpers/tcp-proxy.js';
import { createKey, eventually, postWebhook, type WebhookKey } from '../helpers/webhooks.js';

// The service's pools reach PostgreSQL through a relay the tests cut, as a restart or a
// failover of the database would; the tests read what was stored over a direct connection.
let svc: TestService;
let proxy: TcpProxy;
let direct: postgres.Sql;
let relayUrl: string;
let tenant: { tenantId: string; admin: string; member: string };
let key: WebhookKey;
const logLines: string[] = [];

beforeAll(async () => {
  svc = await startTestService({
    logLines,
    ingest: { timeoutMs: 1500 },
    statementTimeoutMs: 1000,
    databaseWatchMs: 1000,
    connectVia: async (url) => {
      const target = new URL(url);
      direct = postgres(url, { max: 2, onnotice: () => undefined });
      proxy = await startTcpProxy({ host: target.hostname, port: Number(target.port) });
      target.port = String(proxy.port);
      relayUrl = target.toString();
      return relayUrl;
    },
  });
  tenant = await svc.newTenant({ plan: 'plan_business' });
  key = await createKey(svc, tenant.admin);
});
afterAll(async () => {
  await proxy?.restore();
  await svc?.stop();
  await proxy?.close();
  await direct?.end({ timeout: 5 });
});

/**
 * Runs `use` on a pool of its own through the relay (`max` connections) and ends the pool after;
 * what the process reports as `watch` meanwhile is collected in `reported`.
 */
async function onRelayedPool(
  max: number,
  use: (pool: postgres.Sql, reported: unknown[]) => Promise<void>,
  watch?: 'uncaughtException' | 'unhandledRejection',
): Promise<void> {
  const reported: unknown[] = [];
  const record = (err: unknown) => reported.push(err);
  if (watch) process.on(watch, record);
  const pool = postgres(relayUrl, { max, onnotice: () => undefined });
  try {
    await use(pool, reported);
  } finally {
    if (watch) process.off(watch, record);
    await pool.end({ timeout: 5 });
  }
}

describe('a dependency unavailable', () => {
  it('answers 503 service_unavailable with Retry-After, stores nothing, and takes the retried delivery once the database is back', async () => {
    const alert = { name: 'DiskFull', severity: 'critical', service: 'billing-db', summary: 'disk 98% full' };
    const deliveryId = `outage-${Date.now()}`;
    await proxy.cut();
    const refused = await postWebhook(svc, tenant.tenantId, 'generic', alert, {
      key: key.key,
      headers: { 'x-delivery-id': deliveryId },
    });
    expect(refused.status).toBe(503);
    expect(refused.headers.get('retry-after')).toBe('5');
    expect(refused.body).toEqual({ error: 'service_unavailable', message: expect.stringContaining('retry shortly') });
    // A user's request fails the same way (the tenant behind its token cannot be read).
    const listed = await svc.api('GET', '/v1/incidents', { token: tenant.member });
    expect(listed.status).toBe(503);
    expect(listed.body.error).toBe('service_unavailable');
    expect(listed.headers.get('retry-after')).toBe('5');
    // Logged as an outage, not as a bug in a request.
    const outages = logLines
      .map((l) => JSON.parse(l) as { msg: string; level: string; reason?: string; err?: unknown })
      .filter((l) => l.msg === 'a dependency is unavailable');
    expect(outages.length).toBeGreaterThanOrEqual(2);
    // A warning of one line each, with the reason and no stack: an outage's 503s are many.
    expect(
      outages.every(
        (l) => l.level === 'warn' && typeof l.reason === 'string' && l.reason.length > 0 && l.err === undefined,
      ),
    ).toBe(true);
    expect(logLines.some((l) => l.includes('"unhandled error"'))).toBe(false);

    const stored =
      await direct`select count(*)::int as n from webhook_deliveries where tenant_id = ${tenant.tenantId} and delivery_key = ${`id:${deliveryId}`}`;
    expect(stored[0]!.n).toBe(0);
    const events = await direct`select count(*)::int as n from ingested_events where tenant_id = ${tenant.tenantId}`;
    expect(events[0]!.n).toBe(0);

    // The tool retries the same delivery: accepted once the database is back (the pool
    // reconnects on its own), one incident, and its workflow starts.
    await proxy.restore();
    const accepted = await eventually(async () => {
      const res = await postWebhook(svc, tenant.tenantId, 'generic', alert, {
        key: key.key,
        headers: { 'x-delivery-id': deliveryId },
      });
      return res.status === 202 ? res : undefined;
    });
    expect(accepted.body).toEqual({
      eventIds: [expect.stringMatching(/^evt_/)],
      incidentIds: [expect.stringMatching(/^inc_/)],
      alertIds: [expect.stringMatching(/^alt_/)],
      deduplicated: false,
    });
    const incidentId = accepted.body.incidentIds[0] as string;
    const again = await postWebhook(svc, tenant.tenantId, 'generic', alert, {
      key: key.key,
      headers: { 'x-delivery-id': deliveryId },
    });
    expect(again.status).toBe(202);
    expect(again.headers.get('idempotent-replayed')).toBe('true');
    expect(again.body).toEqual(accepted.body);
    const incidents = await direct`select id, occurrence_count from incidents where tenant_id = ${tenant.tenantId}`;
    expect([...incidents]).toEqual([{ id: incidentId, occurrence_count: 1 }]);
    await eventually(
      async () =>
        (
          await svc.client.workflow
            .getHandle(incidentId)
            .describe()
            .catch(() => undefined)
        )?.status.name === 'RUNNING',
    );
    expect((await svc.api('GET', '/v1/incidents', { token: tenant.member })).status).toBe(200);
  });

  it('answers 503 when the database stops answering, and takes the retries once it is back', async () => {
    const alerts = [1, 2, 3].map((n) => ({
      name: `ReplicaLag${n}`,
      severity: 'high',
      service: 'orders-db',
      summary: `lag ${n}`,
    }));
    const ids = alerts.map((_, n) => `stall-${Date.now()}-${n}`);
    const post = (n: number) =>
      postWebhook(svc, tenant.tenantId, 'generic', alerts[n]!, { key: key.key, headers: { 'x-delivery-id': ids[n]! } });
    proxy.stall(); // a partition: the pool's sockets stay open and nothing answers
    try {
      const refused = await Promise.all([0, 1, 2].map(post));
      // The batch's deliveries when it is abandoned; those behind it once the probe that follows
      // finds the database not answering (decision 240).
      const messages = [
        'The database did not store the delivery within 1.5 s; retry it',
        'The service cannot reach its database or another dependency; retry shortly',
      ];
      for (const res of refused) {
        expect(res.status).toBe(503);
        expect(res.headers.get('retry-after')).toBe('5');
        expect(res.body.error).toBe('service_unavailable');
        expect(messages).toContain(res.body.message);
      }
      expect(refused.map((res) => res.body.message)).toContain(messages[0]);
      // The stuck batch does not hold the next one back: it too gets its answer.
      expect((await post(0)).status).toBe(503);
    } finally {
      await proxy.restore();
    }
    const accepted = await Promise.all(
      [0, 1, 2].map((n) =>
        eventually(async () => {
          const res = await post(n);
          return res.status === 202 ? res : undefined;
        }),
      ),
    );
    const incidentIds = accepted.map((res) => res.body.incidentIds[0] as string);
    expect(new Set(incidentIds).size).toBe(3);
    const rows = await direct`
      select d.delivery_key, i.title from webhook_deliveries d join incidents i on i.id = d.response->'incidentIds'->>0
      where d.tenant_id = ${tenant.tenantId} and d.delivery_key like 'id:stall-%' order by d.delivery_key`;
    expect(rows.map((r) => r.delivery_key)).toEqual(ids.map((id) => `id:${id}`));
    expect(rows.map((r) => r.title)).toEqual(alerts.map((a) => `[${a.name}] ${a.summary}`));
  });

  it('answers 503 a user call that waits on a database that stopped answering, and serves again once it answers (decision 238)', async () => {
    const created = await svc.api('POST', '/v1/incidents/chat', {
      token: tenant.member,
      body: { title: 'Frozen database', description: 'Requests hang while the database is frozen' },
    });
    expect(created.status).toBe(201);
    proxy.stall(); // a frozen server, or a partition: connections open, nothing answered
    const started = performance.now();
    const logged = logLines.length;
    const frozen: string[] = [];
    try {
      const [list, one, create] = await Promise.all([
        svc.api('GET', '/v1/incidents', { token: tenant.member }),
        svc.api('GET', `/v1/incidents/${created.body.incidentId}`, { token: tenant.member }),
        svc.api('POST', '/v1/incidents/chat', {
          token: tenant.member,
          body: { title: 'Created while frozen', description: 'Its body is gone with the answer' },
        }),
      ]);
      const waited = performance.now() - started;
      for (const res of [list, one, create]) {
        frozen.push(res.headers.get('x-request-id') ?? '');
        expect(res.status).toBe(503);
        expect(res.headers.get('retry-after')).toBe('5');
        expect(res.body).toEqual({
          error: 'service_unavailable',
          message: 'The service cannot reach its database or another dependency; retry shortly',
        });
      }
      // The watch (1 s here) and a probe that waits 3 s, not until the database answers.
      expect(waited).toBeLessThan(6000);
    } finally {
      proxy.resume(); // thawed: the calls given up on go on where they stopped
    }
    const again = await eventually(async () => {
      const res = await svc.api('GET', `/v1/incidents/${created.body.incidentId}`, { token: tenant.member });
      return res.status === 200 ? res : undefined;
    });
    expect(again.body).toMatchObject({ incidentId: created.body.incidentId, title: 'Frozen database' });
    // The handlers given up on ran on once the database answered; whatever they met then (the
    // creation's body went with its answer) is no error of the service's.
    await new Promise((r) => setTimeout(r, 500));
    const since = logLines
      .slice(logged)
      .map((line) => JSON.parse(line) as { level: string; msg: string; requestId?: string });
    expect(since.filter((line) => line.level === 'error' || line.level === 'fatal')).toEqual([]);
    // A connection that held a given-up call may fail the first request after the thaw (503 too).
    const given = since.filter((line) => line.msg === 'unavailable' && frozen.includes(line.requestId ?? ''));
    expect(given).toHaveLength(3);
  });

  it('writes a batch again, once and whole, when its connection is lost between its reads and its writes', async () => {
    // The relay drops the batch's connection as its writes go out (the alert's text is in them
    // and not in the reads): the transaction never commits, and the batch is written again on a
    // fresh connection. The tool gets its 202, and everything is stored once.
    const marker = `lost-mid-batch-${Date.now()}`;
    const alert = { name: 'ConnectionLostMidBatch', severity: 'high', service: 'orders-db', summary: marker };
    const deliveryId = `${marker}-delivery`;
    const cut = proxy.cutOnce(marker);
    const res = await postWebhook(svc, tenant.tenantId, 'generic', alert, {
      key: key.key,
      headers: { 'x-delivery-id': deliveryId },
    });
    expect(res.status).toBe(202);
    await cut; // the connection was dropped, the answer came from the second attempt
    const incidentId = res.body.incidentIds[0] as string;
    expect(res.body).toMatchObject({ eventIds: [expect.any(String)], incidentIds: [incidentId], deduplicated: false });
    const incidents =
      await direct`select id, occurrence_count from incidents where tenant_id = ${tenant.tenantId} and title = ${`[${alert.name}] ${marker}`}`;
    expect(incidents).toEqual([{ id: incidentId, occurrence_count: 1 }]);
    const events =
      await direct`select id from ingested_events where tenant_id = ${tenant.tenantId} and incident_id = ${incidentId}`;
    expect(events.map((e) => e.id)).toEqual(res.body.eventIds);
    const deliveries =
      await direct`select response from webhook_deliveries where tenant_id = ${tenant.tenantId} and delivery_key = ${`id:${deliveryId}`}`;
    expect(deliveries.map((d) => d.response)).toEqual([res.body]);
    // The tool's own retry is answered from that record.
    const again = await postWebhook(svc, tenant.tenantId, 'generic', alert, {
      key: key.key,
      headers: { 'x-delivery-id': deliveryId },
    });
    expect(again.status).toBe(202);
    expect(again.headers.get('idempotent-replayed')).toBe('true');
    expect(again.body).toEqual(res.body);
  });

  it('writes the batch again on a live connection when the pool has only the lost one', async () => {
    // With one connection in the pool, the whole retry can only succeed if the lost connection
    // goes back to the pool as closed, to be reconnected (patches/postgres+3.4.9.patch): put
    // back as open, it failed the retry's first statement, and the delivery got a 503.
    const marker = `lost-single-connection-${Date.now()}`;
    const body = new TextEncoder().encode(
      JSON.stringify({ name: 'LostSingleConnection', severity: 'high', service: 'orders-db', summary: marker }),
    );
    const parsed = parseDelivery({ provider: 'generic', body, headers: {} });
    await onRelayedPool(1, async (relayed) => {
      const batcher = new IngestBatcher(relayed, () => new Date(), { timeoutMs: 10_000 });
      const cut = proxy.cutOnce(marker);
      const outcome = await batcher.submit({
        tenantId: tenant.tenantId,
        keyHash: hashApiKey(key.key),
        authorize: (found) => found!,
        provider: 'generic',
        deliveryKey: `id:${marker}`,
        events: parsed.events,
        requestId: `req-${marker}`,
      });
      await cut;
      expect(outcome.replayed).toBe(false);
      expect(outcome.result.incidentIds).toHaveLength(1);
      const incidents =
        await direct`select id, occurrence_count from incidents where tenant_id = ${tenant.tenantId} and title = ${`[LostSingleConnection] ${marker}`}`;
      expect(incidents).toEqual([{ id: outcome.result.incidentIds[0], occurrence_count: 1 }]);
    });
  });

  it('answers 503 when a statement waits on a lock past the bound, changes nothing, and takes the retry once the lock is gone', async () => {
    // Another session holds the key's row (a long transaction, a stuck migration): revoking the
    // key waits on it, and the api's statement bound (1 s here, 30 s by default) ends the wait.
    const held = await createKey(svc, tenant.admin, 'held');
    let release!: () => void;
    const released = new Promise<void>((resolve) => (release = resolve));
    let locked!: () => void;
    const isLocked = new Promise<void>((resolve) => (locked = resolve));
    const holder = direct.begin(async (tx) => {
      await tx`select id from api_keys where id = ${held.keyId} for update`;
      locked();
      await released;
    });
    await isLocked;
    try {
      const res = await svc.api('DELETE', `/v1/api-keys/${held.keyId}`, { token: tenant.admin });
      expect(res.status).toBe(503);
      expect(res.headers.get('retry-after')).toBe('5');
      expect(res.body).toEqual({
        error: 'service_unavailable',
        message: 'The database did not answer in time (busy, or waiting on a lock); retry shortly',
      });
      expect(logLines.some((line) => line.includes('a statement ran past its time bound'))).toBe(true);
    } finally {
      release();
      await holder;
    }
    const [row] = await direct`select revoked_at from api_keys where id = ${held.keyId}`;
    expect(row!.revoked_at).toBeNull();
    expect((await svc.api('DELETE', `/v1/api-keys/${held.keyId}`, { token: tenant.admin })).status).toBe(204);
    // Verifying the audit chain, one statement over all of it, sets a bound of its own: made to
    // wait past the api's bound (on a lock of the chain heads, released after 1.5 s), it answers.
    let unlock!: () => void;
    const unlocked = new Promise<void>((resolve) => (unlock = resolve));
    let tableLocked!: () => void;
    const isTableLocked = new Promise<void>((resolve) => (tableLocked = resolve));
    const tableHolder = direct.begin(async (tx) => {
      await tx`lock table audit_chain_heads in access exclusive mode`;
      tableLocked();
      await unlocked;
    });
    await isTableLocked;
    const verifying = svc.api('GET', '/v1/audit/verify', { token: tenant.admin });
    await new Promise((resolve) => setTimeout(resolve, 1500));
    unlock();
    await tableHolder;
    const verified = await verifying;
    expect(verified.status).toBe(200);
    expect(verified.body).toMatchObject({ valid: true, firstInvalidAuditId: null });
  });

  it("never logs a failed statement's parameters", async () => {
    // Another session keeps the key table from being written: the new key's insert runs past the
    // bound. Its parameters (the name given here, the signing secret made for it) must not be
    // logged, nor answered (decision 225).
    const name = `canary-${Date.now()}`;
    let release!: () => void;
    const released = new Promise<void>((resolve) => (release = resolve));
    let locked!: () => void;
    const isLocked = new Promise<void>((resolve) => (locked = resolve));
    const holder = direct.begin(async (tx) => {
      await tx`lock table api_keys in share mode`;
      locked();
      await released;
    });
    await isLocked;
    const from = logLines.length;
    try {
      const res = await svc.api('POST', '/v1/api-keys', { token: tenant.admin, body: { name } });
      expect(res.status).toBe(503);
      expect(JSON.stringify(res.body)).not.toContain(name);
    } finally {
      release();
      await holder;
    }
    const lines = logLines.slice(from);
    const [timedOut] = lines
      .map((l) => JSON.parse(l) as { msg: string; reason?: string })
      .filter((l) => l.msg === 'a statement ran past its time bound');
    // The statement and the driver's error, no parameters.
    expect(timedOut?.reason).toMatch(
      /^Failed query: insert into "api_keys" \(.*\) values \(\$1, .*"revoked_at": canceling statement due to statement timeout$/,
    );
    expect(lines.filter((l) => l.includes(name))).toEqual([]);
    expect(lines.some((l) => l.includes('params:'))).toBe(false);
    const stored =
      await direct`select count(*)::int as n from api_keys where tenant_id = ${tenant.tenantId} and name = ${name}`;
    expect(stored[0]!.n).toBe(0);
  });

  it('logs an activity that failed on an unreachable database as its reason, and never a task token (decision 239)', async () => {
    const nowhere = postgres(`postgres://nobody@127.0.0.1:${await freePort()}/none`, {
      max: 1,
      connect_timeout: 2,
      onnotice: () => undefined,
    });
    const refused = await nowhere`select 1`.then(
      () => undefined,
      (err: unknown) => err,
    );
    await nowhere.end({ timeout: 1 });
    expect(isDependencyUnavailable(refused)).toBe(true);
    const meta = { taskToken: 'CiQwMWEyMDkzMS1jYTJh', activityType: 'synthesizeInvestigation', attempt: 3 };
    expect(sdkLogFields({ ...meta, error: refused })).toEqual({
      activityType: 'synthesizeInvestigation',
      attempt: 3,
      reason: expect.stringContaining('ECONNREFUSED'),
    });
    const fault = new TypeError('Cannot read properties of undefined');
    expect(sdkLogFields({ ...meta, error: fault })).toEqual({
      activityType: 'synthesizeInvestigation',
      attempt: 3,
      error: fault,
    });
    expect(sdkLogFields(meta)).toEqual({ activityType: 'synthesizeInvestigation', attempt: 3 });
  });

  it("logs no value the driver's error quotes, however the error is keyed", async () => {
    // A unique violation: PostgreSQL's detail quotes the value ("Key (slug)=(…) already exists").
    const slug = `canary-${Date.now()}`;
    await svc.database.db.insert(tenants).values({ id: `ten_${slug}`, name: 'Canary', slug, plan: 'plan_starter' });
    const refused = await svc.database.db
      .insert(tenants)
      .values({ id: `ten_${slug}_2`, name: 'Canary', slug, plan: 'plan_starter' })
      .then(
        () => undefined,
        (err: unknown) => err as Error & { cause: { code: string; detail: string } },
      );
    expect(refused?.cause.code).toBe('23505');
    const lines: string[] = [];
    const logger = createLogger('debug', {}, { write: (line: string) => void lines.push(line) });
    logger.warn({ error: refused, durationMs: 1 }, 'as the Temporal SDK logs an activity failure');
    logger.child({ component: 'api' }).error({ err: refused }, 'as the error handler logs it');
    logger.warn({ failure: refused }, 'under a key with no serializer');
    expect(lines).toHaveLength(3);
    expect(lines.filter((line) => line.includes(slug))).toEqual([]);
    expect(lines.map((line) => line.includes('duplicate key value violates unique constraint'))).toEqual([
      true,
      true,
      false,
    ]);
    expect(lines[2]).toContain('"constraint_name":"tenants_slug_unique"');
    // Code still reads what it needs.
    expect(refused?.cause.detail).toContain(slug);
  });

  /** A delivery whose key is refused once the database answers (nothing of it is written). */
  const unkeyedDelivery = (id: string, bytes?: number): IngestRequest => ({
    tenantId: tenant.tenantId,
    keyHash: 'nobody',
    authorize: () => {
      throw new AppError('unauthorized', 'no key');
    },
    provider: 'generic',
    deliveryKey: `id:${id}`,
    events: [],
    requestId: `req-${id}`,
    ...(bytes === undefined ? {} : { bytes }),
  });

  it('refuses deliveries at once while too many wait for the database', async () => {
    await onRelayedPool(1, async (relayed) => {
      const batcher = new IngestBatcher(relayed, () => new Date(), { timeoutMs: 60_000, maxQueued: 2 });
      const request = (n: number) => unkeyedDelivery(`queue-${n}`);
      proxy.stall();
      const waiting = [1, 2, 3].map((n) =>
        batcher.submit(request(n)).then(
          () => 'stored',
          (err: AppError) => err.code,
        ),
      );
      try {
        // One batch in flight (stuck), two waiting: the fourth is refused without waiting.
        const refused = await batcher.submit(request(4)).then(
          () => undefined,
          (err: unknown) => err,
        );
        expect(refused).toBeInstanceOf(AppError);
        expect((refused as AppError).code).toBe('service_unavailable');
        expect((refused as AppError).message).toBe('Too many deliveries are waiting to be stored; retry shortly');
      } finally {
        await proxy.restore();
      }
      // Once the database answers, the held deliveries are judged (here: refused for their key).
      expect(await Promise.all(waiting)).toEqual(['unauthorized', 'unauthorized', 'unauthorized']);
    });
  });

  it('answers 503 within the bound a delivery that waited that long for a batch, not after one stuck batch after another (decision 237)', async () => {
    await onRelayedPool(1, async (relayed) => {
      const batcher = new IngestBatcher(relayed, () => new Date(), { timeoutMs: 1000, maxDeliveries: 1 });
      proxy.stall();
      const started = performance.now();
      try {
        // One in a batch that never ends, three waiting behind it, a batch of one at a time.
        const answers = await Promise.all(
          [1, 2, 3, 4].map((n) =>
            batcher.submit(unkeyedDelivery(`expire-${n}`)).then(
              () => ({ n, code: 'stored', ms: performance.now() - started }),
              (err: AppError) => ({ n, code: err.code, message: err.message, ms: performance.now() - started }),
            ),
          ),
        );
        for (const answer of answers) {
          expect(answer).toMatchObject({
            code: 'service_unavailable',
            message: 'The database did not store the delivery within 1 s; retry it',
          });
          // Within the bound and a tick of the watchdog (250 ms here), not one abandoned batch
          // after another (4 s for the last).
          expect(answer.ms).toBeLessThan(1600);
        }
      } finally {
        await proxy.restore();
      }
    });
  });

  it('sends nothing while the database does not answer a probe, after a batch was abandoned (decision 240)', async () => {
    await onRelayedPool(1, async (relayed) => {
      const batcher = new IngestBatcher(
        relayed,
        () => new Date(),
        { timeoutMs: 1000 },
        createDatabaseProbe(relayUrl, 1000),
      );
      const answer = async (n: number) => {
        const sent = performance.now();
        return batcher.submit(unkeyedDelivery(`gate-${n}`)).then(
          () => ({ code: 'stored', message: '', ms: performance.now() - sent }),
          (err: AppError) => ({ code: err.code, message: err.message, ms: performance.now() - sent }),
        );
      };
      const notAnswering = {
        code: 'service_unavailable',
        message: 'The service cannot reach its database or another dependency; retry shortly',
      };
      proxy.stall();
      try {
        const first = answer(1); // its batch never ends: abandoned after 1 s, then a probe (1 s)
        await new Promise((r) => setTimeout(r, 1400));
        const second = answer(2); // arrives while the probe runs: waits for it, is not sent
        expect(await first).toMatchObject({
          code: 'service_unavailable',
          message: 'The database did not store the delivery within 1 s; retry it',
        });
        const waited = await second;
        expect(waited).toMatchObject(notAnswering);
        expect(waited.ms).toBeLessThan(1000); // the probe's end, not a batch of its own
        // Refused at once for a while after the failed probe: not sent to a database that holds it.
        const third = await answer(3);
        expect(third).toMatchObject(notAnswering);
        expect(third.ms).toBeLessThan(100);
      } finally {
        await proxy.restore();
      }
      // Past the window, a probe that the database answers lets deliveries through again: this
      // one is judged by it (its key is refused).
      await new Promise((r) => setTimeout(r, 2100));
      expect(await answer(4)).toMatchObject({ code: 'unauthorized' });
    });
  });

  it('refuses deliveries at once while the bodies held pass the byte bound, and takes one alone however large', async () => {
    await onRelayedPool(1, async (relayed) => {
      const batcher = new IngestBatcher(relayed, () => new Date(), { timeoutMs: 60_000, maxHeldBytes: 1000 });
      const request = (n: number, bytes: number) => unkeyedDelivery(`bytes-${n}`, bytes);
      proxy.stall();
      const held = [batcher.submit(request(1, 1500))].map((p) =>
        p.then(
          () => 'stored',
          (err: AppError) => err.code,
        ),
      );
      try {
        // 1,500 bytes, more than the bound: taken alone. The next body is refused at once.
        const refused = await batcher.submit(request(2, 10)).then(
          () => undefined,
          (err: unknown) => err,
        );
        expect(refused).toBeInstanceOf(AppError);
        expect((refused as AppError).code).toBe('service_unavailable');
      } finally {
        await proxy.restore();
      }
      expect(await Promise.all(held)).toEqual(['unauthorized']);
      // Answered, it is no longer held: the next one is taken.
      expect(
        await batcher.submit(request(3, 900)).then(
          () => 'stored',
          (err: AppError) => err.code,
        ),
      ).toBe('unauthorized');
    });
  });

  it('survives a connection lost inside a transaction: the transaction and its rollback fail, the process does not', async () => {
    // postgres.js 3.4.9 wrote the rollback to the closed socket from a timer, an uncaught
    // TypeError that ended the process, and the pool took the dead connection back as open;
    // patches/postgres+3.4.9.patch rejects the statement and returns the connection as closed.
    await onRelayedPool(
      2,
      async (relayed, uncaught) => {
        // A transaction (what drizzle's db.transaction runs on), then a reserved connection with
        // its own rollback (what an ingestion batch does), each cut mid-statement.
        const begun = relayed
          .begin(async (tx) => tx`select pg_sleep(5)`)
          .then(
            () => 'committed',
            (err: { code?: string }) => err.code,
          );
        await new Promise((r) => setTimeout(r, 300));
        await proxy.cut();
        await proxy.restore();
        expect(await begun).toBe('CONNECTION_CLOSED');

        const reserved = await relayed.reserve();
        const statements = Promise.all([reserved`begin`, reserved`select pg_sleep(5)`]).then(
          () => 'done',
          (err: { code?: string }) => err.code,
        );
        await new Promise((r) => setTimeout(r, 300));
        await proxy.cut();
        await proxy.restore();
        expect(await statements).toBe('CONNECTION_CLOSED');
        expect(
          await reserved`rollback`.then(
            () => 'rolled back',
            (err: { code?: string }) => err.code,
          ),
        ).toBe('CONNECTION_CLOSED');
        reserved.release();
        await new Promise((r) => setImmediate(r));
        expect(uncaught).toEqual([]);
        // The pool takes the lost connection back as closed, not open, and reconnects it for the
        // very next statement, which succeeds; so do statements in parallel.
        expect(
          await relayed`select 1`.then(
            () => 'ok',
            (err: { code?: string }) => err.code,
          ),
        ).toBe('ok');
        const after = await Promise.all(
          Array.from({ length: 8 }, () =>
            relayed`select pg_sleep(0.02)`.then(
              () => 'ok',
              (err: { code?: string }) => err.code,
            ),
          ),
        );
        expect(after).toEqual(Array(8).fill('ok'));
        expect(uncaught).toEqual([]);
      },
      'uncaughtException',
    );
  });

  it('survives a connection lost while it fetches the array types for a reserved connection', async () => {
    // A new connection first reads the array types. For sql.reserve() (what an ingestion batch
    // runs on), postgres.js 3.4.9 had no handler on that read's promise, so a connection lost
    // during it was an unhandled rejection, which ends a Node process; and the pool, connecting
    // again, took the waiting reserve() off its queue and never settled it. Both are patched.
    await onRelayedPool(
      1,
      async (relayed, unhandled) => {
        const cut = proxy.cutOnce('typcategory'); // the text of the array-types query
        const reserved = await relayed.reserve();
        await cut;
        // The pool connected again for the reservation, which works.
        expect(await reserved`select 1 as one`).toEqual([{ one: 1 }]);
        reserved.release();
        await new Promise((r) => setTimeout(r, 50));
        expect(unhandled).toEqual([]);
      },
      'unhandledRejection',
    );
  });

  it('fails Temporal calls fast once one has given up, and lets them through again once the server answers', async () => {
    // The port's client reaches the real dev server through a relay the test cuts.
    const [host, temporalPort] = inject('temporalAddress').split(':') as [string, string];
    const relay = await startTcpProxy({ host, port: Number(temporalPort) });
    const connection = await Connection.connect(temporalConnectionOptions(`127.0.0.1:${relay.port}`));
    const workflows = createTemporalWorkflowPort(new Client({ connection }), `tq-gate-${Date.now()}`);
    const signal = () =>
      workflows.signalInvestigationContext('inc_gate_nowhere').then(
        (r) => r,
        (err: unknown) => err,
      );
    try {
      expect(await signal()).toBe('gone'); // reachable: no such workflow
      await relay.cut();
      // The first call is given up by its watch: after 10 s of the client's retries a probe finds
      // the server away (before the client's 20 s of retries ran out).
      const started = performance.now();
      const first = await signal();
      expect(first).toBeInstanceOf(TemporalUnavailableError);
      expect(isDependencyUnavailable(first)).toBe(true);
      expect(performance.now() - started).toBeGreaterThanOrEqual(9_000);
      // The next ones are refused by the gate after its probe, with an error the api answers 503.
      const next = await Promise.all([signal(), signal(), signal()]);
      for (const err of next) {
        expect(err).toBeInstanceOf(TemporalUnavailableError);
        expect(isDependencyUnavailable(err)).toBe(true);
      }
      await relay.restore();
      // Once the server answers the probe, calls go through again (the client reconnects within
      // its 5 s backoff cap, then a probe; the bound leaves room for a loaded machine).
      await eventually(async () => (await signal()) === 'gone', 45_000);
    } finally {
      await connection.close();
      await relay.close();
    }
  }, 120_000);

  it('says that the workflow engine is what cannot be reached when Temporal is away', async () => {
    const created = await svc.api('POST', '/v1/incidents/chat', {
      token: tenant.member,
      body: { title: 'Checkout down', description: 'Every payment fails' },
    });
    expect(created.status).toBe(201);
    // An api whose port refuses at once, as its gate does while Temporal does not answer.
    const app = createApp({
      ...svc.appDeps,
      workflows: { ...svc.workflows, setIncidentStatus: () => Promise.reject(new TemporalUnavailableError()) },
    });
    const res = await app.request(`/v1/incidents/${created.body.incidentId}`, {
      method: 'PATCH',
      headers: { authorization: `Bearer ${tenant.member}`, 'content-type': 'application/json' },
      body: JSON.stringify({ status: 'investigating' }),
    });
    expect(res.status).toBe(503);
    expect(res.headers.get('retry-after')).toBe('5');
    expect(await res.json()).toEqual({
      error: 'service_unavailable',
      message: 'The service cannot reach its workflow engine (Temporal); retry shortly',
    });
    const [row] = await direct<
      { status: string }[]
    >`select status from incidents where id = ${created.body.incidentId}`;
    expect(row!.status).toBe('open');
    // Told apart from the database: a driver's connection error is not Temporal's.
    expect(isWorkflowEngineUnavailable(new TemporalUnavailableError())).toBe(true);
    expect(isWorkflowEngineUnavailable(Object.assign(new Error('refused'), { code: 'ECONNREFUSED' }))).toBe(false);
    expect(
      isWorkflowEngineUnavailable(
        Object.assign(new Error('Failed'), {
          name: 'ServiceError',
          cause: Object.assign(new Error('14'), { code: 14 }),
        }),
      ),
    ).toBe(true);
    expect(
      isWorkflowEngineUnavailable(
        Object.assign(new Error('Failed'), { name: 'ServiceError', cause: Object.assign(new Error('5'), { code: 5 }) }),
      ),
    ).toBe(false);
  });

  it('tells outages from faults by the driver error, also when drizzle wraps it', async () => {
    const pgError = (code: string) => Object.assign(new Error('server said no'), { name: 'PostgresError', code });
    // 25P03: the server ended a connection left idle in a transaction, as a stalled relay leaves
    // one; the request that meets it (seen in this file's stall test) is the outage's, not a bug.
    for (const code of ['08006', '08001', '53300', '53100', '57P01', '57P02', '57P03', '57P05', '25P03'])
      expect(isDependencyUnavailable(pgError(code))).toBe(true);
    for (const code of ['23505', '40001', '57014', '42P01', '22P02'])
      expect(isDependencyUnavailable(pgError(code))).toBe(false);
    for (const code of ['ECONNREFUSED', 'ECONNRESET', 'CONNECTION_CLOSED', 'CONNECT_TIMEOUT']) {
      expect(isDependencyUnavailable(Object.assign(new Error(code), { code }))).toBe(true);
    }
    const wrapped = Object.assign(new Error('Failed query: select 1'), {
      cause: Object.assign(new Error('refused'), { code: 'ECONNREFUSED' }),
    });
    expect(isDependencyUnavailable(wrapped)).toBe(true);
    // A SQLSTATE-looking code on something other than a server error is not an outage.
    expect(isDependencyUnavailable(Object.assign(new Error('x'), { code: '08006' }))).toBe(false);
    expect(isDependencyUnavailable(new Error('plain'))).toBe(false);
    expect(isDependencyUnavailable(undefined)).toBe(false);

    // The Temporal client's own error for a server that does not answer (a real client to a
    // port nobody listens on, with a short deadline instead of its 20 s of retries).
    const connection = Connection.lazy(
      temporalConnectionOptions(`127.0.0.1:${await freePort()}`, { connectTimeout: 300 }),
    );
    const temporal = await connection
      .withDeadline(Date.now() + 800, () => new Client({ connection }).workflow.getHandle('inc_nowhere').describe())
      .then(
        () => undefined,
        (err: unknown) => err,
      );
    await connection.close().catch(() => undefined);
    expect((temporal as Error).name).toBe('ServiceError');
    expect(isDependencyUnavailable(temporal)).toBe(true);
    const grpc = (code: number) =>
      Object.assign(new Error('Failed'), {
        name: 'ServiceError',
        cause: Object.assign(new Error(`${code}`), { code }),
      });
    expect(isDependencyUnavailable(grpc(14))).toBe(true);
    expect(isDependencyUnavailable(grpc(5))).toBe(false); // NOT_FOUND is an answer
  });
});
