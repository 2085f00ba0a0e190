-- Full-text search documents for the assistant's retrieval (tsvector + GIN). They are not in the
-- Drizzle schema on purpose: whole-row reads of these tables never carry them.
ALTER TABLE "incidents" ADD COLUMN "search" tsvector GENERATED ALWAYS AS (
  setweight(to_tsvector('english'::regconfig, "title" || ' ' || coalesce("service", '')), 'A') ||
  setweight(to_tsvector('english'::regconfig, "description" || ' ' || coalesce("root_cause", '')), 'B')) STORED;
--> statement-breakpoint
CREATE INDEX "incidents_search_idx" ON "incidents" USING gin ("search");
--> statement-breakpoint
ALTER TABLE "investigations" ADD COLUMN "search" tsvector GENERATED ALWAYS AS (
  setweight(to_tsvector('english'::regconfig, coalesce("root_cause", '')), 'A') ||
  setweight(to_tsvector('english'::regconfig, "recommended_actions"::text), 'B') ||
  setweight(to_tsvector('english'::regconfig, "findings"::text), 'C')) STORED;
--> statement-breakpoint
CREATE INDEX "investigations_search_idx" ON "investigations" USING gin ("search");
--> statement-breakpoint
ALTER TABLE "evidence_items" ADD COLUMN "search" tsvector GENERATED ALWAYS AS (
  setweight(to_tsvector('english'::regconfig, "summary"), 'A') ||
  setweight(to_tsvector('english'::regconfig, "source"), 'B') ||
  setweight(to_tsvector('english'::regconfig, left("raw_snippet", 4000)), 'C')) STORED;
--> statement-breakpoint
CREATE INDEX "evidence_items_search_idx" ON "evidence_items" USING gin ("search");
--> statement-breakpoint
ALTER TABLE "runbooks" ADD COLUMN "search" tsvector GENERATED ALWAYS AS (
  setweight(to_tsvector('english'::regconfig, "title" || ' ' || coalesce("service", '')), 'A') ||
  setweight(to_tsvector('english'::regconfig, "tags"::text), 'B') ||
  setweight(to_tsvector('english'::regconfig, "content"), 'C')) STORED;
--> statement-breakpoint
CREATE INDEX "runbooks_search_idx" ON "runbooks" USING gin ("search");
--> statement-breakpoint
ALTER TABLE "patterns" ADD COLUMN "search" tsvector GENERATED ALWAYS AS (
  setweight(to_tsvector('english'::regconfig, "title" || ' ' || coalesce("service", '')), 'A') ||
  setweight(to_tsvector('english'::regconfig, "root_cause" || ' ' || "category" || ' ' || "alert_names"::text), 'B') ||
  setweight(to_tsvector('english'::regconfig, "fix"::text), 'C')) STORED;
--> statement-breakpoint
CREATE INDEX "patterns_search_idx" ON "patterns" USING gin ("search");
--> statement-breakpoint
-- Tamper-evident audit log: every tenant's entries form a SHA-256 hash chain.
-- hash = sha256(prev_hash || chr(30) || canonical content), hex; the first entry's prev_hash is 64 zeros.
-- The canonical content (version 'v1') joins these fields with chr(31): 'v1', tenant_id, seq, id,
-- occurred_at (UTC, millisecond ISO 8601), actor_type, actor_id, action, target_type, target_id,
-- incident_id, request_id, workflow_id, history_event_id ('' when null) and details as
-- PostgreSQL renders jsonb as text (keys sorted, normalised spacing).
CREATE FUNCTION "audit_entry_hash"(a "audit_log") RETURNS text LANGUAGE sql STABLE AS $$
  SELECT encode(sha256(convert_to(a.prev_hash || chr(30) || concat_ws(chr(31),
    'v1', a.tenant_id, a.seq::text, a.id,
    to_char(a.occurred_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"'),
    a.actor_type, a.actor_id, a.action, a.target_type, a.target_id,
    coalesce(a.incident_id, ''), coalesce(a.request_id, ''), coalesce(a.workflow_id, ''),
    coalesce(a.history_event_id::text, ''), a.details::text), 'UTF8')), 'hex')
$$;
--> statement-breakpoint
-- Seal the entries already written, per tenant in (occurred_at, id) order.
DO $$
DECLARE
  t text;
  r "audit_log";
  prev text;
  n bigint;
BEGIN
  FOR t IN SELECT DISTINCT "tenant_id" FROM "audit_log" ORDER BY 1 LOOP
    prev := repeat('0', 64);
    n := 0;
    FOR r IN SELECT * FROM "audit_log" WHERE "tenant_id" = t ORDER BY "occurred_at", "id" LOOP
      n := n + 1;
      r.seq := n;
      r.prev_hash := prev;
      r.hash := "audit_entry_hash"(r);
      UPDATE "audit_log" SET "seq" = r.seq, "prev_hash" = r.prev_hash, "hash" = r.hash WHERE "id" = r.id;
      prev := r.hash;
    END LOOP;
    INSERT INTO "audit_chain_heads" ("tenant_id", "last_seq", "last_hash") VALUES (t, n, prev);
  END LOOP;
END
$$;
--> statement-breakpoint
-- Sealing runs at commit (a deferred constraint trigger), so the head row lock that serialises a
-- tenant's chain is the last lock a transaction takes and is held only while it commits: chains
-- are written in commit order, without races, and without deadlocks against other row locks.
CREATE FUNCTION "audit_seal"() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
  head_seq bigint;
  head_hash text;
  r "audit_log";
BEGIN
  SELECT "last_seq", "last_hash" INTO head_seq, head_hash FROM "audit_chain_heads" WHERE "tenant_id" = NEW.tenant_id FOR UPDATE;
  IF NOT FOUND THEN
    INSERT INTO "audit_chain_heads" ("tenant_id", "last_seq", "last_hash") VALUES (NEW.tenant_id, 0, repeat('0', 64)) ON CONFLICT DO NOTHING;
    SELECT "last_seq", "last_hash" INTO head_seq, head_hash FROM "audit_chain_heads" WHERE "tenant_id" = NEW.tenant_id FOR UPDATE;
  END IF;
  r := NEW;
  r.seq := head_seq + 1;
  r.prev_hash := head_hash;
  r.hash := "audit_entry_hash"(r);
  UPDATE "audit_log" SET "seq" = r.seq, "prev_hash" = r.prev_hash, "hash" = r.hash WHERE "id" = NEW.id;
  UPDATE "audit_chain_heads" SET "last_seq" = r.seq, "last_hash" = r.hash WHERE "tenant_id" = NEW.tenant_id;
  RETURN NULL;
END
$$;
--> statement-breakpoint
CREATE CONSTRAINT TRIGGER "audit_log_seal" AFTER INSERT ON "audit_log" DEFERRABLE INITIALLY DEFERRED FOR EACH ROW EXECUTE FUNCTION "audit_seal"();
--> statement-breakpoint
-- Sealed entries are append-only for the application: an update or delete is refused. (A
-- superuser can still bypass triggers; the chain then shows the change.)
CREATE FUNCTION "audit_append_only"() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF TG_OP = 'UPDATE' AND OLD.seq IS NULL THEN
    RETURN NEW; -- the seal itself
  END IF;
  RAISE EXCEPTION 'audit_log is append-only (% of %)', TG_OP, OLD.id USING ERRCODE = 'insufficient_privilege';
END
$$;
--> statement-breakpoint
CREATE TRIGGER "audit_log_append_only" BEFORE UPDATE OR DELETE ON "audit_log" FOR EACH ROW EXECUTE FUNCTION "audit_append_only"();
