/** What the tenant already knows about such incidents: matching runbooks and learned failure patterns. */
import type { RunbookObservation } from '../../analysis/investigation/index.js';
import type { InvestigationRequest } from '../../analysis/investigation-types.js';
import { findSymptomMatches, incidentSymptoms, type SymptomMatch } from '../../db/repositories/patterns.js';
import { findRunbooksFor } from '../../db/repositories/runbooks.js';
import { lower, type InvestigationContext, type Scene } from './common.js';
import { searchText } from './payloads.js';

export const RUNBOOK_VOCABULARY = [
  'postgres',
  'postgresql',
  'mysql',
  'redis',
  'memcached',
  'kafka',
  'rabbitmq',
  'elasticsearch',
  'dns',
  'certificate',
  'tls',
  'ssl',
  'disk',
  'memory',
  'oom',
  'connection',
  'connections',
  'pool',
  'pgbouncer',
  'cache',
  'deploy',
  'deployment',
  'rollback',
  'traffic',
  'latency',
  'timeout',
  'cpu',
  'queue',
  'replication',
  'failover',
  'flapping',
  'scaling',
  'wal',
  'filesystem',
  'heap',
  'leak',
];
export const GENERIC_WORDS = new Set([
  'high',
  'alert',
  'rate',
  'error',
  'errors',
  'down',
  'firing',
  'warning',
  'critical',
  'above',
  'below',
  'total',
]);

/** Keywords of the incident for runbook matching: domain words present in its texts, and its alert names' words. */
export function runbookKeywords(scene: Scene, extraTexts: string[]): string[] {
  const text = lower(
    [scene.incident.title, scene.incident.description, ...scene.ownAlerts.map(searchText), ...extraTexts].join('\n'),
  );
  const vocabulary = RUNBOOK_VOCABULARY.filter((w) => new RegExp(`\\b${w}`).test(text));
  const nameWords = scene.ownAlerts
    .flatMap((a) => (a.alertName ?? '').replace(/([a-z])([A-Z])/g, '$1 $2').split(/[^A-Za-z0-9]+/))
    .map((w) => w.toLowerCase())
    .filter((w) => w.length >= 4 && !GENERIC_WORDS.has(w));
  return [...new Set([...vocabulary, ...nameWords])].slice(0, 30);
}

export async function matchingRunbooks(
  ctx: InvestigationContext,
  scene: Scene,
  failingDependencies: string[],
  extraTexts: string[],
): Promise<RunbookObservation[]> {
  const keywords = runbookKeywords(scene, extraTexts);
  const targets = [scene.service, ...failingDependencies.slice(0, 3)];
  const found = new Map<string, RunbookObservation>();
  for (const target of targets) {
    if (!target && keywords.length === 0) continue;
    const matches = await findRunbooksFor(ctx.db, scene.req.tenantId, { service: target, keywords }, 5);
    for (const m of matches) {
      const seen = found.get(m.runbookId);
      if (!seen || m.score > seen.score) {
        found.set(m.runbookId, {
          runbookId: m.runbookId,
          title: m.title,
          service: m.service,
          tags: m.tags,
          steps: m.steps,
          score: m.score,
          matchedKeywords: m.matchedKeywords,
        });
      }
    }
  }
  return [...found.values()].sort((a, b) => b.score - a.score || a.title.localeCompare(b.title)).slice(0, 5);
}

/** The tenant's learned patterns whose symptoms (service, alert names) the incident shows, best first. */
export async function matchingPatterns(ctx: InvestigationContext, req: InvestigationRequest): Promise<SymptomMatch[]> {
  const symptoms = await incidentSymptoms(ctx.db, req.tenantId, req.incidentId);
  return symptoms ? findSymptomMatches(ctx.db, req.tenantId, symptoms) : [];
}
