import type { ScenarioDefinition } from '../types.js';
import { badDeploy } from './bad-deploy.js';
import { cacheEviction } from './cache-eviction.js';
import { quietMinutes } from './quiet-minutes.js';
import { regionPartition } from './region-partition.js';
import { rootLast } from './root-last.js';
import { sharedDatabase } from './shared-database.js';
import { twoOutages } from './two-outages.js';

/** Every storm scenario, in the order the eval runs them. */
export const scenarios: ScenarioDefinition[] = [
  sharedDatabase,
  badDeploy,
  cacheEviction,
  regionPartition,
  twoOutages,
  rootLast,
  quietMinutes,
];
