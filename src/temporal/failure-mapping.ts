/**
 * What the api answers when an incident workflow's Update is refused or fails: typed
 * ApplicationFailures in (their `type`, never their message text), AppError out. Anything
 * unrecognised is given back as it came, for the caller to throw.
 */
import {
  ApplicationFailure,
  WorkflowExecutionAlreadyStartedError,
  WorkflowUpdateFailedError,
} from '@temporalio/client';
import { AppError, type ErrorCode } from '../errors.js';
import { incidentFailureTypes, type IncidentFailureType } from '../workflows/messages.js';

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

/** The incident's run has completed, which only a close does: closed after the route read it. */
const closedMeanwhile = (what: string) =>
  new AppError('conflict', `A closed incident is not ${what}; reopen it first (PATCH its status)`);

/** A set-status update-with-start's failure. */
export function setStatusFailure(err: unknown): unknown {
  if (err instanceof WorkflowExecutionAlreadyStartedError) {
    return new AppError(
      'conflict',
      'The incident was closed meanwhile; read it again, and reopen it (PATCH its status) if that is what you mean',
    );
  }
  if (err instanceof WorkflowUpdateFailedError) {
    return new AppError('validation_error', err.cause?.message ?? err.message);
  }
  return err;
}

/** A triage update-with-start's failure. */
export function triageFailure(err: unknown): unknown {
  if (err instanceof WorkflowExecutionAlreadyStartedError) return closedMeanwhile('triaged');
  if (err instanceof WorkflowUpdateFailedError) {
    const message = err.cause?.message ?? err.message;
    // The validator refuses a closed incident; anything else is the analysis failing.
    return new AppError(
      refusalType(err) === incidentFailureTypes.IncidentClosed ? 'conflict' : 'service_unavailable',
      message,
    );
  }
  return err;
}

/** A start-investigation update-with-start's failure. */
export function investigationFailure(err: unknown): unknown {
  if (err instanceof WorkflowExecutionAlreadyStartedError) return closedMeanwhile('investigated');
  if (err instanceof WorkflowUpdateFailedError) {
    const message = innermostMessage(err);
    // The quota is refused by the workflow (an automatic start's null run) or by the begin activity.
    if (failureTypes(err).includes(incidentFailureTypes.QuotaExceeded)) return new AppError('quota_exceeded', message);
    const refused = refusalType(err);
    if (refused === incidentFailureTypes.InvestigationRunning || refused === incidentFailureTypes.IncidentClosed) {
      return new AppError('conflict', message);
    }
    return new AppError('service_unavailable', message);
  }
  return err;
}

/** A merge update-with-start's failure (on the incident merged, whose run a close may have ended). */
export function mergeFailure(err: unknown): unknown {
  if (err instanceof WorkflowExecutionAlreadyStartedError) {
    return new AppError('conflict', 'The incident to merge was closed meanwhile: only open incidents are merged');
  }
  if (err instanceof WorkflowUpdateFailedError) {
    const refused = refusalType(err);
    if (refused === incidentFailureTypes.IncidentClosed || refused === incidentFailureTypes.MergeRefused) {
      return new AppError('conflict', innermostMessage(err));
    }
    return new AppError('service_unavailable', innermostMessage(err));
  }
  return err;
}

/** An approval answer's Update failure (a workflow that has ended is the caller's 'gone'). */
export function approvalFailure(err: unknown): unknown {
  if (err instanceof WorkflowUpdateFailedError) {
    const refused = refusalType(err);
    return new AppError((refused && approvalRefusals[refused]) ?? 'service_unavailable', innermostMessage(err));
  }
  return err;
}
