/**
 * Flux notification-controller, Provider of type `generic` (or `generic-hmac`): the body is the
 * Flux event. https://fluxcd.io/flux/components/notification/providers/#generic-webhook
 *
 * Events of a HelmRelease or Kustomization whose reason is an applied change (reconciliation,
 * install, upgrade, rollback, uninstall: succeeded or failed; a failed health check after an
 * apply; kustomize-controller's `Progressing` that lists the change set it applied) → one
 * `deployment` change: service = involvedObject.name (the change set's workloads too, in
 * `services`), change_type gitops, labels namespace, reason, state (succeeded/failed/applied),
 * sha and ref from the revision (`main@sha1:<sha>`), version (a HelmRelease's chart version),
 * controller, objects (the change set). Other reasons (a Progressing without a change set,
 * DependencyNotReady, artifact fetches…) and other kinds are acknowledged and ignored.
 */
import { z } from 'zod';
import { nonEmpty, parseTime, parseWith } from '../normalize.js';
import type { ParsedDelivery, WebhookProvider } from '../types.js';
import { change, labelsOf } from './change-common.js';

const appliedReasons =
  /^(Reconciliation|Install|Upgrade|Rollback|Uninstall|Remediation)(Succeeded|Failed)$|^HealthCheckFailed$/;

/** kustomize-controller's change set: one `Kind/namespace/name action` line per object it applied. */
const changeSetLine = /^([A-Za-z][\w.]*)\/(?:([\w.-]+)\/)?([\w.-]+) (created|configured|deleted)$/;
/** Kinds whose name is a workload's, so a service's. */
const workloadKinds = new Set(['Deployment', 'StatefulSet', 'DaemonSet', 'Rollout', 'CronJob', 'HelmRelease']);

/** The objects a change set applied, and the workloads among them. */
export function changeSet(message: string | undefined): { objects: string[]; workloads: string[] } {
  const objects: string[] = [];
  const workloads: string[] = [];
  for (const line of (message ?? '').split('\n')) {
    const m = changeSetLine.exec(line.trim());
    if (!m) continue;
    objects.push(line.trim());
    if (workloadKinds.has(m[1]!)) workloads.push(m[3]!);
  }
  return { objects, workloads: [...new Set(workloads)] };
}

const eventSchema = z.looseObject({
  involvedObject: z.looseObject({
    kind: z.string().min(1),
    name: z.string().min(1).max(200),
    namespace: z.string().nullish(),
    apiVersion: z.string().nullish(),
  }),
  severity: z.string().nullish(),
  timestamp: z.union([z.string(), z.number()]).nullish(),
  message: z.string().nullish(),
  reason: z.string().min(1),
  metadata: z.record(z.string(), z.string()).nullish(),
  reportingController: z.string().nullish(),
});

/** The revision, under `revision` or `<group>/revision` (the controllers' own key). */
function revisionOf(metadata: Record<string, string> | null | undefined): string | undefined {
  if (!metadata) return undefined;
  const key = Object.keys(metadata).find((k) => k === 'revision' || k.endsWith('/revision'));
  return key ? nonEmpty(metadata[key]) : undefined;
}

/** `main@sha1:abc…` (Flux 2.x) or `main/abc…` (before) → ref and sha; a chart version otherwise. */
export function splitRevision(revision: string): { ref?: string; sha?: string; version?: string } {
  const modern = /^(?:(.+?)@)?(?:sha1|sha256):([0-9a-f]{7,64})$/i.exec(revision);
  if (modern) return { ...(modern[1] ? { ref: modern[1] } : {}), sha: modern[2]! };
  const legacy = /^(.+)\/([0-9a-f]{40})$/i.exec(revision);
  if (legacy) return { ref: legacy[1]!, sha: legacy[2]! };
  return { version: revision };
}

export const fluxProvider: WebhookProvider = {
  name: 'flux',
  parse(body): ParsedDelivery {
    const event = parseWith(eventSchema, body, 'flux');
    const object = event.involvedObject;
    if (object.kind !== 'HelmRelease' && object.kind !== 'Kustomization')
      return { events: [], ignored: `events of a ${object.kind} are not used` };
    // kustomize-controller reports what it applied as `Progressing` with the change set; a
    // Progressing without one (an upgrade starting, a wait) is not a change yet.
    const applied = changeSet(nonEmpty(event.message));
    const appliedSet = event.reason === 'Progressing' && applied.objects.length > 0;
    if (!appliedReasons.test(event.reason) && !appliedSet)
      return { events: [], ignored: `reason ${event.reason} is not an applied change` };
    const revision = revisionOf(event.metadata);
    const parts = revision ? splitRevision(revision) : {};
    const state = appliedSet ? 'applied' : event.reason.endsWith('Succeeded') ? 'succeeded' : 'failed';
    const services = [...new Set([object.name, ...applied.workloads])];
    const labels = labelsOf({
      change_type: 'gitops',
      object_kind: object.kind,
      namespace: nonEmpty(object.namespace),
      reason: event.reason,
      state,
      severity: nonEmpty(event.severity),
      revision,
      sha: parts.sha,
      ref: parts.ref,
      version: object.kind === 'HelmRelease' ? (parts.version ?? revision) : parts.version,
      controller: nonEmpty(event.reportingController),
      summary: nonEmpty(event.metadata?.summary),
      services: services.length > 1 ? services.slice(0, 20).join(',') : undefined,
      objects: applied.objects.length > 0 ? applied.objects.slice(0, 50).join('; ') : undefined,
    });
    const message = nonEmpty(event.message);
    return {
      events: [
        change('deployment', {
          service: object.name,
          title: `Flux ${object.kind} ${object.namespace ? `${object.namespace}/` : ''}${object.name}: ${event.reason}${revision ? ` (${revision})` : ''}`,
          parts: [message],
          labels,
          occurredAt: parseTime(event.timestamp, new Date()),
          raw: body,
        }),
      ],
    };
  },
};
