/**
 * Hypotheses from the topology and the load around the service: a failing cache or upstream
 * dependency, a traffic spike, and a flapping alert.
 */
import {
  alertLine,
  formatDuration,
  hhmm,
  list,
  lower,
  minutesBetween,
  ms,
  proximity,
  RE,
  says,
  textOf,
} from './text.js';
import { type AlertObservation, type DependencyObservation, type Hypothesis } from './types.js';
import { draft, matching, servicesOf, type View } from './view.js';

// ---------------------------------------------------------------------------------------------
// Topology

const isCache = (d: DependencyObservation) => d.type === 'cache' || /redis|memcache|cache/i.test(d.name);

export function cacheFailure(v: View): Hypothesis[] {
  const ownCacheSignals = matching(v.scope, RE.cache);
  const caches = v.input.topology.dependencies.filter(
    (d) =>
      isCache(d) &&
      (d.alerting ||
        d.alertingDependents.length >= 2 ||
        ownCacheSignals.some((a) => lower(textOf(a)).includes(lower(d.name)))),
  );
  if (caches.length === 0 && ownCacheSignals.length === 0) return [];
  const targets = caches.length > 0 ? caches : [undefined];
  return targets.map((cache) => {
    const name = cache?.name ?? textOf(ownCacheSignals[0]!).match(/\b(redis|memcached?)[\w.-]*/i)?.[0] ?? 'the cache';
    const support: string[] = [];
    let score = 0.5;
    if (cache?.alerting) {
      score += 0.2;
      support.push(
        `${cache.name} alerts: ${list(cache.alertNames.slice(0, 3))}${cache.firstAlertAt ? ` since ${hhmm(cache.firstAlertAt)}` : ''}`,
      );
    }
    const fanOut = cache
      ? cache.alertingDependents.filter((s) => lower(s) !== lower(cache.name))
      : servicesOf(ownCacheSignals);
    if (fanOut.length >= 2) {
      score += 0.1 * Math.min(2, fanOut.length - 1);
      support.push(`${fanOut.length} services that use it alert: ${list(fanOut)}`);
    }
    if (ownCacheSignals.length > 0) {
      score += 0.1;
      support.push(...ownCacheSignals.slice(0, 2).map(alertLine));
    }
    const loaded = v.input.topology.dependencies.filter(
      (d) => d.type === 'database' && d.alerting && d.alertTexts.some((t) => RE.dbLoad.test(t)),
    );
    if (loaded.length > 0) {
      score += 0.05;
      support.push(
        `${list(loaded.map((d) => d.name))} takes the cache misses (${list(loaded[0]!.alertNames.slice(0, 2))})`,
      );
    }
    const db = loaded[0]?.name ?? v.input.topology.dependencies.find((d) => d.type === 'database')?.name;
    return draft('cache_failure', {
      statement: `Cache ${name} failed and the misses fan out${db ? ` to ${db}` : ''}`,
      subject: name,
      score,
      support,
      against: [],
      sources: ownCacheSignals.map((a) => a.eventId),
      rootCause: `A cache failure with fan-out: ${name} is down or unreachable${cache?.firstAlertAt ? ` since ${hhmm(cache.firstAlertAt)}` : ''}, so every request of ${list(fanOut.length > 0 ? fanOut : [v.service])} misses the cache${db ? ` and falls through to ${db}, which is overloaded` : ''}.`,
      actions: [
        `Restore the cache ${name}: restart or fail over its primary, then warm it before sending full traffic`,
        ...(db
          ? [
              `Protect ${db} meanwhile: rate-limit cache-miss reads from ${list(fanOut.length > 0 ? fanOut : [v.service])} or serve stale responses`,
            ]
          : []),
        `Add request coalescing (single-flight) on cache misses in ${v.service} so one miss does not become N database queries`,
      ],
      evidence: cache?.alerting || ownCacheSignals.length > 0 ? 'direct' : 'topological',
      keywords: ['cache', 'redis', 'memcached', 'failover', lower(name)],
    });
  });
}

const BROKEN =
  /(\bdown\b|unreachable|unavailable|refused|offline|not ready|crashloop|\bred\b|unassigned|no leader|leader (election|lost)|split[- ]brain|failed|failing|out of service|partition)/i;

