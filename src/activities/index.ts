import type { Logger } from 'pino';
import type { Db } from '../db/client.js';
import type { SkillRuntime } from '../skills/invoke.js';
import { createProjectionActivities } from './projections.js';
import { createSkillActivities } from './skills.js';

export interface ActivityDeps {
  db: Db;
  skills: SkillRuntime;
  logger?: Logger;
}

/** Every activity the worker registers, built from injected dependencies. */
export function createActivities(deps: ActivityDeps) {
  return {
    ...createProjectionActivities(deps),
    ...createSkillActivities(deps),
  };
}

export type IncidentActivities = ReturnType<typeof createActivities>;
