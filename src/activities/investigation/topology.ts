/** The dependencies of the incident's service with what is failing on them, and its blast radius. */
import { and, eq, inArray, isNull, ne, notInArray } from 'drizzle-orm';
import type { DependencyObservation, TopologyObservation } from '../../analysis/investigation/index.js';
import { blastRadius } from '../../db/repositories/topology.js';
import { incidents } from '../../db/schema/incidents.js';
import type { IngestedEventRow } from '../../db/schema/ingestion.js';
import { clip, heartbeat, lower, type InvestigationContext, type Scene } from './common.js';
import { searchText } from './payloads.js';

/** The dependencies with what is failing on them, and which alerting services share each. */
export async function topologyOf(
  ctx: InvestigationContext,
  scene: Scene,
  correlated: IngestedEventRow[],
): Promise<TopologyObservation> {
  if (!scene.node) return { known: false, serviceType: null, dependencies: [], dependents: [] };
  const depNames = scene.dependencies.map((d) => d.name);
  const openIncidents =
    depNames.length > 0
      ? await ctx.db
          .select({
            id: incidents.id,
            service: incidents.service,
            title: incidents.title,
            createdAt: incidents.createdAt,
          })
          .from(incidents)
          .where(
            and(
              eq(incidents.tenantId, scene.req.tenantId),
              ne(incidents.id, scene.req.incidentId),
              notInArray(incidents.status, ['resolved', 'closed']),
              isNull(incidents.recoveredAt),
              inArray(incidents.service, depNames),
            ),
          )
          .limit(100)
      : [];
  const alerting = new Set<string>();
  if (scene.service && scene.ownAlerts.some((a) => a.status !== 'resolved')) alerting.add(lower(scene.service));
  const firingBy = new Map<string, IngestedEventRow[]>();
  // Grouping puts a failing dependency's alerts in the incident itself: they count as its alerts too.
  const ownOfOthers = scene.ownAlerts.filter((a) => a.service && lower(a.service) !== lower(scene.service));
  for (const a of [...correlated, ...ownOfOthers]) {
    if (a.status === 'resolved' || !a.service) continue;
    alerting.add(lower(a.service));
    firingBy.set(lower(a.service), [...(firingBy.get(lower(a.service)) ?? []), a]);
  }
  for (const i of openIncidents) if (i.service) alerting.add(lower(i.service));

  // Services downstream of the incident's own fail because of it: they do not make a dependency "common".
  const radius = await blastRadius(ctx.db, scene.req.tenantId, scene.node.id);
  const downstream = new Set((radius?.affectedServices ?? []).map((s) => lower(s.name)));
  const dependencies: DependencyObservation[] = [];
  for (const dep of scene.dependencies) {
    heartbeat({ step: 'topology', dependency: dep.name });
    const depAlerts = firingBy.get(lower(dep.name)) ?? [];
    const depIncidents = openIncidents.filter((i) => lower(i.service) === lower(dep.name));
    const depRadius = dep.hops <= 3 ? await blastRadius(ctx.db, scene.req.tenantId, dep.id) : undefined;
    const dependents = [
      ...(depRadius?.affectedServices.map((s) => s.name) ?? []),
      ...(scene.service ? [scene.service] : []),
    ];
    const alertingDependents = [...new Set(dependents)]
      .filter((n) => alerting.has(lower(n)) && !downstream.has(lower(n)))
      .sort();
    // Open incidents the correlated alerts already stand for count once.
    const alertIncidents = new Set(depAlerts.map((a) => a.incidentId));
    const otherIncidents = depIncidents.filter((i) => !alertIncidents.has(i.id));
    const times = [
      ...depAlerts.map((a) => a.occurredAt.getTime()),
      ...otherIncidents.map((i) => i.createdAt.getTime()),
    ];
    dependencies.push({
      name: dep.name,
      type: dep.type,
      hops: dep.hops,
      alerting: depAlerts.length > 0 || otherIncidents.length > 0,
      alertCount: depAlerts.length + otherIncidents.length,
      firstAlertAt: times.length > 0 ? new Date(Math.min(...times)).toISOString() : null,
      alertNames: [
        ...new Set([...depAlerts.map((a) => a.alertName ?? a.title), ...otherIncidents.map((i) => i.title)]),
      ],
      alertTexts: depAlerts.slice(0, 5).map((a) => clip(searchText(a), 400)),
      alertingDependents,
    });
  }
  return {
    known: true,
    serviceType: scene.node.type,
    dependencies,
    dependents: (radius?.affectedServices ?? []).map((s) => ({ name: s.name, hops: s.hops, impact: s.impact })),
  };
}
