/**
 * Hypotheses from exhausted or broken resources: connection pool, disk, certificate and DNS.
 */
import { alertLine, hostsIn, list, lower, RE, says, textOf } from './text.js';
import { type DependencyObservation, type Hypothesis } from './types.js';
import { draft, matching, servicesOf, type View } from './view.js';

// ---------------------------------------------------------------------------------------------
// Resources

const databaseOf = (v: View, text: string): DependencyObservation | undefined => {
  const deps = v.input.topology.dependencies;
  return (
    deps.find((d) => lower(text).includes(lower(d.name))) ??
    deps.find((d) => d.type === 'database' && d.alerting) ??
    deps.find((d) => d.type === 'database')
  );
};

export function connectionPool(v: View): Hypothesis[] {
  const signals = matching(v.scope, RE.pool);
  if (signals.length === 0) return [];
  const ownSignals = signals.filter((a) => v.own.includes(a) || lower(a.service) === lower(v.input.incident.service));
  const db = databaseOf(v, signals.map(textOf).join('\n'));
  let score = 0.55 + 0.1 * Math.min(2, signals.length - 1);
  const support = signals.slice(0, 3).map(alertLine);
  if (db?.alerting && db.alertTexts.some((t) => RE.pool.test(t) || /connections?/i.test(t))) {
    score += 0.1;
    support.push(`${db.name} reports its connections near the limit`);
  }
  if (ownSignals.length === 0) score -= 0.15;
  const dbName = db?.name ?? 'the database';
  return [
    draft('connection_pool', {
      statement: `${v.service} exhausted its connection pool to ${dbName}`,
      subject: dbName,
      score,
      support,
      against:
        ownSignals.length === 0 ? [`the pool errors come from ${list(servicesOf(signals))}, not ${v.service}`] : [],
      sources: signals.map((a) => a.eventId),
      rootCause: `Connection pool exhaustion: ${v.service} cannot get connections to ${dbName} (${says(signals[0]!)})${db?.alerting ? `, and ${dbName} is at its connection limit` : ''}.`,
      actions: [
        `Terminate idle and idle-in-transaction connections on ${dbName} and restart the ${v.service} pods holding leaked connections`,
        `Cap ${v.service}'s pool size so all replicas together stay below ${dbName}'s max_connections (or put PgBouncer in front)`,
      ],
      evidence: 'direct',
      keywords: [
        'connection',
        'connections',
        'pool',
        'exhaustion',
        'postgres',
        'pgbouncer',
        'max_connections',
        lower(dbName),
      ],
    }),
  ];
}

export function diskFull(v: View): Hypothesis[] {
  const signals = matching(v.scope, RE.disk);
  if (signals.length === 0) return [];
  const main =
    signals.find(
      (a) => a.labels.persistentvolumeclaim ?? a.labels.mountpoint ?? a.labels.device ?? a.labels.instance,
    ) ?? signals[0]!;
  const host = (
    main.labels.persistentvolumeclaim ??
    main.labels.instance ??
    main.labels.host ??
    main.labels.hostname ??
    main.labels.node ??
    main.service ??
    v.service
  ).replace(/:\d+$/, '');
  const mount = main.labels.mountpoint ?? main.labels.mount ?? main.labels.device ?? main.labels.volume ?? null;
  // Alerts say either how full it is or how much is left ("has only 0.41% available space left").
  const stated = textOf(main).match(/(\d{1,3}(?:\.\d+)?) ?%( available| free| left| space left| avail)?/i);
  const percent = stated
    ? String(stated[2] ? Math.round((100 - Number(stated[1])) * 100) / 100 : Number(stated[1]))
    : undefined;
  let score = 0.6;
  if (percent && Number(percent) >= 95) score += 0.15;
  if (signals.some((a) => /no space left|enospc/i.test(textOf(a)))) score += 0.15;
  if (main.severity === 'critical') score += 0.05;
  const where = `${host}${mount ? ` (${mount})` : ''}`;
  return [
    draft('disk_full', {
      statement: `Disk full on ${where}`,
      subject: host,
      score,
      support: signals.slice(0, 3).map(alertLine),
      against: [],
      sources: signals.map((a) => a.eventId),
      rootCause: `The disk is full on ${where}${percent ? ` (${percent}% used)` : ''}: ${says(main)}. Writes fail on ${v.service} until space is freed.`,
      actions: [
        `Free disk space on ${where}: delete rotated logs, old WAL/archives and temporary files, then expand the volume`,
        `Add an alert at 80% disk usage on ${host} with a forecast (predict_linear) so it warns hours ahead`,
      ],
      evidence: 'direct',
      keywords: ['disk', 'space', 'volume', 'filesystem', 'full', lower(host)],
    }),
  ];
}

export function expiredCertificate(v: View): Hypothesis[] {
  const signals = matching(v.all, RE.cert);
  if (signals.length === 0) return [];
  const labelHost = signals
    .map(
      (a) =>
        a.labels.instance ??
        a.labels.target ??
        a.labels.domain ??
        a.labels.host ??
        a.labels.server_name ??
        a.labels.cn ??
        '',
    )
    .map((h) => hostsIn(h)[0])
    .find((h): h is string => !!h);
  const domain = labelHost ?? signals.flatMap((a) => hostsIn(textOf(a)))[0] ?? v.service;
  const expired = signals.some((a) => RE.certExpired.test(textOf(a)));
  const services = servicesOf(signals);
  let score = 0.6 + (expired ? 0.25 : 0) + (services.length > 1 ? 0.05 : 0);
  if (!signals.some((a) => v.own.includes(a) || v.related.includes(a))) score -= 0.2;
  return [
    draft('expired_certificate', {
      statement: `The TLS certificate of ${domain} ${expired ? 'has expired' : 'is failing'}`,
      subject: domain,
      score,
      support: signals.slice(0, 3).map(alertLine),
      against: [],
      sources: signals.map((a) => a.eventId),
      rootCause: `An ${expired ? 'expired' : 'invalid'} TLS certificate on ${domain}: ${says(signals[0]!)}. Clients of ${domain}${services.length > 0 ? ` (${list(services)})` : ''} fail the TLS handshake.`,
      actions: [
        `Renew the TLS certificate of ${domain} and deploy it where TLS terminates (load balancer or ingress), then verify with \`openssl s_client -connect ${domain}:443\``,
        `Automate renewal for ${domain} (cert-manager or ACME) and alert 14 days before expiry`,
      ],
      evidence: 'direct',
      keywords: ['certificate', 'tls', 'ssl', 'cert', 'renew', 'expiry', lower(domain)],
    }),
  ];
}

