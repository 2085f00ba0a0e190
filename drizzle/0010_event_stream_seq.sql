ALTER TABLE "events" ADD COLUMN "stream_seq" bigint;--> statement-breakpoint
ALTER TABLE "audit_chain_heads" ADD COLUMN "last_stream_seq" bigint DEFAULT 0 NOT NULL;--> statement-breakpoint
CREATE UNIQUE INDEX "events_tenant_stream_seq_idx" ON "events" USING btree ("tenant_id","stream_seq");--> statement-breakpoint
-- Number the events already written, per tenant in seq order.
UPDATE "events" e SET "stream_seq" = n.rn
FROM (SELECT "seq", row_number() OVER (PARTITION BY "tenant_id" ORDER BY "seq") AS rn FROM "events") n
WHERE e."seq" = n."seq";
--> statement-breakpoint
INSERT INTO "audit_chain_heads" ("tenant_id", "last_seq", "last_hash", "last_stream_seq")
SELECT "tenant_id", 0, repeat('0', 64), max("stream_seq") FROM "events" GROUP BY "tenant_id"
ON CONFLICT ("tenant_id") DO UPDATE SET "last_stream_seq" = excluded."last_stream_seq";
--> statement-breakpoint
-- At commit, under the tenant's commit-head lock (the one that seals the audit chain, so a
-- transaction writing both takes one lock): the event's position in its tenant's stream, in
-- commit order, announced to the listeners (`tenantId:streamSeq`, delivered at commit).
CREATE FUNCTION "events_seal"() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
  next_seq bigint;
BEGIN
  UPDATE "audit_chain_heads" SET "last_stream_seq" = "last_stream_seq" + 1 WHERE "tenant_id" = NEW.tenant_id RETURNING "last_stream_seq" INTO next_seq;
  IF NOT FOUND THEN
    INSERT INTO "audit_chain_heads" ("tenant_id", "last_seq", "last_hash", "last_stream_seq") VALUES (NEW.tenant_id, 0, repeat('0', 64), 0) ON CONFLICT DO NOTHING;
    UPDATE "audit_chain_heads" SET "last_stream_seq" = "last_stream_seq" + 1 WHERE "tenant_id" = NEW.tenant_id RETURNING "last_stream_seq" INTO next_seq;
  END IF;
  UPDATE "events" SET "stream_seq" = next_seq WHERE "seq" = NEW.seq;
  PERFORM pg_notify('incident_events', NEW.tenant_id || ':' || next_seq);
  RETURN NULL;
END
$$;
--> statement-breakpoint
CREATE CONSTRAINT TRIGGER "events_seal" AFTER INSERT ON "events" DEFERRABLE INITIALLY DEFERRED FOR EACH ROW EXECUTE FUNCTION "events_seal"();
