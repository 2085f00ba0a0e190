/**
 * The summary and details an incident workflow starts with, as the Temporal UI lists it: set by
 * whoever starts the workflow (this port's calls), not by workflow code (ADR 0279).
 */
import type { IncidentWorkflowInput } from '../workflows/messages.js';

/** The UI's one-line summary is the title; kept within what the list shows. */
export function incidentSummary(title: string): string {
  return title.length > 200 ? `${title.slice(0, 199)}…` : title;
}

/** The fixed details a workflow starts with: who it belongs to and where it came from. */
export function incidentStaticDetails(input: IncidentWorkflowInput): string {
  return [
    `**Incident** \`${input.incidentId}\``,
    `**Tenant** \`${input.tenantId}\``,
    `**Severity at opening** ${input.severity}`,
    `**Source** ${input.source}`,
  ].join('\n\n');
}
