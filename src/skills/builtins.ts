/**
 * Builtin skills: shipped with the service, listed for every tenant, always enabled, never rows.
 * Each reads only the calling tenant's data. Their ids are fixed (`skl_builtin_<name>`).
 */
import { and, desc, eq, gte, ilike, inArray, isNull, or, sql } from 'drizzle-orm';
import type { Db } from '../db/client.js';

/** What a skill call reads and writes through: the pool, or the transaction of the step that calls it. */
export type SkillDb = Pick<Db, 'select' | 'insert' | 'execute'>;
import { blastRadius } from '../db/repositories/topology.js';
import { incidents, incidentStatuses, type IncidentStatus } from '../db/schema/incidents.js';
import { ingestedEvents } from '../db/schema/ingestion.js';
import { runbooks } from '../db/schema/investigation.js';
import { SkillFailure } from './failure.js';

export interface BuiltinSkill {
  skillId: string;
  name: string;
  description: string;
  inputSchema: Record<string, unknown>;
  /** Runs with input already validated against `inputSchema`. */
  run(db: SkillDb, tenantId: string, input: Record<string, unknown>): Promise<unknown>;
}

export const BUILTIN_ID_PREFIX = 'skl_builtin_';

const text = (maxLength: number) => ({ type: 'string', minLength: 1, maxLength });
const integer = (minimum: number, maximum: number, defaultValue: number) => ({
  type: 'integer',
  minimum,
  maximum,
  default: defaultValue,
});
const objectSchema = (properties: Record<string, unknown>, required: string[] = []) => ({
  type: 'object',
  properties,
  required,
  additionalProperties: false,
});

/** `%`, `_` and `\` match themselves in an ILIKE pattern. */
function containing(value: string): string {
  return `%${value.replace(/[\\%_]/g, (c) => `\\${c}`)}%`;
}

const blastRadiusSkill: BuiltinSkill = {
  skillId: `${BUILTIN_ID_PREFIX}blast_radius`,
  name: 'blast_radius',
  description:
    'Lists every service that a failure of the given service affects (services that depend on it directly or transitively), with the shortest number of hops and an impact of high, medium or low. Use it to judge how far an incident spreads.',
  inputSchema: objectSchema(
    { serviceId: { ...text(64), description: 'The svc_… id of a service in the topology graph' } },
    ['serviceId'],
  ),
  async run(db, tenantId, input) {
    const serviceId = input.serviceId as string;
    const result = await blastRadius(db, tenantId, serviceId);
    if (!result) throw new SkillFailure('not_found', `No service ${serviceId} in the topology graph`);
    return result;
  },
};

const recentDeploymentsSkill: BuiltinSkill = {
  skillId: `${BUILTIN_ID_PREFIX}recent_deployments`,
  name: 'recent_deployments',
  description:
    'Lists deployments and code changes received from CI and version control (newest first) within the last `sinceMinutes` minutes, optionally for one service. Use it to find a change that may have caused an incident.',
  inputSchema: objectSchema({
    service: { ...text(200), description: 'Service (repository) name; all services when absent' },
    sinceMinutes: { ...integer(1, 10_080, 1440), description: 'Window length in minutes (at most 7 days)' },
    limit: integer(1, 100, 20),
  }),
  async run(db, tenantId, input) {
    const sinceMinutes = (input.sinceMinutes as number | undefined) ?? 1440;
    const limit = (input.limit as number | undefined) ?? 20;
    const service = input.service as string | undefined;
    const since = sql`now() - make_interval(mins => ${sinceMinutes})`;
    const rows = await db
      .select({
        eventId: ingestedEvents.id,
        kind: ingestedEvents.kind,
        provider: ingestedEvents.provider,
        service: ingestedEvents.service,
        title: ingestedEvents.title,
        description: ingestedEvents.description,
        labels: ingestedEvents.labels,
        occurredAt: ingestedEvents.occurredAt,
      })
      .from(ingestedEvents)
      .where(
        and(
          eq(ingestedEvents.tenantId, tenantId),
          inArray(ingestedEvents.kind, ['deployment', 'code_change']),
          gte(ingestedEvents.occurredAt, since),
          service ? eq(ingestedEvents.service, service) : undefined,
        ),
      )
      .orderBy(desc(ingestedEvents.occurredAt), desc(ingestedEvents.id))
      .limit(limit);
    return {
      sinceMinutes,
      service: service ?? null,
      deployments: rows.map((r) => ({ ...r, occurredAt: r.occurredAt.toISOString() })),
    };
  },
};

