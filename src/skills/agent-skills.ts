/**
 * Which of a tenant's skills the investigation agents call, with what input, and how an answer
 * becomes evidence. Pure functions: the activity reads the skills and calls them.
 *
 * - Only enabled `http` skills whose method is GET: an agent gathers evidence and must never
 *   change anything without an approval (a skill with another method is a remediation action,
 *   run only after an admin approves it).
 * - A skill is routed to one agent by the words of its description (what the interface says the
 *   description is for), else of its name: logs, then metrics, then deployments, then code changes.
 * - Its input is bound from the incident by property name (service, time window, incident id,
 *   severity, alert name, limit); a skill that requires anything else is not called.
 */
import type { AgentRole } from '../analysis/types.js';
import type { EvidenceType } from '../db/schema/investigation.js';

/** At most this many skills per agent and run, so one tenant's skills cannot stall an investigation. */
export const MAX_SKILLS_PER_AGENT = 3;
/** The text kept of a skill's answer (an evidence item's raw snippet: what synthesis reads). */
export const MAX_FINDING_CHARS = 2000;

/** The agents that call skills, in routing order, with the evidence type their findings get. */
export const skillRoles = [
  {
    role: 'logs',
    type: 'log',
    words: /\b(logs?|logging|log ?lines?|exceptions?|stack ?traces?|error messages?|journal)\b/,
  },
  {
    role: 'metrics',
    type: 'metric',
    words:
      /\b(metrics?|prometheus|promql|latency|cpu|memory usage|throughput|error rates?|saturation|time ?series|dashboards?)\b/,
  },
  { role: 'deployment', type: 'deployment', words: /\b(deploy(s|ed|ment|ments)?|releases?|rollouts?|rollbacks?)\b/ },
  {
    role: 'code_change',
    type: 'code_change',
    words: /\b(commits?|diffs?|pull requests?|code changes?|merges?|changesets?)\b/,
  },
] as const satisfies ReadonlyArray<{ role: AgentRole; type: EvidenceType; words: RegExp }>;

export type SkillRole = (typeof skillRoles)[number]['role'];

export interface AgentSkill {
  id: string;
  name: string;
  description: string;
  method: string;
  inputSchema: Record<string, unknown> | null;
}

/**
 * The agent a skill belongs to, or null when no agent calls it: judged by its description (what
 * it is for), and by its name only when the description names none.
 */
export function skillRole(skill: AgentSkill): SkillRole | null {
  if (skill.method.toUpperCase() !== 'GET') return null;
  const byWords = (text: string) => skillRoles.find((r) => r.words.test(text.toLowerCase()))?.role ?? null;
  return byWords(skill.description) ?? byWords(skill.name.replace(/[_-]+/g, ' '));
}

/** The skills one agent calls, by name, at most MAX_SKILLS_PER_AGENT. */
export function skillsForRole(skills: AgentSkill[], role: SkillRole): AgentSkill[] {
  return skills
    .filter((s) => skillRole(s) === role)
    .sort((a, b) => a.name.localeCompare(b.name))
    .slice(0, MAX_SKILLS_PER_AGENT);
}

/** What an agent knows to fill a skill's input with. */
export interface IncidentFacts {
  incidentId: string;
  service: string | null;
  severity: string;
  alertName: string | null;
  /** The window the agent looks at. */
  since: Date;
  until: Date;
}

type Fact = { kind: 'text'; value: string } | { kind: 'time'; value: Date } | { kind: 'count'; value: number };

const factNames: Array<{ names: RegExp; fact: (f: IncidentFacts) => Fact | null }> = [
  {
    names: /^(service|servicename|app|application|component)$/,
    fact: (f) => (f.service ? { kind: 'text', value: f.service } : null),
  },
  { names: /^(incident|incidentid)$/, fact: (f) => ({ kind: 'text', value: f.incidentId }) },
  { names: /^(severity|priority)$/, fact: (f) => ({ kind: 'text', value: f.severity }) },
  { names: /^(alert|alertname)$/, fact: (f) => (f.alertName ? { kind: 'text', value: f.alertName } : null) },
  { names: /^(since|from|start|starttime|startat|after)$/, fact: (f) => ({ kind: 'time', value: f.since }) },
  { names: /^(until|to|end|endtime|endat|before)$/, fact: (f) => ({ kind: 'time', value: f.until }) },
  { names: /^(limit|max|count|size)$/, fact: () => ({ kind: 'count', value: 50 }) },
];

