/**
 * The tenant's learned patterns: reading and listing them, matching an incident's symptoms,
 * and the writes that change them (an occurrence, a verdict), each inside the caller's
 * transaction with its outbox events and audit entries.
 */
import { and, asc, count, desc, eq, gte, sql, type SQL } from 'drizzle-orm';
import {
  commonLabels,
  normaliseAlertNames,
  patternConfidence,
  patternStatus,
  patternTitle,
  signatureKey,
  signatureMatch,
  symptomMatch,
  type PatternSignature,
} from '../../domain/patterns.js';
import { newId } from '../../ids.js';
import type { Db } from '../client.js';
import { olderThan } from '../keyset.js';
import { incidents } from '../schema/incidents.js';
import { ingestedEvents } from '../schema/ingestion.js';
import { patternOccurrences, patterns, type PatternRow, type PatternStatus } from '../schema/knowledge.js';
import { appendAudit } from './audit.js';
import { appendEvent } from '../../outbox/append.js';

type Tx = Parameters<Parameters<Db['transaction']>[0]>[0];
type Reader = Pick<Db, 'select'>;

export function toPatternView(row: PatternRow) {
  return {
    patternId: row.id,
    title: row.title,
    confidence: row.confidence,
    occurrences: row.occurrences,
    status: row.status,
    createdAt: row.createdAt.toISOString(),
    lastSeenAt: row.lastSeenAt.toISOString(),
    service: row.service,
    category: row.category,
    alertNames: row.alertNames,
    rootCause: row.rootCause,
    fix: row.fix,
    confirms: row.confirms,
    rejects: row.rejects,
  };
}
export type PatternView = ReturnType<typeof toPatternView>;

const patternColumns = {
  id: patterns.id,
  tenantId: patterns.tenantId,
  title: patterns.title,
  signatureKey: patterns.signatureKey,
  service: patterns.service,
  alertNames: patterns.alertNames,
  labels: patterns.labels,
  category: patterns.category,
  evidenceTypes: patterns.evidenceTypes,
  rootCause: patterns.rootCause,
  fix: patterns.fix,
  confirms: patterns.confirms,
  rejects: patterns.rejects,
  occurrences: patterns.occurrences,
  confidence: patterns.confidence,
  status: patterns.status,
  createdAt: patterns.createdAt,
  lastSeenAt: patterns.lastSeenAt,
  updatedAt: patterns.updatedAt,
};

export async function findPattern(db: Reader, tenantId: string, patternId: string): Promise<PatternRow | undefined> {
  const [row] = await db
    .select(patternColumns)
    .from(patterns)
    .where(and(eq(patterns.tenantId, tenantId), eq(patterns.id, patternId)));
  return row;
}

/** Newest first, keyset over (created_at, id), with the total matching across pages. */
export async function listPatterns(
  db: Db,
  tenantId: string,
  query: { status?: PatternStatus; minConfidence?: number; limit: number; after?: { createdAt: Date; id: string } },
): Promise<{ rows: PatternRow[]; total: number; hasMore: boolean }> {
  const filters: SQL[] = [eq(patterns.tenantId, tenantId)];
  if (query.status) filters.push(eq(patterns.status, query.status));
  if (query.minConfidence !== undefined) filters.push(gte(patterns.confidence, query.minConfidence));
  const where = and(...filters);
  const pageWhere = query.after ? and(where, olderThan(patterns.createdAt, patterns.id, query.after)) : where;
  const [rows, totals] = await Promise.all([
    db
      .select(patternColumns)
      .from(patterns)
      .where(pageWhere)
      .orderBy(desc(patterns.createdAt), desc(patterns.id))
      .limit(query.limit + 1),
    db.select({ total: count() }).from(patterns).where(where),
  ]);
  return { rows: rows.slice(0, query.limit), total: totals[0]?.total ?? 0, hasMore: rows.length > query.limit };
}

/** What an incident looks like to the pattern matcher: its service, alert names and stable labels. */
export interface IncidentSymptoms {
  service: string | null;
  alertNames: string[];
  labels: Record<string, string>;
}

