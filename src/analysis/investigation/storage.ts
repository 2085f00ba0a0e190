/**
 * Database storage mechanisms: a replica falling behind (reads are stale, not failing), and a
 * volume out of I/O (burst credits spent, a saturated I/O queue). Each names the replica or the
 * volume and its own fix.
 */
import { alertLine, lower, says, textOf, instanceWorkload } from './text.js';
import { type Hypothesis } from './types.js';
import { draft, firstCapture, matching, servicesOf, type View } from './view.js';

const LAG =
  /(replication lag|replica(tion)? .{0,20}(lag|behind)|lag(ging)? behind (the )?primary|replay (lag|paused|delay)|pg_replication_lag|seconds_behind_master|secondsbehindmaster|replica_lag)/i;
const BLOCKER = /(?:pid|process)[\s:=]+(\d{2,7})|usename[\s:=]+["'`]?([\w-]+)|user[\s:=]+["'`]?([\w-]+)/gi;

export function replicationLag(v: View): Hypothesis[] {
  const lagging = matching(v.all, LAG);
  if (lagging.length === 0) return [];
  const replica =
    lagging.map((a) => a.labels.instance ?? a.labels.server ?? a.labels.replica).find((s): s is string => !!s) ??
    firstCapture(lagging, /instance[\s:=]+([\w.-]+)/i) ??
    servicesOf(lagging)[0] ??
    'the replica';
  const name = instanceWorkload(replica);
  const text = lagging.map(textOf).join('\n');
  const found = [...text.matchAll(BLOCKER)];
  const pid = found.map((m) => m[1]).find(Boolean);
  const user = found.map((m) => m[2] ?? m[3]).find(Boolean);
  const blocked = /replay paused|conflict|long[- ]running|query/i.test(text);
  const stale = v.all.some(
    (a) => /not found|stale|missing|does not exist|404/i.test(textOf(a)) && !lagging.includes(a),
  );
  const score = 0.6 + (blocked ? 0.1 : 0) + (stale ? 0.1 : 0) + (pid || user ? 0.05 : 0);
  const blocker =
    pid || user ? `the query${pid ? ` pid ${pid}` : ''}${user ? ` of ${user}` : ''}` : 'a long-running query';
  return [
    draft('replication_lag', {
      statement: `Replica ${name} lags behind the primary${blocked ? `: ${blocker} holds replay` : ''}, so reads from it are stale`,
      subject: name,
      score,
      support: lagging.slice(0, 2).map(alertLine),
      against: [],
      sources: lagging.map((a) => a.eventId),
      rootCause: `Replication lag on ${name}: the replica is behind its primary (${says(lagging[0]!, 120)})${blocked ? `, because ${blocker} conflicts with replay and PostgreSQL pauses replay for it` : ''}; services that read from ${name} see old data${stale ? ' and fail on rows that exist on the primary' : ''}.`,
      actions: [
        blocked
          ? `Cancel ${blocker} on replica ${name} (\`select pg_cancel_backend(${pid ?? '<pid>'})\`) so replay catches up, and route reads to the primary until the lag is back under a second`
          : `Route reads from ${name} to the primary (or a healthy replica) until it catches up, and find what slows its replay (I/O, network, a conflicting query)`,
        `Keep long reports off the replicas that serve the application (a dedicated analytics replica, max_standby_streaming_delay) and alert on replica lag`,
      ],
      keywords: ['replica', 'replication', 'lag', 'replay', 'primary', lower(name)],
      evidence: 'direct',
    }),
  ];
}

const IO =
  /(burst[_ ]?balance|burst credits?|iops (limit|exhaust|throttl)|volume(queuelength| queue)|disk io queue|io queue|aqu-?sz|aqu-?sq|io ?wait|iowait|disk (i\/o|io) (saturat|util)|io (saturation|utili[sz]ation)|throughput (limit|exceeded)|ebs.{0,30}(throttl|burst|queue))/i;
const VOLUME = /\b(vol-[0-9a-f]{8,17})\b/i;

export function ioSaturation(v: View): Hypothesis[] {
  const signals = matching(v.all, IO);
  if (signals.length === 0) return [];
  const volume = firstCapture(signals, VOLUME);
  const db =
    v.input.topology.dependencies.find(
      (d) => d.type === 'database' && signals.some((a) => lower(textOf(a)).includes(lower(d.name))),
    ) ?? v.input.topology.dependencies.find((d) => d.type === 'database');
  const owner =
    db?.name ??
    signals
      .map((a) => (a.labels.instance ?? '').replace(/:\d+$/, '').split('.')[0])
      .find((s) => !!s && /[a-z]/.test(s)) ??
    v.service;
  const credits = signals.some((a) => /burst/i.test(textOf(a)));
  const score = 0.6 + (signals.length > 1 ? 0.1 : 0) + (credits ? 0.1 : 0);
  const what = volume ? `volume ${volume}` : `${owner}'s volume`;
  return [
    draft('io_saturation', {
      statement: `${owner} is out of disk I/O: ${what} ${credits ? 'spent its burst credits' : 'is saturated'}`,
      subject: owner,
      score,
      support: signals.slice(0, 3).map(alertLine),
      against: [],
      sources: signals.map((a) => a.eventId),
      rootCause: `Disk I/O saturation on ${owner}: ${what} ${credits ? 'ran out of I/O burst credits and fell back to its baseline IOPS' : 'is at its I/O limit'} (${says(signals[0]!, 110)}), so every query waits on the disk and the services that use ${owner} slow down; nothing changed in the code.`,
      actions: [
        `Give ${what} more I/O: raise its provisioned IOPS and throughput (move a gp2 volume to gp3 or io2), which applies without downtime`,
        `Alert on ${owner}'s burst balance and I/O queue before they run out, and look for what raised its I/O (a job, a missing index)`,
      ],
      keywords: ['iops', 'volume', 'disk', 'io', 'burst', 'gp3', lower(owner)],
      evidence: 'direct',
    }),
  ];
}