const DB_ACTION: Record<string, (name: string) => string> = {
  database: (n) =>
    `Restore ${n}: check the primary's health (process, connections, replication, disk) and fail over to the replica if it is down`,
  cache: (n) => `Restore ${n}: restart or fail over its primary`,
  queue: (n) => `Restore ${n}: check the brokers' health and disk, and restart or fail over the unhealthy broker`,
  api: (n) => `Restore ${n}: roll back its latest change or restart it, and check its own dependencies`,
  worker: (n) => `Restore ${n}: restart it and check the jobs it is stuck on`,
};

export function upstreamFailure(v: View): Hypothesis[] {
  const deps = v.input.topology.dependencies.filter(
    (d) => !isCache(d) && (d.alerting || d.alertingDependents.length >= 2),
  );
  const firstCache = v.input.topology.dependencies
    .filter((d) => isCache(d) && d.alerting && d.firstAlertAt)
    .sort((a, b) => ms(a.firstAlertAt!) - ms(b.firstAlertAt!))[0];
  const downText = matching(v.own, RE.upstreamDown);
  return deps.map((d) => {
    const support: string[] = [];
    const against: string[] = [];
    let score = 0.35 - 0.05 * (d.hops - 1);
    if (d.alerting) {
      score += 0.25;
      support.push(
        `${d.name} alerts: ${list(d.alertNames.slice(0, 3))}${d.firstAlertAt ? ` since ${hhmm(d.firstAlertAt)}` : ''}`,
      );
    } else {
      against.push(`${d.name} has no alert of its own (its monitoring may be down with it)`);
    }
    const others = d.alertingDependents.filter((s) => lower(s) !== lower(v.input.incident.service));
    if (d.alertingDependents.length >= 2) {
      score += 0.1 * Math.min(3, d.alertingDependents.length - 1);
      support.push(
        `common dependency of ${d.alertingDependents.length} alerting services: ${list(d.alertingDependents)}`,
      );
    }
    const naming = downText.filter((a) => lower(textOf(a)).includes(lower(d.name)) || d.type === 'database');
    if (naming.length > 0) {
      score += 0.1;
      support.push(...naming.slice(0, 2).map(alertLine));
    }
    if (d.type === 'database' || d.type === 'queue') score += 0.05;
    if (d.firstAlertAt && ms(d.firstAlertAt) <= ms(v.first)) {
      score += 0.05;
      support.push(`${d.name} failed first`);
    }
    if (
      d.alerting &&
      d.alertTexts.length > 0 &&
      d.alertTexts.every((t) => RE.pool.test(t) || /connections?\b/i.test(t)) &&
      matching(v.scope, RE.pool).length > 0
    ) {
      score -= 0.15;
      against.push(`${d.name} only reports connection saturation, which the pool exhaustion explains`);
    }
    if (firstCache && d.type === 'database' && d.firstAlertAt && ms(firstCache.firstAlertAt!) < ms(d.firstAlertAt)) {
      score -= 0.15;
      against.push(`${d.name}'s load rose after ${firstCache.name} failed (cache-miss fan-out)`);
    }
    const trafficOwn = matching(v.own, RE.traffic).length > 0;
    const loadAfter =
      d.firstAlertAt !== null && ms(d.firstAlertAt) > ms(v.first) && d.alertTexts.some((t) => RE.dbLoad.test(t));
    if (
      d.alerting &&
      trafficOwn &&
      (loadAfter || d.alertTexts.some((t) => RE.trafficMultiplier.test(t) || RE.traffic.test(t)))
    ) {
      score -= 0.1;
      against.push(`${d.name}'s load follows the traffic ${v.service} receives`);
    }
    const action = (DB_ACTION[d.type] ?? DB_ACTION.api!)(d.name);
    const shared =
      d.alertingDependents.length >= 2
        ? `, the dependency ${list(d.alertingDependents)} share`
        : `, which ${v.service} depends on`;
    return draft('upstream_failure', {
      statement: `Upstream dependency ${d.name} (${d.type}) is failing`,
      subject: d.name,
      score,
      support,
      against,
      sources: naming.map((a) => a.eventId),
      rootCause: `An upstream failure: ${d.name} (${d.type})${shared}, is failing${d.firstAlertAt ? ` since ${hhmm(d.firstAlertAt)}` : ''}${others.length > 0 ? `; ${list(others)} fail the same way` : ''}${naming[0] ? ` (${says(naming[0], 120)})` : ''}.`,
      actions: [
        `${action}${d.alertingDependents.length >= 2 ? ` — ${list(d.alertingDependents)} recover with it` : ''}`,
        `Once ${d.name} is back, check that ${v.service}'s connection retries recovered and drain any queued work`,
      ],
      // Its own alerts saying it is broken are direct evidence; a shared dependency alone is not.
      evidence: d.alerting && d.alertTexts.some((t) => BROKEN.test(t)) ? 'direct' : 'topological',
      keywords: [
        lower(d.name),
        d.type,
        'failover',
        'outage',
        'primary',
        'replica',
        ...(d.type === 'database' ? ['postgres', 'database'] : []),
      ],
    });
  });
}

