/** Every incident of the corpus, in a stable order. */
import type { CorpusIncident } from '../types.js';
import { attributionA } from './attribution-a.js';
import { calibrationA } from './calibration-a.js';
import { changesA } from './changes-a.js';
import { changesB } from './changes-b.js';
import { changesC } from './changes-c.js';
import { operationalA } from './operational-a.js';
import { thirdPartyA } from './third-party-a.js';

export const corpus: readonly CorpusIncident[] = [
  ...changesA,
  ...changesB,
  ...changesC,
  ...attributionA,
  ...thirdPartyA,
  ...operationalA,
  ...calibrationA,
];
