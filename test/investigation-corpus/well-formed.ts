/** What every corpus incident must be before it is run: checked by the floor test. */
import { LAST_MINUTE } from './payloads/time.js';
import type { CorpusIncident } from './types.js';

export function problems(corpus: readonly CorpusIncident[]): string[] {
  const out: string[] = [];
  const ids = new Set<string>();
  for (const incident of corpus) {
    const where = incident.id;
    if (ids.has(incident.id)) out.push(`${where}: duplicate id`);
    ids.add(incident.id);
    const pages = incident.deliveries.filter((d) => d.page);
    if (pages.length !== 1) out.push(`${where}: ${pages.length} page deliveries (one expected)`);
    else if (pages[0]!.minute !== 0) out.push(`${where}: the page is at minute ${pages[0]!.minute}, not 0`);
    const minutes = incident.deliveries.map((d) => d.minute);
    if (minutes.some((m, i) => i > 0 && m < minutes[i - 1]!)) out.push(`${where}: deliveries out of time order`);
    if (minutes.some((m) => m > LAST_MINUTE)) out.push(`${where}: a delivery after minute ${LAST_MINUTE}`);
    const names = new Set(incident.world.nodes.map((n) => n.name));
    for (const [a, b] of incident.world.edges)
      if (!names.has(a) || !names.has(b)) out.push(`${where}: edge ${a}→${b} names an unknown node`);
    if (!incident.truth.subject.length) out.push(`${where}: no subject`);
    if (!incident.truth.action.length) out.push(`${where}: no action patterns`);
    if (!incident.truth.undetermined && !incident.truth.mechanism.length) out.push(`${where}: no mechanism`);
    if (incident.story.length < 80) out.push(`${where}: the story is too short`);
    // One fingerprint for two label sets would deduplicate distinct alerts into one.
    const labelsOf = new Map<string, string>();
    for (const d of incident.deliveries) {
      const alerts = (d.body as { alerts?: Array<{ fingerprint?: string; labels?: object }> }).alerts ?? [];
      for (const a of alerts) {
        if (!a.fingerprint) continue;
        const labels = JSON.stringify(a.labels);
        if ((labelsOf.get(a.fingerprint) ?? labels) !== labels)
          out.push(`${where}: fingerprint ${a.fingerprint} names two label sets`);
        labelsOf.set(a.fingerprint, labels);
      }
    }
  }
  return out;
}
