/**
 * The synthesis: reads everything afresh, ranks the hypotheses with the built-in analyzer, lets
 * a configured model write the conclusion, and records it (or records that the run failed).
 */
import { and, asc, eq, sql } from 'drizzle-orm';
import { analyzeInvestigation, type InvestigationInput } from '../../analysis/investigation/index.js';
import type { InvestigationRequest, SynthesisRequest, SynthesisResult } from '../../analysis/investigation-types.js';
import { agentRoles, type AgentRole } from '../../analysis/types.js';
import { appendAudit } from '../../db/repositories/audit.js';
import { setRootCauseUnlessCorrected } from '../../db/repositories/incidents.js';
import { events } from '../../db/schema/events.js';
import { evidenceItems, investigationContext, investigations } from '../../db/schema/investigation.js';
import { appendEvent } from '../../outbox/append.js';
import { heartbeat, iso, type InvestigationContext } from './common.js';
import { matchingPatterns, matchingRunbooks } from './knowledge.js';
import { toAlertObservation, toChangeObservation } from './observations.js';
import { correlatedAlerts, loadScene, recentChanges } from './scene.js';
import { findingsOfSkills } from './skills-findings.js';
import { topologyOf } from './topology.js';

/** Everything the analyzer looks at, read afresh with the same collectors the agents use. */
export async function gatherInput(
  ctx: InvestigationContext,
  req: InvestigationRequest,
  roles: AgentRole[],
  context: Array<{ seq: number; content: string }>,
): Promise<InvestigationInput> {
  const scene = await loadScene(ctx, req);
  heartbeat({ step: 'scene' });
  const [correlated, changes, skillFindings] = await Promise.all([
    correlatedAlerts(ctx, scene),
    recentChanges(ctx, scene, 'both'),
    findingsOfSkills(ctx, req),
  ]);
  heartbeat({ step: 'signals' });
  const topology = await topologyOf(ctx, scene, correlated);
  heartbeat({ step: 'topology' });
  const failingDeps = topology.dependencies.filter((d) => d.alerting).map((d) => d.name);
  const relatedTexts = topology.dependencies.flatMap((d) => d.alertTexts);
  const runbooks = await matchingRunbooks(ctx, scene, failingDeps, relatedTexts);
  const patterns = (await matchingPatterns(ctx, req)).map(({ pattern: p, overlap }) => ({
    patternId: p.id,
    title: p.title,
    category: p.category,
    rootCause: p.rootCause,
    fix: p.fix,
    status: p.status,
    confidence: p.confidence,
    occurrences: p.occurrences,
    overlap,
  }));
  return {
    incident: {
      incidentId: scene.incident.id,
      title: scene.incident.title,
      description: scene.incident.description,
      service: scene.service,
      severity: scene.incident.severity,
      firstAlertAt: iso(scene.firstAlertAt),
      occurrenceCount: scene.incident.occurrenceCount,
      recovered: scene.incident.recoveredAt !== null,
    },
    roles,
    alerts: scene.ownAlerts.map(toAlertObservation),
    correlated: correlated.map(toAlertObservation),
    changes: changes.map(({ row, hops }) => toChangeObservation(row, hops)),
    topology,
    runbooks,
    context,
    patterns,
    findings: skillFindings,
  };
}

/** The result a completed synthesis recorded under `key`, if one did (so a retry returns it). */
async function recordedResult(
  ctx: InvestigationContext,
  req: SynthesisRequest,
  key: string,
): Promise<SynthesisResult | undefined> {
  const [done] = await ctx.db
    .select({ seq: events.seq })
    .from(events)
    .where(eq(events.idempotencyKey, `${key}:completed`));
  if (done) {
    const [row] = await ctx.db
      .select()
      .from(investigations)
      .where(and(eq(investigations.tenantId, req.tenantId), eq(investigations.incidentId, req.incidentId)));
    if (row?.rootCause)
      return { rootCause: row.rootCause, confidence: row.confidence, recommendedActions: row.recommendedActions };
  }
  return undefined;
}

