/**
 * Limits inside one service or one shard: file descriptors exhausted, every worker or thread
 * busy, and a single hot key saturating a cache shard. The fix is the limit or the hot spot,
 * not the dependency that looks slow from outside.
 */
import { alertLine, list, lower, says, textOf, instanceWorkload } from './text.js';
import { type Hypothesis } from './types.js';
import { draft, firstCapture, matching, servicesOf, type View } from './view.js';

const FDS =
  /(too many open files|emfile|enfile|file descriptors?|process_open_fds|fd ?near ?limit|fdnearlimit|nofile|ulimit|open fds|accept\(\) failed|socket.{0,20}exhaust|ephemeral ports?|time_wait|close_wait)/i;

export function fdExhaustion(v: View): Hypothesis[] {
  const signals = matching(v.all, FDS);
  if (signals.length === 0) return [];
  const service =
    servicesOf(signals).find((s) => lower(s) === lower(v.input.incident.service)) ??
    servicesOf(signals)[0] ??
    v.service;
  const leak = signals.some((a) => /close_wait|time_wait|connection per request|keep-?alive/i.test(textOf(a)));
  const score =
    0.6 +
    (signals.length > 1 ? 0.1 : 0) +
    (signals.some((a) => /emfile|too many open files/i.test(textOf(a))) ? 0.1 : 0);
  return [
    draft('fd_exhaustion', {
      statement: `${service} ran out of file descriptors (too many open files)`,
      subject: service,
      score,
      support: signals.slice(0, 3).map(alertLine),
      against: [],
      sources: signals.map((a) => a.eventId),
      rootCause: `File descriptor exhaustion: ${service} hit its open-files limit (${says(signals[0]!, 110)}), so accept() and new connections fail with EMFILE${leak ? '; sockets pile up in TIME_WAIT/CLOSE_WAIT, which says connections are opened per request or not closed' : ''}. Its dependencies are healthy.`,
      actions: [
        `Restart ${service}'s pods one by one to release the descriptors, and ${leak ? 'turn connection keep-alive / pooling back on for its upstream calls' : 'find what holds them (`ls /proc/<pid>/fd | wc -l`, `ss -s`)'}`,
        `Raise ${service}'s nofile limit (ulimit) with headroom and alert at 80 % of it`,
      ],
      keywords: ['file descriptor', 'ulimit', 'nofile', 'emfile', 'connection', lower(service)],
      evidence: 'direct',
    }),
  ];
}

const WORKERS =
  /(worker timeout|all (workers|threads) (are )?busy|no (idle|free|available) (workers|threads)|worker pool (exhausted|saturat)|thread ?pool (exhausted|saturat|queue full)|request queue (full|depth)|listen queue (full|overflow)|backlog full|rejectedexecutionexception|busy workers|workers? (saturat|exhaust)|puma.{0,30}(backlog|busy)|uwsgi.{0,30}(busy|listen queue)|sidekiq.{0,30}(busy|saturat))/i;

export function workerSaturation(v: View): Hypothesis[] {
  const signals = matching(v.all, WORKERS);
  if (signals.length === 0) return [];
  const services = servicesOf(signals);
  const service = services.find((s) => lower(s) === lower(v.input.incident.service)) ?? services[0] ?? v.service;
  const server = firstCapture(signals, /\b(gunicorn|uwsgi|puma|unicorn|sidekiq|tomcat|jetty|php-fpm)\b/i);
  const slow = v.input.topology.dependencies.find(
    (d) => d.alerting && d.alertTexts.some((t) => /latency|slow|p9\d|timeout/i.test(t)),
  );
  const score = 0.6 + (server ? 0.1 : 0) + (signals.length > 1 ? 0.05 : 0) + (slow ? 0.05 : 0);
  const pool = `${server ? `${server} ` : ''}worker pool`;
  return [
    draft('worker_saturation', {
      statement: `${service}'s ${pool} is saturated: every worker is busy${slow ? ` waiting on ${slow.name}` : ''}`,
      subject: service,
      score,
      support: [
        ...signals.slice(0, 3).map(alertLine),
        ...(slow ? [`${slow.name} is slow (${list(slow.alertNames.slice(0, 2))})`] : []),
      ],
      against: [],
      sources: signals.map((a) => a.eventId),
      rootCause: `Worker saturation: ${service}'s ${pool} has no free worker (${says(signals[0]!, 110)})${slow ? `; each request holds a worker while it waits on ${slow.name}, which is slow but up,` : ''} so new requests queue, time out and the callers see 502/504s.`,
      actions: [
        `Give ${service} more concurrency now: scale out its pods and raise its ${server ?? 'worker'} count (or switch to async/threaded workers)${slow ? `, and cut its timeout to ${slow.name} so one slow call cannot hold a worker` : ''}`,
        `Bound ${service}'s per-request work: a timeout and a circuit breaker on slow dependencies, and a queue-depth alert`,
      ],
      keywords: [
        'worker',
        'workers',
        'thread',
        'concurrency',
        'timeout',
        'scale',
        lower(service),
        ...(server ? [server.toLowerCase()] : []),
      ],
      evidence: 'direct',
    }),
  ];
}

