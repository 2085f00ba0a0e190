/**
 * Credentials: calls refused as unauthorized after a key, password or token expired or was
 * rotated. The fix is to restore the credential where the service reads it, not to restart
 * or fail over what refuses it.
 */
import { alertLine, formatDuration, hostsIn, lower, minutesBetween, proximity, says, textOf } from './text.js';
import { type Hypothesis } from './types.js';
import { draft, matching, servicesOf, type View } from './view.js';

const REFUSED =
  /(\b401\b|unauthori[sz]ed|invalid (api[- ]?key|token|credentials?|client secret|signature)|authentication (failed|failure|error)|password authentication failed|access denied for user|invalid_grant|invalid_client|token (has )?expired|expiredtoken|expired (token|credentials?|key)|invalidaccesskeyid|signaturedoesnotmatch|the security token included in the request is (invalid|expired)|permission denied|\b403\b.{0,40}(forbidden|denied)|forbidden.{0,40}\b403\b|not authorized|no valid credentials|api key (was )?(revoked|disabled|expired))/i;
const SECRET_CHANGE =
  /(secret|credential|password|api[- ]?key|token|rotate|rotation|vault|iam|service account|key ?pair|kms)/i;
const SUBJECT_IN_TEXT = /(?:for user|user|role|key|client|service account)\s+["'`]?([a-z0-9][\w.@-]{2,})/i;

export function expiredCredentials(v: View): Hypothesis[] {
  const refused = matching(v.all, REFUSED);
  if (refused.length === 0) return [];
  const own = refused.filter((a) => v.own.includes(a));
  if (own.length === 0) return [];
  const rotation = v.input.changes
    .filter(
      (c) =>
        c.hops <= 1 &&
        SECRET_CHANGE.test(
          `${c.title}\n${c.description ?? ''}\n${c.commits.map((m) => m.message).join('\n')}\n${c.paths.join('\n')}`,
        ),
    )
    .filter((c) => proximity(minutesBetween(c.occurredAt, v.first)) > 0)[0];
  const text = refused.map(textOf).join('\n');
  const target =
    v.input.topology.dependencies.find((d) => lower(text).includes(lower(d.name)))?.name ??
    hostsIn(text).find((h) => !/(example|sentry|datadog|grafana|prometheus)/.test(h)) ??
    'the service it calls';
  const principal = text.match(SUBJECT_IN_TEXT)?.[1];
  const services = servicesOf(refused);
  const caller = services.find((s) => lower(s) === lower(v.input.incident.service)) ?? services[0] ?? v.service;
  let score =
    0.6 + (refused.length > 1 ? 0.05 : 0) + (rotation ? 0.15 : 0) + (/expired|revoked|rotat/i.test(text) ? 0.05 : 0);
  if (refused.length < v.ownFiring.length / 3) score -= 0.1;
  const support = refused.slice(0, 3).map(alertLine);
  if (rotation)
    support.push(
      `${rotation.title} ${formatDuration(minutesBetween(rotation.occurredAt, v.first))} before the first alert`,
    );
  return [
    draft('expired_credentials', {
      statement: `${target} refuses ${caller}'s credentials${principal ? ` (${principal})` : ''}`,
      subject: target,
      score,
      support,
      against: [],
      sources: [...refused.map((a) => a.eventId), ...(rotation ? [rotation.eventId] : [])],
      rootCause: `Rejected credentials: ${target} refuses ${caller}'s calls as unauthorized (${says(refused[0]!, 110)})${rotation ? `, since ${rotation.title}` : ''}; the credential ${caller} uses${principal ? ` for ${principal}` : ''} expired, was rotated or revoked, and ${caller} still sends the old one.`,
      actions: [
        `Restore ${caller}'s credential for ${target}${principal ? ` (${principal})` : ''}: ${rotation ? `roll back ${rotation.title} or ` : ''}put the current secret where ${caller} reads it and reload ${caller} so it picks it up`,
        `Alert on credential expiry for ${target} ahead of time and rotate with an overlap period in which both secrets work`,
      ],
      keywords: ['credential', 'secret', 'password', 'token', 'key', 'rotate', 'unauthorized', lower(target)],
      evidence: 'direct',
    }),
  ];
}
