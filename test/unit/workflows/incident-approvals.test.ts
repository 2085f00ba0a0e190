/**
 * The incident workflow's approval timer on a time-skipping test server: an approval that expires
 * at its deadline, one superseded by a proposal on newer evidence, and a reopen days later. The
 * deadlines are an hour long and pass in milliseconds: the test skips the server's clock.
 */
import { randomUUID } from 'node:crypto';
import { WithStartWorkflowOperation, WorkflowUpdateFailedError, type WorkflowHandle } from '@temporalio/client';
import proto from '@temporalio/proto';
import type { TestWorkflowEnvironment } from '@temporalio/testing';
import { Worker, type WorkflowBundleWithSourceMap } from '@temporalio/worker';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { incidentWorkflow } from '../../../src/workflows/index.js';
import {
  getStateQuery,
  incidentWorkflowType,
  investigationContextSignal,
  respondToApprovalUpdate,
  setStatusUpdate,
  startInvestigationUpdate,
  type Actor,
  type IncidentWorkflowInput,
  type IncidentWorkflowState,
} from '../../../src/workflows/messages.js';
import { bundleWorkflows, createTimeSkippingEnvironment } from '../../helpers/time-skipping.js';
import { APPROVAL_MINUTES, fakeIncidentActivities } from './incident-activities.js';

const { EventType } = proto.temporal.api.enums.v1;
const workflowTaskEvents = new Set([
  EventType.EVENT_TYPE_WORKFLOW_TASK_SCHEDULED,
  EventType.EVENT_TYPE_WORKFLOW_TASK_STARTED,
  EventType.EVENT_TYPE_WORKFLOW_TASK_COMPLETED,
  EventType.EVENT_TYPE_WORKFLOW_TASK_FAILED,
  EventType.EVENT_TYPE_WORKFLOW_TASK_TIMED_OUT,
]);

let env: TestWorkflowEnvironment;
let bundle: WorkflowBundleWithSourceMap;

beforeAll(async () => {
  [env, bundle] = await Promise.all([createTimeSkippingEnvironment(), bundleWorkflows()]);
});
afterAll(() => env?.teardown());

const member: Actor = { type: 'user', id: 'user-member' };
const admin: Actor = { type: 'user', id: 'user-admin' };
const minutes = (n: number) => n * 60_000;

/** A manual incident's workflow on a worker of its own (task queue per test), with its fake activities. */
async function withIncident(test: (incident: Incident) => Promise<void>): Promise<void> {
  const taskQueue = `unit-${randomUUID()}`;
  const input: IncidentWorkflowInput = {
    incidentId: `inc_${randomUUID()}`,
    tenantId: 'ten_unit',
    title: 'Checkout errors',
    severity: 'high',
    source: 'manual',
    status: 'open',
    version: 1,
  };
  const fake = fakeIncidentActivities(input);
  const worker = await Worker.create({
    connection: env.nativeConnection,
    taskQueue,
    workflowBundle: bundle,
    activities: fake.activities,
  });
  await worker.runUntil(async () => {
    const handle = await env.client.workflow.start<typeof incidentWorkflow>(incidentWorkflowType, {
      workflowId: input.incidentId,
      taskQueue,
      args: [input],
    });
    try {
      await test({ input, taskQueue, handle, fake });
    } finally {
      await endQuietly(input.incidentId);
    }
  });
}

/**
 * Ends a test's workflow once its worker has finished what it was doing. Time skipping is global
 * to the server: a run left behind with a timer would wake with no worker and hold every later
 * test's clock still, and so would one terminated while a worker holds its workflow task (the
 * test server then never releases that task's hold on the clock).
 */
async function endQuietly(workflowId: string): Promise<void> {
  const handle = env.client.workflow.getHandle(workflowId);
  let seen = -1;
  for (let i = 0; i < 250; i++) {
    const description = await handle.describe();
    if (description.status.name !== 'RUNNING') return;
    const events = (await handle.fetchHistory()).events ?? [];
    const lastTask = events.findLast((e) => workflowTaskEvents.has(e.eventType ?? 0));
    const idle =
      lastTask?.eventType === EventType.EVENT_TYPE_WORKFLOW_TASK_COMPLETED &&
      !description.raw.pendingActivities?.length;
    if (idle && events.length === seen) break; // and nothing happened for a moment
    seen = events.length;
    await new Promise((r) => setTimeout(r, 20));
  }
  await handle.terminate('the test is over');
}

interface Incident {
  input: IncidentWorkflowInput;
  taskQueue: string;
  handle: WorkflowHandle<typeof incidentWorkflow>;
  fake: ReturnType<typeof fakeIncidentActivities>;
}

