/**
 * Human feedback on a root cause. One verdict per incident, user and pattern (the unique index
 * on `(incident_id, user_id, pattern_key)`): the same verdict again changes nothing; another
 * verdict replaces the earlier one, whose count is withdrawn first. Counting on a pattern:
 * `confirm_rca` is a confirmation, `reject_rca` a rejection, and `correct_rca` a rejection of
 * the pattern unless the correction names the pattern's own category (a refinement: a
 * confirmation). A correction also records the corrected root cause on the incident (the
 * earlier one kept in `root_cause_revisions`) and creates or reinforces the pattern it
 * describes, on which it counts as that user's confirmation.
 */
import { and, eq, sql } from 'drizzle-orm';
import { actionsInText, categorizeText, type PatternSignature } from '../../domain/patterns.js';
import { hasVisibleText } from '../../domain/text.js';
import { AppError } from '../../errors.js';
import { newId, ulid } from '../../ids.js';
import type { Db } from '../client.js';
import { incidents } from '../schema/incidents.js';
import { feedback, rootCauseRevisions, type FeedbackType, type PatternRow } from '../schema/knowledge.js';
import { appendAudit } from './audit.js';
import { appendEvent } from '../../outbox/append.js';
import {
  changePattern,
  incidentSymptoms,
  type IncidentSymptoms,
  lockPattern,
  lockSignature,
  matchedPatternIds,
  recordOccurrence,
  toPatternView,
  type KnowledgeActor,
  type PatternView,
} from './patterns.js';

type Tx = Parameters<Parameters<Db['transaction']>[0]>[0];
type FeedbackRow = typeof feedback.$inferSelect;

export interface FeedbackInput {
  tenantId: string;
  userId: string;
  requestId?: string | null;
  incidentId: string;
  patternId?: string;
  type: FeedbackType;
  comment?: string;
}

export interface FeedbackRecord {
  feedbackId: string;
  incidentId: string;
  patternId: string | null;
  type: FeedbackType;
  comment: string | null;
  updatedConfidence: number | null;
  createdAt: string;
  updatedAt: string;
  correctedPattern?: PatternView | null;
}

const toRecord = (row: FeedbackRow, correctedPattern?: PatternView | null): FeedbackRecord => ({
  feedbackId: row.id,
  incidentId: row.incidentId,
  patternId: row.patternId,
  type: row.type,
  comment: row.comment,
  updatedConfidence: row.updatedConfidence,
  createdAt: row.createdAt.toISOString(),
  updatedAt: row.updatedAt.toISOString(),
  ...(correctedPattern !== undefined ? { correctedPattern } : {}),
});

/** What a verdict counts on its pattern. */
export function verdictEffect(
  type: FeedbackType,
  comment: string | null,
  pattern: Pick<PatternRow, 'category'>,
): { confirms: number; rejects: number } {
  if (type === 'confirm_rca') return { confirms: 1, rejects: 0 };
  if (type === 'reject_rca') return { confirms: 0, rejects: 1 };
  return categorizeText(comment ?? '') === pattern.category ? { confirms: 1, rejects: 0 } : { confirms: 0, rejects: 1 };
}

/** Withdraws `previous` (if any) and applies `next` on a locked pattern. */
async function replaceVerdict(
  tx: Tx,
  pattern: PatternRow,
  previous: Pick<FeedbackRow, 'type' | 'comment'> | undefined,
  next: { type: FeedbackType; comment: string | null },
  actor: KnowledgeActor,
  incidentId: string,
): Promise<PatternRow> {
  const before = previous ? verdictEffect(previous.type, previous.comment, pattern) : { confirms: 0, rejects: 0 };
  const after = verdictEffect(next.type, next.comment, pattern);
  if (before.confirms === after.confirms && before.rejects === after.rejects) return pattern;
  return changePattern(
    tx,
    pattern,
    { confirms: after.confirms - before.confirms, rejects: after.rejects - before.rejects },
    actor,
    incidentId,
  );
}

