import type { Client } from '@temporalio/client';
import { AppError } from '../errors.js';
import { isDeadlineExceeded, isDependencyUnavailable, watchCall } from '../dependency-failures.js';
import type { AuditExportInput } from '../audit-exports/types.js';
import type { SkillOutcome, SkillTestInput } from '../skills/types.js';
import type {
  AlertsReceived,
  ApprovalDecidedView,
  ApprovalResponse,
  InvestigationCommand,
  InvestigationStarted,
  IncidentView,
  IncidentWorkflowInput,
  MergeRequest,
  SetStatusRequest,
  TriageClassificationView,
  TriageCommand,
} from '../workflows/messages.js';
import * as calls from './workflow-calls.js';

export interface DependencyHealth {
  ok: boolean;
  latencyMs: number;
  error?: string;
}

/** What the api and the reconciler need from Temporal; the api never sees workflow code. */
export interface WorkflowPort {
  /** Starts the incident's workflow; an already running or finished one counts as started. */
  startIncident(input: IncidentWorkflowInput, title: string): Promise<void>;
  /** Moves an incident; a closed incident's workflow is started again from `stored` (reopen). */
  setIncidentStatus(stored: IncidentWorkflowInput, title: string, request: SetStatusRequest): Promise<IncidentView>;
  /** Triages (or re-triages) an incident through its workflow and answers the classification. */
  triageIncident(
    stored: IncidentWorkflowInput,
    title: string,
    command: TriageCommand,
  ): Promise<TriageClassificationView>;
  /** Starts an investigation through the incident's workflow (409 while one runs, 429 past quota). */
  startInvestigation(
    stored: IncidentWorkflowInput,
    title: string,
    command: InvestigationCommand,
  ): Promise<InvestigationStarted>;
  /** Merges an incident into another through the merged one's workflow (409 once it is closed or resolved). */
  mergeIncident(stored: IncidentWorkflowInput, title: string, request: MergeRequest): Promise<IncidentView>;
  /** Tells the incident's workflow that human context was stored; 'gone' when it has completed. */
  signalInvestigationContext(incidentId: string): Promise<'delivered' | 'gone'>;
  /** An admin's answer to an approval, through the incident workflow's Update; 'gone' when that workflow has ended. */
  respondToApproval(incidentId: string, response: ApprovalResponse): Promise<ApprovalDecidedView | 'gone'>;
  /** Signals alerts to a running incident workflow; 'gone' when its workflow has completed. */
  signalAlerts(incidentId: string, payload: AlertsReceived): Promise<'delivered' | 'gone'>;
  /** Runs a skill once through the skill test workflow and waits for its outcome. */
  testSkill(input: SkillTestInput): Promise<SkillOutcome>;
  /** Starts an audit export's workflow (id = exportId); one that exists or existed counts as started. */
  startAuditExport(input: AuditExportInput): Promise<void>;
  checkServer(): Promise<DependencyHealth>;
  checkWorkers(): Promise<DependencyHealth & { pollers: number }>;
}

/** How long the gate's probe of a Temporal server that stopped answering waits. */
export const TEMPORAL_PROBE_MS = 2000;

/**
 * How long a call waits before the server is probed, and how often after that. A server that
 * holds its connections but answers nothing (frozen, behind a partition) fails the probe, and
 * the call is answered 503 then instead of at its deadline.
 */
export const TEMPORAL_WATCH_MS = 10_000;

/**
 * How long the watch's probe waits: longer than the gate's, since it runs beside a call that is
 * only slow (a triage waiting on the model), and a busy server must not fail it.
 */
export const TEMPORAL_WATCH_PROBE_MS = 5000;

/** The bound of a call that does not wait for a workflow's answer (a start, a signal). */
export const TEMPORAL_CALL_TIMEOUT_MS = 30_000;

/** What a call gets, at once, while Temporal is known not to answer (a 503 at the api). */
export class TemporalUnavailableError extends Error {
  readonly code = 'TEMPORAL_UNAVAILABLE';
  constructor() {
    super('Temporal is not answering; retry shortly');
    this.name = 'TemporalUnavailableError';
  }
}

/** One probe at a time, shared by every caller that asks while it runs: whether the server answered. */
export function sharedProbe(probe: () => Promise<unknown>): () => Promise<boolean> {
  let probing: Promise<boolean> | null = null;
  return () =>
    (probing ??= probe()
      .then(
        () => true,
        () => false,
      )
      .finally(() => {
        probing = null;
      }));
}

/**
 * Fails calls fast while Temporal is known to be away. The client retries a server it cannot
 * reach for about 20 s before it gives up; once a call has given up so (or its watch found the
 * server silent), each later call first probes the server (`answers`, one probe shared by the
 * calls that wait on it) and fails at once with TemporalUnavailableError when the server still
 * does not answer. When it answers, calls go through as before. The first call of an outage
 * still waits for its watch (10 s, then a probe), so a restart of a few seconds costs nobody an error.
 */
export function createTemporalGate(answers: () => Promise<boolean>): <T>(call: () => Promise<T>) => Promise<T> {
  let away = false;
  return async (call) => {
    if (away) {
      if (!(await answers())) throw new TemporalUnavailableError();
      away = false;
    }
    try {
      return await call();
    } catch (err) {
      if (isDependencyUnavailable(err)) away = true;
      throw err;
    }
  };
}

/**
 * Watches a call on Temporal with `watchCall`: a frozen server keeps its connections open, the
 * keepalive drops them after 45 s, and the client's retry of a dropped call is a new call that
 * neither the request's cancellation reaches nor, without a deadline, anything ends
 * (ADR 0216). The call given up runs on to its deadline, and its outcome is dropped.
 */
