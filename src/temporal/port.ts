import {
  ApplicationFailure,
  WithStartWorkflowOperation,
  WorkflowExecutionAlreadyStartedError,
  WorkflowFailedError,
  WorkflowNotFoundError,
  WorkflowUpdateFailedError,
  type Client,
} from '@temporalio/client';
import { AppError, type ErrorCode } from '../errors.js';
import { isDeadlineExceeded, isDependencyUnavailable, watchCall } from '../dependency-failures.js';
import { auditExportWorkflowType, type AuditExportInput } from '../audit-exports/types.js';
import { skillTestWorkflowType, type SkillOutcome, type SkillTestInput } from '../skills/types.js';
import {
  alertsReceivedSignal,
  incidentFailureTypes,
  incidentWorkflowType,
  setStatusUpdate,
  triageUpdate,
  investigationContextSignal,
  startInvestigationUpdate,
  respondToApprovalUpdate,
  type AlertsReceived,
  type ApprovalDecidedView,
  type ApprovalResponse,
  type InvestigationCommand,
  type InvestigationStarted,
  type IncidentFailureType,
  type IncidentView,
  type IncidentWorkflowInput,
  type SetStatusRequest,
  type TriageClassificationView,
  type TriageCommand,
} from '../workflows/messages.js';
import { IncidentStatusKey, SeverityKey, SourceKey, TenantIdKey } from '../workflows/search-attributes.js';

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
  triageIncident(stored: IncidentWorkflowInput, title: string, command: TriageCommand): Promise<TriageClassificationView>;
  /** Starts an investigation through the incident's workflow (409 while one runs, 429 past quota). */
  startInvestigation(stored: IncidentWorkflowInput, title: string, command: InvestigationCommand): Promise<InvestigationStarted>;
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

export function incidentStartOptions(input: IncidentWorkflowInput, title: string, taskQueue: string) {
  return {
    workflowId: input.incidentId,
    taskQueue,
    args: [input] as [IncidentWorkflowInput],
    memo: { title },
    typedSearchAttributes: [
      { key: TenantIdKey, value: input.tenantId },
      { key: IncidentStatusKey, value: input.status },
      { key: SeverityKey, value: input.severity },
      { key: SourceKey, value: input.source },
    ],
  };
}

/** The `type` of every ApplicationFailure in an error's cause chain (activity failures nest them). */
function failureTypes(err: unknown): string[] {
  const types: string[] = [];
  for (let e: unknown = err; e instanceof Error; e = e.cause) {
    if (e instanceof ApplicationFailure && e.type) types.push(e.type);
  }
  return types;
}

/**
 * The type of the failure an incident workflow's Update was refused or failed with itself (a
 * validator's or handler's own), not of an activity's failure inside it.
 */
function refusalType(err: WorkflowUpdateFailedError): IncidentFailureType | undefined {
  const type = err.cause instanceof ApplicationFailure ? err.cause.type : undefined;
  return Object.values(incidentFailureTypes).find((known) => known === type);
}

/** The api's answer to each refusal of an approval's answer. */
const approvalRefusals: Partial<Record<IncidentFailureType, ErrorCode>> = {
  ApprovalNotFound: 'approval_not_found',
  ApprovalExpired: 'approval_expired',
  AlreadyDecided: 'already_decided',
  InvalidDecision: 'validation_error',
};

function innermostMessage(err: Error): string {
  let e: Error = err;
  while (e.cause instanceof Error) e = e.cause;
  return e.message;
}

async function timed<T>(probe: () => Promise<T>): Promise<{ value?: T; latencyMs: number; error?: string }> {
  const started = performance.now();
  try {
    const value = await probe();
    return { value, latencyMs: Math.round(performance.now() - started) };
  } catch (err) {
    return { latencyMs: Math.round(performance.now() - started), error: (err as Error).message };
  }
}

/** How long the gate's probe of a Temporal server that stopped answering waits. */
export const TEMPORAL_PROBE_MS = 2000;