export async function incidentSymptoms(
  db: Reader,
  tenantId: string,
  incidentId: string,
): Promise<IncidentSymptoms | undefined> {
  const [incident] = await db
    .select({ service: incidents.service })
    .from(incidents)
    .where(and(eq(incidents.tenantId, tenantId), eq(incidents.id, incidentId)));
  if (!incident) return undefined;
  const alerts = await db
    .select({
      alertName: ingestedEvents.alertName,
      title: ingestedEvents.title,
      labels: ingestedEvents.labels,
      service: ingestedEvents.service,
    })
    .from(ingestedEvents)
    .where(
      and(
        eq(ingestedEvents.tenantId, tenantId),
        eq(ingestedEvents.incidentId, incidentId),
        eq(ingestedEvents.kind, 'alert'),
      ),
    )
    .orderBy(asc(ingestedEvents.occurredAt), asc(ingestedEvents.id))
    .limit(500);
  return {
    service: incident.service ?? alerts.find((a) => a.service)?.service ?? null,
    alertNames: normaliseAlertNames(alerts.map((a) => a.alertName ?? a.title)),
    labels: commonLabels(alerts.map((a) => a.labels)),
  };
}

/** Candidate patterns of the same service (case-insensitive; both unnamed counts as the same). */
async function patternsOfService(db: Reader, tenantId: string, service: string | null): Promise<PatternRow[]> {
  return db
    .select(patternColumns)
    .from(patterns)
    .where(
      and(
        eq(patterns.tenantId, tenantId),
        service ? sql`lower(${patterns.service}) = lower(${service})` : sql`${patterns.service} is null`,
      ),
    )
    .orderBy(desc(patterns.lastSeenAt), desc(patterns.id))
    .limit(500);
}

export interface SymptomMatch {
  pattern: PatternRow;
  /** Share of alert names in common (0.5 for a service-only match). */
  overlap: number;
  sharedAlerts: string[];
}

/**
 * The patterns whose symptoms an incident shows (the knowledge agent's question: the cause is
 * not known yet), best first: stable before emerging, then overlap, then confidence.
 */
export async function findSymptomMatches(
  db: Reader,
  tenantId: string,
  symptoms: IncidentSymptoms,
  limit = 3,
): Promise<SymptomMatch[]> {
  const candidates = await patternsOfService(db, tenantId, symptoms.service);
  const lowerNames = new Set(symptoms.alertNames.map((n) => n.toLowerCase()));
  return candidates
    .map((pattern) => ({ pattern, overlap: symptomMatch(symptoms, pattern) }))
    .filter((m): m is { pattern: PatternRow; overlap: number } => m.overlap !== null)
    .map((m) => ({ ...m, sharedAlerts: m.pattern.alertNames.filter((n) => lowerNames.has(n.toLowerCase())) }))
    .sort(
      (a, b) =>
        Number(b.pattern.status === 'stable') - Number(a.pattern.status === 'stable') ||
        b.overlap - a.overlap ||
        b.pattern.confidence - a.pattern.confidence ||
        (a.pattern.id < b.pattern.id ? -1 : 1),
    )
    .slice(0, limit);
}

export interface KnowledgeActor {
  type: 'user' | 'system';
  id: string;
  requestId?: string | null;
  workflowId?: string | null;
  historyEventId?: number | null;
}

const auditOrigin = (actor: KnowledgeActor) => ({
  actorType: actor.type,
  actorId: actor.id,
  requestId: actor.requestId ?? null,
  workflowId: actor.workflowId ?? null,
  ...(typeof actor.historyEventId === 'number' ? { historyEventId: actor.historyEventId } : {}),
});

export interface PatternChange {
  confirms?: number;
  rejects?: number;
  occurrences?: number;
  /** Replace the fix (the actions that worked). */
  fix?: string[];
  seen?: boolean;
  /** Signature parts learned from a new occurrence (merged in). */
  alertNames?: string[];
  evidenceTypes?: string[];
}

/**
 * Applies counts to a locked pattern row and recomputes its confidence and maturity; a move to
 * `stable` appends `knowledge.pattern_promoted`, a move back is audited as a demotion.
 */
