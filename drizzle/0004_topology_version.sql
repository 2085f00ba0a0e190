CREATE TABLE "topology_versions" (
	"tenant_id" text PRIMARY KEY NOT NULL,
	"version" bigint DEFAULT 0 NOT NULL
);
--> statement-breakpoint
ALTER TABLE "topology_versions" ADD CONSTRAINT "topology_versions_tenant_id_tenants_id_fk" FOREIGN KEY ("tenant_id") REFERENCES "public"."tenants"("id") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
CREATE FUNCTION "bump_topology_version"() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  INSERT INTO "topology_versions" ("tenant_id", "version")
  SELECT DISTINCT "tenant_id", 1 FROM "changed"
  ORDER BY 1
  ON CONFLICT ("tenant_id") DO UPDATE SET "version" = "topology_versions"."version" + 1;
  RETURN NULL;
END
$$;
--> statement-breakpoint
CREATE TRIGGER "services_insert_bumps_topology" AFTER INSERT ON "services" REFERENCING NEW TABLE AS "changed" FOR EACH STATEMENT EXECUTE FUNCTION "bump_topology_version"();
--> statement-breakpoint
CREATE TRIGGER "services_update_bumps_topology" AFTER UPDATE ON "services" REFERENCING NEW TABLE AS "changed" FOR EACH STATEMENT EXECUTE FUNCTION "bump_topology_version"();
--> statement-breakpoint
CREATE TRIGGER "services_delete_bumps_topology" AFTER DELETE ON "services" REFERENCING OLD TABLE AS "changed" FOR EACH STATEMENT EXECUTE FUNCTION "bump_topology_version"();
--> statement-breakpoint
CREATE TRIGGER "service_edges_insert_bumps_topology" AFTER INSERT ON "service_edges" REFERENCING NEW TABLE AS "changed" FOR EACH STATEMENT EXECUTE FUNCTION "bump_topology_version"();
--> statement-breakpoint
CREATE TRIGGER "service_edges_update_bumps_topology" AFTER UPDATE ON "service_edges" REFERENCING NEW TABLE AS "changed" FOR EACH STATEMENT EXECUTE FUNCTION "bump_topology_version"();
--> statement-breakpoint
CREATE TRIGGER "service_edges_delete_bumps_topology" AFTER DELETE ON "service_edges" REFERENCING OLD TABLE AS "changed" FOR EACH STATEMENT EXECUTE FUNCTION "bump_topology_version"();
