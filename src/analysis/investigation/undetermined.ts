/**
 * "Undetermined" that helps: what the agents could not see, and which skill or data would settle
 * it, so the on-call engineer knows what to look at and what to connect.
 */
import { hhmm, quote } from './text.js';
import { type Hypothesis } from './types.js';
import { draft, type View } from './view.js';

/** The evidence the investigation lacked, each with what would supply it. */
function missingEvidence(v: View): string[] {
  const input = v.input;
  const service = v.service;
  const missing: string[] = [];
  if (input.changes.length === 0)
    missing.push(
      `no deploy, flag or config change of ${service} or its dependencies reached the service in the 6 h before the first alert (connect the GitHub, Argo CD, Flux or feature-flag webhook if they ship another way)`,
    );
  if (!input.topology.known)
    missing.push(
      `${service} is not in the topology graph, so failing dependencies could not be checked (add its node and edges)`,
    );
  else if (input.topology.dependencies.length === 0)
    missing.push(
      `${service} has no dependencies in the topology graph (add the databases, caches, queues and APIs it calls)`,
    );
  if ((input.findings ?? []).length === 0)
    missing.push(
      `no logs or metrics beyond the alerts: a logs or metrics skill for ${service} would let the agents read its errors and saturation`,
    );
  if (v.related.length === 0 && input.correlated.length === 0)
    missing.push('no other alert of the tenant around the first alert to correlate with');
  return missing;
}

export function undetermined(v: View, weak: Hypothesis | undefined): Hypothesis {
  const missing = missingEvidence(v);
  const first = v.ownFiring[0]?.alertName ?? v.input.incident.title;
  return draft('undetermined', {
    statement: `No single cause stands out for ${v.service}`,
    subject: v.service,
    score: 0.2,
    support: weak
      ? [`the best candidate, ${weak.statement}, scores only ${weak.score}`]
      : ['no change, dependency failure or known failure mode matches the alerts'],
    against: [],
    sources: v.own.map((a) => a.eventId),
    rootCause: `Undetermined: the evidence does not show what caused "${quote(v.input.incident.title, 100)}" on ${v.service}${weak ? `; the closest candidate is that ${weak.statement.charAt(0).toLowerCase()}${weak.statement.slice(1)} (score ${weak.score}), too weak to act on` : ''}.${missing.length > 0 ? ` Missing: ${missing.join('; ')}.` : ''}`,
    actions: [
      `Read ${v.service}'s error logs around ${hhmm(v.first)} and the first alert (${first}) to find the failing call${weak ? `, and check whether ${weak.subject} is involved` : ''}`,
      `Add what you find as context to this investigation so it is re-synthesised`,
      ...(missing.length > 0 ? [`Close the gaps for next time: ${missing[0]!.replace(/^.*\(([^)]*)\)$/, '$1')}`] : []),
    ],
    keywords: [],
  });
}
