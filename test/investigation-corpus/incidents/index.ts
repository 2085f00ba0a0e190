/** Every incident of the corpus, in a stable order. */
import type { CorpusIncident } from '../types.js';
import { attributionA } from './attribution-a.js';
import { attributionB } from './attribution-b.js';
import { attributionC } from './attribution-c.js';
import { calibrationA } from './calibration-a.js';
import { calibrationB } from './calibration-b.js';
import { calibrationC } from './calibration-c.js';
import { changesA } from './changes-a.js';
import { changesB } from './changes-b.js';
import { changesC } from './changes-c.js';
import { changesD } from './changes-d.js';
import { operationalA } from './operational-a.js';
import { operationalB } from './operational-b.js';
import { operationalC } from './operational-c.js';
import { operationalD } from './operational-d.js';
import { thirdPartyA } from './third-party-a.js';
import { thirdPartyB } from './third-party-b.js';
import { thirdPartyC } from './third-party-c.js';

export const corpus: readonly CorpusIncident[] = [
  ...changesA,
  ...changesB,
  ...changesC,
  ...changesD,
  ...attributionA,
  ...attributionB,
  ...attributionC,
  ...thirdPartyA,
  ...thirdPartyB,
  ...thirdPartyC,
  ...operationalA,
  ...operationalB,
  ...operationalC,
  ...operationalD,
  ...calibrationA,
  ...calibrationB,
  ...calibrationC,
];
