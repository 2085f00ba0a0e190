import { ApplicationFailure } from '@temporalio/activity';
import { and, asc, eq, sql } from 'drizzle-orm';
import type { RemediationActivities } from '../../analysis/remediation-types.js';
import { incidents } from '../../db/schema/incidents.js';
import { ingestedEvents } from '../../db/schema/ingestion.js';
import { remediations, remediationSteps } from '../../db/schema/remediation.js';
import type { RemediationContext } from './context.js';

type Verification = Awaited<ReturnType<RemediationActivities['verifyRemediation']>>;

/** Whether the remediation worked: the incident's alerts recovered, or its step-defined checks passed. */
export async function verifyRemediation(
  ctx: RemediationContext,
  req: Parameters<RemediationActivities['verifyRemediation']>[0],
): Promise<Verification> {
  const { db } = ctx;
  const [incident] = await db
    .select({ recoveredAt: incidents.recoveredAt })
    .from(incidents)
    .where(and(eq(incidents.id, req.incidentId), eq(incidents.tenantId, req.tenantId)));
  if (!incident) throw ApplicationFailure.nonRetryable(`incident ${req.incidentId} not found`, 'IncidentMissing');
  if (incident.recoveredAt)
    return { ok: true, detail: `The incident's alerts recovered at ${incident.recoveredAt.toISOString()}` };
  // The latest status of each alert (by fingerprint, else name) attached to the incident.
  const latest = await db.execute<{ alert: string; status: string | null }>(sql`
    select distinct on (coalesce(${ingestedEvents.fingerprint}, ${ingestedEvents.alertName}, ${ingestedEvents.title}))
      coalesce(${ingestedEvents.alertName}, ${ingestedEvents.title}) as alert, ${ingestedEvents.status} as status
    from ${ingestedEvents}
    where ${ingestedEvents.incidentId} = ${req.incidentId} and ${ingestedEvents.tenantId} = ${req.tenantId} and ${ingestedEvents.kind} = 'alert'
    order by coalesce(${ingestedEvents.fingerprint}, ${ingestedEvents.alertName}, ${ingestedEvents.title}), ${ingestedEvents.occurredAt} desc, ${ingestedEvents.receivedAt} desc`);
  const alerts = [...latest];
  const firing = alerts.filter((a) => a.status !== 'resolved').map((a) => a.alert);
  if (alerts.length > 0 && firing.length === 0)
    return { ok: true, detail: `All ${alerts.length} alert(s) of the incident have resolved` };
  const steps = await db
    .select({
      index: remediationSteps.index,
      status: remediationSteps.status,
      error: remediationSteps.error,
      output: remediationSteps.output,
    })
    .from(remediationSteps)
    .where(eq(remediationSteps.remediationId, req.remediationId))
    .orderBy(asc(remediationSteps.index));
  // Step-defined checks decide when the plan has them.
  const [rem] = await db
    .select({ plan: remediations.plan })
    .from(remediations)
    .where(eq(remediations.id, req.remediationId));
  const checks = (rem?.plan ?? []).filter((p) => p.check).map((p) => steps.find((s) => s.index === p.index));
  if (checks.length > 0) {
    // A skill step stores `{ invocationId, output }`; the skill's answer may wrap its JSON in `body`.
    const verdict = (value: unknown, depth = 0): boolean => {
      if (typeof value !== 'object' || value === null || depth > 3) return true;
      const o = value as Record<string, unknown>;
      if (o.ok === false || o.healthy === false) return false;
      return verdict(o.output, depth + 1) && verdict(o.body, depth + 1);
    };
    const failedCheck = checks.find((s) => !s || s.status !== 'succeeded' || !verdict(s.output));
    return failedCheck
      ? { ok: false, detail: `The check of step ${(failedCheck?.index ?? 0) + 1} did not pass` }
      : { ok: true, detail: `${checks.length} step-defined check(s) passed` };
  }
  const notDone = steps.filter((s) => s.status !== 'succeeded');
  if (firing.length > 0) return { ok: false, detail: `Still firing: ${[...new Set(firing)].join(', ')}` };
  // A builtin step only records what it would do: with nothing observed (no alert recovered, no
  // check), the incident is resolved only when every step really acted.
  const simulated = steps.filter((s) => (s.output as { simulated?: unknown } | null)?.simulated === true);
  if (notDone.length === 0 && simulated.length > 0) {
    return {
      ok: false,
      detail: `Nothing confirms a recovery: step(s) ${simulated.map((s) => s.index + 1).join(', ')} only recorded what to do (builtin actions do not touch infrastructure), and no alert or check of the incident shows it recovered. Carry them out, then resolve the incident`,
    };
  }
  if (notDone.length === 0)
    return { ok: true, detail: `All ${steps.length} step(s) acted and no alert of the incident is firing` };
  return {
    ok: false,
    detail: `Step(s) not succeeded: ${notDone.map((s) => `${s.index} (${s.status}${s.error ? `: ${s.error}` : ''})`).join(', ')}`,
  };
}
