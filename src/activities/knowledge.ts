/**
 * Pattern learning on resolution. When an incident is resolved, its signature (service, alert
 * names and stable labels, root-cause category, decisive evidence types) is matched against the
 * tenant's patterns: a match counts an occurrence, otherwise a new `emerging` pattern is created.
 * Idempotent (one occurrence per pattern and incident, events keyed), and it never fails the
 * workflow on bad data: an incident with nothing to learn from is reported and skipped.
 */
import { and, desc, eq, inArray } from 'drizzle-orm';
import type { Logger } from 'pino';
import {
  actionsInText,
  categorizeText,
  isPatternCategory,
  type PatternCategory,
  type PatternSignature,
} from '../domain/patterns.js';
import type { Db } from '../db/client.js';
import { findPattern, incidentSymptoms, recordOccurrence } from '../db/repositories/patterns.js';
import { incidents } from '../db/schema/incidents.js';
import { evidenceItems, investigations } from '../db/schema/investigation.js';
import { rootCauseRevisions } from '../db/schema/knowledge.js';
import { remediations } from '../db/schema/remediation.js';

export interface LearnFromResolutionRequest {
  tenantId: string;
  incidentId: string;
  workflowId: string;
  /** The workflow task that decided this write (for the audit entry). */
  historyEventId?: number;
}

export type LearningOutcome =
  | { learned: true; patternId: string; created: boolean; counted: boolean; category: string }
  | { learned: false; reason: string };

interface StoredHypothesis {
  kind: string;
  statement: string;
  status: string;
  evidenceIds: string[];
}

function keptHypothesis(hypotheses: unknown[]): StoredHypothesis | undefined {
  for (const h of hypotheses) {
    if (h === null || typeof h !== 'object') continue;
    const r = h as Record<string, unknown>;
    if (r.status !== 'kept' || typeof r.kind !== 'string' || typeof r.statement !== 'string') continue;
    return {
      kind: r.kind,
      statement: r.statement,
      status: r.status,
      evidenceIds: Array.isArray(r.evidenceIds) ? r.evidenceIds.filter((e): e is string => typeof e === 'string') : [],
    };
  }
  return undefined;
}

/** How a resolved incident is learned from, read from its stored data. */
interface Lesson {
  category: PatternCategory;
  rootCause: string;
  evidenceTypes: string[];
  fix: string[];
  fixWorked: boolean;
  confirm: boolean;
}

interface KnowledgeActivityDeps {
  db: Db;
  logger?: Logger;
}

/**
 * What the incident teaches: a human correction first (its text names the category and the
 * fix); else the investigation's kept hypothesis (its kind is the category, the types of the
 * evidence it cites are the decisive ones; a `known_pattern` conclusion is that pattern's
 * category). The fix is the plan of a remediation that completed verified (which also counts
 * as a confirmation), else the actions recommended when it was resolved.
 */