/** The agents' findings the synthesis reads. */
async function reportedFindings(
  ctx: InvestigationContext,
  req: SynthesisRequest,
): Promise<Array<{ agentRole: string; content: string }>> {
  // Without reports (a workflow that lost them), the findings stored by the last synthesis stand.
  let reportFindings = req.reports.map((r) => ({ agentRole: r.agentRole as string, content: r.content }));
  if (reportFindings.length === 0) {
    const [stored] = await ctx.db
      .select({ findings: investigations.findings })
      .from(investigations)
      .where(
        and(
          eq(investigations.tenantId, req.tenantId),
          eq(investigations.incidentId, req.incidentId),
          eq(investigations.run, req.run),
        ),
      );
    reportFindings = (stored?.findings ?? []).filter((f) => f.agentRole !== 'synthesis');
  }
  return reportFindings;
}

/** The conclusion of one synthesis, from the analysis and the findings. */
function conclude(
  ctx: InvestigationContext,
  input: InvestigationInput,
  analysis: ReturnType<typeof analyzeInvestigation>,
  findings: Array<{ agentRole: string; content: string }>,
  contextRows: Array<{ seq: number; content: string }>,
) {
  // The built-in analyzer's conclusion, or a configured model's written from the same findings
  // and hypotheses (validated; on any failure the built-in conclusion stands).
  return ctx.model.synthesize(
    {
      incident: {
        incidentId: input.incident.incidentId,
        title: input.incident.title,
        description: input.incident.description,
        severity: input.incident.severity,
        service: input.incident.service,
      },
      findings,
      hypotheses: analysis.hypotheses.map((h) => ({
        statement: h.statement,
        score: h.score,
        status: h.status,
        reason: h.reason,
      })),
      humanContext: contextRows.map((row) => row.content),
    },
    {
      rootCause: analysis.rootCause,
      confidence: analysis.confidence,
      recommendedActions: analysis.recommendedActions,
    },
  );
}

/**
 * Ranks the hypotheses with the built-in analyzer and records the result: the investigation
 * row (only for its current run), the incident's root cause, actions and assigned agents, and
 * `investigation.completed`, in one transaction. Idempotent per run and human-context
 * sequence: a retry after the commit returns what was recorded; context added since makes a
 * new synthesis (and a new event).
 */
export async function synthesizeInvestigation(
  ctx: InvestigationContext,
  req: SynthesisRequest,
): Promise<SynthesisResult> {
  const contextRows = await ctx.db
    .select({ seq: investigationContext.seq, content: investigationContext.content })
    .from(investigationContext)
    .where(and(eq(investigationContext.tenantId, req.tenantId), eq(investigationContext.incidentId, req.incidentId)))
    .orderBy(asc(investigationContext.seq));
  const contextSeq = contextRows.length > 0 ? contextRows[contextRows.length - 1]!.seq : 0;
  const key = `${req.incidentId}:investigation:${req.run}:synthesis:${contextSeq}${req.alertsSeen ? `:alerts:${req.alertsSeen}` : ''}`;
  const recorded = await recordedResult(ctx, req, key);
  if (recorded) return recorded;

  const reportFindings = await reportedFindings(ctx, req);
  const ran = reportFindings
    .map((f) => f.agentRole)
    .filter((r): r is AgentRole => (agentRoles as readonly string[]).includes(r));
  const roles: AgentRole[] = ran.length > 0 ? [...new Set(ran)] : [...agentRoles];
  const input = await gatherInput(ctx, req, roles, contextRows);
  const analysis = analyzeInvestigation(input);
  heartbeat({ step: 'analysed' });

  // Hypotheses cite the evidence items stored for their source events.
  const evidence = await ctx.db
    .select({ id: evidenceItems.id, dedupeKey: evidenceItems.dedupeKey, type: evidenceItems.type })
    .from(evidenceItems)
    .where(and(eq(evidenceItems.tenantId, req.tenantId), eq(evidenceItems.incidentId, req.incidentId)));
  const evidenceOf = (sources: string[]) =>
    evidence.filter((e) => sources.includes(e.dedupeKey.slice(e.dedupeKey.indexOf(':') + 1))).map((e) => e.id);
  const hypotheses = analysis.hypotheses.map((h) => ({
    kind: h.kind,
    statement: h.statement,
    subject: h.subject,
    score: h.score,
    probability: h.probability ?? 0,
    evidence: h.evidence ?? null,
    minutesBefore: h.minutesBefore ?? null,
    status: h.status,
    reason: h.reason,
    support: h.support,
    against: h.against,
    contextAdjustment: h.contextAdjustment,
    evidenceIds: [...new Set(evidenceOf(h.sources))],
  }));
  const counts: Record<string, number> = {};
  for (const e of evidence) counts[e.type] = (counts[e.type] ?? 0) + 1;
  const findings = [...reportFindings, { agentRole: 'synthesis', content: analysis.summary.slice(0, 4000) }];
  const concluded = await conclude(ctx, input, analysis, findings, contextRows);
  heartbeat({ step: 'concluded' });
  const result: SynthesisResult = concluded.output;

  await ctx.db.transaction(async (tx) => {
    const updated = await tx
      .update(investigations)
      .set({
        status: 'completed',
        rootCause: result.rootCause,
        confidence: result.confidence,
        recommendedActions: result.recommendedActions,
        findings,
        hypotheses,
        failure: null,
        model: concluded.model,
        tokensUsed: concluded.tokensUsed,
        costUsd: concluded.costUsd,
        completedAt: sql`now()`,
        updatedAt: sql`now()`,
      })
      .where(
        and(
          eq(investigations.incidentId, req.incidentId),
          eq(investigations.tenantId, req.tenantId),
          eq(investigations.run, req.run),
        ),
      )
      .returning({ run: investigations.run });
    if (updated.length === 0) return; // a newer run owns the investigation: this result is stale
    // A person's correction (feedback correct_rca) outranks a later machine conclusion on the
    // incident; the investigation keeps its own conclusion.
    await setRootCauseUnlessCorrected(tx, req.tenantId, req.incidentId, result.rootCause, {
      recommendedActions: result.recommendedActions,
      assignedAgents: roles,
    });
    const top = analysis.hypotheses[0]!;
    await appendEvent(tx, {
      tenantId: req.tenantId,
      type: 'investigation.completed',
      incidentId: req.incidentId,
      payload: {
        incidentId: req.incidentId,
        run: req.run,
        rootCause: result.rootCause,
        confidence: result.confidence,
        recommendedActions: result.recommendedActions,
        hypothesis: top.kind,
        contextSeq,
        evidenceCounts: counts,
        model: concluded.model,
      },
      idempotencyKey: `${key}:completed`,
    });
    await appendAudit(tx, {
      tenantId: req.tenantId,
      actorType: 'system',
      actorId: 'investigation',
      action: 'investigation.completed',
      targetType: 'incident',
      targetId: req.incidentId,
      incidentId: req.incidentId,
      workflowId: req.workflowId,
      historyEventId: req.historyEventId ?? null,
      details: {
        run: req.run,
        contextSeq,
        hypothesis: top.kind,
        subject: top.subject,
        confidence: result.confidence,
        model: concluded.model,
      },
      idempotencyKey: `${key}:audit`,
    });
  });
  return result;
}