const HOT_KEY = /(hot ?key|hot ?shard|top key|single key|one key|key[- ]level hotspot|bigkey|big key)/i;
const KEY_NAME = /(?:hot ?key|top key(?: by ops)?|key)[\s:=]+["'`]?([\w:{}.-]*:[\w:{}.-]+|[\w-]{4,}:[\w-]+)/i;

export function hotKey(v: View): Hypothesis[] {
  const signals = matching(v.all, HOT_KEY);
  if (signals.length === 0) return [];
  const key = firstCapture(signals, KEY_NAME);
  const shard =
    signals.map((a) => a.service).find((s): s is string => !!s) ??
    firstCapture(signals, /\b([\w-]*(?:cache|redis)[\w-]*-\d+)\b/i);
  const score = 0.6 + (key ? 0.2 : 0);
  const what = key ? `key ${key}` : 'one key';
  return [
    draft('hot_key', {
      statement: `A hot key: ${what} saturates ${shard ?? 'one cache shard'}`,
      subject: key ?? shard ?? 'hot key',
      score,
      support: signals.slice(0, 3).map(alertLine),
      against: [],
      sources: signals.map((a) => a.eventId),
      rootCause: `A hot key: ${what} takes most of the operations of ${shard ?? 'its shard'} (${says(signals[0]!, 110)}), so that shard's single thread is at 100 % CPU and every request whose data lives on it slows down; the cache is up with memory to spare.`,
      actions: [
        `Take the load off ${what}: stop or batch what writes it (a counter incremented per request), cache it locally in the callers, or split it across shards`,
        `Alert on per-shard CPU and ops imbalance (redis-cli --hotkeys) so a hot key shows before it saturates a shard`,
      ],
      keywords: ['hot key', 'shard', 'redis', 'cache', 'key', lower(key ?? shard ?? '')],
      evidence: 'direct',
    }),
  ];
}

const THROTTLED = /(\d{2,3})(?:\.\d+)? ?% (?:of )?(?:cpu )?(?:periods )?throttl|throttling of cpu|cputhrottlinghigh/i;

export function cpuLimit(v: View): Hypothesis[] {
  const mine = (a: (typeof v.all)[number]) => v.own.includes(a) || v.related.includes(a);
  // CPU throttling by the kernel's quota, not an API throttling requests.
  const signals = v.all.filter((a) => mine(a) && /cpu/i.test(textOf(a)) && THROTTLED.test(textOf(a)));
  const heavy = signals.filter((a) => Number(textOf(a).match(/(\d{2,3})(?:\.\d+)? ?%/)?.[1] ?? 0) >= 50);
  if (heavy.length === 0) return [];
  const service = servicesOf(heavy)[0] ?? v.service;
  const percent = textOf(heavy[0]!).match(/(\d{2,3})(?:\.\d+)? ?%/)?.[1];
  const maxed = v.all.some((a) => /(max(imum)? replicas|hpa.{0,40}max|kubehpamaxedout)/i.test(textOf(a)));
  return [
    draft('cpu_limit', {
      statement: `${service} is throttled by its CPU limit${percent ? ` (${percent}% of periods)` : ''}`,
      subject: service,
      score: 0.6 + (maxed ? 0.1 : 0) + (Number(percent ?? 0) >= 70 ? 0.05 : 0),
      support: [...heavy.slice(0, 2).map(alertLine), ...(maxed ? ['its autoscaler is at its maximum'] : [])],
      against: [],
      sources: heavy.map((a) => a.eventId),
      rootCause: `A CPU limit too low for the load: ${service}'s containers are throttled${percent ? ` ${percent}% of the time` : ''} (${says(heavy[0]!, 100)}) by their CPU limit${maxed ? ', and its autoscaler is already at its maximum, so adding load only queues requests' : ''}; requests wait for CPU quota and latency climbs.`,
      actions: [
        `Raise ${service}'s CPU limit (resources.limits.cpu, or remove it and keep the request) so its containers stop being throttled${maxed ? ', and raise its autoscaler maximum' : ''}`,
        `Set ${service}'s CPU request and limit from its measured use under peak load, and alert on throttling above 25 %`,
      ],
      keywords: ['cpu', 'limit', 'throttling', 'quota', 'resources', lower(service)],
      evidence: 'direct',
    }),
  ];
}

const CLIENTS =
  /(max(imum)? number of clients|maxclients|too many (clients|connections)|running out of connections|connected_clients|remaining connection slots|connection limit (reached|exceeded))/i;
/** The biggest holder in a client list (`CLIENT LIST by name: cart-cleanup 9,412, cart-api 480`). */
const HOLDER =
  /(?:by (?:name|client|application|user)|holders?|top clients?)[:\s]+["'`]?([a-z][\w.-]{2,})["'`]?\s+([\d,]{3,})/i;

export function connectionHog(v: View): Hypothesis[] {
  const signals = matching(v.all, CLIENTS);
  const holder = firstCapture(signals, HOLDER);
  if (!holder) return [];
  const store =
    signals
      .map((a) => a.service ?? (a.labels.instance ? instanceWorkload(a.labels.instance) : undefined))
      .find((s): s is string => !!s) ?? 'the datastore';
  return [
    draft('connection_hog', {
      statement: `${holder} holds most of ${store}'s connections and starves everyone else`,
      subject: holder,
      score: 0.75 + (signals.length > 1 ? 0.05 : 0),
      support: signals.slice(0, 3).map(alertLine),
      against: [],
      sources: signals.map((a) => a.eventId),
      rootCause: `A connection hog: ${holder} holds most of ${store}'s client connections (${says(signals[0]!, 110)}), opening them and never closing them, so ${store} reached its connection limit and refuses the services that need it.`,
      actions: [
        `Stop ${holder} (suspend its CronJob or scale it to zero) and kill its connections on ${store} (\`CLIENT KILL\` by name, or pg_terminate_backend by application_name) so the others get through`,
        `Fix ${holder} to reuse one pooled connection and close it, and cap its connections before it runs again`,
      ],
      keywords: ['connections', 'clients', 'maxclients', 'leak', 'kill', lower(holder)],
      evidence: 'direct',
    }),
  ];
}
