/**
 * Causes that live on one node rather than in a service: a noisy neighbour eating the node's CPU,
 * and a clock that drifted. Their fix is on the node (move or limit the neighbour, restore time
 * sync), not in the service whose pods happen to run there.
 */
import { alertLine, list, lower, says, textOf } from './text.js';
import { type AlertObservation, type Hypothesis } from './types.js';
import { draft, firstCapture, matching, servicesOf, type View } from './view.js';

const NODE_CPU =
  /(node ?cpu ?high|nodecpuhighusage|cpu (usage )?(at|on) .{0,60}(9\d|100) ?%|node.{0,30}cpu.{0,30}(9\d|100) ?%|load average|top cpu consumer|cpu steal|steal time|(9\d|100) ?% (of )?(all |the )?(cores|cpus?))/i;
const STARVED = /(cputhrottlinghigh|throttl|latency|p9\d|slow|timeout|timed out)/i;
const TOP_CONSUMER =
  /(?:top cpu consumer[^:]*:\s*|consumer:\s*|process\s+|container\s+|pod\s+)["'`]?([a-z][\w.-]{2,})["'`]?[^\n]{0,40}?(?:\d{2,3}(?:\.\d+)? ?%|\d+(?:\.\d+)? cores)/i;

/** The node an alert is about: its instance, node or host label (port dropped). */
function nodeOf(a: AlertObservation): string | undefined {
  const raw = a.labels.node ?? a.labels.instance ?? a.labels.host ?? a.labels.hostname ?? a.labels.kubernetes_node;
  const host = raw?.replace(/:\d+$/, '').trim();
  return host && /[a-z]/i.test(host) && !/^https?:/.test(host) ? host : undefined;
}
const short = (node: string) => node.split('.')[0]!;

export function noisyNeighbour(v: View): Hypothesis[] {
  const busy = matching(v.all, NODE_CPU);
  if (busy.length === 0) return [];
  const node =
    busy.map(nodeOf).find((n): n is string => !!n) ??
    firstCapture(busy, /\bon ((?:ip-[\d-]+|[a-z][\w-]*node[\w-]*)[\w.-]*)/i);
  if (!node) return [];
  const onNode = v.all.filter(
    (a) => !busy.includes(a) && nodeOf(a) && short(nodeOf(a)!) === short(node) && STARVED.test(textOf(a)),
  );
  const neighbour = firstCapture(busy, TOP_CONSUMER);
  const victims = servicesOf(onNode).filter((s) => lower(s) !== lower(neighbour));
  if (onNode.length === 0 && !neighbour) return [];
  const score =
    0.5 + (neighbour ? 0.2 : 0) + (onNode.length > 0 ? 0.1 : 0) + (busy.some((a) => v.own.includes(a)) ? 0 : 0.05);
  const culprit = neighbour ? `${neighbour} on ${short(node)}` : `another workload on ${short(node)}`;
  return [
    draft('noisy_neighbor', {
      statement: `A noisy neighbour: ${culprit} takes the node's CPU from ${list(victims.length > 0 ? victims : [v.service])}`,
      subject: neighbour ?? node,
      score,
      support: [...busy.slice(0, 2), ...onNode.slice(0, 1)].map(alertLine),
      against: [],
      sources: [...busy, ...onNode].map((a) => a.eventId),
      rootCause: `A noisy neighbour on node ${node}: ${neighbour ? `${neighbour} uses` : 'another workload uses'} nearly all of its CPU (${says(busy[0]!, 100)}), so the pods of ${list(victims.length > 0 ? victims : [v.service])} scheduled on ${short(node)} are starved${onNode[0] ? ` (${says(onNode[0], 80)})` : ''} while their pods on other nodes are fine.`,
      actions: [
        `Move ${neighbour ?? 'the CPU-hungry workload'} off ${short(node)}: cordon ${node} and evict or reschedule ${neighbour ?? 'it'}, then give it a CPU limit (or a dedicated node pool with a taint)`,
        `Reschedule ${list(victims.length > 0 ? victims : [v.service])}'s pods from ${short(node)} meanwhile, and set CPU requests that reflect their real use`,
      ],
      keywords: ['node', 'cpu', 'noisy neighbour', 'cordon', 'limit', lower(neighbour ?? node)],
      evidence: 'direct',
    }),
  ];
}

const SKEW =
  /(clock ?skew|clockskew|clock (is )?(out of sync|drift|offset|ahead|behind)|time (drift|offset|not synchroni[sz]ed)|not ?synchroni[sz]ed|\bntpd?\b|\bchronyd?\b|node_timex|nodeclock)/i;
const TIME_ERRORS =
  /(not yet valid|immature ?signature|used before issued|\biat\b|\bnbf\b|token.{0,30}(future|not yet)|request ?time ?too ?skewed|requesttimetooskewed|signature (expired|not yet current)|timestamp.{0,30}(future|skew))/i;

export function clockSkew(v: View): Hypothesis[] {
  const skewed = matching(v.all, SKEW);
  const symptoms = matching(v.all, TIME_ERRORS).filter((a) => !skewed.includes(a));
  if (skewed.length === 0 && symptoms.length === 0) return [];
  const node = skewed.map(nodeOf).find((n): n is string => !!n);
  const score = 0.45 + (skewed.length > 0 ? 0.2 : 0) + (symptoms.length > 0 ? 0.15 : 0) + (node ? 0.05 : 0);
  const where = node ? `node ${node}` : 'the hosts of the failing pods';
  const services = servicesOf(symptoms);
  return [
    draft('clock_skew', {
      statement: `The clock of ${where} drifted: time-checked tokens and signatures fail`,
      subject: node ?? 'clock',
      score,
      support: [...skewed.slice(0, 2), ...symptoms.slice(0, 2)].map(alertLine),
      against: [],
      sources: [...skewed, ...symptoms].map((a) => a.eventId),
      rootCause: `Clock skew: the clock of ${where} is off${skewed[0] ? ` (${says(skewed[0], 80)})` : ''}, so ${list(services.length > 0 ? services : [v.service])} on it ${symptoms[0] ? `reject time-checked tokens (${says(symptoms[0], 90)})` : 'fail time checks'}; requests that land on other nodes work, which is why failures look random.`,
      actions: [
        `Restore time sync on ${node ?? 'the skewed hosts'}: restart chronyd/ntpd and check it reaches its time source (firewall or security-group changes), then confirm the offset is back under 1 s; cordon ${node ?? 'the node'} until it is`,
        `Alert on node clock offset (node_timex_offset_seconds) and allow a small leeway for iat/nbf in token validation`,
      ],
      keywords: ['clock', 'ntp', 'chrony', 'time', 'skew', 'sync', lower(node ?? 'clock')],
      evidence: 'direct',
    }),
  ];
}

const NODE_DOWN =
  /(kubenodenotready|node ?not ?ready|(has been|is) unready|nodenotready|kubelet (stopped|is not) posting|node .{0,40}(unreachable|down|lost)|kubenodeunreachable|instance .{0,20}(terminated|stopped|unhealthy)|system status check failed|statuscheckfailed)/i;

export function nodeFailure(v: View): Hypothesis[] {
  const down = matching(v.all, NODE_DOWN);
  if (down.length === 0) return [];
  const node =
    down
      .map((a) => a.labels.node ?? a.labels.instance?.replace(/:\d+$/, ''))
      .find((n): n is string => !!n && /[a-z]/i.test(n)) ??
    firstCapture(down, /\b((?:ip-[\d-]+|[a-z][\w-]*node[\w-]*)[\w.-]*)/i) ??
    'a node';
  const stranded = v.all.filter(
    (a) =>
      !down.includes(a) &&
      /(replicas ?mismatch|not matched the expected number of replicas|pod ?not ?ready|probe failed|unavailable|pending)/i.test(
        textOf(a),
      ),
  );
  const services = servicesOf([...stranded, ...v.own.filter((a) => !down.includes(a))]);
  const score =
    0.6 +
    (stranded.length > 0 ? 0.15 : 0) +
    (down.some((a) => /15 minutes|lost|unreachable/i.test(textOf(a))) ? 0.05 : 0);
  return [
    draft('node_failure', {
      statement: `Node ${short(node)} is NotReady and ${list(services.length > 0 ? services : [v.service])} lost the pods it ran`,
      subject: node,
      score,
      support: [...down.slice(0, 2), ...stranded.slice(0, 2)].map(alertLine),
      against: [],
      sources: [...down, ...stranded].map((a) => a.eventId),
      rootCause: `A node failure: ${node} stopped reporting Ready (${says(down[0]!, 100)}), so the pods on it stopped serving${services.length > 0 ? `; ${list(services)} ran there and cannot reschedule on their own (a StatefulSet's pod keeps its volume and name)` : ''}.`,
      actions: [
        `Cordon and drain ${node} (or replace it), then force the stranded pods of ${list(services.length > 0 ? services : [v.service])} to reschedule (delete the pod stuck Terminating) so they start elsewhere`,
        `Find why ${short(node)} went NotReady (kubelet, disk or memory pressure, the cloud instance's status checks) before returning it to service`,
      ],
      keywords: ['node', 'notready', 'cordon', 'drain', 'kubelet', lower(node)],
      evidence: 'direct',
    }),
  ];
}
