/** Every incident of the corpus, in a stable order. */
import type { CorpusIncident } from '../types.js';
import { attributionA } from './attribution-a.js';
import { attributionB } from './attribution-b.js';
import { calibrationA } from './calibration-a.js';
import { calibrationB } from './calibration-b.js';
import { changesA } from './changes-a.js';
import { changesB } from './changes-b.js';
import { changesC } from './changes-c.js';
import { mixedD } from './mixed-d.js';
import { mixedE } from './mixed-e.js';
import { mixedF } from './mixed-f.js';
import { operationalA } from './operational-a.js';
import { operationalB } from './operational-b.js';
import { operationalC } from './operational-c.js';
import { thirdPartyA } from './third-party-a.js';
import { thirdPartyB } from './third-party-b.js';

export const corpus: readonly CorpusIncident[] = [
  ...changesA,
  ...changesB,
  ...changesC,
  ...attributionA,
  ...attributionB,
  ...thirdPartyA,
  ...thirdPartyB,
  ...operationalA,
  ...operationalB,
  ...operationalC,
  ...calibrationA,
  ...calibrationB,
  ...mixedD,
  ...mixedE,
  ...mixedF,
];
