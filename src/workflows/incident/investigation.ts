/**
 * Investigation: begun by an update (or on its own for automated incidents), run beside the
 * main loop so the update answers at once: the agents in parallel, then a synthesis. Human
 * context re-synthesises the latest run; a conclusion asks for a remediation.
 */
import { log, workflowInfo } from '@temporalio/workflow';
import { agentActivityNames, type AgentReport, type InvestigationRequest } from '../../analysis/investigation-types.js';
import { agentRoles } from '../../analysis/types.js';
import type { Actor, InvestigationStarted } from '../messages.js';
import { failureReason, investigationRunning, quotaExceeded } from './failures.js';
import {
  agentProxies,
  bookkeepingIsLocal,
  investigationLifecycle,
  investigationRecords,
  localInvestigationLifecycle,
  synthesis,
} from './proxies.js';
import type { IncidentRecord } from './record.js';
import { runTriage } from './triage.js';

/** A run begun (quota charged, row written) that the main loop has yet to take up. */
interface BegunRun {
  run: number;
  triaged: boolean;
  actor: Actor;
}

export class Investigation {
  /** An update's start, from its check until its begin is answered. */
  private startRequested = false;
  private begun: BegunRun | null = null;
  /** The agents' reports of the run this workflow run drove (null: none yet, or a new run began). */
  private reports: AgentReport[] | null = null;
  /** Human context signalled, and how much of it the latest synthesis read. */
  private contextVersion = 0;
  private contextSynthesised = 0;
  /** The agents and synthesis, running beside the main loop. */
  private task: Promise<void> | null = null;
  /** The latest synthesis's root cause, shown in the Temporal UI (null until one concludes). */
  conclusion: { rootCause: string; confidence: number } | null = null;

  constructor(
    private readonly record: IncidentRecord,
    /** A synthesis concluded the run: a remediation is asked for. */
    private readonly concluded: (run: number) => void,
  ) {}

  /** Begun or running: another start is refused. */
  busy(): boolean {
    return this.begun !== null || this.record.state.investigationStatus === 'running';
  }

  inFlight(): boolean {
    return this.task !== null;
  }

  hasReports(): boolean {
    return this.reports !== null;
  }

  contextArrived(): void {
    this.contextVersion++;
  }

  /** The startInvestigation update: refused while one runs, 429 past the quota. */
  async start(actor: Actor): Promise<InvestigationStarted> {
    if (this.startRequested || this.record.state.investigationStatus === 'running') throw investigationRunning();
    this.startRequested = true;
    try {
      const begun = await this.record.exclusive(() => this.begin(actor, false));
      if (!begun) throw quotaExceeded();
    } finally {
      this.startRequested = false;
    }
    return { incidentId: this.record.state.incidentId, status: 'investigating' };
  }

  /**
   * Begins a run, under the lock (every caller holds it). What the callers checked before they
   * waited for the lock can be stale by now: an automatic start after triage, a PATCH to
   * `investigating` and a POST can each pass their check while another start is in flight, and
   * two starts charged the quota twice for one investigation (ADR 0169). So it is checked
   * again here; a second start is refused as already running.
   */
  async begin(actor: Actor, automatic: boolean): Promise<boolean> {
    const { state } = this.record;
    if (this.busy()) throw investigationRunning();
    state.investigationStarts = (state.investigationStarts ?? 0) + 1;
    const lifecycle = bookkeepingIsLocal() ? localInvestigationLifecycle : investigationLifecycle;
    const begun = await lifecycle.beginInvestigation({
      ...this.record.traced(),
      actor,
      requestKey: `${workflowInfo().runId}:${state.investigationStarts}`,
      automatic,
    });
    if (begun.run === null) return false;
    this.begun = { run: begun.run, triaged: begun.triaged, actor };
    state.investigationRun = begun.run;
    state.investigationStatus = 'running';
    state.syntheses = 0;
    this.reports = null;
    this.conclusion = null;
    return true;
  }

  /** A begun run waits for the main loop. */
  due(): boolean {
    return this.begun !== null && !this.task;
  }