function typesOf(property: unknown): string[] {
  const type = (property as { type?: unknown } | null)?.type;
  if (typeof type === 'string') return [type];
  return Array.isArray(type) ? type.filter((t): t is string => typeof t === 'string') : [];
}

/** A fact in the property's type: ISO 8601 or Unix seconds for times; nothing when it does not fit. */
function valueFor(fact: Fact, types: string[]): unknown {
  const accepts = (t: string) => types.length === 0 || types.includes(t);
  switch (fact.kind) {
    case 'text':
      return accepts('string') ? fact.value : undefined;
    case 'time':
      if (accepts('string')) return fact.value.toISOString();
      return accepts('integer') || accepts('number') ? Math.floor(fact.value.getTime() / 1000) : undefined;
    case 'count':
      return accepts('integer') || accepts('number') ? fact.value : undefined;
  }
}

export type BoundInput = { ok: true; input: Record<string, unknown> } | { ok: false; missing: string[] };

/**
 * The skill's input from the incident: every property of its input schema whose name is a known
 * fact (case, `_` and `-` ignored) and whose type fits. Without a schema: service, since, until.
 */
export function bindSkillInput(schema: Record<string, unknown> | null, facts: IncidentFacts): BoundInput {
  if (!schema) {
    return {
      ok: true,
      input: {
        ...(facts.service ? { service: facts.service } : {}),
        since: facts.since.toISOString(),
        until: facts.until.toISOString(),
      },
    };
  }
  const properties = (schema.properties ?? {}) as Record<string, unknown>;
  const required = Array.isArray(schema.required)
    ? schema.required.filter((r): r is string => typeof r === 'string')
    : [];
  const input: Record<string, unknown> = {};
  for (const [name, property] of Object.entries(properties)) {
    const known = factNames.find((f) => f.names.test(name.toLowerCase().replace(/[_-]/g, '')));
    const fact = known?.fact(facts);
    const value = fact ? valueFor(fact, typesOf(property)) : undefined;
    if (value !== undefined) input[name] = value;
  }
  const missing = required.filter((r) => !(r in input));
  return missing.length > 0 ? { ok: false, missing } : { ok: true, input };
}

/**
 * A skill's answer as lines of text: strings as they are, each object's scalar fields on one
 * line (`key=value`), arrays and nested objects line by line; at most MAX_FINDING_CHARS.
 */
export function findingText(output: unknown): string {
  const lines: string[] = [];
  let size = 0;
  const push = (line: string) => {
    const text = line.trim();
    if (text === '' || size >= MAX_FINDING_CHARS) return;
    lines.push(text);
    size += text.length + 1;
  };
  const walk = (value: unknown, depth: number): void => {
    if (size >= MAX_FINDING_CHARS || value === null || value === undefined) return;
    if (typeof value === 'string') {
      for (const line of value.split('\n')) push(line);
    } else if (typeof value !== 'object') {
      push(String(value));
    } else if (depth >= 6) {
      push(JSON.stringify(value));
    } else if (Array.isArray(value)) {
      for (const item of value) walk(item, depth + 1);
    } else {
      const entries = Object.entries(value as Record<string, unknown>);
      const scalars = entries.filter(([, v]) => v === null || typeof v !== 'object');
      if (scalars.length > 0) push(scalars.map(([k, v]) => `${k}=${String(v)}`).join(' '));
      for (const [, v] of entries) if (v !== null && typeof v === 'object') walk(v, depth + 1);
    }
  };
  walk(output, 0);
  const text = lines.join('\n');
  return text.length > MAX_FINDING_CHARS ? `${text.slice(0, MAX_FINDING_CHARS - 1)}…` : text;
}

const TELLING =
  /\b(fatal|error|errors|exception|fail(ed|ure|s)?|refused|denied|timed? ?out|timeout|expired|unreachable|no space|oom|killed|panic|crash(ed)?|too many|exhaust(ed|ion)|unavailable|5\d\d)\b/i;

/** The most telling line of a finding (an error, a failure), else its first. */
export function tellingLine(text: string): { line: string; alarming: boolean } {
  const lines = text.split('\n');
  const telling = lines.find((l) => TELLING.test(l));
  return { line: telling ?? lines[0] ?? '', alarming: telling !== undefined };
}