async function lockVerdict(
  tx: Tx,
  incidentId: string,
  userId: string,
  patternKey: string,
): Promise<FeedbackRow | undefined> {
  const [row] = await tx
    .select()
    .from(feedback)
    .where(and(eq(feedback.incidentId, incidentId), eq(feedback.userId, userId), eq(feedback.patternKey, patternKey)))
    .for('update');
  return row;
}

/** Inserts or replaces a user's verdict row. */
async function writeVerdict(
  tx: Tx,
  existing: FeedbackRow | undefined,
  values: {
    tenantId: string;
    incidentId: string;
    userId: string;
    pattern: PatternRow | undefined;
    type: FeedbackType;
    comment: string | null;
  },
): Promise<FeedbackRow> {
  const updatedConfidence = values.pattern ? values.pattern.confidence : null;
  if (existing) {
    const [row] = await tx
      .update(feedback)
      .set({ type: values.type, comment: values.comment, updatedConfidence, updatedAt: sql`now()` })
      .where(eq(feedback.id, existing.id))
      .returning();
    return row!;
  }
  const [row] = await tx
    .insert(feedback)
    .values({
      id: newId('fbk'),
      tenantId: values.tenantId,
      incidentId: values.incidentId,
      patternId: values.pattern?.id ?? null,
      patternKey: values.pattern?.id ?? '',
      userId: values.userId,
      type: values.type,
      comment: values.comment,
      updatedConfidence,
    })
    .returning();
  return row!;
}

/** One verdict being recorded: the request, its trimmed comment and who gives it. */
interface Submission {
  input: FeedbackInput;
  comment: string | null;
  actor: KnowledgeActor;
}

type SubmitResult = { record: FeedbackRecord; changed: boolean };
type LockedIncident = { id: string; rootCause: string | null };

async function lockIncident(tx: Tx, input: FeedbackInput): Promise<LockedIncident> {
  const [incident] = await tx
    .select({ id: incidents.id, rootCause: incidents.rootCause })
    .from(incidents)
    .where(and(eq(incidents.tenantId, input.tenantId), eq(incidents.id, input.incidentId)))
    .for('update');
  if (!incident) throw new AppError('not_found', 'No incident has that identifier');
  return incident;
}

/**
 * A correction records an occurrence of the pattern it describes (see recordCorrection), which
 * serialises on the signature's lock: taken here, before any pattern row, in the order learning
 * takes them (ADR 0235). Returns the symptoms that pattern is recognised by, if any.
 */
async function lockCorrectionSignature(tx: Tx, s: Submission): Promise<IncidentSymptoms | undefined> {
  const { input, comment } = s;
  const symptoms =
    input.type === 'correct_rca' ? await incidentSymptoms(tx, input.tenantId, input.incidentId) : undefined;
  const recognisable = symptoms && (symptoms.service || symptoms.alertNames.length > 0) ? symptoms : undefined;
  if (recognisable) await lockSignature(tx, input.tenantId, recognisable.service, categorizeText(comment!));
  return recognisable;
}

/** The pattern the verdict is on: the one named, else the incident's only matched pattern. */
async function lockTarget(tx: Tx, input: FeedbackInput): Promise<PatternRow | undefined> {
  if (input.patternId) {
    const target = await lockPattern(tx, input.tenantId, input.patternId);
    if (!target) throw new AppError('not_found', 'No pattern has that identifier');
    return target;
  }
  const matched = await matchedPatternIds(tx, input.tenantId, input.incidentId);
  return matched.length === 1 ? lockPattern(tx, input.tenantId, matched[0]!) : undefined;
}

