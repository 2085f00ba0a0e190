/**
 * Runs one skill once for `POST /api/v1/tenants/{tenantId}/skills/{skillId}/test` (workflow id =
 * the invocation id, `ski_…`), so a tenant checks a skill through the same activity agents use.
 * A failure of the skill is an answer, not a workflow failure.
 */
import { ActivityFailure, ApplicationFailure, proxyActivities } from '@temporalio/workflow';
import type { IncidentActivities } from '../activities/index.js';
import type { SkillOutcome, SkillTestInput } from '../skills/types.js';

// The activity retries network errors and 5xx itself (3 attempts of at most 10 s); Temporal
// retries only what fails around it (a lost worker, the database), with the same invocation id,
// so a recorded outcome is returned instead of calling the skill again.
const { invokeSkill } = proxyActivities<IncidentActivities>({
  startToCloseTimeout: '90 seconds',
  retry: { initialInterval: '1 second', backoffCoefficient: 2, maximumAttempts: 3 },
});

function isOutcome(value: unknown): value is SkillOutcome {
  return typeof value === 'object' && value !== null && 'ok' in value && 'invocationId' in value;
}

export async function skillTestWorkflow(input: SkillTestInput): Promise<SkillOutcome> {
  try {
    return await invokeSkill({
      tenantId: input.tenantId,
      skillId: input.skillId,
      input: input.input,
      invocationId: input.invocationId,
      idempotencyKey: `skill-test:${input.invocationId}`,
    });
  } catch (err) {
    if (err instanceof ActivityFailure && err.cause instanceof ApplicationFailure) {
      const outcome = err.cause.details?.[0];
      if (isOutcome(outcome)) return outcome;
      // Anything else failed around the skill (the database, a bug), after the retries: its
      // message can hold a statement and its parameters, which are the service's, not the
      // tenant's to read. The worker's log and the workflow history keep it.
      return {
        invocationId: input.invocationId,
        skillId: input.skillId,
        durationMs: 0,
        ok: false,
        error: {
          code: 'internal_error',
          message: 'The skill could not be run because of an internal error; nothing was recorded',
        },
      };
    }
    throw err;
  }
}
