/** The tenant's skills the agents consult, and what they answered as the synthesis reads it. */
import { and, asc, eq, sql } from 'drizzle-orm';
import type { InvestigationInput } from '../../analysis/investigation/index.js';
import type { InvestigationRequest } from '../../analysis/investigation-types.js';
import { agentRoles, type AgentRole } from '../../analysis/types.js';
import { evidenceItems } from '../../db/schema/investigation.js';
import { skills } from '../../db/schema/skills.js';
import { tenants } from '../../db/schema/tenants.js';
import { getPlan } from '../../domain/plans.js';
import {
  bindSkillInput,
  findingText,
  skillRoles,
  skillsForRole,
  tellingLine,
  type AgentSkill,
  type SkillRole,
} from '../../skills/agent-skills.js';
import { whileBeating } from '../heartbeat.js';
import {
  clip,
  iso,
  MAX_SKILL_FINDINGS,
  oneLine,
  type EvidenceDraft,
  type InvestigationContext,
  type Scene,
} from './common.js';
import { sharedRead } from './scene.js';

/** The tenant's skills the agents may consult: enabled http skills, on a plan with custom skills. */
export async function readAgentSkills(ctx: InvestigationContext, tenantId: string): Promise<AgentSkill[]> {
  const rows = await ctx.db
    .select({
      plan: tenants.plan,
      id: skills.id,
      name: skills.name,
      description: skills.description,
      config: skills.config,
      inputSchema: skills.inputSchema,
    })
    .from(skills)
    .innerJoin(tenants, eq(tenants.id, skills.tenantId))
    .where(and(eq(skills.tenantId, tenantId), eq(skills.enabled, true), eq(skills.type, 'http')));
  return rows
    .filter((r) => getPlan(r.plan).features.customSkills)
    .map((r) => ({
      id: r.id,
      name: r.name,
      description: r.description,
      method: String(r.config.method ?? ''),
      inputSchema: r.inputSchema ?? null,
    }));
}
export function agentSkills(ctx: InvestigationContext, scene: Scene): Promise<AgentSkill[]> {
  const entry = sharedRead(ctx, scene.req);
  if (!entry.skills) {
    const read = readAgentSkills(ctx, scene.req.tenantId);
    read.catch(() => {
      if (entry.skills === read) delete entry.skills;
    });
    entry.skills = read;
  }
  return entry.skills;
}

/**
 * Calls the tenant's skills routed to `role` (skills/agent-skills.ts), in parallel, each once
 * per run: its idempotency key makes a retried agent get the recorded outcome instead of a
 * second call. Each answer becomes one evidence draft; a failure, an empty answer or a skill
 * whose required input the agent cannot fill becomes a note in the agent's report.
 */
export async function consultSkills(
  ctx: InvestigationContext,
  req: InvestigationRequest,
  role: SkillRole,
  scene: Scene,
  lookbackMs: number,
): Promise<{ drafts: EvidenceDraft[]; notes: string[] }> {
  const invoker = ctx.deps.skills;
  if (!invoker) return { drafts: [], notes: [] };
  const chosen = await agentSkills(ctx, scene).then((all) => skillsForRole(all, role));
  if (chosen.length === 0) return { drafts: [], notes: [] };
  const type = skillRoles.find((r) => r.role === role)!.type;
  const facts = {
    incidentId: scene.incident.id,
    service: scene.service,
    severity: scene.incident.severity,
    alertName: scene.ownAlerts[0]?.alertName ?? null,
    since: new Date(scene.firstAlertAt.getTime() - lookbackMs),
    until: new Date(),
  };
  // Heartbeats while the skills run (the agents' heartbeat timeout is 20 s).
  const results = await whileBeating(
    () =>
      Promise.all(
        chosen.map(async (skill): Promise<{ note: string; draft?: EvidenceDraft }> => {
          const bound = bindSkillInput(skill.inputSchema, facts);
          if (!bound.ok)
            return {
              note: `${skill.name} not called (it requires ${bound.missing.join(', ')}, which the agent cannot fill)`,
            };
          const outcome = await invoker.invoke({
            tenantId: req.tenantId,
            skillId: skill.id,
            input: bound.input,
            idempotencyKey: `investigation:${req.incidentId}:${req.run}:${role}:${skill.id}`,
          });
          if (!outcome.ok)
            return {
              note: `${skill.name} failed (${outcome.error.code}: ${clip(oneLine(outcome.error.message), 160)})`,
            };
          const text = findingText(outcome.output);
          if (text === '') return { note: `${skill.name} returned nothing` };
          const { line, alarming } = tellingLine(text);
          const summary = `${skill.name}${scene.service ? ` for ${scene.service}` : ''}: ${oneLine(line)}`;
          const draft: EvidenceDraft = {
            sourceId: `skill:${skill.id}:${req.run}`,
            type,
            source: `skill:${skill.name}`,
            summary,
            severity: alarming ? 'high' : 'info',
            occurredAt: new Date(),
            rawSnippet: text,
          };
          return { note: clip(summary, 240), draft };
        }),
      ),
    () => ({ step: 'skills' }),
  );
  return {
    drafts: results.flatMap((r) => (r.draft ? [r.draft] : [])),
    notes: results.map((r) => r.note),
  };
}
/** The agent's findings with what its skills said appended. */
export const withSkillNotes = (content: string, notes: string[]) =>
  notes.length > 0 ? `${content} Skills: ${notes.join(' | ')}.` : content;

/** What the agents' skills answered for the incident (stored as evidence items), oldest first. */
export async function findingsOfSkills(
  ctx: InvestigationContext,
  req: InvestigationRequest,
): Promise<NonNullable<InvestigationInput['findings']>> {
  const rows = await ctx.db
    .select({
      dedupeKey: evidenceItems.dedupeKey,
      agentRole: evidenceItems.agentRole,
      source: evidenceItems.source,
      rawSnippet: evidenceItems.rawSnippet,
      occurredAt: evidenceItems.occurredAt,
    })
    .from(evidenceItems)
    .where(
      and(
        eq(evidenceItems.tenantId, req.tenantId),
        eq(evidenceItems.incidentId, req.incidentId),
        sql`${evidenceItems.dedupeKey} like ${'%:skill:%'}`,
      ),
    )
    .orderBy(asc(evidenceItems.occurredAt), asc(evidenceItems.id))
    .limit(MAX_SKILL_FINDINGS);
  return rows
    .filter((r): r is typeof r & { agentRole: AgentRole } => (agentRoles as readonly string[]).includes(r.agentRole))
    .map((r) => ({
      // The source id the evidence item is stored under, so hypotheses built on it cite it.
      sourceId: r.dedupeKey.slice(r.dedupeKey.indexOf(':') + 1),
      agentRole: r.agentRole,
      skill: r.source.replace(/^skill:/, ''),
      occurredAt: iso(r.occurredAt),
      text: r.rawSnippet,
    }));
}
