import { tmpdir } from 'node:os';
import path from 'node:path';
import type { Logger } from 'pino';
import { createBuiltinProvider } from '../analysis/providers.js';
import type { ModelProvider } from '../analysis/types.js';
import type { Db } from '../db/client.js';
import { createSkillInvoker, type SkillRuntime } from '../skills/invoke.js';
import { createExportActivities, type ExportActivityDeps } from './exports.js';
import { createInvestigationActivities } from './investigation/index.js';
import { createInvestigationLifecycleActivities } from './investigation-lifecycle.js';
import { createKnowledgeActivities } from './knowledge.js';
import { createMergeActivities } from './merge.js';
import { createProjectionActivities } from './projections.js';
import { createRemediationActivities } from './remediation.js';
import { createSkillActivities } from './skills.js';
import { createTriageActivities } from './triage.js';
import { createWidgetActivities, type WidgetActivitySettings } from './widget.js';

export interface ActivityDeps {
  db: Db;
  skills: SkillRuntime;
  logger?: Logger;
  /** The model behind triage and synthesis; the built-in analyzer when absent. */
  model?: ModelProvider;
  /** Audit exports: the export directory (a temporary one when absent), object storage, tuning. */
  exports?: Omit<ExportActivityDeps, 'db' | 'logger'>;
  /** Widget pushes: per-attempt timeout, extra trusted CAs (defaults when absent). */
  widget?: WidgetActivitySettings;
}

/** Every activity the worker registers, built from injected dependencies. */
export function createActivities(deps: ActivityDeps) {
  return {
    ...createProjectionActivities(deps),
    ...createMergeActivities(deps),
    ...createSkillActivities(deps),
    ...createTriageActivities({ db: deps.db, model: deps.model ?? createBuiltinProvider() }),
    ...createInvestigationLifecycleActivities({ db: deps.db }),
    ...createInvestigationActivities({
      db: deps.db,
      model: deps.model ?? createBuiltinProvider(),
      skills: createSkillInvoker({
        db: deps.db,
        runtime: deps.skills,
        ...(deps.logger ? { logger: deps.logger } : {}),
      }),
    }),
    ...createRemediationActivities({ db: deps.db, skills: deps.skills }),
    ...createKnowledgeActivities({ db: deps.db, ...(deps.logger ? { logger: deps.logger } : {}) }),
    ...createExportActivities({
      exportDir: path.join(tmpdir(), 'audit-exports'),
      ...deps.exports,
      db: deps.db,
      ...(deps.logger ? { logger: deps.logger } : {}),
    }),
    ...createWidgetActivities(deps),
  };
}

export type IncidentActivities = ReturnType<typeof createActivities>;
