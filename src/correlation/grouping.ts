import type { Correlation } from '../db/schema/correlation.js';
import type { TopologyGraph } from './topology.js';

/** Origins that only a rule's own grouping or an opened-separately incident carry. */
export const RULE_ORIGIN_PREFIX = 'rule:';
export const SEPARATE_ORIGIN = 'separate';

/** An open incident in the correlation window, as grouping sees it. */
export class CandidateIncident {
  /** Each service of its alerts → one alert of that service (the related alert named). */
  readonly services = new Map<string, string>();
  /** Each origin of its alerts → one alert carrying it. */
  readonly origins = new Map<string, string>();
  separate = false;

  constructor(
    readonly incidentId: string,
    public lastSeenAt: number,
  ) {}

  touch(at: number): void {
    if (at > this.lastSeenAt) this.lastSeenAt = at;
  }

  add(alertId: string, service: string | null, origins: readonly string[]): void {
    if (service && !this.services.has(service)) this.services.set(service, alertId);
    for (const origin of origins) {
      if (origin === SEPARATE_ORIGIN) this.separate = true;
      else if (!this.origins.has(origin)) this.origins.set(origin, alertId);
    }
  }
}

export interface Choice {
  incidentId: string;
  correlation: Correlation;
}

/**
 * The open incident a new alert joins, or undefined: one that shares an origin with it (the
 * tool's own grouping, a deploy), else the one its service is fewest hops from in the topology;
 * ties go to the most recently active. Never more than one.
 */
export function chooseIncident(
  alert: { service: string | null; origins: readonly string[] },
  candidates: Iterable<CandidateIncident>,
  graph: TopologyGraph | undefined,
): Choice | undefined {
  let best: { rank: number; lastSeenAt: number; choice: Choice } | undefined;
  const consider = (rank: number, candidate: CandidateIncident, correlation: Correlation) => {
    if (!best || rank < best.rank || (rank === best.rank && candidate.lastSeenAt > best.lastSeenAt)) {
      best = { rank, lastSeenAt: candidate.lastSeenAt, choice: { incidentId: candidate.incidentId, correlation } };
    }
  };
  for (const candidate of candidates) {
    if (candidate.separate) continue;
    const origin = alert.origins.find((o) => !o.startsWith(RULE_ORIGIN_PREFIX) && candidate.origins.has(o));
    if (origin) {
      consider(0, candidate, { reason: 'origin', relatedAlertId: candidate.origins.get(origin)! });
      continue;
    }
    if (!alert.service) continue;
    let nearest: { hops: number; alertId: string } | undefined;
    for (const [service, alertId] of candidate.services) {
      const hops = service === alert.service ? 0 : graph?.hops(alert.service, service);
      if (hops !== undefined && (!nearest || hops < nearest.hops)) nearest = { hops, alertId };
      if (hops === 0) break;
    }
    if (nearest) {
      consider(1 + nearest.hops, candidate, {
        reason: 'topology',
        relatedAlertId: nearest.alertId,
        hops: nearest.hops,
      });
    }
  }
  return best?.choice;
}

/** The open incident whose alerts a rule grouped under `key`, the most recently active first. */
export function incidentOfRuleGroup(
  key: string,
  candidates: Iterable<CandidateIncident>,
): { candidate: CandidateIncident; relatedAlertId: string } | undefined {
  let found: { candidate: CandidateIncident; relatedAlertId: string } | undefined;
  for (const candidate of candidates) {
    const related = candidate.origins.get(key);
    if (related && (!found || candidate.lastSeenAt > found.candidate.lastSeenAt)) {
      found = { candidate, relatedAlertId: related };
    }
  }
  return found;
}