/** The same correction again (whichever pattern it was first given on): nothing changes. */
async function repeatedCorrection(tx: Tx, s: Submission): Promise<SubmitResult | undefined> {
  const { input, comment } = s;
  const [same] = await tx
    .select()
    .from(feedback)
    .where(
      and(
        eq(feedback.incidentId, input.incidentId),
        eq(feedback.userId, input.userId),
        eq(feedback.type, 'correct_rca'),
        eq(feedback.comment, comment!),
      ),
    );
  if (!same) return undefined;
  const [described] = await tx
    .select({ patternId: feedback.patternId })
    .from(feedback)
    .where(
      and(
        eq(feedback.incidentId, input.incidentId),
        eq(feedback.userId, input.userId),
        eq(feedback.type, 'confirm_rca'),
        eq(feedback.comment, comment!),
      ),
    );
  const describedId =
    described?.patternId ??
    (same.patternId && categorizeText(comment!) === (await lockPattern(tx, input.tenantId, same.patternId))?.category
      ? same.patternId
      : null);
  const pattern = describedId ? await lockPattern(tx, input.tenantId, describedId) : undefined;
  return { record: toRecord(same, pattern ? toPatternView(pattern) : null), changed: false };
}

/** Records the corrected root cause on the incident, keeping the earlier one as a revision. */
async function reviseRootCause(
  tx: Tx,
  s: Submission & { comment: string },
  incident: LockedIncident,
  row: FeedbackRow,
): Promise<void> {
  const { input, comment } = s;
  await tx.insert(rootCauseRevisions).values({
    id: `rcr_${ulid().toLowerCase()}`,
    tenantId: input.tenantId,
    incidentId: input.incidentId,
    previousRootCause: incident.rootCause,
    rootCause: comment,
    source: 'feedback',
    actorId: input.userId,
  });
  await tx
    .update(incidents)
    .set({ rootCause: comment, updatedAt: sql`now()` })
    .where(eq(incidents.id, input.incidentId));
  await appendAudit(tx, {
    tenantId: input.tenantId,
    actorType: 'user',
    actorId: input.userId,
    action: 'incident.root_cause_corrected',
    targetType: 'incident',
    targetId: input.incidentId,
    incidentId: input.incidentId,
    requestId: input.requestId ?? null,
    details: { feedbackId: row.id, previousRootCause: incident.rootCause?.slice(0, 500) ?? null },
  });
}

/**
 * Creates or reinforces the pattern a correction describes; the correction is this user's
 * confirmation of it (unless it is the pattern the verdict was given on).
 */
async function learnCorrection(
  tx: Tx,
  s: Submission & { comment: string },
  recognisable: IncidentSymptoms,
  target: PatternRow | undefined,
): Promise<PatternRow | undefined> {
  const { input, comment, actor } = s;
  const signature: PatternSignature = {
    ...recognisable,
    category: categorizeText(comment),
    evidenceTypes: [],
    rootCause: comment,
  };
  const occurrence = await recordOccurrence(tx, {
    tenantId: input.tenantId,
    incidentId: input.incidentId,
    signature,
    fix: actionsInText(comment),
    fixWorked: false,
    confirm: false,
    source: 'correction',
    actor,
  });
  const corrected = occurrence.pattern;
  if (corrected.id === target?.id) return target;
  const previous = await lockVerdict(tx, input.incidentId, input.userId, corrected.id);
  if (previous?.type === 'confirm_rca') return corrected;
  const confirmed = await replaceVerdict(
    tx,
    corrected,
    previous,
    { type: 'confirm_rca', comment },
    actor,
    input.incidentId,
  );
  await writeVerdict(tx, previous, {
    tenantId: input.tenantId,
    incidentId: input.incidentId,
    userId: input.userId,
    pattern: confirmed,
    type: 'confirm_rca',
    comment,
  });
  return confirmed;
}