/**
 * How long a call waits before the server is probed, and how often after that. A server that
 * holds its connections but answers nothing (frozen, behind a partition) fails the probe, and
 * the call is answered 503 then instead of at its deadline (decision 216).
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
    (probing ??= probe().then(
      () => true,
      () => false,
    ).finally(() => {
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
 * neither the request's cancellation reaches nor, without a deadline, anything ends (decision
 * 216). The call given up runs on to its deadline, and its outcome is dropped.
 */
export function watchTemporalCall(answers: () => Promise<boolean>, everyMs: number): <T>(call: () => Promise<T>) => Promise<T> {
  return (call) => watchCall(answers, everyMs, () => new TemporalUnavailableError(), call);
}

/** How long a call that waits for a workflow's answer waits, by default (`TEMPORAL_ANSWER_TIMEOUT_MS`). */
export const DEFAULT_ANSWER_TIMEOUT_MS = 120_000;

/**
 * Bounds a call that waits for a workflow's answer (an Update, a workflow's result). The client
 * waits for one without end: with no worker polling, or a workflow that cannot make progress,
 * an api request (and the trigger dispatcher's pass that made it) hung for ever, while Temporal
 * itself answered every poll, so the gate never tripped (decision 171). Past the deadline the
 * call is 503; an Update the server accepted still runs when a worker comes. The bound is a gRPC
 * deadline, which every attempt of every call inside carries (the client's retries included;
 * a cancellation reaches only the first attempt, decision 216).
 */
export function withAnswerDeadline<A extends unknown[], R>(client: Client, timeoutMs: number, method: (...args: A) => Promise<R>): (...args: A) => Promise<R> {
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
  const probe = (ms: number) => sharedProbe(() => client.connection.withDeadline(new Date(Date.now() + ms), () => client.workflowService.getSystemInfo({})));
  const gated = createTemporalGate(probe(TEMPORAL_PROBE_MS));
  const watched = watchTemporalCall(probe(TEMPORAL_WATCH_PROBE_MS), options.watchMs ?? TEMPORAL_WATCH_MS);
  const port = ungatedPort(client, taskQueue, options.pollStaleMs ?? DEFAULT_POLL_STALE_MS);
  // A start or a signal has its deadline and is watched too, so that a manual incident is
  // answered (201; the dispatcher starts its workflow later) within a probe of the watch rather
  // than at the deadline when Temporal does not answer. It was bounded by its deadline alone
  // while the client's retry of a call given up threw out of a timer (decisions 216, 223).
  const through = <A extends unknown[], R>(method: (...args: A) => Promise<R>) => (...args: A) =>
    gated(() => watched(() => client.connection.withDeadline(Date.now() + TEMPORAL_CALL_TIMEOUT_MS, () => method(...args))));
  const answered = <A extends unknown[], R>(method: (...args: A) => Promise<R>) => {
    const bounded = withAnswerDeadline(client, options.answerTimeoutMs ?? DEFAULT_ANSWER_TIMEOUT_MS, method);
    return (...args: A) => gated(() => watched(() => bounded(...args)));
  };
  return {
    startIncident: through(port.startIncident),
    setIncidentStatus: answered(port.setIncidentStatus),
    triageIncident: answered(port.triageIncident),
    startInvestigation: answered(port.startInvestigation),
    signalInvestigationContext: through(port.signalInvestigationContext),
    respondToApproval: answered(port.respondToApproval),
    signalAlerts: through(port.signalAlerts),
    testSkill: answered(port.testSkill),
    startAuditExport: through(port.startAuditExport),
    checkServer: port.checkServer,
    checkWorkers: port.checkWorkers,
  };
}

/** The incident's run has completed, which only a close does: closed after the route read it. */
const closedMeanwhile = (what: string) => new AppError('conflict', `A closed incident is not ${what}; reopen it first (PATCH its status)`);

/** A protobuf Timestamp in milliseconds (0 when absent). */
function timestampMs(at: { seconds?: { toString(): string } | number | null; nanos?: number | null } | null | undefined): number {
  return Number(at?.seconds ?? 0) * 1000 + Math.floor((at?.nanos ?? 0) / 1e6);
}

