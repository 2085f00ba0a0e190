/**
 * The port's calls on a Temporal client, one function each, without the gate, watch and
 * deadlines that `createTemporalWorkflowPort` (port.ts) puts around them.
 */
import {
  WithStartWorkflowOperation,
  WorkflowExecutionAlreadyStartedError,
  WorkflowFailedError,
  WorkflowNotFoundError,
  type Client,
} from '@temporalio/client';
import { AppError } from '../errors.js';
import { auditExportWorkflowType, type AuditExportInput } from '../audit-exports/types.js';
import { skillTestWorkflowType, type SkillTestInput } from '../skills/types.js';
import {
  alertsReceivedSignal,
  incidentWorkflowType,
  setStatusUpdate,
  triageUpdate,
  investigationContextSignal,
  startInvestigationUpdate,
  respondToApprovalUpdate,
  mergeIntoUpdate,
  type AlertsReceived,
  type ApprovalResponse,
  type InvestigationCommand,
  type IncidentWorkflowInput,
  type MergeRequest,
  type SetStatusRequest,
  type TriageCommand,
} from '../workflows/messages.js';
import { incidentStaticDetails, incidentSummary } from './incident-ui.js';
import { IncidentStatusKey, SeverityKey, SourceKey, TenantIdKey } from '../workflows/search-attributes.js';
import {
  approvalFailure,
  investigationFailure,
  mergeFailure,
  setStatusFailure,
  triageFailure,
} from './failure-mapping.js';

/** The client and the task queue the calls start workflows on. */
export interface WorkflowTarget {
  client: Client;
  taskQueue: string;
}

export function incidentStartOptions(input: IncidentWorkflowInput, title: string, taskQueue: string) {
  return {
    workflowId: input.incidentId,
    taskQueue,
    args: [input] as [IncidentWorkflowInput],
    memo: { title },
    // The Temporal UI lists the incident by its title, with its tenant and origin (ADR 0279).
    staticSummary: incidentSummary(title),
    staticDetails: incidentStaticDetails(input),
    typedSearchAttributes: [
      { key: TenantIdKey, value: input.tenantId },
      { key: IncidentStatusKey, value: input.status },
      { key: SeverityKey, value: input.severity },
      { key: SourceKey, value: input.source },
    ],
  };
}

export async function startIncident(
  { client, taskQueue }: WorkflowTarget,
  input: IncidentWorkflowInput,
  title: string,
) {
  try {
    // The first start only. The reconciler starts from rows it read earlier; by then a
    // person may have closed the incident through an update-with-start, whose run has
    // completed. A second run from the stale row would triage and investigate a closed
    // incident again, so any earlier run, finished or not, means it is started (a reopen
    // goes through the update-with-start of setIncidentStatus, which allows a new run).
    await client.workflow.start(incidentWorkflowType, {
      ...incidentStartOptions(input, title, taskQueue),
      workflowIdReusePolicy: 'REJECT_DUPLICATE',
    });
  } catch (err) {
    if (err instanceof WorkflowExecutionAlreadyStartedError) return;
    throw err;
  }
}

export async function setIncidentStatus(
  { client, taskQueue }: WorkflowTarget,
  stored: IncidentWorkflowInput,
  title: string,
  request: SetStatusRequest,
) {
  const startWorkflowOperation = new WithStartWorkflowOperation(incidentWorkflowType, {
    ...incidentStartOptions(stored, title, taskQueue),
    workflowIdConflictPolicy: 'USE_EXISTING',
    // A stored `closed` row is a reopen: a new run after the completed one. From any other
    // row, a completed run means a close landed after the route read it, and a run from the
    // stale row would hold a status the incident no longer has (ADR 0202).
    ...(stored.status === 'closed' ? {} : { workflowIdReusePolicy: 'ALLOW_DUPLICATE_FAILED_ONLY' as const }),
  });
  try {
    return await client.workflow.executeUpdateWithStart(setStatusUpdate, {
      args: [request],
      startWorkflowOperation,
    });
  } catch (err) {
    throw setStatusFailure(err);
  }
}

