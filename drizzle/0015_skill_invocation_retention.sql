-- Skill invocation records are purged once no retry can need them (decision 162): the purge
-- walks this index oldest first. It locks writes to skill_invocations while it builds; on a
-- large table, build it first with CREATE INDEX CONCURRENTLY IF NOT EXISTS (same name and
-- column), and this then skips it.
CREATE INDEX IF NOT EXISTS "skill_invocations_created_idx" ON "skill_invocations" USING btree ("created_at");
