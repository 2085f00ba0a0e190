-- Webhook delivery records are purged once no retry can be answered from them (decision 150):
-- a body-hash key after its 10-minute replay window, a tool's delivery id after 7 days. Each
-- purge walks its own partial index oldest first, so it reads only the rows it deletes.
-- These lock writes to webhook_deliveries while they build. On a large table, build them first
-- with CREATE INDEX CONCURRENTLY IF NOT EXISTS (same names, columns and predicates); this then
-- skips them.
CREATE INDEX IF NOT EXISTS "webhook_deliveries_body_created_idx" ON "webhook_deliveries" USING btree ("created_at") WHERE "webhook_deliveries"."delivery_key" like 'body:%';--> statement-breakpoint
CREATE INDEX IF NOT EXISTS "webhook_deliveries_id_created_idx" ON "webhook_deliveries" USING btree ("created_at") WHERE "webhook_deliveries"."delivery_key" like 'id:%';
