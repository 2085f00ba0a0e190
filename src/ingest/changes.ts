import type { AlertState, Correlation } from '../db/schema/correlation.js';
import type { Severity } from '../db/schema/incidents.js';
import type { ParsedAlert } from './types.js';

/** An incident the batch opens (`isNew`) or an open one its alerts attach to. */
export interface IncidentChange {
  id: string;
  isNew: boolean;
  tenantId: string;
  fingerprint: string;
  first?: ParsedAlert;
  firstEventId?: string;
  /** The webhook key that sent the first alert; none when a rule's hold opened it. */
  keyId?: string;
  requestId?: string;
  provider?: string;
  occurrences: number;
  lastSeenAt: Date | null;
  /** What the latest alert of this batch says of recovery: undefined = unchanged. */
  recovery?: { recoveredAt: Date | null };
  /** The highest severity of the alerts the batch adds: the incident's rises to it. */
  severity?: Severity;
}

/** An alert record as the batch leaves it: read and changed, or new. */
export interface AlertRecord {
  id: string;
  tenantId: string;
  fingerprint: string;
  incidentId: string | null;
  state: AlertState;
  status: 'firing' | 'resolved';
  ruleId: string | null;
  origins: string[];
  transitions: string[];
  flapping: boolean;
  firstSeenAt: Date;
  lastSeenAt: Date;
  occurrences: number;
  service: string | null;
  isNew: boolean;
  /** Set on new records and where a record joins an incident. */
  correlation?: Correlation;
  first?: ParsedAlert & { provider: string };
  severity?: Severity;
}
