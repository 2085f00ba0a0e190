/**
 * The failures the incident workflow's updates refuse or fail with. Each carries a type from
 * `incidentFailureTypes` (messages.ts), by which the api's port picks the error code; the message
 * is what the client reads.
 */
import { ApplicationFailure } from '@temporalio/workflow';
import { incidentFailureTypes as types, type IncidentFailureType } from '../messages.js';

const failure = (type: IncidentFailureType, message: string) => ApplicationFailure.nonRetryable(message, type);

export const invalidStatus = (status: unknown) => failure(types.InvalidStatus, `invalid status: ${String(status)}`);
export const actorRequired = () => failure(types.ActorRequired, 'an actor is required');
export const incidentClosed = (what: 'triaged' | 'investigated') =>
  failure(types.IncidentClosed, `a closed incident is not ${what}; reopen it first`);
export const triageFailed = (reason: string) => failure(types.TriageFailed, `Triage failed: ${reason}`);
export const investigationRunning = () =>
  failure(types.InvestigationRunning, 'An investigation is already running for this incident');
export const quotaExceeded = () => failure(types.QuotaExceeded, 'The monthly investigation quota is used up');

export const approvalNotFound = () => failure(types.ApprovalNotFound, 'no pending approval with that id');
export const approvalExpired = (why: 'deadline' | 'superseded') =>
  failure(
    types.ApprovalExpired,
    why === 'superseded'
      ? 'this approval was superseded by a proposal on newer evidence'
      : 'the approval deadline has passed',
  );
export const alreadyDecided = () => failure(types.AlreadyDecided, 'this approval has already been answered');
export const invalidDecision = () => failure(types.InvalidDecision, 'decision must be approve or reject');

/** The readable reason of an activity's failure (its cause's message), for records and logs. */
export const failureReason = (err: unknown): string =>
  err instanceof Error ? (err.cause instanceof Error ? err.cause.message : err.message) : String(err);
