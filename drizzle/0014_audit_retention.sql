-- Audit retention (decision 152): a tenant's oldest entries past its plan's retention are purged
-- from the start of its chain. The chain head records how far (purged_seq) and the last purged
-- entry's hash (purged_hash), which the first remaining entry links to, so verification still
-- proves the rest of the chain and any other deletion still shows as a gap.
ALTER TABLE "audit_chain_heads" ADD COLUMN "purged_seq" bigint DEFAULT 0 NOT NULL;--> statement-breakpoint
ALTER TABLE "audit_chain_heads" ADD COLUMN "purged_hash" text;--> statement-breakpoint
-- Sealed entries stay append-only, except that an entry may be deleted once the head records it
-- as purged, and never before it is 30 days old (the shortest plan retention), whatever the head
-- says. (A superuser can still bypass triggers; the chain then shows the change.)
CREATE OR REPLACE FUNCTION "audit_append_only"() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF TG_OP = 'UPDATE' AND OLD.seq IS NULL THEN
    RETURN NEW; -- the seal itself
  END IF;
  IF TG_OP = 'DELETE' AND OLD.seq IS NOT NULL AND OLD.occurred_at < now() - interval '30 days'
     AND OLD.seq <= (SELECT "purged_seq" FROM "audit_chain_heads" WHERE "tenant_id" = OLD.tenant_id) THEN
    RETURN OLD; -- retention
  END IF;
  RAISE EXCEPTION 'audit_log is append-only (% of %)', TG_OP, OLD.id USING ERRCODE = 'insufficient_privilege';
END
$$;