const searchIncidentsSkill: BuiltinSkill = {
  skillId: `${BUILTIN_ID_PREFIX}search_incidents`,
  name: 'search_incidents',
  description:
    "Searches the tenant's incidents (newest first) by text in the title or description, status and service. Use it to find earlier incidents like the current one and how they ended.",
  inputSchema: objectSchema({
    query: { ...text(200), description: 'Text to find in the title or description (case-insensitive)' },
    status: { type: 'string', enum: [...incidentStatuses] },
    service: text(200),
    limit: integer(1, 50, 10),
  }),
  async run(db, tenantId, input) {
    const query = input.query as string | undefined;
    const status = input.status as IncidentStatus | undefined;
    const service = input.service as string | undefined;
    const limit = (input.limit as number | undefined) ?? 10;
    const rows = await db
      .select({
        incidentId: incidents.id,
        title: incidents.title,
        status: incidents.status,
        severity: incidents.severity,
        service: incidents.service,
        rootCause: incidents.rootCause,
        createdAt: incidents.createdAt,
      })
      .from(incidents)
      .where(
        and(
          eq(incidents.tenantId, tenantId),
          query
            ? or(ilike(incidents.title, containing(query)), ilike(incidents.description, containing(query)))
            : undefined,
          status ? eq(incidents.status, status) : undefined,
          service ? eq(incidents.service, service) : undefined,
        ),
      )
      .orderBy(desc(incidents.createdAt), desc(incidents.id))
      .limit(limit);
    return { incidents: rows.map((r) => ({ ...r, createdAt: r.createdAt.toISOString() })) };
  },
};

const RUNBOOK_CONTENT_CHARS = 4000;

const runbookLookupSkill: BuiltinSkill = {
  skillId: `${BUILTIN_ID_PREFIX}runbook_lookup`,
  name: 'runbook_lookup',
  description:
    "Finds the tenant's runbooks whose title, content or tags contain a text, optionally for one service (runbooks for no particular service match any), newest first. Use it to follow the team's documented steps for a known failure.",
  inputSchema: objectSchema({ query: text(200), service: text(200), limit: integer(1, 20, 5) }, ['query']),
  async run(db, tenantId, input) {
    const query = input.query as string;
    const service = input.service as string | undefined;
    const limit = (input.limit as number | undefined) ?? 5;
    const rows = await db
      .select({
        runbookId: runbooks.id,
        title: runbooks.title,
        service: runbooks.service,
        tags: runbooks.tags,
        content: runbooks.content,
        updatedAt: runbooks.updatedAt,
      })
      .from(runbooks)
      .where(
        and(
          eq(runbooks.tenantId, tenantId),
          or(
            ilike(runbooks.title, containing(query)),
            ilike(runbooks.content, containing(query)),
            sql`exists (select 1 from jsonb_array_elements_text(${runbooks.tags}) tag where tag ilike ${containing(query)})`,
          ),
          service ? or(eq(runbooks.service, service), isNull(runbooks.service)) : undefined,
        ),
      )
      .orderBy(desc(runbooks.updatedAt), desc(runbooks.id))
      .limit(limit);
    return {
      runbooks: rows.map((r) => ({
        ...r,
        content: r.content.length > RUNBOOK_CONTENT_CHARS ? `${r.content.slice(0, RUNBOOK_CONTENT_CHARS)}…` : r.content,
        updatedAt: r.updatedAt.toISOString(),
      })),
    };
  },
};

export const builtinSkills: readonly BuiltinSkill[] = Object.freeze([
  blastRadiusSkill,
  recentDeploymentsSkill,
  searchIncidentsSkill,
  runbookLookupSkill,
]);

export function findBuiltinSkill(skillId: string): BuiltinSkill | undefined {
  return builtinSkills.find((s) => s.skillId === skillId);
}

export function isBuiltinName(name: string): boolean {
  return builtinSkills.some((s) => s.name === name);
}

/**
 * The actions a tenant skill of type `builtin` may run (`config.action`): the builtins' names.
 * The remediation's builtin actions (rollback, restart, …) only record intent, so are not here.
 */
export const builtinActions = builtinSkills.map((s) => s.name) as [string, ...string[]];

export function builtinAction(action: string): BuiltinSkill | undefined {
  return builtinSkills.find((s) => s.name === action);
}

/**
 * The input a tenant builtin skill's action gets: the properties its schema declares. A caller
 * such as a remediation step sends more (the recommended action), which the action never reads.
 */
export function declaredInput(skill: BuiltinSkill, input: unknown): unknown {
  if (input === null || typeof input !== 'object' || Array.isArray(input)) return input;
  const declared = Object.keys((skill.inputSchema.properties ?? {}) as Record<string, unknown>);
  return Object.fromEntries(Object.entries(input).filter(([key]) => declared.includes(key)));
}