export function watchTemporalCall(
  answers: () => Promise<boolean>,
  everyMs: number,
): <T>(call: () => Promise<T>) => Promise<T> {
  return (call) => watchCall(answers, everyMs, () => new TemporalUnavailableError(), call);
}

/** How long a call that waits for a workflow's answer waits, by default (`TEMPORAL_ANSWER_TIMEOUT_MS`). */
export const DEFAULT_ANSWER_TIMEOUT_MS = 120_000;

/**
 * Bounds a call that waits for a workflow's answer (an Update, a workflow's result). The client
 * waits for one without end: with no worker polling, or a workflow that cannot make progress,
 * an api request (and the trigger dispatcher's pass that made it) hung for ever, while Temporal
 * itself answered every poll, so the gate never tripped (ADR 0171). Past the deadline the
 * call is 503; an Update the server accepted still runs when a worker comes. The bound is a gRPC
 * deadline, which every attempt of every call inside carries (the client's retries included;
 * a cancellation reaches only the first attempt).
 */
export function withAnswerDeadline<A extends unknown[], R>(
  client: Client,
  timeoutMs: number,
  method: (...args: A) => Promise<R>,
): (...args: A) => Promise<R> {
  return async (...args) => {
    const deadline = Date.now() + timeoutMs;
    try {
      return await client.connection.withDeadline(deadline, () => method(...args));
    } catch (err) {
      if (!(err instanceof AppError) && (Date.now() >= deadline || isDeadlineExceeded(err))) {
        throw new AppError(
          'service_unavailable',
          `The incident's workflow did not answer within ${Math.round(timeoutMs / 1000)} s (are its workers running?); retry later`,
        );
      }
      throw err;
    }
  };
}

/**
 * The port over a Temporal client. Every call but the health checks (which have their own
 * deadline) goes through a `createTemporalGate` gate and has a deadline: a call that waits for a
 * workflow's answer its answer deadline (`withAnswerDeadline`) and a `watchTemporalCall` watch,
 * any other `TEMPORAL_CALL_TIMEOUT_MS`.
 */
export function createTemporalWorkflowPort(
  client: Client,
  taskQueue: string,
  options: { answerTimeoutMs?: number; watchMs?: number; pollStaleMs?: number } = {},
): WorkflowPort {
  const probe = (ms: number) =>
    sharedProbe(() =>
      client.connection.withDeadline(new Date(Date.now() + ms), () => client.workflowService.getSystemInfo({})),
    );
  const gated = createTemporalGate(probe(TEMPORAL_PROBE_MS));
  const watched = watchTemporalCall(probe(TEMPORAL_WATCH_PROBE_MS), options.watchMs ?? TEMPORAL_WATCH_MS);
  const port = ungatedPort(client, taskQueue, options.pollStaleMs ?? DEFAULT_POLL_STALE_MS);
  // A start or a signal has its deadline and is watched too, so that a manual incident is
  // answered (201; the dispatcher starts its workflow later) within a probe of the watch rather
  // than at the deadline when Temporal does not answer. It was bounded by its deadline alone
  // while the client's retry of a call given up threw out of a timer (ADR 0216).
  const through =
    <A extends unknown[], R>(method: (...args: A) => Promise<R>) =>
    (...args: A) =>
      gated(() =>
        watched(() => client.connection.withDeadline(Date.now() + TEMPORAL_CALL_TIMEOUT_MS, () => method(...args))),
      );
  const answered = <A extends unknown[], R>(method: (...args: A) => Promise<R>) => {
    const bounded = withAnswerDeadline(client, options.answerTimeoutMs ?? DEFAULT_ANSWER_TIMEOUT_MS, method);
    return (...args: A) => gated(() => watched(() => bounded(...args)));
  };
  return {
    startIncident: through(port.startIncident),
    setIncidentStatus: answered(port.setIncidentStatus),
    triageIncident: answered(port.triageIncident),
    startInvestigation: answered(port.startInvestigation),
    mergeIncident: answered(port.mergeIncident),
    signalInvestigationContext: through(port.signalInvestigationContext),
    respondToApproval: answered(port.respondToApproval),
    signalAlerts: through(port.signalAlerts),
    testSkill: answered(port.testSkill),
    startAuditExport: through(port.startAuditExport),
    checkServer: port.checkServer,
    checkWorkers: port.checkWorkers,
  };
}

/** How old a worker's last poll may be for it to count as alive (WORKER_POLL_STALE_MS). */
export const DEFAULT_POLL_STALE_MS = 70_000;

/** The calls without gate, watch or deadline, over one client and task queue. */
function ungatedPort(client: Client, taskQueue: string, pollStaleMs: number): WorkflowPort {
  const target: calls.WorkflowTarget = { client, taskQueue };
  return {
    startIncident: (input, title) => calls.startIncident(target, input, title),
    setIncidentStatus: (stored, title, request) => calls.setIncidentStatus(target, stored, title, request),
    triageIncident: (stored, title, command) => calls.triageIncident(target, stored, title, command),
    startInvestigation: (stored, title, command) => calls.startInvestigation(target, stored, title, command),
    mergeIncident: (stored, title, request) => calls.mergeIncident(target, stored, title, request),
    respondToApproval: (incidentId, response) => calls.respondToApproval(target, incidentId, response),
    signalInvestigationContext: (incidentId) => calls.signalInvestigationContext(target, incidentId),
    signalAlerts: (incidentId, payload) => calls.signalAlerts(target, incidentId, payload),
    testSkill: (input) => calls.testSkill(target, input),
    startAuditExport: (input) => calls.startAuditExport(target, input),
    checkServer: () => calls.checkServer(target),
    checkWorkers: () => calls.checkWorkers(target, pollStaleMs),
  };
}
