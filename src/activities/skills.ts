import { ApplicationFailure } from '@temporalio/activity';
import type { Logger } from 'pino';
import type { Db } from '../db/client.js';
import { createSkillInvoker, type SkillRuntime } from '../skills/invoke.js';
import type { InvokeSkillRequest, SkillOutcome } from '../skills/types.js';

export function createSkillActivities(deps: { db: Db; skills: SkillRuntime; logger?: Logger }) {
  const invoker = createSkillInvoker({ db: deps.db, runtime: deps.skills, logger: deps.logger });

  /**
   * Invokes a skill and records the outcome (idempotent with `idempotencyKey`). Network errors
   * and 5xx answers are retried inside, with backoff; every failure that reaches here is final,
   * so it is non-retryable, typed with the error code and carrying the outcome as its detail.
   */
  async function invokeSkill(request: InvokeSkillRequest): Promise<SkillOutcome & { ok: true }> {
    const outcome = await invoker.invoke(request);
    if (outcome.ok) return outcome;
    throw ApplicationFailure.create({
      message: outcome.error.message,
      type: outcome.error.code,
      nonRetryable: true,
      details: [outcome],
    });
  }

  return { invokeSkill };
}
