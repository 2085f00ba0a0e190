/**
 * Load mechanisms with fixes of their own: a runaway batch job or query on a shared database
 * (stop it, by name), a cache evicting under memory pressure (not "the cache is down"), a retry
 * storm (cut the retries), and an out-of-memory driven by one job or input (stop that job or
 * quarantine that input, rather than restart the pods that will take it again).
 */
import { alertLine, list, lower, quote, RE, says, textOf, instanceWorkload } from './text.js';
import { type AlertObservation, type DependencyObservation, type Hypothesis } from './types.js';
import { migrationName, recentMigration, sinceChange } from './jobs.js';
import { draft, firstCapture, firstLabel, matching, servicesOf, type View } from './view.js';

const DB_PRESSURE =
  /(long[- ]running (query|queries|transaction|statement)|quer(y|ies) (running|has been running|active) for|running for \d+ ?(m|min|h|hours|minutes)|pg_stat_activity|pg_stat_statements|slow quer|lock(s)? (wait|waits|held|contention|timeout)|waiting (for|on) (a )?locks?|holds? \w*lock|accessexclusivelock|blocker pid|blocked by pid|blocked (queries|by pid|sessions)|idle in transaction|deadlock|statement_timeout|max_execution_time|seq(uential)? scan|full table scan|cpu.{0,30}(9\d|100) ?%|(9\d|100) ?% cpu|iops|io ?wait|active (sessions|queries|connections)|replication lag|temp files?|work_mem)/i;
