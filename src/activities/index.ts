import type { Db } from '../db/client.js';
import { createProjectionActivities } from './projections.js';

export interface ActivityDeps {
  db: Db;
}

/** Every activity the worker registers, built from injected dependencies. */
export function createActivities(deps: ActivityDeps) {
  return {
    ...createProjectionActivities(deps),
  };
}

export type IncidentActivities = ReturnType<typeof createActivities>;
