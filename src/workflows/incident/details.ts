/**
 * The current details the Temporal UI shows for an incident, kept up to date by its workflow
 * (the summary and details it starts with: src/temporal/incident-ui.ts) (ADR 0279).
 */
import { condition, setCurrentDetails } from '@temporalio/workflow';
import type { IncidentWorkflowState } from '../messages.js';

/** What the run knows beyond its query state: the latest conclusion and the approval awaited. */
export interface IncidentFacts {
  state: IncidentWorkflowState;
  conclusion: { rootCause: string; confidence: number } | null;
  approval: { approvalId: string; deadline: string } | null;
}

/** The current details in Temporal markdown, one fact per paragraph. */
export function renderCurrentDetails({ state, conclusion, approval }: IncidentFacts): string {
  const lines = [`**Status** ${state.status}`, `**Severity** ${state.severity}`];
  if (state.investigationStatus === 'running') lines.push('**Investigation** running');
  if (state.investigationStatus === 'failed') lines.push('**Investigation** failed');
  if (conclusion) {
    lines.push(`**Root cause** (confidence ${conclusion.confidence.toFixed(2)}) ${conclusion.rootCause}`);
  }
  if (approval) lines.push(`**Approval pending** \`${approval.approvalId}\` until ${approval.deadline}`);
  else if (state.remediationStatus) lines.push(`**Remediation** ${state.remediationStatus}`);
  return lines.join('\n\n');
}

/**
 * Keeps the workflow's current details equal to `render()`. Setting them adds no command to the
 * history (the UI reads them through the built-in metadata query), so no patch guards this.
 */
export function keepCurrentDetails(render: () => string): void {
  void (async () => {
    for (;;) {
      const shown = render();
      setCurrentDetails(shown);
      await condition(() => render() !== shown);
    }
  })();
}