export function dnsFailure(v: View, contextOnly = false): Hypothesis[] {
  const signals = matching(v.all, RE.dns);
  if (signals.length === 0 && !contextOnly) return [];
  const hostSource = signals.length > 0 ? signals : v.own;
  const candidates = hostSource.flatMap((a) => {
    const text = textOf(a);
    const near = text.match(
      /(?:lookup|resolve|resolving|enotfound|eai_again|host)\s*'?"?([a-z0-9.-]+\.[a-z]{2,})/i,
    )?.[1];
    return [...(near ? [near.toLowerCase()] : []), ...hostsIn(text)];
  });
  const host =
    candidates.find((h) => !/(sentry\.io|github\.com|datadoghq|example\.com\/)/.test(h)) ??
    candidates[0] ??
    `${v.service}'s dependencies`;
  const services = servicesOf(signals);
  let score = contextOnly
    ? 0.3
    : 0.55 + 0.1 * Math.min(3, services.length - 1) + (signals.some((a) => RE.dnsStrong.test(textOf(a))) ? 0.15 : 0);
  if (!contextOnly && !signals.some((a) => v.own.includes(a))) score -= 0.15;
  return [
    draft('dns_failure', {
      statement: `DNS resolution of ${host} fails`,
      subject: host,
      score,
      support: signals.length > 0 ? signals.slice(0, 3).map(alertLine) : ['human context points at DNS'],
      against: [],
      sources: signals.map((a) => a.eventId),
      rootCause: `A DNS failure: ${host} does not resolve${services.length > 0 ? ` for ${list(services)}` : ''}${signals[0] ? ` (${says(signals[0])})` : ''}.`,
      actions: [
        /(\.svc(\.|$)|cluster\.local|\.internal$)/.test(host) || /coredns|kube-dns/i.test(signals.map(textOf).join(' '))
          ? `Restore the cluster DNS (CoreDNS / kube-dns): check the CoreDNS pods' health, load and upstream resolvers, scale them out or restart the failing ones, and confirm \`dig ${host}\` resolves from ${v.service}'s pods`
          : `Restore DNS resolution of ${host}: check its records at the DNS provider and the cluster resolvers (\`dig ${host}\`), and roll back the latest DNS change`,
        `Flush the resolver caches (CoreDNS / node-local DNS) once the records are correct, and confirm ${v.service} resolves ${host}`,
      ],
      evidence: contextOnly ? 'topological' : 'direct',
      keywords: ['dns', 'resolver', 'domain', 'records', lower(host)],
    }),
  ];
}

const SLOT =
  /(replication slot|pg_replication_slots|restart_lsn|wal (retained|kept|size)|retains? [\d.]+ ?[gtm]i?b of wal|inactive slot|wal_keep)/i;

/** A disk filling with WAL that an inactive replication slot holds (a stopped CDC consumer). */
export function replicationSlot(v: View): Hypothesis[] {
  const signals = matching(v.all, SLOT);
  if (signals.length === 0) return [];
  const slot =
    signals.map((a) => a.labels.slot_name ?? a.labels.slot).find((s): s is string => !!s) ??
    signals.map((a) => textOf(a).match(/slot[\s:=]+["'`]?([\w-]{3,})/i)?.[1]).find((s): s is string => !!s);
  const db =
    signals.map((a) => a.service).find((s): s is string => !!s) ??
    v.input.topology.dependencies.find((d) => d.type === 'database')?.name ??
    'the database';
  const full = matching(v.all, RE.disk).length > 0;
  return [
    draft('replication_slot', {
      statement: `Replication slot ${slot ?? '(inactive)'} on ${db} retains WAL until the disk fills`,
      subject: slot ?? db,
      score: 0.6 + (slot ? 0.1 : 0) + (full ? 0.15 : 0),
      support: [...signals.slice(0, 2), ...matching(v.all, RE.disk).slice(0, 1)].map(alertLine),
      against: [],
      sources: signals.map((a) => a.eventId),
      rootCause: `WAL held by an inactive replication slot: ${slot ? `slot ${slot}` : 'a replication slot'} on ${db} has no consumer reading it (${says(signals[0]!, 110)}), so PostgreSQL retains every WAL segment for it${full ? ' and the data volume filled; writes fail' : ''}.`,
      actions: [
        `Drop replication slot ${slot ?? '<the inactive slot>'} on ${db} (\`select pg_drop_replication_slot('${slot ?? '<slot>'}')\`) if its consumer is gone, or restart the consumer so it advances, to release the WAL`,
        `Set max_slot_wal_keep_size on ${db} and alert on inactive slots and retained WAL`,
      ],
      keywords: ['replication slot', 'wal', 'disk', 'postgres', lower(slot ?? db)],
      evidence: 'direct',
    }),
  ];
}
