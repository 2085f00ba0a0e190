/**
 * The plan of a remediation: each recommended action becomes a step, either a tenant skill the
 * action names or a builtin action parsed from the sentence. Pure functions, no I/O.
 *
 * Builtin actions (`rollback_deployment`, `restart_service`, `scale_service`, `follow_runbook`,
 * `notify_team`, `manual_step`) never touch real infrastructure: the service has no deploy or
 * orchestration credentials, so a builtin step records what it would do (its output, with
 * `simulated: true`) for a human or an external tool to carry out. Steps that must act for real
 * use a tenant skill (http) whose name or description matches the recommended action.
 */
import type { RemediationStepPlan } from '../../db/schema/remediation.js';
import type { SkillRow } from '../../db/schema/skills.js';

/** An action that checks rather than changes ("Confirm the errors stop after the rollback"). */
const CHECK_ACTION = /^\s*(check|verify|look|confirm|inspect|observe|review|find|identify|open|see|watch|capture)\b/i;

/** Builtin remediation actions; none of them touches infrastructure (see the module comment). */
export const builtinRemediationActions = [
  'rollback_deployment',
  'restart_service',
  'scale_service',
  'follow_runbook',
  'notify_team',
  'manual_step',
] as const;

/**
 * A verb of the sentence, not a part of a name: `status-page`, `scale-api` or `rollback_svc` name
 * a service and ask for no paging, scaling or rollback (a manual step read as one asked admins
 * to approve it).
 */
const verb = (pattern: string) => new RegExp(`(?<![\\w.-])(?:${pattern})(?![\\w-]|\\.\\w)`, 'i');
const ROLLBACK = verb('roll(?:\\s|-)?back');
const SCALE = verb('scale');
const NOTIFY = verb('notify|page|escalate|announce|inform');

const words = (s: string) =>
  s
    .toLowerCase()
    .replace(/[^a-z0-9]+/g, ' ')
    .trim();

/** Maps a recommended action to a builtin action with its input (parsed from the sentence). */
export function builtinStepFor(
  action: string,
  incident: { service: string | null; ownerTeam: string | null },
): { action: string; input: Record<string, unknown> } {
  const text = action.trim();
  const lower = text.toLowerCase();
  const fallbackService = incident.service ?? null;
  // A check ("Confirm the errors stop after the rollback") is for a human, whatever it names.
  if (CHECK_ACTION.test(text)) {
    return { action: 'manual_step', input: { instruction: text } };
  }
  if (ROLLBACK.test(lower)) {
    const deploy = /deployment\s+(\S+?)\s+of\s+([A-Za-z0-9][\w.-]*)/i.exec(text);
    const sha = /\bsha\s+([0-9a-f]{7,40})\b/i.exec(text);
    const target = /previous release \(sha ([0-9a-f]{7,40})\)/i.exec(text);
    return {
      action: 'rollback_deployment',
      input: {
        deploymentId: deploy?.[1] ?? null,
        service: deploy?.[2] ?? fallbackService,
        sha: sha?.[1] ?? null,
        ...(target ? { targetSha: target[1] } : {}),
      },
    };
  }
  const runbook = /follow runbook\s+['"‘“](.+?)['"’”]\s+step\s+(\d+)(?::\s*(.*))?/i.exec(text);
  if (runbook) {
    return {
      action: 'follow_runbook',
      input: { runbookTitle: runbook[1], step: Number(runbook[2]), ...(runbook[3] ? { text: runbook[3] } : {}) },
    };
  }
  if (/^\s*restart\b/i.test(text) || /\brestart (?:the )?/i.test(lower)) {
    const m = /restart\s+(?:the\s+)?(?:[\w-]+-killed\s+)?([A-Za-z0-9][\w.-]*)/i.exec(text);
    return { action: 'restart_service', input: { service: m?.[1] ?? fallbackService } };
  }
  if (SCALE.test(lower)) {
    const m = /scale\s+(out|up|in|down)?\s*([A-Za-z0-9][\w.-]*)?/i.exec(text);
    const direction = m?.[1]?.toLowerCase();
    const replicas = /\b(\d+)\s+replicas?\b/i.exec(text);
    return {
      action: 'scale_service',
      input: {
        service: m?.[2] && !/^(the|to|down|up|out|in)$/i.test(m[2]) ? m[2].replace(/[:,]$/, '') : fallbackService,
        direction: direction === 'down' || direction === 'in' ? 'in' : 'out',
        ...(replicas ? { replicas: Number(replicas[1]) } : {}),
      },
    };
  }
  if (NOTIFY.test(lower)) {
    return { action: 'notify_team', input: { team: incident.ownerTeam, message: text } };
  }
  return { action: 'manual_step', input: { instruction: text } };
}

/** An enabled tenant skill whose name (or description) the recommended action names. */
export function matchingSkill(action: string, candidates: SkillRow[]): SkillRow | undefined {
  const text = ` ${words(action)} `;
  const actionWords = new Set(words(action).split(' '));
  const enabled = candidates.filter((s) => s.enabled);
  // Every word of the name (`flush_cdn_cache`: flush, cdn, cache) appears in the action.
  const byName = enabled.find(
    (s) =>
      words(s.name).length >= 3 &&
      words(s.name)
        .split(' ')
        .every((w) => actionWords.has(w)),
  );
  if (byName) return byName;
  return enabled.find((s) => words(s.description).length >= 8 && text.includes(words(s.description)));
}

/**
 * Whether the service can carry a step out itself: a skill, an integration action, or a builtin
 * action other than `manual_step` (which only says what a person should do). A plan without
 * one is recommended actions for people, never something to approve (ADR 0258).
 */
export const isExecutableStep = (step: Pick<RemediationStepPlan, 'kind' | 'action'>): boolean =>
  step.kind !== 'builtin' || step.action !== 'manual_step';

export function buildPlan(
  actions: string[],
  incident: { service: string | null; ownerTeam: string | null },
  tenantSkills: SkillRow[],
): RemediationStepPlan[] {
  return actions.map((description, index) => {
    const skill = matchingSkill(description, tenantSkills);
    if (skill) {
      return {
        index,
        kind: skill.type === 'integration' ? 'integration' : 'skill',
        action: skill.name,
        skillId: skill.id,
        input: { ...builtinStepFor(description, incident).input, recommendedAction: description },
        description,
        ...(skill.type === 'http' && CHECK_ACTION.test(description) ? { check: true } : {}),
      };
    }
    const builtin = builtinStepFor(description, incident);
    return { index, kind: 'builtin', action: builtin.action, input: builtin.input, description };
  });
}
