/**
 * A worker killed (SIGKILL, in its own process) while triage waits on the model: the attempt is
 * retried on another worker once its heartbeats stop (the heartbeat timeout), not after the whole
 * start-to-close timeout, and a live attempt waiting on a slow model longer than the heartbeat
 * timeout is not cut off (decision 206).
 */
import type { ChildProcess } from 'node:child_process';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import proto from '@temporalio/proto';
import { eq } from 'drizzle-orm';
import { afterAll, describe, expect, it } from 'vitest';
import { createOpenAiCompatibleProvider } from '../../src/analysis/providers.js';
import { triageResults } from '../../src/db/schema/investigation.js';
import { checkoutIncident } from '../helpers/remediation.js';
import { eventually } from '../helpers/webhooks.js';
import { startTestWorker, startWorkerProcess, useWorkerlessService } from '../helpers/workers.js';

/** The workflow's heartbeat timeout for activities that wait on a model (src/workflows/incident/proxies.ts). */
const HEARTBEAT_TIMEOUT_MS = 15_000;
/** How long the model takes to answer the healthy worker: longer than the heartbeat timeout. */
const SLOW_ANSWER_MS = HEARTBEAT_TIMEOUT_MS + 5_000;

const env = useWorkerlessService();
let child: ChildProcess | undefined;
let server: Server | undefined;
afterAll(async () => {
  child?.kill('SIGKILL'); // after hooks run last-registered first: before the service stops
  server?.closeAllConnections();
  await new Promise((resolve) => (server ? server.close(resolve) : resolve(undefined)));
});

describe('a worker killed while triage waits on the model', () => {
  it('retries triage on another worker after the heartbeat timeout, where a model slower than that timeout still answers', async () => {
    const { svc, connection } = env;
    // The model: the first call (the doomed worker's) is never answered; later ones after SLOW_ANSWER_MS.
    const calls: number[] = [];
    server = createServer((req, res) => {
      req.resume();
      req.on('end', () => {
        calls.push(Date.now());
        if (calls.length === 1) return;
        setTimeout(() => {
          res.setHeader('content-type', 'application/json');
          const content = JSON.stringify({
            priority: 'critical',
            summary: 'Checkout is down',
            confidence: 0.8,
            reasoning: 'errors on every call',
            suggestedAgents: ['logs'],
          });
          res.end(
            JSON.stringify({
              model: 'fake-gpt-1',
              choices: [{ message: { role: 'assistant', content } }],
              usage: { total_tokens: 10 },
            }),
          );
        }, SLOW_ANSWER_MS);
      });
    });
    await new Promise<void>((resolve) => server!.listen(0, '127.0.0.1', resolve));
    const baseUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1`;

    const lines: string[] = [];
    child = await startWorkerProcess(svc, { LLM_BASE_URL: baseUrl }, lines);
    const tenant = await svc.newTenant({ plan: 'plan_business' });
    const id = await checkoutIncident(svc, tenant.member);
    const triaged = svc.api('POST', `/v1/triage/${id}`, { token: tenant.member });
    triaged.catch(() => undefined); // awaited below; not an unhandled rejection if the test fails first

    // Triage is waiting on the model in the worker process: kill it.
    await eventually(async () => calls.length === 1, 30_000);
    child.kill('SIGKILL');
    await new Promise((resolve) => child!.once('exit', resolve));
    child = undefined;
    const killedAt = Date.now();

    const healthy = await startTestWorker(
      svc,
      connection,
      {},
      {
        model: createOpenAiCompatibleProvider({ baseUrl, model: 'fake-gpt-1', timeoutMs: 50_000, costPer1kTokens: 0 }),
      },
    );
    try {
      // Retried after the heartbeat timeout: with only the start-to-close timeout (60 s) the
      // second call would come about a minute after the kill.
      await eventually(async () => calls.length >= 2, 40_000);
      expect(calls[1]! - killedAt).toBeLessThan(40_000);
      const res = await triaged;
      expect(res.status).toBe(200);
      expect(res.body).toMatchObject({ incidentId: id, priority: 'critical', summary: 'Checkout is down' });
      const [row] = await svc.database.db.select().from(triageResults).where(eq(triageResults.incidentId, id));
      expect(row).toMatchObject({ priority: 'critical', model: 'fake-gpt-1', run: 1 });
      // The healthy attempt outlived the heartbeat timeout because it heartbeated: the model was
      // called twice, not a third time for an attempt cut off while it waited.
      expect(calls).toHaveLength(2);

      const history = await svc.client.workflow.getHandle(id).fetchHistory();
      const scheduled = (history.events ?? []).find(
        (e) => e.activityTaskScheduledEventAttributes?.activityType?.name === 'triageIncident',
      );
      expect(Number(scheduled!.activityTaskScheduledEventAttributes!.heartbeatTimeout!.seconds)).toBe(
        HEARTBEAT_TIMEOUT_MS / 1000,
      );
      const started = (history.events ?? []).find(
        (e) => String(e.activityTaskStartedEventAttributes?.scheduledEventId) === String(scheduled!.eventId),
      );
      // The attempt that completed is the second; the first ended by its heartbeat timeout.
      expect(started!.activityTaskStartedEventAttributes!.attempt).toBe(2);
      expect(started!.activityTaskStartedEventAttributes!.lastFailure?.timeoutFailureInfo?.timeoutType).toBe(
        proto.temporal.api.enums.v1.TimeoutType.TIMEOUT_TYPE_HEARTBEAT,
      );
    } finally {
      await healthy.stop();
    }
  }, 120_000);
});
