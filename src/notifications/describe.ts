/**
 * What a notification says: a short title and body for each event of the catalogue, and the row
 * written for one person. Pure functions, no I/O.
 */
import type { notifications } from '../db/schema/remediation.js';
import { newId } from '../ids.js';
import type { OutboxEvent } from '../outbox/consumer.js';
import { isEventType } from '../outbox/events.js';

const MAX_TITLE = 200;
const MAX_BODY = 1000;

export const str = (v: unknown): string | undefined => (typeof v === 'string' && v.length > 0 ? v : undefined);
const num = (v: unknown): number | undefined => (typeof v === 'number' && Number.isFinite(v) ? v : undefined);
const clip = (text: string, max: number) => (text.length > max ? `${text.slice(0, max - 1)}…` : text);

/**
 * Short human title and body for an event of DESIGN §5; null for a type that is not one of them.
 * `incidentTitle` is the incident's title when the event concerns one.
 */
export function describeEvent(
  type: string,
  payload: Record<string, unknown>,
  incidentTitle?: string | null,
): { title: string; body: string } | null {
  if (!isEventType(type)) return null;
  const about = incidentTitle ? `Incident "${incidentTitle}"` : 'The incident';
  const d = ((): { title: string; body: string } => {
    switch (type) {
      case 'incident.created':
        return {
          title: `Incident opened: ${str(payload.title) ?? incidentTitle ?? 'untitled'}`,
          body: `A ${str(payload.severity) ?? 'new'} severity incident was opened (${str(payload.source) ?? 'manual'}).`,
        };
      case 'incident.status_changed':
        return {
          title: `Incident ${str(payload.to) ?? 'updated'}`,
          body: `${about} moved from ${str(payload.from) ?? '?'} to ${str(payload.to) ?? '?'}.`,
        };
      case 'incident.severity_changed':
        return {
          title: `Severity changed to ${str(payload.to) ?? '?'}`,
          body: `${about} changed severity from ${str(payload.from) ?? '?'} to ${str(payload.to) ?? '?'}${str(payload.reason) ? ` (${str(payload.reason)})` : ''}.`,
        };
      case 'incident.resolved':
        return {
          title: `Incident resolved${incidentTitle ? `: ${incidentTitle}` : ''}`,
          body: `${about} was resolved.`,
        };
      case 'triage.completed':
        return {
          title: `Triage completed: ${str(payload.priority) ?? '?'} priority`,
          body: str(payload.summary) ?? `${about} was triaged.`,
        };
      case 'triage.failed':
        return {
          title: 'Triage failed',
          body: `${about} could not be triaged${str(payload.reason) ? `: ${str(payload.reason)}` : '.'}`,
        };
      case 'investigation.started':
        return { title: 'Investigation started', body: `${about} is being investigated.` };
      case 'investigation.evidence_added': {
        const added = num(payload.added) ?? 0;
        return {
          title: `Evidence added: ${added} item${added === 1 ? '' : 's'}`,
          body: `${str(payload.agentRole) ? `The ${str(payload.agentRole)} agent` : 'An agent'} added evidence to ${incidentTitle ? `"${incidentTitle}"` : 'the incident'}.`,
        };
      }
      case 'investigation.completed': {
        const confidence = num(payload.confidence);
        return {
          title: `Root cause found: ${str(payload.rootCause) ?? 'see the investigation'}`,
          body: `${about} was investigated${confidence !== undefined ? ` (confidence ${Math.round(confidence * 100)}%)` : ''}.`,
        };
      }
      case 'investigation.failed':
        return {
          title: 'Investigation failed',
          body: `${about} could not be investigated${(str(payload.message) ?? str(payload.reason)) ? `: ${str(payload.message) ?? str(payload.reason)}` : '.'}`,
        };
      case 'approval.requested':
        return {
          title: 'Approval requested',
          body: `A remediation for ${incidentTitle ? `"${incidentTitle}"` : 'an incident'} awaits approval${str(payload.deadline) ? ` until ${str(payload.deadline)}` : ''}.`,
        };
      case 'approval.expired':
        return {
          title: 'Approval expired',
          body: `The remediation for ${incidentTitle ? `"${incidentTitle}"` : 'the incident'} was not approved in time and is cancelled.`,
        };
      case 'remediation.approved':
        return {
          title: 'Remediation approved',
          body: `The remediation for ${incidentTitle ? `"${incidentTitle}"` : 'the incident'} was approved and is executing.`,
        };
      case 'remediation.rejected':
        return {
          title: 'Remediation rejected',
          body: `The remediation for ${incidentTitle ? `"${incidentTitle}"` : 'the incident'} was rejected.`,
        };
      case 'remediation.completed':
        return {
          title: 'Remediation completed',
          body: `The remediation for ${incidentTitle ? `"${incidentTitle}"` : 'the incident'} completed${str(payload.verification) ? `: ${str(payload.verification)}` : '.'}`,
        };
      case 'remediation.failed':
        return {
          title: 'Remediation failed',
          body: `The remediation for ${incidentTitle ? `"${incidentTitle}"` : 'the incident'} failed${str(payload.failure) ? `: ${str(payload.failure)}` : '.'}`,
        };
      case 'knowledge.pattern_created':
        return {
          title: 'New pattern learned',
          body: str(payload.title) ?? str(payload.description) ?? 'A new incident pattern was recorded.',
        };
      case 'knowledge.pattern_promoted':
        return {
          title: 'Pattern promoted to stable',
          body: str(payload.title) ?? str(payload.description) ?? 'An incident pattern is now stable.',
        };
      case 'knowledge.feedback_received':
        return {
          title: 'Feedback received',
          body: `Feedback was given on ${incidentTitle ? `"${incidentTitle}"` : 'an investigation'}.`,
        };
      case 'system.quota_warning': {
        const metric = str(payload.metric) ?? 'usage';
        return {
          title: `Quota warning: ${metric} at ${num(payload.percent) ?? '?'}%`,
          body: `${num(payload.used) ?? '?'} of ${num(payload.limit) ?? '?'} ${metric} used${str(payload.period) ? ` in ${str(payload.period)}` : ''}.`,
        };
      }
      case 'system.export_completed':
        return {
          title: 'Export completed',
          body: str(payload.url) ? `Your export is ready: ${str(payload.url)}` : 'Your export is ready.',
        };
    }
  })();
  return { title: clip(d.title, MAX_TITLE), body: clip(d.body, MAX_BODY) };
}

/**
 * The notification of `row` for one person (null for a type outside the catalogue), keyed by
 * `key` so a retried write creates it once.
 */
export function notificationOf(
  row: OutboxEvent,
  userId: string,
  key: string,
): typeof notifications.$inferInsert | null {
  const text = describeEvent(row.type, row.payload, row.incidentTitle);
  if (!text) return null;
  const payload: Record<string, unknown> = { ...text, eventSeq: row.seq };
  for (const k of ['incidentId', 'remediationId', 'approvalId'] as const) {
    const v = str(row.payload[k]);
    if (v) payload[k] = v;
  }
  return {
    id: newId('ntf'),
    tenantId: row.tenantId,
    userId,
    type: row.type,
    incidentId: row.incidentId ?? str(row.payload.incidentId) ?? null,
    payload,
    idempotencyKey: key,
    createdAt: row.occurredAt,
  };
}
