/**
 * The skill invocation contract shared by the activity, the skill test workflow and the api's
 * workflow port. Types and plain data only: workflow code imports it.
 */

export const skillTestWorkflowType = 'skillTestWorkflow';

export interface InvokeSkillRequest {
  tenantId: string;
  skillId: string;
  input: unknown;
  /** A second call with the same key (per tenant) returns the recorded outcome without calling again. */
  idempotencyKey?: string;
  /** Id of the `skill_invocations` row (`ski_…`); generated when absent. */
  invocationId?: string;
}

export interface SkillErrorInfo {
  /** e.g. `invalid_input`, `skill_disabled`, `ssrf_blocked`, `timeout`, `response_too_large`, `http_error`. */
  code: string;
  message: string;
  details?: unknown;
}

interface OutcomeBase {
  invocationId: string;
  skillId: string;
  durationMs: number;
}

export type SkillOutcome =
  (OutcomeBase & { ok: true; output: unknown }) | (OutcomeBase & { ok: false; error: SkillErrorInfo });

/** What `POST …/skills/{skillId}/test` runs through Temporal (workflow id = invocationId). */
export interface SkillTestInput {
  invocationId: string;
  tenantId: string;
  skillId: string;
  input: unknown;
}