export async function changePattern(
  tx: Tx,
  pattern: PatternRow,
  change: PatternChange,
  actor: KnowledgeActor,
  incidentId: string | null,
): Promise<PatternRow> {
  const confirms = Math.max(0, pattern.confirms + (change.confirms ?? 0));
  const rejects = Math.max(0, pattern.rejects + (change.rejects ?? 0));
  const occurrences = Math.max(0, pattern.occurrences + (change.occurrences ?? 0));
  const confidence = patternConfidence(confirms, rejects);
  const status = patternStatus(occurrences, confidence);
  const merge = (a: string[], b: string[] | undefined, max: number) =>
    b ? [...new Set([...a, ...b])].sort().slice(0, max) : a;
  const [updated] = await tx
    .update(patterns)
    .set({
      confirms,
      rejects,
      occurrences,
      confidence,
      status,
      ...(change.fix && change.fix.length > 0 ? { fix: change.fix } : {}),
      ...(change.seen ? { lastSeenAt: sql`now()` } : {}),
      alertNames: merge(pattern.alertNames, change.alertNames, 20),
      evidenceTypes: merge(pattern.evidenceTypes, change.evidenceTypes, 10),
      updatedAt: sql`now()`,
    })
    .where(eq(patterns.id, pattern.id))
    .returning();
  const row = updated!;
  if (status !== pattern.status) {
    const promoted = status === 'stable';
    if (promoted) {
      await appendEvent(tx, {
        tenantId: row.tenantId,
        type: 'knowledge.pattern_promoted',
        incidentId,
        payload: {
          patternId: row.id,
          title: row.title,
          confidence,
          occurrences,
          confirms,
          rejects,
          status,
          incidentId,
        },
        idempotencyKey: `knowledge:${row.id}:promoted:${occurrences}:${confirms}:${rejects}`,
      });
    }
    await appendAudit(tx, {
      tenantId: row.tenantId,
      ...auditOrigin(actor),
      action: promoted ? 'knowledge.pattern_promoted' : 'knowledge.pattern_demoted',
      targetType: 'pattern',
      targetId: row.id,
      incidentId,
      details: { from: pattern.status, to: status, confidence, occurrences, confirms, rejects },
      idempotencyKey: `knowledge:${row.id}:${status}:${occurrences}:${confirms}:${rejects}:audit`,
    });
  }
  return row;
}

export async function lockPattern(tx: Tx, tenantId: string, patternId: string): Promise<PatternRow | undefined> {
  const [row] = await tx
    .select(patternColumns)
    .from(patterns)
    .where(and(eq(patterns.tenantId, tenantId), eq(patterns.id, patternId)))
    .for('update');
  return row;
}

export interface OccurrenceInput {
  tenantId: string;
  incidentId: string;
  signature: PatternSignature;
  /** The fix to keep: replaces a pattern's fix when `fixWorked`, else fills an empty one. */
  fix: string[];
  fixWorked: boolean;
  /** Count a confirmation with the occurrence (a verified remediation, or a correction). */
  confirm: boolean;
  source: 'resolution' | 'correction';
  actor: KnowledgeActor;
}

/**
 * Serialises the recording of occurrences of one tenant, service and category until the
 * transaction ends. Taken before any pattern row is locked: a transaction that locks a pattern
 * first and then waits here deadlocks with one recording an occurrence of that pattern
 * (ADR 0235).
 */
export async function lockSignature(tx: Tx, tenantId: string, service: string | null, category: string): Promise<void> {
  await tx.execute(sql`select pg_advisory_xact_lock(hashtext(${signatureLockKey(tenantId, service, category)}))`);
}

/** The text whose hash is `lockSignature`'s advisory lock. */
export const signatureLockKey = (tenantId: string, service: string | null, category: string): string =>
  `patterns:${tenantId}:${(service ?? '').toLowerCase()}:${category}`;

/**
 * Records that an incident is an occurrence of the pattern its signature describes: matches the
 * tenant's patterns (same service and category, alert names in common; see `signatureMatch`)
 * or creates an `emerging` one (`knowledge.pattern_created`), then counts the incident once
 * (`pattern_occurrences`), with `lastSeenAt`, and the confirmation when asked. Serialised per
 * tenant, service and category so two similar resolutions never create two patterns.
 */
