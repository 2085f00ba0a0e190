/**
 * The investigation engine's activities: one specialist agent per role, each reading the
 * tenant's own data and storing evidence items, then the synthesis that ranks hypotheses with
 * the built-in analyzer and records the result. Every write is idempotent: evidence items are
 * deduplicated per incident by `${role}:${source row id}`, outbox events carry idempotency keys,
 * and the investigation row is only written for its current `run`.
 */
import type { InvestigationActivities, SynthesisRequest } from '../../analysis/investigation-types.js';
import type { ModelProvider } from '../../analysis/types.js';
import type { Db } from '../../db/client.js';
import type { SkillInvoker } from '../../skills/invoke.js';
import { whileBeating } from '../heartbeat.js';
import { codeChangeAgent, deploymentAgent } from './agents-changes.js';
import { knowledgeAgent, runbookAgent, topologyAgent } from './agents-context.js';
import { alertsAgent, logsAgent, metricsAgent } from './agents-signals.js';
import type { InvestigationContext, SharedRead } from './common.js';
import { recordInvestigationFailure, synthesizeInvestigation } from './synthesis.js';

export {
  CHANGE_LOOKBACK_MS,
  CORRELATION_AFTER_MS,
  CORRELATION_BEFORE_MS,
  MAX_DEPENDENCY_HOPS,
  RAW_SNIPPET_MAX,
  SIGNAL_LOOKBACK_MS,
} from './common.js';
export { rawExcerpt } from './payloads.js';

/** The engine's part of the activities the workflow proxies (`beginInvestigation` lives in investigation-lifecycle.ts). */
export type InvestigationEngineActivities = Omit<InvestigationActivities, 'beginInvestigation' | 'latestInvestigation'>;

/**
 * `model` is the configured provider: the built-in analyzer ranks the hypotheses either way; a
 * configured model then writes the conclusion from them (falling back to the built-in one).
 * `skills` calls the tenant's skills the agents consult (none when absent).
 */
export function createInvestigationActivities(deps: {
  db: Db;
  model: ModelProvider;
  skills?: SkillInvoker;
}): InvestigationEngineActivities {
  // One context per engine: the agents' shared reads live as long as it does.
  const ctx: InvestigationContext = {
    db: deps.db,
    model: deps.model,
    deps,
    sharedReads: new Map<string, SharedRead>(),
  };
  return {
    deploymentAgent: (req) => deploymentAgent(ctx, req),
    codeChangeAgent: (req) => codeChangeAgent(ctx, req),
    logsAgent: (req) => logsAgent(ctx, req),
    metricsAgent: (req) => metricsAgent(ctx, req),
    alertsAgent: (req) => alertsAgent(ctx, req),
    topologyAgent: (req) => topologyAgent(ctx, req),
    knowledgeAgent: (req) => knowledgeAgent(ctx, req),
    runbookAgent: (req) => runbookAgent(ctx, req),
    // Heartbeats while it waits on the model (the workflow gives it a heartbeat timeout).
    synthesizeInvestigation: (req: SynthesisRequest) => whileBeating(() => synthesizeInvestigation(ctx, req)),
    recordInvestigationFailure: (req) => recordInvestigationFailure(ctx, req),
  };
}
