import type { Logger } from 'pino';
import { createBuiltinProvider } from '../analysis/providers.js';
import type { ModelProvider } from '../analysis/types.js';
import type { Db } from '../db/client.js';
import type { SkillRuntime } from '../skills/invoke.js';
import { createInvestigationActivities } from './investigation.js';
import { createInvestigationLifecycleActivities } from './investigation-lifecycle.js';
import { createProjectionActivities } from './projections.js';
import { createRemediationActivities } from './remediation.js';
import { createSkillActivities } from './skills.js';
import { createTriageActivities } from './triage.js';

export interface ActivityDeps {
  db: Db;
  skills: SkillRuntime;
  logger?: Logger;
  /** The model behind triage and synthesis; the built-in analyzer when absent. */
  model?: ModelProvider;
}

/** Every activity the worker registers, built from injected dependencies. */
export function createActivities(deps: ActivityDeps) {
  return {
    ...createProjectionActivities(deps),
    ...createSkillActivities(deps),
    ...createTriageActivities({ db: deps.db, model: deps.model ?? createBuiltinProvider() }),
    ...createInvestigationLifecycleActivities({ db: deps.db }),
    ...createInvestigationActivities({ db: deps.db, model: deps.model ?? createBuiltinProvider() }),
    ...createRemediationActivities({ db: deps.db, skills: deps.skills }),
  };
}

export type IncidentActivities = ReturnType<typeof createActivities>;