/** Polls the workflow's state (real milliseconds; the server's clock stands still meanwhile). */
async function stateWhen(
  handle: WorkflowHandle,
  done: (s: IncidentWorkflowState) => boolean,
): Promise<IncidentWorkflowState> {
  const until = Date.now() + 10_000;
  for (;;) {
    const state = await handle.query(getStateQuery);
    if (done(state)) return state;
    if (Date.now() > until) throw new Error(`the workflow did not get there; its state: ${JSON.stringify(state)}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

/** Investigates the incident to a conclusion and waits until its remediation awaits approval. */
async function awaitingApproval(handle: WorkflowHandle, approvalId: string) {
  expect(await handle.executeUpdate(startInvestigationUpdate, { args: [{ actor: member }] })).toMatchObject({
    status: 'investigating',
  });
  return stateWhen(handle, (s) => s.pendingApprovalId === approvalId && s.status === 'awaiting_approval');
}

/** The refusal an answer gets, as `type: message` (the type once validators throw typed failures). */
async function refusal(
  handle: WorkflowHandle,
  approvalId: string,
  decision: 'approve' | 'reject' = 'approve',
): Promise<string> {
  const err = await handle
    .executeUpdate(respondToApprovalUpdate, { args: [{ approvalId, decision, actor: admin }] })
    .then(
      () => undefined,
      (e: unknown) => e,
    );
  expect(err).toBeInstanceOf(WorkflowUpdateFailedError);
  const cause = (err as WorkflowUpdateFailedError).cause as (Error & { type?: string }) | undefined;
  return `${cause?.type ?? ''}: ${cause?.message ?? ''}`;
}

describe('the incident workflow on a time-skipping server', () => {
  it('expires an approval at its deadline, not before; a late answer is refused as expired', async () => {
    await withIncident(async ({ handle, fake }) => {
      await awaitingApproval(handle, 'apr-1');
      const proposedAt = await env.currentTimeMs();

      // A minute before the deadline the approval still waits.
      await env.sleep(minutes(APPROVAL_MINUTES - 1));
      expect(await handle.query(getStateQuery)).toMatchObject({
        pendingApprovalId: 'apr-1',
        remediationStatus: 'awaiting_approval',
      });
      expect(fake.callsTo('expireApproval')).toEqual([]);

      // Past it, the durable timer has fired: expired, cancelled, the incident back with a human.
      await env.sleep(minutes(2));
      const state = await stateWhen(handle, (s) => s.remediationStatus === 'cancelled' && s.status === 'investigating');
      expect(state.pendingApprovalId).toBeUndefined();
      expect(fake.callsTo('expireApproval')).toEqual([
        expect.objectContaining({ approvalId: 'apr-1', remediationId: 'rem-1', reason: 'deadline' }),
      ]);
      expect((await env.currentTimeMs()) - proposedAt).toBeGreaterThanOrEqual(minutes(APPROVAL_MINUTES));

      expect(await refusal(handle, 'apr-1')).toMatch(/approval_?expired.*deadline/i);
      expect(fake.callsTo('recordApprovalDecision')).toEqual([]);
      expect(fake.callsTo('executeRemediationStep')).toEqual([]);
    });
  });

  it('supersedes an approval when new evidence changes the conclusion; the new one has a deadline of its own', async () => {
    await withIncident(async ({ handle, fake }) => {
      await awaitingApproval(handle, 'apr-1');
      await env.sleep(minutes(APPROVAL_MINUTES - 10));

      // Human context re-synthesises the investigation; the evidence behind it has changed.
      fake.changeEvidence('evidence-2');
      await handle.signal(investigationContextSignal);
      await stateWhen(handle, (s) => s.pendingApprovalId === 'apr-2' && s.status === 'awaiting_approval');
      expect(fake.callsTo('expireApproval')).toEqual([
        expect.objectContaining({ approvalId: 'apr-1', reason: 'superseded' }),
      ]);
      expect(await refusal(handle, 'apr-1')).toMatch(/approval_?expired.*superseded/i);

      // Past the first approval's deadline the second one still waits: its timer is its own.
      await env.sleep(minutes(30));
      expect(await handle.query(getStateQuery)).toMatchObject({
        pendingApprovalId: 'apr-2',
        remediationStatus: 'awaiting_approval',
      });
      expect(fake.callsTo('expireApproval')).toHaveLength(1);

      const decided = await handle.executeUpdate(respondToApprovalUpdate, {
        args: [{ approvalId: 'apr-2', decision: 'approve', actor: admin }],
      });
      expect(decided).toMatchObject({ approvalId: 'apr-2', remediationId: 'rem-2', decision: 'approve' });
      await stateWhen(handle, (s) => s.remediationStatus === 'completed' && s.status === 'resolved');
      expect(fake.callsTo('executeRemediationStep').map((a) => [a.remediationId, a.index])).toEqual([
        ['rem-2', 0],
        ['rem-2', 1],
      ]);
      expect(fake.callsTo('completeRemediation')).toEqual([
        expect.objectContaining({ remediationId: 'rem-2', ok: true }),
      ]);
    });
  });

  it('a superseding conclusion of manual steps only ends the wait: no new approval, the incident back under investigation (ADR 0258)', async () => {
    await withIncident(async ({ handle, fake }) => {
      await awaitingApproval(handle, 'apr-1');
      fake.changeEvidence('evidence-2');
      fake.manualStepsOnly();
      await handle.signal(investigationContextSignal);
      const state = await stateWhen(handle, (s) => s.remediationStatus === 'manual_only');
      expect(state.pendingApprovalId).toBeUndefined();
      await stateWhen(handle, (s) => s.status === 'investigating');
      expect(fake.callsTo('expireApproval')).toEqual([
        expect.objectContaining({ approvalId: 'apr-1', reason: 'superseded' }),
      ]);
      expect(fake.callsTo('proposeRemediation')).toHaveLength(2);
      expect(fake.callsTo('projectStatusChange').map((c) => c.to)).toEqual([
        'investigating',
        'awaiting_approval',
        'investigating',
      ]);
      // Nothing waits: past the first deadline no approval is expired again, and none was decided.
      await env.sleep(minutes(APPROVAL_MINUTES + 1));
      expect(fake.callsTo('expireApproval')).toHaveLength(1);
      expect(fake.callsTo('recordApprovalDecision')).toEqual([]);
      expect(await refusal(handle, 'apr-1')).toMatch(/approval_?expired.*superseded/i);
      // The move back is a new command, behind its patch (ADR 0254); the history replays.
      const history = await handle.fetchHistory();
      const patches = (history.events ?? [])
        .flatMap((e) => Object.values(e.markerRecordedEventAttributes?.details ?? {}))
        .flatMap((d) => d.payloads ?? [])
        .map((p) => Buffer.from(p.data ?? []).toString('utf8'));
      expect(patches.some((p) => p.includes('manual-only-leaves-awaiting-approval'))).toBe(true);
      await Worker.runReplayHistory({ workflowBundle: bundle }, history, 'manual-only-superseded');
    });
  });

  it('ends the pending approval on close, and reopened days later runs anew with a deadline of its own', async () => {
    await withIncident(async ({ input, taskQueue, handle, fake }) => {
      await awaitingApproval(handle, 'apr-1');
      const firstRunId = (await handle.describe()).runId;

      const closed = await handle.executeUpdate(setStatusUpdate, { args: [{ status: 'closed', actor: admin }] });
      expect(closed.status).toBe('closed');
      const ended = await handle.result();
      expect(ended).toMatchObject({ status: 'closed', remediationStatus: 'cancelled' });
      expect(fake.callsTo('expireApproval')).toEqual([
        expect.objectContaining({ approvalId: 'apr-1', reason: 'closed' }),
      ]);

      // Three days later a person reopens it to investigate again: a new run of the same
      // workflow id, started from the stored closed incident (as the api's port does).
      await env.sleep(minutes(3 * 24 * 60));
      const reopened = await env.client.workflow.executeUpdateWithStart(setStatusUpdate, {
        args: [{ status: 'investigating', actor: member }],
        startWorkflowOperation: new WithStartWorkflowOperation<typeof incidentWorkflow>(incidentWorkflowType, {
          workflowId: input.incidentId,
          taskQueue,
          args: [{ ...input, status: 'closed', version: ended.version }],
          workflowIdConflictPolicy: 'USE_EXISTING',
        }),
      });
      expect(reopened.status).toBe('investigating');
      const reopenedHandle = env.client.workflow.getHandle(input.incidentId);
      expect((await reopenedHandle.describe()).runId).not.toBe(firstRunId);

      // The reopen investigates (automatically) and asks again; the old approval is not this run's.
      const state = await stateWhen(
        reopenedHandle,
        (s) => s.pendingApprovalId === 'apr-2' && s.status === 'awaiting_approval',
      );
      expect(state.version).toBeGreaterThan(ended.version);
      expect(fake.callsTo('beginInvestigation').map((a) => a.automatic)).toEqual([false, true]);
      expect(await refusal(reopenedHandle, 'apr-1')).toMatch(/not_?found/i);

      // The reopened run keeps its own durable deadline, and lives on after it.
      await env.sleep(minutes(APPROVAL_MINUTES + 1));
      await stateWhen(reopenedHandle, (s) => s.remediationStatus === 'cancelled' && s.status === 'investigating');
      expect(fake.callsTo('expireApproval').map((a) => [a.approvalId, a.reason])).toEqual([
        ['apr-1', 'closed'],
        ['apr-2', 'deadline'],
      ]);
      expect((await reopenedHandle.describe()).status.name).toBe('RUNNING');
    });
  });
});
