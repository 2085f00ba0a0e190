/**
 * The incident workflow's entity: every message handler is one call into it (the pattern of
 * Temporal's safe-message-handlers sample). It owns the run's record, its investigation and
 * remediation, and the alerts signalled to it, and tells the main loop what is due.
 */
import { ApplicationFailure, patched } from '@temporalio/workflow';
import { isIncidentStatus, isTerminal } from '../lifecycle.js';
import {
  incidentFailureTypes,
  SEEN_EVENT_IDS_CARRIED,
  type AlertsReceived,
  type ApprovalDecidedView,
  type ApprovalResponse,
  type IncidentView,
  type IncidentWorkflowInput,
  type IncidentWorkflowState,
  type InvestigationCommand,
  type InvestigationStarted,
  type MergeRequest,
  type ReceivedAlert,
  type SetStatusRequest,
  type TriageClassificationView,
  type TriageCommand,
} from '../messages.js';
import { actorRequired, failureReason, incidentClosed, invalidStatus } from './failures.js';
import { Investigation } from './investigation.js';
import { projections } from './proxies.js';
import { IncidentRecord } from './record.js';
import { Remediation } from './remediation.js';
import { runTriage } from './triage.js';

const mergeOfSettled = ({ incidentId, status }: { incidentId: string; status: string }) =>
  ApplicationFailure.nonRetryable(
    `Incident ${incidentId} is ${status === 'resolved' ? 'resolved' : 'closed'}: only open incidents are merged (reopen it first)`,
    incidentFailureTypes.IncidentClosed,
  );

export class IncidentState {
  readonly record: IncidentRecord;
  readonly investigation: Investigation;
  readonly remediation: Remediation;
  /** Alerts that attached after opening, not yet taken in. */
  private readonly pendingAlerts: ReceivedAlert[] = [];
  /**
   * The dispatcher may deliver an alert twice (at-least-once), so event ids seen are remembered,
   * the latest of them across a continue-as-new (a Set keeps insertion order: its tail is the most recent).
   */
  private readonly seenEventIds: Set<string>;
  /** The tenant's `autoResolve` setting, as the latest alerts carried it. */
  private autoResolve = false;
  /** Whether none of the incident's alerts fired, as the latest alerts carried it. */
  private incidentRecovered: boolean | undefined;
  /** Whether an earlier run of this workflow already ran the automated steps. */
  private autoTriaged: boolean;

  constructor(private readonly input: IncidentWorkflowInput) {
    this.record = new IncidentRecord(input);
    this.remediation = new Remediation(this.record);
    this.investigation = new Investigation(this.record, (run) => this.remediation.request(run));
    this.seenEventIds = new Set(input.seenEventIds ?? []);
    this.autoTriaged = input.autoTriaged ?? false;
  }

  snapshot(): IncidentWorkflowState {
    return { ...this.record.state };
  }

  validateSetStatus(request: SetStatusRequest): void {
    if (!isIncidentStatus(request?.status)) throw invalidStatus(request?.status);
  }

  setStatus(request: SetStatusRequest): Promise<IncidentView> {
    const { record } = this;
    return record.exclusive(async () => {
      const from = record.state.status;
      const view = await record.transition(request.status, request.actor);
      if (isTerminal(request.status)) record.closeRequested = true;
      // Moving to `triaging` runs triage (DESIGN §3); a failure is recorded, the move stands.
      if (request.status === 'triaging' && from !== 'triaging') {
        await runTriage(record, request.actor).catch(() => undefined);
        return record.read();
      }
      // Moving to `investigating` starts an investigation unless one runs (quota permitting).
      if (request.status === 'investigating' && from !== 'investigating' && !this.investigation.busy()) {
        const begun = await this.investigation.begin(request.actor, true).catch(() => false);
        // The start cleared the previous conclusion: answer what a read now shows.
        if (begun) return record.read();
      }
      return view;
    });
  }

  validateMerge(request: MergeRequest): void {
    if (!request?.actor?.id) throw actorRequired();
    if (!request.survivorId || request.survivorId === this.record.state.incidentId) {
      throw ApplicationFailure.nonRetryable('an incident is not merged into itself', incidentFailureTypes.MergeRefused);
    }
    if (this.record.settled()) throw mergeOfSettled(this.record.state);
  }

  /**
   * Closes the incident as merged into another: the merge activity moves its alerts and writes the
   * close in one transaction. Closing ends the run as any close does (a pending approval is withdrawn).
   */
  merge({ survivorId, actor }: MergeRequest): Promise<IncidentView> {
    const { record } = this;
    return record.exclusive(async () => {
      // Again under the lock: a close or resolution that got it first ends the merge here.
      if (record.settled()) throw mergeOfSettled(record.state);
      const view = await record
        .transition('closed', actor, (change) => projections.mergeIncident({ ...change, survivorId }))
        .catch((err: unknown) => {
          // The activity refuses only for good (a survivor not open): the update fails with its reason.
          throw ApplicationFailure.nonRetryable(failureReason(err), incidentFailureTypes.MergeRefused);
        });
      record.closeRequested = true;
      return view;
    });
  }