export async function triageIncident(
  { client, taskQueue }: WorkflowTarget,
  stored: IncidentWorkflowInput,
  title: string,
  command: TriageCommand,
) {
  const startWorkflowOperation = new WithStartWorkflowOperation(incidentWorkflowType, {
    ...incidentStartOptions(stored, title, taskQueue),
    workflowIdConflictPolicy: 'USE_EXISTING',
    // Never a new run after a completed one: the route read the row before a close ended the
    // run, and a run from that stale row would work on a closed incident (ADR 0202).
    workflowIdReusePolicy: 'ALLOW_DUPLICATE_FAILED_ONLY',
  });
  try {
    return await client.workflow.executeUpdateWithStart(triageUpdate, { args: [command], startWorkflowOperation });
  } catch (err) {
    throw triageFailure(err);
  }
}

export async function startInvestigation(
  { client, taskQueue }: WorkflowTarget,
  stored: IncidentWorkflowInput,
  title: string,
  command: InvestigationCommand,
) {
  const startWorkflowOperation = new WithStartWorkflowOperation(incidentWorkflowType, {
    ...incidentStartOptions(stored, title, taskQueue),
    workflowIdConflictPolicy: 'USE_EXISTING',
    workflowIdReusePolicy: 'ALLOW_DUPLICATE_FAILED_ONLY', // as for triage
  });
  try {
    return await client.workflow.executeUpdateWithStart(startInvestigationUpdate, {
      args: [command],
      startWorkflowOperation,
    });
  } catch (err) {
    throw investigationFailure(err);
  }
}

export async function mergeIncident(
  { client, taskQueue }: WorkflowTarget,
  stored: IncidentWorkflowInput,
  title: string,
  request: MergeRequest,
) {
  const startWorkflowOperation = new WithStartWorkflowOperation(incidentWorkflowType, {
    ...incidentStartOptions(stored, title, taskQueue),
    workflowIdConflictPolicy: 'USE_EXISTING',
    // Never a new run after a completed one: that run's close came after the route read the row.
    workflowIdReusePolicy: 'ALLOW_DUPLICATE_FAILED_ONLY',
  });
  try {
    return await client.workflow.executeUpdateWithStart(mergeIntoUpdate, { args: [request], startWorkflowOperation });
  } catch (err) {
    throw mergeFailure(err);
  }
}

export async function respondToApproval({ client }: WorkflowTarget, incidentId: string, response: ApprovalResponse) {
  try {
    return await client.workflow.getHandle(incidentId).executeUpdate(respondToApprovalUpdate, { args: [response] });
  } catch (err) {
    if (err instanceof WorkflowNotFoundError) return 'gone' as const;
    throw approvalFailure(err);
  }
}

export async function signalInvestigationContext({ client }: WorkflowTarget, incidentId: string) {
  try {
    await client.workflow.getHandle(incidentId).signal(investigationContextSignal);
    return 'delivered' as const;
  } catch (err) {
    if (err instanceof WorkflowNotFoundError) return 'gone' as const;
    throw err;
  }
}

export async function signalAlerts({ client }: WorkflowTarget, incidentId: string, payload: AlertsReceived) {
  try {
    await client.workflow.getHandle(incidentId).signal(alertsReceivedSignal, payload);
    return 'delivered' as const;
  } catch (err) {
    if (err instanceof WorkflowNotFoundError) return 'gone' as const;
    throw err;
  }
}

export async function testSkill({ client, taskQueue }: WorkflowTarget, input: SkillTestInput) {
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
}

export async function startAuditExport({ client, taskQueue }: WorkflowTarget, input: AuditExportInput) {
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
}

const healthDeadline = () => new Date(Date.now() + 3000);

/** A protobuf Timestamp in milliseconds (0 when absent). */
function timestampMs(
  at: { seconds?: { toString(): string } | number | null; nanos?: number | null } | null | undefined,
): number {
  return Number(at?.seconds ?? 0) * 1000 + Math.floor((at?.nanos ?? 0) / 1e6);
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

export async function checkServer({ client }: WorkflowTarget) {
  const result = await timed(() =>
    client.connection.withDeadline(healthDeadline(), () => client.workflowService.getSystemInfo({})),
  );
  return { ok: !result.error, latencyMs: result.latencyMs, ...(result.error ? { error: result.error } : {}) };
}

export async function checkWorkers({ client, taskQueue }: WorkflowTarget, pollStaleMs: number) {
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
  const pollers = (result.value?.pollers ?? []).filter(
    (p) => Date.now() - timestampMs(p.lastAccessTime) <= pollStaleMs,
  ).length;
  const error =
    result.error ??
    (pollers === 0 ? `no worker has polled task queue ${taskQueue} in the last ${pollStaleMs / 1000} s` : undefined);
  return { ok: !error, latencyMs: result.latencyMs, pollers, ...(error ? { error } : {}) };
}
