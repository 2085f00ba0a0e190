-- Notifications are purged after 30 days (decision 228): the purge walks this index oldest
-- first. It locks writes to notifications while it builds; on a large table, build it first
-- with CREATE INDEX CONCURRENTLY IF NOT EXISTS (same name and column), and this then skips it.
CREATE INDEX IF NOT EXISTS "notifications_created_idx" ON "notifications" USING btree ("created_at");