  /** Runs the begun run beside the loop, so alerts and status changes are handled while agents work. */
  launch(): void {
    const started = this.begun;
    if (started === null) return;
    this.begun = null;
    this.task = this.run(started)
      .catch((err: unknown) => {
        // Only a non-retryable failure gets here (every write it makes retries without limit):
        // never an unhandled rejection, which would fail every workflow task from then on.
        log.error('investigation stopped', {
          incidentId: this.record.state.incidentId,
          run: started.run,
          error: failureReason(err),
        });
        this.record.state.investigationStatus = 'failed';
      })
      .finally(() => {
        this.task = null;
      });
  }

  private async run(started: BegunRun): Promise<void> {
    const { record } = this;
    if (!started.triaged && (record.state.triageRuns ?? 0) === 0) {
      await record.exclusive(() => runTriage(record, started.actor)).catch(() => undefined); // recorded as triage.failed
    }
    await record.exclusive(async () => {
      if (record.state.status === 'open' || record.state.status === 'triaging')
        await record.transition('investigating', started.actor);
    });
    const request: InvestigationRequest = { ...record.traced(), run: started.run };
    // One agent failing costs its evidence, not the investigation.
    this.reports = await Promise.all(
      agentRoles.map((role) =>
        agentProxies[role][agentActivityNames[role]](request).catch((err: unknown): AgentReport => ({
          agentRole: role,
          content: `The ${role} agent failed: ${failureReason(err)}`,
          evidenceIds: [],
          found: false,
        })),
      ),
    );
    await this.synthesise(request);
  }

  private async synthesise(request: InvestigationRequest): Promise<void> {
    const { state } = this.record;
    const seen = this.contextVersion;
    /**
     * A newer run began while this (re-)synthesis of an older one ran (a re-synthesis is not
     * under the lock): its outcome is not the incident's any more (its write, keyed by run, did
     * nothing), and taking it would mark the new run completed and propose a remediation from
     * the old conclusion (ADR 0202). The newer run reads every context stored so far.
     */
    const superseded = () => request.run !== state.investigationRun;
    try {
      const result = await synthesis.synthesizeInvestigation({
        ...request,
        reports: this.reports ?? [],
        ...(state.alertsReceived ? { alertsSeen: state.alertsReceived } : {}),
      });
      if (!superseded()) {
        this.conclusion = { rootCause: result.rootCause, confidence: result.confidence };
        state.investigationStatus = 'completed';
        state.syntheses = (state.syntheses ?? 0) + 1;
        this.concluded(request.run);
      }
    } catch (err) {
      if (!superseded()) {
        state.investigationStatus = 'failed';
        await investigationRecords.recordInvestigationFailure({ ...request, reason: failureReason(err) });
      }
    }
    this.contextSynthesised = seen;
  }

  private resynthesise(run: number): Promise<void> {
    return this.synthesise({ ...this.record.traced(), run });
  }

  /** Human context after this run's own investigation finished: re-synthesise with its reports. */
  resynthesisDue(): boolean {
    return (
      !this.task &&
      this.reports !== null &&
      this.contextVersion > this.contextSynthesised &&
      Boolean(this.record.state.investigationRun)
    );
  }

  async resynthesiseLatest(): Promise<void> {
    const run = this.record.state.investigationRun;
    if (run !== undefined) await this.resynthesise(run);
  }

  /**
   * Human context in a run that did not run the agents itself (a reopened incident, a run
   * continued as new): its investigation is the stored one, re-synthesised from its stored
   * findings. It used to be ignored while the api answered `resynthesis: true`.
   */
  contextForStoredDue(): boolean {
    return !this.task && this.begun === null && this.reports === null && this.contextVersion > this.contextSynthesised;
  }

  async resynthesiseStored(): Promise<void> {
    const { state } = this.record;
    const seen = this.contextVersion;
    const stored =
      state.investigationRun === undefined ? await investigationRecords.latestInvestigation(this.record.ids()) : null;
    // A run begun while the stored one was read is the incident's now (ADR 0202).
    const begunMeanwhile = stored !== null && state.investigationRun !== undefined;
    if (stored && stored.status !== 'running' && !begunMeanwhile) {
      state.investigationRun = stored.run;
      state.investigationStatus = stored.status === 'failed' ? 'failed' : 'completed';
    }
    if (state.investigationRun !== undefined && state.investigationStatus !== 'running')
      await this.resynthesise(state.investigationRun);
    this.contextSynthesised = Math.max(this.contextSynthesised, seen); // nothing stored to re-synthesise: the context waits for the next run
  }
}