export async function recordOccurrence(
  tx: Tx,
  input: OccurrenceInput,
): Promise<{ pattern: PatternRow; created: boolean; counted: boolean }> {
  const sig = input.signature;
  await lockSignature(tx, input.tenantId, sig.service, sig.category);
  const candidates = (await patternsOfService(tx, input.tenantId, sig.service))
    .map((pattern) => ({ pattern, score: signatureMatch(sig, pattern) }))
    .filter((c): c is { pattern: PatternRow; score: number } => c.score !== null)
    .sort(
      (a, b) =>
        b.score - a.score ||
        Number(b.pattern.status === 'stable') - Number(a.pattern.status === 'stable') ||
        b.pattern.confidence - a.pattern.confidence ||
        (a.pattern.createdAt < b.pattern.createdAt ? -1 : 1),
    );
  let created = false;
  let pattern = candidates[0]?.pattern;
  if (!pattern) {
    const key = signatureKey(sig);
    const [inserted] = await tx
      .insert(patterns)
      .values({
        id: newId('pat'),
        tenantId: input.tenantId,
        title: patternTitle(sig),
        signatureKey: key,
        service: sig.service,
        alertNames: sig.alertNames,
        labels: sig.labels,
        category: sig.category,
        evidenceTypes: sig.evidenceTypes,
        rootCause: sig.rootCause.slice(0, 4000),
        fix: input.fix,
        confirms: 0,
        rejects: 0,
        occurrences: 0,
        confidence: patternConfidence(0, 0),
        status: 'emerging',
      })
      .onConflictDoNothing({ target: [patterns.tenantId, patterns.signatureKey] })
      .returning();
    if (inserted) {
      created = true;
      pattern = inserted;
      await appendEvent(tx, {
        tenantId: input.tenantId,
        type: 'knowledge.pattern_created',
        incidentId: input.incidentId,
        payload: {
          patternId: inserted.id,
          title: inserted.title,
          service: inserted.service,
          category: inserted.category,
          alertNames: inserted.alertNames,
          source: input.source,
          incidentId: input.incidentId,
        },
        idempotencyKey: `knowledge:${inserted.id}:created`,
      });
      await appendAudit(tx, {
        tenantId: input.tenantId,
        ...auditOrigin(input.actor),
        action: 'knowledge.pattern_created',
        targetType: 'pattern',
        targetId: inserted.id,
        incidentId: input.incidentId,
        details: {
          title: inserted.title,
          category: inserted.category,
          service: inserted.service,
          source: input.source,
        },
        idempotencyKey: `knowledge:${inserted.id}:created:audit`,
      });
    } else {
      [pattern] = await tx
        .select(patternColumns)
        .from(patterns)
        .where(and(eq(patterns.tenantId, input.tenantId), eq(patterns.signatureKey, key)));
    }
  }
  const locked = (await lockPattern(tx, input.tenantId, pattern!.id))!;
  const [occurrence] = await tx
    .insert(patternOccurrences)
    .values({ patternId: locked.id, incidentId: input.incidentId, tenantId: input.tenantId })
    .onConflictDoNothing()
    .returning({ patternId: patternOccurrences.patternId });
  if (!occurrence) return { pattern: locked, created, counted: false };
  const fix = input.fixWorked || locked.fix.length === 0 ? input.fix : undefined;
  const updated = await changePattern(
    tx,
    locked,
    {
      occurrences: 1,
      confirms: input.confirm ? 1 : 0,
      seen: true,
      alertNames: sig.alertNames,
      evidenceTypes: sig.evidenceTypes,
      ...(fix ? { fix } : {}),
    },
    input.actor,
    input.incidentId,
  );
  return { pattern: updated, created, counted: true };
}

/** The patterns an incident was counted as an occurrence of. */
export async function matchedPatternIds(db: Reader, tenantId: string, incidentId: string): Promise<string[]> {
  const rows = await db
    .select({ patternId: patternOccurrences.patternId })
    .from(patternOccurrences)
    .where(and(eq(patternOccurrences.tenantId, tenantId), eq(patternOccurrences.incidentId, incidentId)));
  return rows.map((r) => r.patternId);
}