/**
 * The incident's own service reports itself broken (a datastore's cluster red, a broker down)
 * while the services that use it alert in the same incident: it is the failing dependency.
 */
export function selfFailure(v: View): Hypothesis[] {
  const service = v.input.incident.service;
  if (!service) return [];
  const broken = v.ownFiring.filter((a) => lower(a.service) === lower(service) && BROKEN.test(textOf(a)));
  if (broken.length === 0) return [];
  const users = servicesOf(v.own.filter((a) => a.service && lower(a.service) !== lower(service)));
  const type = v.input.topology.serviceType ?? 'api';
  // An api's own errors are its own story (a vendor, a deploy): only a datastore fails "itself" here.
  if (!['database', 'cache', 'queue'].includes(type)) return [];
  const action = (DB_ACTION[type] ?? DB_ACTION.api!)(service);
  return [
    draft('upstream_failure', {
      statement: `${service} (${type}) itself is failing${users.length > 0 ? `, and ${list(users)} fail with it` : ''}`,
      subject: service,
      score: 0.6 + (users.length > 0 ? 0.1 : 0) + (broken.length > 1 ? 0.05 : 0),
      support: [
        ...broken.slice(0, 2).map(alertLine),
        ...(users.length > 0 ? [`${list(users)}, which use it, alert in the same incident`] : []),
      ],
      against: [],
      sources: broken.map((a) => a.eventId),
      rootCause: `${service} (${type}) is failing: ${says(broken[0]!, 120)}${users.length > 0 ? `; ${list(users)} depend on it and fail with it` : ''}.`,
      actions: [
        action,
        `Once ${service} is healthy, check that ${list(users.length > 0 ? users : [v.service])} recovered`,
      ],
      keywords: [lower(service), type, 'failover', 'outage'],
      evidence: 'direct',
    }),
  ];
}

