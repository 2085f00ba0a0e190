/**
 * Argo CD notifications (argocd-notifications webhook service). Argo CD sends whatever the
 * template says; docs/integrations/argocd.md gives the template to paste, built from the
 * Application's fields, and this reads that body:
 * `{ app, project, destination{namespace,server,name}, source{repoURL,path,targetRevision,chart},
 *    sync{revision,status}, health{status,message}, operationState{phase,message,startedAt,finishedAt},
 *    argocdUrl }` (absent fields come as null or Go's `<no value>`).
 *
 * Every notification but a sync still running → one `deployment` change: service = the app's
 * name, change_type gitops, labels repository (from repoURL), paths (source path), sha (sync
 * revision), ref (targetRevision), version (chart version), namespace, project, state (operation
 * phase, else sync status), health. A failed or degraded sync is still a change, with its state.
 */
import { z } from 'zod';
import { parseTime, parseWith } from '../normalize.js';
import type { ParsedDelivery, WebhookProvider } from '../types.js';
import { change, labelsOf, pathsLabel, repositoryFromUrl } from './change-common.js';

/** Go templates print a missing field as `<no value>`: read it as absent. */
const text = z
  .union([z.string(), z.number()])
  .nullish()
  .transform((v) => {
    if (v === null || v === undefined) return undefined;
    const s = String(v).trim();
    return s === '' || s === '<no value>' || s === 'null' ? undefined : s;
  });
const part = <T extends z.ZodRawShape>(shape: T) =>
  z
    .union([z.looseObject(shape), z.string(), z.null()])
    .optional()
    .transform((v) => (typeof v === 'object' && v !== null ? v : undefined));

const notificationSchema = z.looseObject({
  app: z.string().trim().min(1, 'app (the Application name) is required').max(200),
  project: text,
  destination: part({ namespace: text, server: text, name: text }),
  source: part({ repoURL: text, path: text, targetRevision: text, chart: text }),
  sync: part({ revision: text, status: text }),
  health: part({ status: text, message: text }),
  operationState: part({ phase: text, message: text, startedAt: text, finishedAt: text }),
  argocdUrl: text,
});

export const argocdProvider: WebhookProvider = {
  name: 'argocd',
  parse(body): ParsedDelivery {
    const n = parseWith(notificationSchema, body, 'argocd');
    const phase = n.operationState?.phase;
    if (phase === 'Running' || phase === 'Terminating')
      return { events: [], ignored: `sync of ${n.app} is ${phase.toLowerCase()}; its outcome is the change` };
    const source = n.source;
    const revision = n.sync?.revision;
    const health = n.health?.status;
    const state = (phase ?? n.sync?.status ?? 'unknown').toLowerCase();
    const labels = labelsOf({
      change_type: 'gitops',
      repository: repositoryFromUrl(source?.repoURL),
      repo_url: source?.repoURL,
      paths: source?.path ? pathsLabel([source.path]) : undefined,
      chart: source?.chart,
      sha: revision,
      ref: source?.targetRevision,
      version: source?.chart ? source.targetRevision : undefined,
      namespace: n.destination?.namespace,
      cluster: n.destination?.name ?? n.destination?.server,
      project: n.project,
      state,
      sync_status: n.sync?.status,
      health: health?.toLowerCase(),
    });
    const link = n.argocdUrl ? `${n.argocdUrl.replace(/\/$/, '')}/applications/${n.app}` : undefined;
    const what = source?.chart
      ? `chart ${source.chart} ${source.targetRevision ?? ''}`.trim()
      : `${source?.path ?? 'source'}@${revision ? revision.slice(0, 12) : (source?.targetRevision ?? 'HEAD')}`;
    return {
      events: [
        change('deployment', {
          service: n.app,
          title: `Argo CD sync of ${n.app} (${what}): ${state}${health ? `, ${health.toLowerCase()}` : ''}`,
          parts: [
            `Argo CD application ${n.app}${n.destination?.namespace ? ` in namespace ${n.destination.namespace}` : ''} synced ${what}: phase ${phase ?? 'unknown'}, sync ${n.sync?.status ?? 'unknown'}, health ${health ?? 'unknown'}.`,
            n.operationState?.message,
            n.health?.message && `Health: ${n.health.message}`,
            link && `Details: ${link}`,
          ],
          labels,
          occurredAt: parseTime(n.operationState?.finishedAt ?? n.operationState?.startedAt, new Date()),
          raw: body,
        }),
      ],
    };
  },
};
