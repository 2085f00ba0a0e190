/**
 * Jobs and the monitoring itself: a batch job that failed half-way and left state broken, a
 * schema migration holding a lock (a job by another name), and a monitoring data source that
 * stopped answering (alerts about missing data, not about the services).
 */
import { alertLine, formatDuration, hostsIn, lower, minutesBetween, says, textOf } from './text.js';
import { type ChangeObservation, type Hypothesis } from './types.js';
import { draft, firstLabel, matching, type View } from './view.js';

const JOB_FAILED =
  /(kubejobfailed|job failed|job .{0,40} (has )?failed|backofflimitexceeded|deadlineexceeded|cronjob.{0,40}fail|failed to complete|job did not complete)/i;

export function failedJob(v: View): Hypothesis[] {
  const failed = matching(v.all, JOB_FAILED);
  if (failed.length === 0) return [];
  const job = (firstLabel(failed, ['job_name', 'cronjob', 'job']) ?? failed[0]!.service ?? '').replace(/-\d{8,}$/, '');
  if (!job || /^(kube-state-metrics|kubelet)$/.test(job)) return [];
  // The job is the cause when what fails names what it works on (reindex-products ↔ "no such index [products]").
  const parts = job.split(/[-_]/).filter((p) => p.length >= 4);
  const own = v.own.filter((a) => !failed.includes(a));
  const overlap = parts.filter((p) => own.some((a) => lower(textOf(a)).includes(p.replace(/^re/, ''))));
  const score = 0.45 + (overlap.length > 0 ? 0.25 : 0) + (failed.some((a) => v.own.includes(a)) ? 0.05 : 0);
  return [
    draft('failed_job', {
      statement: `Job ${job} failed half-way and left what it works on broken`,
      subject: job,
      score,
      support: [
        ...failed.slice(0, 2).map(alertLine),
        ...(overlap.length > 0 && own[0]
          ? [`${alertLine(own[0])} names what ${job} works on (${overlap.join(', ')})`]
          : []),
      ],
      against: [],
      sources: [...failed, ...own.slice(0, 2)].map((a) => a.eventId),
      rootCause: `A failed job: ${job} failed before finishing (${says(failed[0]!, 100)}) and left ${overlap.length > 0 ? `its ${overlap.join('/')} state` : 'its work'} half-done, so ${v.service} fails on it${own[0] ? ` (${says(own[0], 100)})` : ''}.`,
      actions: [
        `Restore what ${job} left half-done (point the alias or state back to the last good version), then re-run ${job} with the resources it ran out of`,
        `Make ${job} switch over only after it has finished (build aside, then swap), and alert when it fails`,
      ],
      keywords: ['job', 'cron', 'batch', 're-run', lower(job)],
      evidence: overlap.length > 0 ? 'direct' : 'topological',
    }),
  ];
}

const MIGRATION = /(migrat|alembic|flyway|liquibase|alter table|schema change|db-migrate|ddl)/i;

/** A schema migration run shortly before: locks on the database are its, by default. */
export function recentMigration(v: View): ChangeObservation | undefined {
  return v.input.changes
    .filter((c) => {
      const m = minutesBetween(c.occurredAt, v.first);
      return m >= -5 && m <= 120 && MIGRATION.test(`${c.title}\n${c.description ?? ''}\n${c.paths.join('\n')}`);
    })
    .sort((a, b) => Date.parse(b.occurredAt) - Date.parse(a.occurredAt))[0];
}
export const migrationName = (c: ChangeObservation) =>
  c.title.match(/\b([\w-]*migrat[\w-]*|alembic|flyway|liquibase)\b/i)?.[1] ?? c.title;
export const sinceChange = (c: ChangeObservation, first: string) => formatDuration(minutesBetween(c.occurredAt, first));

const DATASOURCE =
  /(datasourceerror|datasourcenodata|datasource (error|not found|unavailable)|data ?source.{0,40}(error|failed|unreachable|refused|timeout)|failed to (query|execute) (the )?(data ?source|query)|error querying|prometheus.{0,40}(unreachable|refused|down|no such host|timeout)|query failed|no data|nodata)/i;

export function datasourceFailure(v: View): Hypothesis[] {
  const signals = matching(v.all, DATASOURCE);
  if (signals.length === 0) return [];
  const errors = signals.filter((a) => /error|refused|unreachable|timeout|failed|down/i.test(textOf(a)));
  const host =
    hostsIn(signals.map(textOf).join('\n')).find((h) =>
      /prom|thanos|mimir|cortex|victoria|loki|influx|graphite|elastic/i.test(h),
    ) ??
    firstLabel(signals, ['datasource', 'datasource_name']) ??
    (/prometheus/i.test(signals.map(textOf).join(' ')) ? 'prometheus' : 'the data source');
  const name = host.split('.')[0]!;
  const score = 0.35 + Math.min(0.3, 0.1 * errors.length) + (signals.length >= 3 ? 0.1 : 0);
  return [
    draft('datasource_failure', {
      statement: `The monitoring data source ${name} is failing: the alerts report missing data, not failing services`,
      subject: name,
      score,
      support: signals.slice(0, 3).map(alertLine),
      against: errors.length === 0 ? ['the alerts only say "no data", which a stopped service would also cause'] : [],
      sources: signals.map((a) => a.eventId),
      rootCause: `A monitoring gap, not a service failure: Grafana cannot query the data source ${host} (${says((errors[0] ?? signals[0])!, 110)}), so its rules fire DatasourceError/NoData for every service they watch${errors.length === 0 ? '; with no error from the data source itself, a stopped service or a stopped scrape would look the same' : ''}.`,
      actions: [
        `Restore ${name} (the Prometheus or data source Grafana queries): check its pods, storage and scrape config, and that Grafana reaches it`,
        `Check the services these rules watch by another signal (their own dashboards or logs) until ${name} answers again`,
      ],
      keywords: ['prometheus', 'datasource', 'monitoring', 'scrape', lower(name)],
      evidence: errors.length > 0 ? 'direct' : 'topological',
    }),
  ];
}