/** Where a surge comes from, when the alerts say: an ASN (and its owner), a user agent, an address. */
function trafficSource(alerts: AlertObservation[]): string | undefined {
  for (const a of alerts) {
    const text = textOf(a);
    const asn = text.match(/\b(AS\d{3,6})\b(?:\s*\(([^)]{2,40})\))?/);
    const agent = text.match(/user[- ]?agent[:=\s]+["'`]?([\w./()-]{3,60})/i)?.[1];
    if (asn) return `${asn[1]}${asn[2] ? ` (${asn[2]})` : ''}${agent ? `, user-agent ${agent}` : ''}`;
    if (agent) return `user-agent ${agent}`;
    const ip = text.match(/\bfrom (\d{1,3}(?:\.\d{1,3}){3}(?:\/\d{1,2})?)/)?.[1];
    if (ip) return ip;
  }
  return undefined;
}

export function trafficSpike(v: View): Hypothesis[] {
  const mine = (a: AlertObservation) => v.own.includes(a) || lower(a.service) === lower(v.input.incident.service);
  const signals = matching(v.scope.filter(mine), RE.traffic);
  if (signals.length === 0) return [];
  const multiplier = signals.map((a) => textOf(a).match(RE.trafficMultiplier)?.[0]).find((m): m is string => !!m);
  const saturated = matching(v.scope.filter(mine), RE.saturation);
  const saturatedOther = saturated.find((a) => !signals.includes(a));
  const source = trafficSource([...signals, ...v.scope]);
  let score = 0.5 + (multiplier ? 0.15 : 0) + (saturated.length > 0 ? 0.1 : 0) + (source ? 0.1 : 0);
  const recent = v.input.changes.some((c) => c.hops === 0 && proximity(minutesBetween(c.occurredAt, v.first)) >= 0.6);
  if (!recent) score += 0.05;
  const from = source ? ` from ${source}` : '';
  return [
    draft('traffic_spike', {
      statement: `Traffic spike on ${v.service}${from}${multiplier ? ` (${multiplier})` : ''}`,
      subject: source ?? v.service,
      score,
      support: [...signals.slice(0, 3).map(alertLine), ...(recent ? [] : ['no recent change of the service'])],
      against: recent ? ['the service also changed shortly before'] : [],
      sources: signals.map((a) => a.eventId),
      rootCause: `A traffic spike${from}: ${v.service} receives ${multiplier ?? 'far more requests than usual'} (${says(signals[0]!)}) and saturates${saturatedOther ? ` (${saturatedOther.alertName}: ${says(saturatedOther, 80)})` : ''}; nothing changed in the service itself.`,
      actions: source
        ? [
            `Block or rate-limit ${source} at the edge (a WAF or gateway rule) so ${v.service} serves its real users again`,
            `Scale out ${v.service} if the latency does not recover, and add per-client rate limits for the routes it hit`,
          ]
        : [
            `Scale out ${v.service}: raise its replica count and its autoscaler maximum above the current ceiling`,
            `Rate-limit or shed the excess traffic at the edge for ${v.service} (per client), and find its source in the access logs`,
          ],
      keywords: ['traffic', 'scale', 'scaling', 'capacity', 'autoscaling', 'rate limit', 'load', 'waf', 'block'],
      ...(source ? { evidence: 'direct' as const } : {}),
    }),
  ];
}

export function flappingAlert(v: View): Hypothesis[] {
  const f = v.flapping;
  if (!f) return [];
  const support = [
    `${f.alertName} toggled ${f.toggles} times (${f.firing} firing, ${f.resolved} resolved) in ${formatDuration(f.spanMinutes)}`,
  ];
  const against: string[] = [];
  let score = 0.4 + Math.min(0.45, 0.07 * f.toggles);
  if (v.input.incident.recovered) {
    score += 0.05;
    support.push('it is currently resolved');
  }
  const impact = v.related.filter((a) => a.status === 'firing' && (a.severity === 'critical' || a.severity === 'high'));
  if (impact.length > 0) {
    score -= 0.2;
    against.push(`related services alert too (${list(servicesOf(impact))})`);
  } else {
    support.push('no related service alerts');
  }
  if (v.ownFiring.some((a) => a.severity === 'critical')) {
    score -= 0.1;
    against.push('the alert is critical');
  }
  if (matching(v.own, /(5xx|error rate|exception|outage|down\b)/i).length > 0) {
    score -= 0.1;
    against.push('the alert reports errors');
  }
  return [
    draft('flapping_alert', {
      statement: `Noisy flapping alert ${f.alertName} on ${v.service}, no real impact`,
      subject: f.alertName,
      score,
      support,
      against,
      sources: f.sources,
      rootCause: `A noisy, flapping alert rather than an outage: ${f.alertName} on ${v.service} toggled between firing and resolved ${f.toggles} times in ${formatDuration(f.spanMinutes)} around its threshold, with no correlated alerts and no lasting impact.`,
      actions: [
        `Tune alert ${f.alertName} on ${v.service}: add a hold duration (\`for: 15m\`) and hysteresis, or raise its threshold, so it stops flapping; no change to ${v.service} is needed`,
        `Silence ${f.alertName} for ${v.service} until the rule change is deployed`,
      ],
      evidence: 'direct',
      keywords: ['alert', 'alerting', 'flapping', 'noise', 'threshold', lower(f.alertName)],
    }),
  ];
}