const JOB_TEXT =
  /\b(?:cron ?job|batch job|job|cronjob|report|export|backfill|migration|reindex|etl|import|sync|rollup|aggregation|vacuum full)\b[\s:=]+["'`]?([a-z0-9][\w.-]{2,})/i;
const JOB_WORDS =
  /(cron|batch|backfill|nightly|report(ing)? (job|query|run)|export job|etl|reindex|re-?index|migration|data ?fix|bulk (update|delete|insert|import)|analytics quer|ad[- ]hoc quer|full (scan|export))/i;
const JOB_LABELS = [
  'job_name',
  'cronjob',
  'cron_job',
  'batch_job',
  'application_name',
  'app_name',
  'usename',
  'client',
];

const isDb = (d: DependencyObservation) =>
  d.type === 'database' ||
  (d.type !== 'cache' && /(postgres|mysql|maria|db\b|database|rds|aurora|mongo)/i.test(d.name));
const CACHE_NAME = /(redis|memcache|cache|valkey)/i;

/** A job's name from its labels, its text, or a Job pod name. */
function jobName(alerts: AlertObservation[]): string | undefined {
  const labelled = firstLabel(alerts, JOB_LABELS);
  if (
    labelled &&
    !/^(kube-state-metrics|node-exporter|kubelet|prometheus|postgres(-exporter)?|mysqld?-exporter)$/i.test(labelled)
  )
    return labelled.replace(/-\d{8,}$/, '');
  return firstCapture(
    alerts.filter((a) => JOB_WORDS.test(textOf(a))),
    JOB_TEXT,
  );
}

export function runawayJob(v: View): Hypothesis[] {
  // A cache's CPU is a hot key's or an eviction's story, not a runaway query's.
  const pressure = matching(v.all, DB_PRESSURE).filter((a) => !CACHE_NAME.test(`${a.service ?? ''} ${a.alertName}`));
  const jobs = v.all.filter((a) => JOB_WORDS.test(textOf(a)) || !!firstLabel([a], ['job_name', 'cronjob']));
  const locks = pressure.some((a) => /lock|blocked|waiting/i.test(textOf(a)));
  const migration = locks || pressure.length > 0 ? recentMigration(v) : undefined;
  if (
    pressure.length === 0 ||
    (jobs.length === 0 && !migration && !pressure.some((a) => /quer|statement|transaction|lock/i.test(textOf(a))))
  )
    return [];
  const db =
    v.input.topology.dependencies.find((d) => isDb(d) && pressure.some((a) => lower(a.service) === lower(d.name))) ??
    v.input.topology.dependencies.find((d) => isDb(d) && d.alerting) ??
    v.input.topology.dependencies.find(isDb);
  const dbName = db?.name ?? pressure.map((a) => a.service).find((s): s is string => !!s) ?? 'the database';
  const job = jobName([...jobs, ...pressure]) ?? (migration ? migrationName(migration) : undefined);
  const victims = db
    ? db.alertingDependents
    : servicesOf(v.all.filter((a) => RE.error.test(textOf(a)) || RE.saturation.test(textOf(a))));
  let score = 0.55 + (job ? 0.15 : 0) + (victims.length >= 2 ? 0.1 : 0) + (jobs.length > 0 || migration ? 0.05 : 0);
  if (pressure.some((a) => /long[- ]running|running for|lock|idle in transaction/i.test(textOf(a)))) score += 0.05;
  const culprit = job ? `the batch job ${job}` : 'a long-running query';
  const support = [...pressure.slice(0, 2), ...jobs.filter((a) => !pressure.includes(a)).slice(0, 1)].map(alertLine);
  if (migration) support.push(`${migration.title} ran ${sinceChange(migration, v.first)} before the first alert`);
  if (victims.length >= 2) support.push(`${list(victims)} share ${dbName} and slow down together`);
  return [
    draft('runaway_job', {
      statement: `${culprit[0]!.toUpperCase()}${culprit.slice(1)} saturates the shared database ${dbName}`,
      subject: job ?? dbName,
      score,
      support,
      against: [],
      sources: [...pressure, ...jobs].map((a) => a.eventId).concat(migration ? [migration.eventId] : []),
      rootCause: `A runaway ${migration && job === migrationName(migration) ? `schema migration, ${job} (${quote(migration.title, 80)}), holding a lock` : job ? `batch job, ${job},` : 'query'} on the shared database ${dbName}: ${says((jobs[0] ?? pressure[0])!, 110)}. It holds ${dbName}'s CPU, I/O or locks, so every service on it (${list(victims.length > 0 ? victims : [v.service])}) slows down or times out; ${dbName} itself is up.`,
      actions: [
        migration && job === migrationName(migration)
          ? `Cancel the migration ${job} on ${dbName}: find its backend (\`select pid, query from pg_stat_activity where query ilike 'alter table%'\`) and pg_cancel_backend(pid) it so the queued queries run, then re-run the migration in lock-free steps off-peak`
          : job
            ? `Stop ${job}: suspend or delete the job (\`kubectl patch cronjob ${job} -p '{"spec":{"suspend":true}}'\`, or kill its run) and cancel its queries on ${dbName} (\`select pg_cancel_backend(pid) from pg_stat_activity where application_name = '${job}'\` or the session it runs as)`
            : `Find the longest-running query on ${dbName} (\`select pid, now() - query_start, query from pg_stat_activity order by 2 desc\`) and cancel it with pg_cancel_backend(pid) (pg_terminate_backend if it holds locks)`,
        `Reschedule ${job ?? 'the query'} off-peak against a read replica, with a statement_timeout and batching, before it runs again`,
      ],
      keywords: ['query', 'job', 'batch', 'cron', 'lock', 'database', 'pg_stat_activity', lower(job ?? dbName)],
      evidence: 'direct',
    }),
  ];
}

const EVICTION =
  /(evict(ed|ion|ions|ing)?\b|evicted_keys|maxmemory|hit (ratio|rate).{0,30}(drop|fell|fall|below|low|down)|(drop|fall|fell).{0,30}hit (ratio|rate)|miss (ratio|rate).{0,30}(rise|rose|up|spike|above|high)|keyspace_misses|used_memory.{0,30}(max|limit|9\d ?%)|cache.{0,20}(memory|full).{0,20}(9\d|100) ?%)/i;
const CACHE_DOWN =
  /(\bdown\b|unreachable|connection refused|econnrefused|could not connect|no route to host|redis_up\s*==\s*0|is not responding|failover)/i;

const CACHE_CONTEXT = /(redis|memcache|cache|evicted_keys|maxmemory|keyspace|hit (ratio|rate)|elasticache|valkey)/i;

export function cacheEviction(v: View): Hypothesis[] {
  // "Evicted" alone is Kubernetes evicting a pod: only a cache's evictions count here.
  const evicting = matching(v.all, EVICTION).filter((a) => CACHE_CONTEXT.test(textOf(a)));
  if (evicting.length === 0) return [];
  if (evicting.every((a) => CACHE_DOWN.test(textOf(a)))) return [];
  const caches = v.input.topology.dependencies.filter(
    (d) => d.type === 'cache' || /redis|memcache|cache/i.test(d.name),
  );
  const cacheDep =
    caches.find((d) =>
      evicting.some((a) => lower(a.service) === lower(d.name) || lower(textOf(a)).includes(lower(d.name))),
    ) ??
    caches.find((d) => d.alerting) ??
    (caches.length === 1 ? caches[0] : undefined);
  const cache =
    cacheDep?.name ??
    evicting.map((a) => a.service).find((s): s is string => !!s && /redis|memcache|cache/i.test(s)) ??
    evicting.map((a) => a.service).find((s): s is string => !!s) ??
    evicting
      .map((a) => (a.labels.instance ? instanceWorkload(a.labels.instance) : undefined))
      .find((s): s is string => !!s && /[a-z]/i.test(s)) ??
    'the cache';
  const db = v.input.topology.dependencies.find((d) => isDb(d) && d.alerting);
  const writer = v.input.changes.find(
    (c) =>
      c.hops <= 1 &&
      /(cache|ttl|session|key|payload|serializ)/i.test(`${c.title} ${c.commits.map((m) => m.message).join(' ')}`),
  );
  const down = v.all.some((a) => lower(a.service) === lower(cache) && CACHE_DOWN.test(textOf(a)));
  const score =
    0.6 + (evicting.some((a) => /evict|maxmemory/i.test(textOf(a))) ? 0.15 : 0) + (db ? 0.05 : 0) - (down ? 0.25 : 0);
  const support = evicting.slice(0, 3).map(alertLine);
  if (db) support.push(`${db.name} takes the misses (${list(db.alertNames.slice(0, 2))})`);
  return [
    draft('cache_eviction', {
      statement: `Cache ${cache} is evicting keys under memory pressure (an eviction storm), not down`,
      subject: cache,
      score,
      support,
      against: down ? [`${cache} also reports being down`] : [],
      sources: evicting.map((a) => a.eventId),
      rootCause: `A cache eviction storm: ${cache} is up but at its memory limit and evicting keys (${says(evicting[0]!, 100)}), so the hit ratio collapsed and the misses fall through${db ? ` to ${db.name}, which is overloaded` : ' to the backing store'}${writer ? `; ${writer.title} changed what is cached shortly before` : ''}.`,
      actions: [
        `Give ${cache} memory headroom: raise its maxmemory or scale it out, and find what filled it (\`redis-cli --bigkeys\`, keys without TTL${writer ? `, the keys ${writer.title} writes` : ''}) — restarting it would empty it and make the misses worse`,
        `Protect ${db?.name ?? 'the backing store'} while the cache refills: rate-limit cache-miss reads or serve stale values`,
      ],
      keywords: ['cache', 'evict', 'eviction', 'maxmemory', 'memory', 'redis', lower(cache)],
      evidence: 'direct',
    }),
  ];
}

const RETRY =
  /(retry storm|retries|retrying|retry[- _]?(rate|count|attempts?)|x-retry|retried|thundering herd|request amplification|amplif|backoff|re-?tries? (exhausted|exceeded))/i;
/** Most of the load is retries (`93% of requests carry X-Retry-Attempt`). */
const MOSTLY_RETRIES = /(\d{2,3}) ?% of (the )?(requests|calls|traffic)[^.\n]{0,40}retr/i;

export function retryStorm(v: View): Hypothesis[] {
  const retrying = matching(v.all, RETRY);
  if (retrying.length === 0) return [];
  const amplified = v.all.find(
    (a) => RE.trafficMultiplier.test(textOf(a)) || /(\d+(\.\d+)?x|\d{3,} ?%)/.test(textOf(a)),
  );
  const clients = servicesOf(retrying);
  const targetDep = v.input.topology.dependencies.find((d) => d.alerting && !clients.includes(d.name));
  const target = targetDep?.name ?? (clients.includes(v.service) ? null : v.service);
  const client = clients.find((s) => lower(s) !== lower(target)) ?? v.service;
  const blip = v.all.find((a) => a.status === 'resolved' && RE.error.test(textOf(a)));
  const score =
    0.5 +
    (amplified ? 0.15 : 0) +
    (retrying.length >= 2 ? 0.05 : 0) +
    (/storm|thundering|amplif/i.test(retrying.map(textOf).join(' ')) ? 0.15 : 0) +
    (retrying.some((a) => MOSTLY_RETRIES.test(textOf(a))) ? 0.15 : 0);
  const at = target ?? 'its dependency';
  return [
    draft('retry_storm', {
      statement: `A retry storm: ${client} retries failed calls to ${at} and multiplies the load`,
      subject: client,
      score,
      support: [...retrying.slice(0, 2).map(alertLine), ...(amplified ? [alertLine(amplified)] : [])],
      against: [],
      sources: [...retrying, ...(amplified ? [amplified] : [])].map((a) => a.eventId),
      rootCause: `A retry storm: after ${blip ? `a brief failure (${says(blip, 80)})` : 'a brief failure'}, ${client} retries its calls to ${at} without enough backoff (${says(retrying[0]!, 100)}), so ${at} receives many times its normal load and cannot recover while the retries continue.`,
      actions: [
        `Cut ${client}'s retries to ${at}: lower the retry count or turn retries off, with exponential backoff and jitter and a retry budget, and open its circuit breaker so ${at} can recover`,
        `Shed the excess load at ${at} (rate-limit ${client}) until the retry rate is back to normal, then scale back`,
      ],
      keywords: ['retry', 'retries', 'backoff', 'circuit breaker', 'rate limit', lower(client)],
      evidence: 'direct',
    }),
  ];
}

const OOM =
  /(oom[- ]?kill|out ?of ?memory|oomkilled|memory limit|container_memory|killed.{0,20}memory|heap out of memory|java\.lang\.outofmemoryerror|memoryerror|exit code 137)/i;
const INPUT =
  /(?:processing|importing|parsing|loading|reading|uploading|rendering|exporting|file|payload|batch|tenant|customer|account|report|document|message|request)[\s:=]+["'`]?([\w./-]*(?:\.(?:csv|json|xml|xlsx|zip|gz|parquet|pdf)|\d{3,}[\w-]*)|[a-z]+_[a-z0-9_]+)/i;
const FILE = /\b([\w.-]+\.(?:csv|json|ndjson|xml|xlsx|zip|gz|parquet|avro|pdf|tar))\b/i;
const BIG_INPUT =
  /(\d+(\.\d+)? ?(gb|gib|mb|mib)\b|\d{6,} (rows|records|items|lines|events)|huge|very large|oversized|unbounded|entire table|whole table|all rows)/i;

export function oomFromInput(v: View): Hypothesis[] {
  const ooms = matching(v.all, OOM);
  if (ooms.length === 0) return [];
  const job = jobName(ooms) ?? jobName(v.all.filter((a) => JOB_WORDS.test(textOf(a))));
  const big = v.all.filter((a) => BIG_INPUT.test(textOf(a)));
  const input = firstCapture([...ooms, ...big], FILE) ?? firstCapture([...ooms, ...big], INPUT);
  if (!job && !input && big.length === 0) return [];
  const service = servicesOf(ooms)[0] ?? v.service;
  const culprit = job ? `job ${job}` : input ? `input ${input}` : 'one oversized input';
  const score = 0.6 + (job ? 0.1 : 0) + (input ? 0.1 : 0) + (big.length > 0 ? 0.05 : 0);
  return [
    draft('oom_input', {
      statement: `${service} runs out of memory on ${culprit}, not from a leak`,
      subject: job ?? input ?? service,
      score,
      support: [...ooms.slice(0, 2), ...big.filter((a) => !ooms.includes(a)).slice(0, 1)].map(alertLine),
      against: [],
      sources: [...ooms, ...big].map((a) => a.eventId),
      rootCause: `An out-of-memory driven by ${culprit}: ${service} loads ${input ? `${input}` : 'it'} whole (${says((big[0] ?? ooms[0])!, 100)}) and is OOM-killed; each restart takes the same work again and dies the same way.`,
      actions: [
        job
          ? `Stop ${job} (suspend the CronJob or delete the Job run) before restarting ${service}'s pods, so they do not pick the same work up again`
          : `Quarantine ${input ?? 'the oversized input'} (move it to a dead-letter queue or mark it skipped) so ${service}'s pods stop re-processing it, then let them restart`,
        `Make ${service} stream or page through ${input ?? 'large inputs'} with a size cap instead of loading it whole, then re-run it`,
      ],
      keywords: ['memory', 'oom', 'job', 'input', 'batch', lower(job ?? input ?? service)],
      evidence: 'direct',
    }),
  ];
}
