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

/** Origins that name a deploy or commit: the strongest evidence of one cause. */
const DEPLOY_ORIGIN_PREFIX = 'deploy:';

/**
 * How a new alert's service relates to an incident's services, or undefined. A failure spreads
 * from a dependency to its dependents, so:
 * - the alert's service depends on one of the incident's (within 3 hops): it is a symptom of it;
 * - one or more of the incident's services depend on the alert's (or share a dependency with it):
 *   it may be their cause, and joins only when it explains more than half of the incident's
 *   services. Without that test an incident grows by whatever its outermost member depends on:
 *   an api gateway's certificate warning joined an outage, and then every service behind the
 *   gateway joined through it.
 */
function topologyRelation(
  service: string,
  candidate: CandidateIncident,
  graph: TopologyGraph | undefined,
): { hops: number; alertId: string; members: number } | undefined {
  let symptom: { hops: number; alertId: string } | undefined;
  let cause: { hops: number; alertId: string } | undefined;
  let symptomOf = 0;
  let explained = 0;
  for (const [member, alertId] of candidate.services) {
    if (member === service) return { hops: 0, alertId, members: candidate.services.size };
    const up = graph?.dependsWithin(service, member);
    if (up !== undefined) {
      symptomOf++;
      if (!symptom || up < symptom.hops) symptom = { hops: up, alertId };
    }
    const down = graph?.dependsWithin(member, service) ?? graph?.sharedDependency(member, service);
    if (down !== undefined) {
      explained++;
      if (!cause || down < cause.hops) cause = { hops: down, alertId };
    }
  }
  if (symptom) return { ...symptom, members: symptomOf };
  return cause && explained * 2 > candidate.services.size ? { ...cause, members: explained } : undefined;
}

/**
 * The open incident a new alert joins, or undefined: one that names the same deploy, else the
 * one its service is fewest hops from in the topology (see topologyRelation), else one that the
 * tool itself grouped it with; ties go to the incident with more services it relates to (a root
 * cause that alerts last joins the incident it explains most), then the most recently active. Never more than one. A
 * tool's grouping ranks below the topology because a route that groups by alert name alone puts
 * the same alert of two outages in one notification.
 */
export function chooseIncident(
  alert: { service: string | null; origins: readonly string[] },
  candidates: Iterable<CandidateIncident>,
  graph: TopologyGraph | undefined,
): Choice | undefined {
  let best: { rank: number; members: number; lastSeenAt: number; choice: Choice } | undefined;
  const consider = (rank: number, members: number, candidate: CandidateIncident, correlation: Correlation) => {
    const better =
      !best ||
      rank < best.rank ||
      (rank === best.rank &&
        (members > best.members || (members === best.members && candidate.lastSeenAt > best.lastSeenAt)));
    if (better) {
      best = {
        rank,
        members,
        lastSeenAt: candidate.lastSeenAt,
        choice: { incidentId: candidate.incidentId, correlation },
      };
    }
  };
  for (const candidate of candidates) {
    if (candidate.separate) continue;
    const shared = alert.origins.filter((o) => !o.startsWith(RULE_ORIGIN_PREFIX) && candidate.origins.has(o));
    const deploy = shared.find((o) => o.startsWith(DEPLOY_ORIGIN_PREFIX));
    if (deploy) {
      consider(0, 0, candidate, { reason: 'origin', relatedAlertId: candidate.origins.get(deploy)! });
      continue;
    }
    const related = alert.service ? topologyRelation(alert.service, candidate, graph) : undefined;
    if (related) {
      consider(1 + related.hops, related.members, candidate, {
        reason: 'topology',
        relatedAlertId: related.alertId,
        hops: related.hops,
      });
    } else if (shared.length > 0) {
      consider(10, 0, candidate, { reason: 'origin', relatedAlertId: candidate.origins.get(shared[0]!)! });
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

/**
 * The advisory lock a tenant's grouping decisions run under: webhook batches, the release of held
 * alerts, merges and splits, so none of them decides on a state another is changing.
 */
export const groupingLockKey = (tenantId: string) => `correlate:${tenantId}`;
