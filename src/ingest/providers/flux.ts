/**
 * Flux notification-controller, Provider of type `generic` (or `generic-hmac`): the body is the
 * Flux event. https://fluxcd.io/flux/components/notification/providers/#generic-webhook
 *
 * Events of a HelmRelease or Kustomization whose reason is an applied change (reconciliation,
 * install, upgrade, rollback, uninstall: succeeded or failed, and a failed health check after an
 * apply) → one `deployment` change: service = involvedObject.name, change_type gitops, labels
 * namespace, reason, state (succeeded/failed), sha and ref from the revision
 * (`main@sha1:<sha>`), version (a HelmRelease's chart version), controller. Other reasons
 * (Progressing, DependencyNotReady, artifact fetches…) and other kinds are acknowledged and ignored.
 */
import { z } from 'zod';
import { nonEmpty, parseTime, parseWith } from '../normalize.js';
import type { ParsedDelivery, WebhookProvider } from '../types.js';
import { change, labelsOf } from './change-common.js';

const appliedReasons =
  /^(Reconciliation|Install|Upgrade|Rollback|Uninstall|Remediation)(Succeeded|Failed)$|^HealthCheckFailed$/;

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
    if (!appliedReasons.test(event.reason))
      return { events: [], ignored: `reason ${event.reason} is not an applied change` };
    const revision = revisionOf(event.metadata);
    const parts = revision ? splitRevision(revision) : {};
    const state = event.reason.endsWith('Succeeded') ? 'succeeded' : 'failed';
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