  validateCommand(command: TriageCommand | InvestigationCommand, what: 'triaged' | 'investigated'): void {
    if (!command?.actor?.id) throw actorRequired();
    if (isTerminal(this.record.state.status)) throw incidentClosed(what);
  }

  triage({ actor }: TriageCommand): Promise<TriageClassificationView> {
    return this.record.exclusive(() => runTriage(this.record, actor));
  }

  startInvestigation({ actor }: InvestigationCommand): Promise<InvestigationStarted> {
    return this.investigation.start(actor);
  }

  validateApprovalResponse(response: ApprovalResponse): void {
    this.remediation.validateResponse(response);
  }

  respondToApproval(response: ApprovalResponse): Promise<ApprovalDecidedView> {
    return this.remediation.respond(response);
  }

  contextArrived(): void {
    this.investigation.contextArrived();
  }

  alertsReceived({ alerts, autoResolve, incidentRecovered }: AlertsReceived): void {
    this.autoResolve = autoResolve;
    this.incidentRecovered = incidentRecovered;
    let firing = false;
    for (const alert of alerts) {
      if (this.seenEventIds.has(alert.eventId)) continue;
      this.seenEventIds.add(alert.eventId);
      this.pendingAlerts.push(alert);
      firing ||= alert.status === 'firing';
    }
    // A firing alert grouped in (or firing again) while the investigation runs is new evidence
    // for its conclusion, as a person's context is: heard at once, re-synthesised once the run
    // ends unless its synthesis had not begun (it reads every alert stored).
    if (firing && this.investigation.busy() && patched('related-alert-context')) this.investigation.contextArrived();
  }

  /** Automated incidents are triaged and investigated on their own right after creation (DESIGN §3). */
  async runAutomatedSteps(): Promise<void> {
    const { record } = this;
    if (this.input.source !== 'automated' || this.input.status !== 'open' || this.autoTriaged) return;
    this.autoTriaged = true;
    // A person may have resolved or closed the incident first (an update that started this
    // run, or one that got the lock before these steps did): it is then neither triaged nor
    // investigated, as a person asking for either on a closed incident is refused.
    await record
      .exclusive(async () => {
        if (!record.settled()) await runTriage(record, { type: 'system', id: 'auto-triage' });
      })
      .catch(() => undefined); // recorded as triage.failed
    if (!this.investigation.busy()) {
      await record
        .exclusive(async () =>
          record.settled() ? false : this.investigation.begin({ type: 'system', id: 'auto-investigate' }, true),
        )
        .catch(() => undefined);
    }
  }

  // The main loop's branches, each as the condition it runs on; `hasWork` is any of them, so a
  // wake on it always leads to a branch that changes it.

  remediationDue(): boolean {
    return this.remediation.due() && !this.investigation.inFlight();
  }

  alertsDue(): boolean {
    return this.pendingAlerts.length > 0;
  }

  hasWork(): boolean {
    return (
      this.remediationDue() ||
      this.investigation.due() ||
      this.alertsDue() ||
      this.investigation.resynthesisDue() ||
      this.investigation.contextForStoredDue()
    );
  }

  /** Neither an investigation nor a remediation runs beside the loop. */
  tasksIdle(): boolean {
    return !this.investigation.inFlight() && !this.remediation.inFlight();
  }

  processAlerts(): Promise<void> {
    const { record } = this;
    return record.exclusive(async () => {
      const batch = this.pendingAlerts.splice(0, this.pendingAlerts.length);
      const last = batch.at(-1);
      if (!last) return;
      record.state.alertsReceived = (record.state.alertsReceived ?? 0) + batch.length;
      record.state.lastAlertStatus = last.status;
      // New evidence while a proposal awaits its decision: re-synthesise, which supersedes the
      // approval when the conclusion it was based on changed.
      if (this.remediation.awaitingDecision() && this.investigation.hasReports()) this.investigation.contextArrived();
      // Last status wins, unless the sender says another alert grouped into the incident still fires.
      if (
        last.status === 'resolved' &&
        this.incidentRecovered !== false &&
        this.autoResolve &&
        record.state.status !== 'resolved' &&
        record.state.status !== 'closed'
      ) {
        await record.transition('resolved', { type: 'system', id: 'auto-resolve' });
      }
    });
  }

  /** What the next run starts from when this one continues as new. */
  nextRunInput(): IncidentWorkflowInput {
    const { state } = this.record;
    return {
      ...this.input,
      status: state.status,
      severity: state.severity,
      version: state.version,
      autoTriaged: this.autoTriaged,
      ...(this.seenEventIds.size > 0 ? { seenEventIds: [...this.seenEventIds].slice(-SEEN_EVENT_IDS_CARRIED) } : {}),
    };
  }
}