/**
 * Records that an investigation run failed for good: status `failed` with the reason (the root
 * cause of an earlier synthesis of the run stays), and `investigation.failed`. Idempotent per
 * run and human-context sequence; an older run's failure is ignored.
 */
export async function recordInvestigationFailure(
  ctx: InvestigationContext,
  req: InvestigationRequest & { reason: string },
): Promise<void> {
  const reason = req.reason.slice(0, 1000);
  const [last] = await ctx.db
    .select({ seq: sql<number>`coalesce(max(${investigationContext.seq}), 0)::int` })
    .from(investigationContext)
    .where(and(eq(investigationContext.tenantId, req.tenantId), eq(investigationContext.incidentId, req.incidentId)));
  const key = `${req.incidentId}:investigation:${req.run}:failed:${last?.seq ?? 0}`;
  await ctx.db.transaction(async (tx) => {
    const updated = await tx
      .update(investigations)
      .set({ status: 'failed', failure: reason, completedAt: sql`now()`, updatedAt: sql`now()` })
      .where(
        and(
          eq(investigations.incidentId, req.incidentId),
          eq(investigations.tenantId, req.tenantId),
          eq(investigations.run, req.run),
        ),
      )
      .returning({ run: investigations.run });
    if (updated.length === 0) return;
    await appendEvent(tx, {
      tenantId: req.tenantId,
      type: 'investigation.failed',
      incidentId: req.incidentId,
      payload: { incidentId: req.incidentId, run: req.run, reason },
      idempotencyKey: key,
    });
    await appendAudit(tx, {
      tenantId: req.tenantId,
      actorType: 'system',
      actorId: 'investigation',
      action: 'investigation.failed',
      targetType: 'incident',
      targetId: req.incidentId,
      incidentId: req.incidentId,
      workflowId: req.workflowId,
      historyEventId: req.historyEventId ?? null,
      details: { run: req.run, reason },
      idempotencyKey: `${key}:audit`,
    });
  });
}
