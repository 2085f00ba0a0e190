import { and, asc, eq, gt, or } from 'drizzle-orm';
import { builtinSkills, type BuiltinSkill } from '../../skills/builtins.js';
import type { StoredHttpConfig } from '../../skills/invoke.js';
import type { Db } from '../client.js';
import { skills, type SkillRow } from '../schema/skills.js';

/**
 * Builtin skills have no creation time; they carry the epoch, which sorts them before every
 * tenant skill in the list (ordered by creation, oldest first) and keeps one keyset cursor.
 */
export const BUILTIN_CREATED_AT = new Date(0);

/** Header names in a stable order (jsonb does not keep the order they were sent in). */
export function sortedHeaderNames(headers: Record<string, unknown> | undefined): string[] {
  return Object.keys(headers ?? {}).sort((a, b) => a.toLowerCase().localeCompare(b.toLowerCase()));
}

/** The config as the api shows it: header names, never their values. */
function toConfigView(row: SkillRow) {
  if (row.type === 'http') {
    const config = row.config as unknown as StoredHttpConfig;
    return { url: config.url, method: config.method, headerNames: sortedHeaderNames(config.headers) };
  }
  const { action, provider } = row.config as { action?: string; provider?: string };
  return { ...(action !== undefined ? { action } : {}), ...(provider !== undefined ? { provider } : {}) };
}

export function toSkillView(row: SkillRow) {
  return {
    skillId: row.id,
    tenantId: row.tenantId,
    name: row.name,
    description: row.description,
    type: row.type,
    config: toConfigView(row),
    inputSchema: row.inputSchema ?? null,
    enabled: row.enabled,
    createdAt: row.createdAt.toISOString(),
    updatedAt: row.updatedAt.toISOString(),
  };
}

export type SkillView = ReturnType<typeof toSkillView>;

export function toBuiltinView(skill: BuiltinSkill, tenantId: string): SkillView {
  return {
    skillId: skill.skillId,
    tenantId,
    name: skill.name,
    description: skill.description,
    type: 'builtin',
    config: {},
    inputSchema: skill.inputSchema,
    enabled: true,
    createdAt: BUILTIN_CREATED_AT.toISOString(),
    updatedAt: BUILTIN_CREATED_AT.toISOString(),
  };
}

export async function findSkill(
  db: Pick<Db, 'select'>,
  tenantId: string,
  skillId: string,
): Promise<SkillRow | undefined> {
  const rows = await db
    .select()
    .from(skills)
    .where(and(eq(skills.tenantId, tenantId), eq(skills.id, skillId)))
    .limit(1);
  return rows[0];
}

/**
 * Builtins first (by id), then the tenant's skills oldest first; keyset over (created_at, id),
 * builtins at the epoch.
 */
export async function listSkills(db: Db, tenantId: string, limit: number, after?: { createdAt: Date; id: string }) {
  const afterBuiltins = after !== undefined && after.createdAt.getTime() > BUILTIN_CREATED_AT.getTime();
  const builtins = afterBuiltins
    ? []
    : [...builtinSkills]
        .sort((a, b) => (a.skillId < b.skillId ? -1 : 1))
        .filter((s) => after === undefined || s.skillId > after.id)
        .map((s) => ({ view: toBuiltinView(s, tenantId), createdAt: BUILTIN_CREATED_AT, id: s.skillId }));
  const rows = await db
    .select()
    .from(skills)
    .where(
      and(
        eq(skills.tenantId, tenantId),
        after && afterBuiltins
          ? or(
              gt(skills.createdAt, after.createdAt),
              and(eq(skills.createdAt, after.createdAt), gt(skills.id, after.id)),
            )
          : undefined,
      ),
    )
    .orderBy(asc(skills.createdAt), asc(skills.id))
    .limit(limit + 1);
  const all = [...builtins, ...rows.map((row) => ({ view: toSkillView(row), createdAt: row.createdAt, id: row.id }))];
  return { items: all.slice(0, limit), hasMore: all.length > limit };
}
