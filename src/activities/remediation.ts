/**
 * Remediation activities (issue 6): propose a plan from an investigation's recommended actions
 * behind an admin approval with a deadline, record the decision or the expiry, run each step
 * exactly once, verify, and record the outcome. Every write is idempotent: events and audit rows
 * carry idempotency keys, state changes are guarded by the state they move from.
 *
 * Each activity lives in remediation/ by what it does: propose.ts, approval.ts (decision, expiry),
 * execute-step.ts, verify.ts, complete.ts; plan.ts turns recommended actions into steps.
 */
import type { RemediationActivities } from '../analysis/remediation-types.js';
import type { Db } from '../db/client.js';
import { createSkillInvoker, type SkillRuntime } from '../skills/invoke.js';
import { whileBeating } from './heartbeat.js';
import { expireApproval, recordApprovalDecision } from './remediation/approval.js';
import { completeRemediation } from './remediation/complete.js';
import type { RemediationContext } from './remediation/context.js';
import { currentEvidenceHash } from './remediation/evidence-hash.js';
import { executeRemediationStep } from './remediation/execute-step.js';
import { proposeRemediation } from './remediation/propose.js';
import { expireOrphanedApprovals, type OrphanedApprovalActivities } from './remediation-orphans.js';
import { verifyRemediation } from './remediation/verify.js';

export { DEFAULT_APPROVAL_TIMEOUT_MINUTES } from './remediation/propose.js';
export { buildPlan, builtinRemediationActions, builtinStepFor, matchingSkill } from './remediation/plan.js';

export function createRemediationActivities(deps: {
  db: Db;
  skills: SkillRuntime;
  clock?: () => Date;
}): RemediationActivities & OrphanedApprovalActivities {
  const ctx: RemediationContext = {
    db: deps.db,
    clock: deps.clock ?? (() => new Date()),
    invoker: createSkillInvoker({ db: deps.db, runtime: deps.skills }),
  };
  return {
    proposeRemediation: (req) => proposeRemediation(ctx, req),
    recordApprovalDecision: (req) => recordApprovalDecision(ctx, req),
    expireApproval: async (req) => {
      await expireApproval(ctx, req);
    },
    // Heartbeats while a step's skill runs (the workflow gives steps a heartbeat timeout).
    executeRemediationStep: (req) => whileBeating(() => executeRemediationStep(ctx, req)),
    verifyRemediation: (req) => verifyRemediation(ctx, req),
    completeRemediation: (req) => completeRemediation(ctx, req),
    evidenceHash: (req) => currentEvidenceHash(ctx.db, req.incidentId, req.tenantId),
    expireOrphanedApprovals: (req) => expireOrphanedApprovals(ctx, req),
  };
}