/** How old a worker's last poll may be for it to count as alive (WORKER_POLL_STALE_MS). */
export const DEFAULT_POLL_STALE_MS = 70_000;

function ungatedPort(client: Client, taskQueue: string, pollStaleMs: number): WorkflowPort {
  const healthDeadline = () => new Date(Date.now() + 3000);
  return {
    async startIncident(input, title) {
      try {
        // The first start only. The reconciler starts from rows it read earlier; by then a
        // person may have closed the incident through an update-with-start, whose run has
        // completed. A second run from the stale row would triage and investigate a closed
        // incident again, so any earlier run, finished or not, means it is started (a reopen
        // goes through the update-with-start of setIncidentStatus, which allows a new run).
        await client.workflow.start(incidentWorkflowType, { ...incidentStartOptions(input, title, taskQueue), workflowIdReusePolicy: 'REJECT_DUPLICATE' });
      } catch (err) {
        if (err instanceof WorkflowExecutionAlreadyStartedError) return;
        throw err;
      }
    },

    async setIncidentStatus(stored, title, request) {
      const startWorkflowOperation = new WithStartWorkflowOperation(incidentWorkflowType, {
        ...incidentStartOptions(stored, title, taskQueue),
        workflowIdConflictPolicy: 'USE_EXISTING',
        // A stored `closed` row is a reopen: a new run after the completed one. From any other
        // row, a completed run means a close landed after the route read it, and a run from the
        // stale row would hold a status the incident no longer has (decision 202).
        ...(stored.status === 'closed' ? {} : { workflowIdReusePolicy: 'ALLOW_DUPLICATE_FAILED_ONLY' as const }),
      });
      try {
        return await client.workflow.executeUpdateWithStart(setStatusUpdate, {
          args: [request],
          startWorkflowOperation,
        });
      } catch (err) {
        if (err instanceof WorkflowExecutionAlreadyStartedError) {
          throw new AppError('conflict', 'The incident was closed meanwhile; read it again, and reopen it (PATCH its status) if that is what you mean');
        }
        if (err instanceof WorkflowUpdateFailedError) {
          throw new AppError('validation_error', err.cause?.message ?? err.message);
        }
        throw err;
      }
    },

    async triageIncident(stored, title, command) {
      const startWorkflowOperation = new WithStartWorkflowOperation(incidentWorkflowType, {
        ...incidentStartOptions(stored, title, taskQueue),
        workflowIdConflictPolicy: 'USE_EXISTING',
        // Never a new run after a completed one: the route read the row before a close ended the
        // run, and a run from that stale row would work on a closed incident (decision 202).
        workflowIdReusePolicy: 'ALLOW_DUPLICATE_FAILED_ONLY',
      });
      try {
        return await client.workflow.executeUpdateWithStart(triageUpdate, { args: [command], startWorkflowOperation });
      } catch (err) {
        if (err instanceof WorkflowExecutionAlreadyStartedError) throw closedMeanwhile('triaged');
        if (err instanceof WorkflowUpdateFailedError) {
          const message = err.cause?.message ?? err.message;
          // The validator refuses a closed incident; anything else is the analysis failing.
          throw new AppError(refusalType(err) === incidentFailureTypes.IncidentClosed ? 'conflict' : 'service_unavailable', message);
        }
        throw err;
      }
    },

    async startInvestigation(stored, title, command) {
      const startWorkflowOperation = new WithStartWorkflowOperation(incidentWorkflowType, {
        ...incidentStartOptions(stored, title, taskQueue),
        workflowIdConflictPolicy: 'USE_EXISTING',
        workflowIdReusePolicy: 'ALLOW_DUPLICATE_FAILED_ONLY', // as for triage
      });
      try {
        return await client.workflow.executeUpdateWithStart(startInvestigationUpdate, { args: [command], startWorkflowOperation });
      } catch (err) {
        if (err instanceof WorkflowExecutionAlreadyStartedError) throw closedMeanwhile('investigated');
        if (err instanceof WorkflowUpdateFailedError) {
          const message = innermostMessage(err);
          // The quota is refused by the workflow (an automatic start's null run) or by the begin activity.
          if (failureTypes(err).includes(incidentFailureTypes.QuotaExceeded)) throw new AppError('quota_exceeded', message);
          const refused = refusalType(err);
          if (refused === incidentFailureTypes.InvestigationRunning || refused === incidentFailureTypes.IncidentClosed) throw new AppError('conflict', message);
          throw new AppError('service_unavailable', message);
        }
        throw err;
      }
    },

    async respondToApproval(incidentId, response) {
      try {
        return await client.workflow.getHandle(incidentId).executeUpdate(respondToApprovalUpdate, { args: [response] });
      } catch (err) {
        if (err instanceof WorkflowNotFoundError) return 'gone';
        if (err instanceof WorkflowUpdateFailedError) {
          const refused = refusalType(err);
          throw new AppError((refused && approvalRefusals[refused]) ?? 'service_unavailable', innermostMessage(err));
        }
        throw err;
      }
    },

    async signalInvestigationContext(incidentId) {
      try {
        await client.workflow.getHandle(incidentId).signal(investigationContextSignal);
        return 'delivered';
      } catch (err) {
        if (err instanceof WorkflowNotFoundError) return 'gone';
        throw err;
      }
    },

    async signalAlerts(incidentId, payload) {
      try {
        await client.workflow.getHandle(incidentId).signal(alertsReceivedSignal, payload);
        return 'delivered';
      } catch (err) {
        if (err instanceof WorkflowNotFoundError) return 'gone';
        throw err;
      }
    },

    async testSkill(input) {
      try {
        return await client.workflow.execute(skillTestWorkflowType, {
          workflowId: input.invocationId,
          taskQueue,
          args: [input],
          // Bounds the api request when no worker picks the workflow up.
          workflowExecutionTimeout: '2 minutes',
          typedSearchAttributes: [{ key: TenantIdKey, value: input.tenantId }],
        });
      } catch (err) {
        if (err instanceof WorkflowFailedError) {
          throw new AppError('service_unavailable', 'The skill test did not finish; check that a worker is running');
        }
        throw err;
      }
    },

    async startAuditExport(input) {
      try {
        // Bounded: when Temporal is away the api answers anyway and the reconciler starts it later.
        await client.connection.withDeadline(new Date(Date.now() + 10_000), () =>
          client.workflow.start(auditExportWorkflowType, {
            workflowId: input.exportId,
            taskQueue,
            args: [input],
            // A finished export's id is never run again (the reconciler may start it twice).
            workflowIdReusePolicy: 'REJECT_DUPLICATE',
            typedSearchAttributes: [{ key: TenantIdKey, value: input.tenantId }],
          }),
        );
      } catch (err) {
        if (err instanceof WorkflowExecutionAlreadyStartedError) return;
        throw err;
      }
    },

    async checkServer() {
      const result = await timed(() =>
        client.connection.withDeadline(healthDeadline(), () => client.workflowService.getSystemInfo({})),
      );
      return { ok: !result.error, latencyMs: result.latencyMs, ...(result.error ? { error: result.error } : {}) };
    },

    async checkWorkers() {
      const result = await timed(() =>
        client.connection.withDeadline(healthDeadline(), () =>
          client.workflowService.describeTaskQueue({
            namespace: client.options.namespace,
            taskQueue: { name: taskQueue },
            taskQueueType: 1, // workflow task queue
          }),
        ),
      );
      // Temporal lists a poller for 5 minutes after its last poll: only recent polls count.
      const pollers = (result.value?.pollers ?? []).filter((p) => Date.now() - timestampMs(p.lastAccessTime) <= pollStaleMs).length;
      const error = result.error ?? (pollers === 0 ? `no worker has polled task queue ${taskQueue} in the last ${pollStaleMs / 1000} s` : undefined);
      return { ok: !error, latencyMs: result.latencyMs, pollers, ...(error ? { error } : {}) };
    },
  };
}
