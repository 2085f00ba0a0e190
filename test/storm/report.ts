/** The eval's printout: per scenario, then over all scenarios. */
import type { ScenarioResult } from './replay.js';
import { overall } from './score.js';

const ratio = (value: number | null, num: number, den: number) =>
  value === null ? `n/a (${num}/${den})` : `${value.toFixed(2)} (${num}/${den})`;

export function formatScenario(result: ScenarioResult): string {
  const { score } = result;
  const statuses = Object.entries(result.deliveries.statuses)
    .map(([status, n]) => `${status}×${n}`)
    .join(' ');
  const outages = Object.entries(score.outages)
    .map(([name, o]) => `${name} ${o.incidents} (${o.alerts} alerts${o.unassigned ? `, ${o.unassigned} in none` : ''})`)
    .join('; ');
  return [
    `${result.name} — ${result.title}: ${score.alerts + score.tests.alerts} alerts in ${result.deliveries.sent} deliveries (${statuses}, p50 ${result.deliveries.p50.toFixed(0)} ms, p99 ${result.deliveries.p99.toFixed(0)} ms); grouping read from ${result.source}${result.settled ? '' : `; NOT settled after ${result.settleSeconds.toFixed(0)} s`}`,
    `  pairs: precision ${ratio(score.precision, score.correctPairs, score.predictedPairs)}, recall ${ratio(score.recall, score.correctPairs, score.truePairs)}`,
    `  incidents per outage: ${outages || 'none (no outage)'}; noise: ${score.noise.alerts} alerts in ${score.noise.incidents} incidents, ${score.noise.withOutageAlerts} beside an outage's alerts; tests: ${score.tests.alerts}, ${score.tests.inIncidents} in an incident`,
    `  incidents opened ${result.incidentsOpened}, approvals requested ${result.approvals}, notifications per admin ${result.notificationsPerAdmin.join(', ')}`,
  ].join('\n');
}

/** Each incident's alerts with their truth and why they were grouped, then the alerts in none. */
export function formatGroups(result: ScenarioResult): string {
  const byIncident = new Map<string, ScenarioResult['alerts']>();
  for (const alert of result.alerts) {
    const key = alert.incidentId ?? '(no incident)';
    byIncident.set(key, [...(byIncident.get(key) ?? []), alert]);
  }
  return [...byIncident]
    .map(
      ([incident, alerts]) =>
        `    ${incident}: ${alerts.map((a) => `${a.name} @${a.service ?? '?'} [${a.truth}${a.why ? `; ${a.why}` : ''}]`).join(', ')}`,
    )
    .join('\n');
}

export function formatOverall(results: ScenarioResult[]): string {
  const total = overall(results.map((r) => r.score));
  const perOutage = results.flatMap((r) => Object.values(r.score.outages).map((o) => o.incidents));
  const exact = perOutage.filter((n) => n === 1).length;
  const notifications = results.flatMap((r) => r.notificationsPerAdmin);
  const mean = (xs: number[]) => (xs.length === 0 ? 0 : xs.reduce((a, b) => a + b, 0) / xs.length);
  return [
    `overall (${results.length} scenarios): precision ${ratio(total.precision, total.correctPairs, total.predictedPairs)}, recall ${ratio(total.recall, total.correctPairs, total.truePairs)}`,
    `  outages: ${perOutage.length}, ${exact} of them in exactly one incident, ${mean(perOutage).toFixed(2)} incidents per outage; incidents opened ${results.reduce((s, r) => s + r.incidentsOpened, 0)}; tests in an incident ${results.reduce((s, r) => s + r.score.tests.inIncidents, 0)}`,
    `  approvals requested ${results.reduce((s, r) => s + r.approvals, 0)}; notifications per admin per scenario ${mean(notifications).toFixed(1)} (max ${Math.max(0, ...notifications)})`,
  ].join('\n');
}