async function lessonOf(
  db: Db,
  tenantId: string,
  incidentId: string,
  recommendedActions: string[],
): Promise<Lesson | string> {
  const [correction] = await db
    .select({ rootCause: rootCauseRevisions.rootCause })
    .from(rootCauseRevisions)
    .where(
      and(
        eq(rootCauseRevisions.tenantId, tenantId),
        eq(rootCauseRevisions.incidentId, incidentId),
        eq(rootCauseRevisions.source, 'feedback'),
      ),
    )
    .orderBy(desc(rootCauseRevisions.createdAt), desc(rootCauseRevisions.id))
    .limit(1);
  if (correction) {
    // The correction already counted its confirmation; its own words are the only fix known.
    return {
      category: categorizeText(correction.rootCause),
      rootCause: correction.rootCause,
      evidenceTypes: [],
      fix: actionsInText(correction.rootCause),
      fixWorked: false,
      confirm: false,
    };
  }
  const [investigation] = await db
    .select({ hypotheses: investigations.hypotheses, rootCause: investigations.rootCause })
    .from(investigations)
    .where(and(eq(investigations.tenantId, tenantId), eq(investigations.incidentId, incidentId)));
  if (!investigation?.rootCause) return 'no investigation concluded and no correction: nothing says why it failed';
  const kept = keptHypothesis(investigation.hypotheses);
  if (!kept || kept.kind === 'undetermined') return 'the investigation left the root cause undetermined';
  const cited =
    kept.evidenceIds.length > 0
      ? await db
          .select({
            type: evidenceItems.type,
            agentRole: evidenceItems.agentRole,
            dedupeKey: evidenceItems.dedupeKey,
          })
          .from(evidenceItems)
          .where(
            and(
              eq(evidenceItems.tenantId, tenantId),
              eq(evidenceItems.incidentId, incidentId),
              inArray(evidenceItems.id, kept.evidenceIds),
            ),
          )
      : [];
  let category: string = kept.kind;
  let rootCause = kept.statement;
  let evidenceTypes: string[] = [
    ...new Set(cited.filter((e) => e.agentRole !== 'knowledge').map((e) => e.type)),
  ].sort();
  if (kept.kind === 'known_pattern') {
    const patternId = cited.find((e) => e.agentRole === 'knowledge')?.dedupeKey.slice('knowledge:'.length);
    const pattern = patternId ? await findPattern(db, tenantId, patternId) : undefined;
    if (!pattern) return 'the investigation concluded a known pattern that no longer exists';
    category = pattern.category;
    rootCause = pattern.rootCause;
    evidenceTypes = pattern.evidenceTypes;
  }
  if (!isPatternCategory(category)) return `unknown root-cause category ${category}`;
  const [worked] = await db
    .select({ plan: remediations.plan })
    .from(remediations)
    .where(
      and(
        eq(remediations.tenantId, tenantId),
        eq(remediations.incidentId, incidentId),
        eq(remediations.status, 'completed'),
      ),
    )
    .orderBy(desc(remediations.completedAt))
    .limit(1);
  if (worked) {
    const fix = worked.plan.map((step) => step.description).filter((d) => typeof d === 'string' && d.trim() !== '');
    if (fix.length > 0)
      return { category, rootCause, evidenceTypes, fix: fix.slice(0, 6), fixWorked: true, confirm: true };
  }
  return {
    category,
    rootCause,
    evidenceTypes,
    fix: recommendedActions.slice(0, 3),
    fixWorked: false,
    confirm: false,
  };
}

async function learnFromResolution(
  deps: KnowledgeActivityDeps,
  req: LearnFromResolutionRequest,
): Promise<LearningOutcome> {
  const { db, logger } = deps;
  const [incident] = await db
    .select({ id: incidents.id, status: incidents.status, recommendedActions: incidents.recommendedActions })
    .from(incidents)
    .where(and(eq(incidents.tenantId, req.tenantId), eq(incidents.id, req.incidentId)));
  const skip = (reason: string): LearningOutcome => {
    logger?.info({ incidentId: req.incidentId, reason }, 'no pattern learned from the resolved incident');
    return { learned: false, reason };
  };
  if (!incident) return skip('the incident has no projection');
  const symptoms = await incidentSymptoms(db, req.tenantId, req.incidentId);
  if (!symptoms || (!symptoms.service && symptoms.alertNames.length === 0))
    return skip('no service and no alerts: nothing to recognise it by');
  const lesson = await lessonOf(db, req.tenantId, req.incidentId, incident.recommendedActions);
  if (typeof lesson === 'string') return skip(lesson);
  const signature: PatternSignature = {
    ...symptoms,
    category: lesson.category,
    evidenceTypes: lesson.evidenceTypes,
    rootCause: lesson.rootCause,
  };
  const result = await db.transaction((tx) =>
    recordOccurrence(tx, {
      tenantId: req.tenantId,
      incidentId: req.incidentId,
      signature,
      fix: lesson.fix,
      fixWorked: lesson.fixWorked,
      confirm: lesson.confirm,
      source: 'resolution',
      actor: {
        type: 'system',
        id: 'knowledge',
        workflowId: req.workflowId,
        historyEventId: req.historyEventId ?? null,
      },
    }),
  );
  return {
    learned: true,
    patternId: result.pattern.id,
    created: result.created,
    counted: result.counted,
    category: lesson.category,
  };
}

export function createKnowledgeActivities(deps: KnowledgeActivityDeps) {
  return {
    learnFromResolution: (req: LearnFromResolutionRequest) => learnFromResolution(deps, req),
  };
}

export type KnowledgeActivities = ReturnType<typeof createKnowledgeActivities>;