/** `knowledge.feedback_received` and the verdict's audit entry. */
async function announceVerdict(
  tx: Tx,
  input: FeedbackInput,
  row: FeedbackRow,
  existing: FeedbackRow | undefined,
  correction: { corrected: PatternRow | undefined; correctionSkipped: string | undefined },
): Promise<void> {
  const { corrected, correctionSkipped } = correction;
  await appendEvent(tx, {
    tenantId: input.tenantId,
    type: 'knowledge.feedback_received',
    incidentId: input.incidentId,
    payload: {
      feedbackId: row.id,
      incidentId: input.incidentId,
      patternId: row.patternId,
      type: row.type,
      previousType: existing?.type ?? null,
      updatedConfidence: row.updatedConfidence,
      ...(corrected ? { correctedPatternId: corrected.id } : {}),
    },
    idempotencyKey: `knowledge:feedback:${row.id}:${row.updatedAt.toISOString()}:${ulid()}`,
  });
  await appendAudit(tx, {
    tenantId: input.tenantId,
    actorType: 'user',
    actorId: input.userId,
    action: existing ? 'knowledge.feedback_changed' : 'knowledge.feedback_submitted',
    targetType: 'feedback',
    targetId: row.id,
    incidentId: input.incidentId,
    requestId: input.requestId ?? null,
    details: {
      type: row.type,
      patternId: row.patternId,
      previousType: existing?.type ?? null,
      updatedConfidence: row.updatedConfidence,
      ...(corrected ? { correctedPatternId: corrected.id } : {}),
      ...(correctionSkipped ? { correctionSkipped } : {}),
    },
  });
}

/** The steps of submitFeedback, in its transaction; the order of the locks is ADR 0235's. */
async function submitInTransaction(tx: Tx, s: Submission): Promise<SubmitResult> {
  const { input, comment, actor } = s;
  const incident = await lockIncident(tx, input);
  const recognisable = await lockCorrectionSignature(tx, s);
  let target = await lockTarget(tx, input);

  if (input.type === 'correct_rca') {
    const repeated = await repeatedCorrection(tx, s);
    if (repeated) return repeated;
  }
  const existing = await lockVerdict(tx, input.incidentId, input.userId, target?.id ?? '');
  if (existing && existing.type === input.type && existing.comment === comment)
    return { record: toRecord(existing), changed: false };

  if (target)
    target = await replaceVerdict(tx, target, existing, { type: input.type, comment }, actor, input.incidentId);
  const row = await writeVerdict(tx, existing, {
    tenantId: input.tenantId,
    incidentId: input.incidentId,
    userId: input.userId,
    pattern: target,
    type: input.type,
    comment,
  });

  let corrected: PatternRow | undefined;
  let correctionSkipped: string | undefined;
  if (input.type === 'correct_rca' && comment) {
    const correction = { ...s, comment };
    await reviseRootCause(tx, correction, incident, row);
    if (recognisable) corrected = await learnCorrection(tx, correction, recognisable, target);
    else correctionSkipped = 'the incident has no service and no alerts: no pattern can recognise it';
  }

  await announceVerdict(tx, input, row, existing, { corrected, correctionSkipped });
  return {
    record: toRecord(row, input.type === 'correct_rca' ? (corrected ? toPatternView(corrected) : null) : undefined),
    changed: true,
  };
}

/**
 * Records a verdict (see the module comment) with `knowledge.feedback_received` and its audit
 * entries, in one transaction. Feedback on one incident is serialised (its row is locked).
 * 404 `not_found` for an unknown incident or pattern (another tenant's is unknown).
 */
export async function submitFeedback(db: Db, input: FeedbackInput): Promise<SubmitResult> {
  const comment = input.comment !== undefined && hasVisibleText(input.comment) ? input.comment.trim() : null;
  if (input.type === 'correct_rca' && !comment)
    throw new AppError('comment_required', 'correct_rca needs a comment: the corrected root cause');
  const actor: KnowledgeActor = { type: 'user', id: input.userId, requestId: input.requestId ?? null };
  return db.transaction((tx) => submitInTransaction(tx, { input, comment, actor }));
}
