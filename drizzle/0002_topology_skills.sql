CREATE TABLE "service_edges" (
	"id" text PRIMARY KEY NOT NULL,
	"tenant_id" text NOT NULL,
	"source_service_id" text NOT NULL,
	"target_service_id" text NOT NULL,
	"created_at" timestamp (3) with time zone DEFAULT now() NOT NULL,
	CONSTRAINT "service_edges_no_self_edge" CHECK ("service_edges"."source_service_id" <> "service_edges"."target_service_id")
);
--> statement-breakpoint
CREATE TABLE "services" (
	"id" text PRIMARY KEY NOT NULL,
	"tenant_id" text NOT NULL,
	"name" text NOT NULL,
	"type" text NOT NULL,
	"team" text,
	"criticality" integer DEFAULT 5 NOT NULL,
	"created_at" timestamp (3) with time zone DEFAULT now() NOT NULL,
	"updated_at" timestamp (3) with time zone DEFAULT now() NOT NULL,
	CONSTRAINT "services_criticality_range" CHECK ("services"."criticality" between 1 and 10)
);
--> statement-breakpoint
CREATE TABLE "skill_invocations" (
	"id" text PRIMARY KEY NOT NULL,
	"tenant_id" text NOT NULL,
	"skill_id" text NOT NULL,
	"skill_name" text NOT NULL,
	"idempotency_key" text,
	"status" text NOT NULL,
	"input" jsonb NOT NULL,
	"output" jsonb,
	"error" jsonb,
	"duration_ms" integer NOT NULL,
	"created_at" timestamp (3) with time zone DEFAULT now() NOT NULL,
	CONSTRAINT "skill_invocations_idempotency_key_unique" UNIQUE("idempotency_key")
);
--> statement-breakpoint
CREATE TABLE "skills" (
	"id" text PRIMARY KEY NOT NULL,
	"tenant_id" text NOT NULL,
	"name" text NOT NULL,
	"description" text NOT NULL,
	"type" text NOT NULL,
	"config" jsonb NOT NULL,
	"input_schema" jsonb,
	"enabled" boolean DEFAULT true NOT NULL,
	"created_at" timestamp (3) with time zone DEFAULT now() NOT NULL,
	"updated_at" timestamp (3) with time zone DEFAULT now() NOT NULL
);
--> statement-breakpoint
ALTER TABLE "incidents" ADD COLUMN "service_id" text;--> statement-breakpoint
ALTER TABLE "incidents" ADD COLUMN "owner_team" text;--> statement-breakpoint
ALTER TABLE "incidents" ADD COLUMN "immediate_attention" boolean DEFAULT false NOT NULL;--> statement-breakpoint
ALTER TABLE "service_edges" ADD CONSTRAINT "service_edges_tenant_id_tenants_id_fk" FOREIGN KEY ("tenant_id") REFERENCES "public"."tenants"("id") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "service_edges" ADD CONSTRAINT "service_edges_source_service_id_services_id_fk" FOREIGN KEY ("source_service_id") REFERENCES "public"."services"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "service_edges" ADD CONSTRAINT "service_edges_target_service_id_services_id_fk" FOREIGN KEY ("target_service_id") REFERENCES "public"."services"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "services" ADD CONSTRAINT "services_tenant_id_tenants_id_fk" FOREIGN KEY ("tenant_id") REFERENCES "public"."tenants"("id") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "skill_invocations" ADD CONSTRAINT "skill_invocations_tenant_id_tenants_id_fk" FOREIGN KEY ("tenant_id") REFERENCES "public"."tenants"("id") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "skills" ADD CONSTRAINT "skills_tenant_id_tenants_id_fk" FOREIGN KEY ("tenant_id") REFERENCES "public"."tenants"("id") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
CREATE UNIQUE INDEX "service_edges_pair_idx" ON "service_edges" USING btree ("tenant_id","source_service_id","target_service_id");--> statement-breakpoint
CREATE INDEX "service_edges_target_idx" ON "service_edges" USING btree ("tenant_id","target_service_id","source_service_id");--> statement-breakpoint
CREATE INDEX "service_edges_tenant_created_idx" ON "service_edges" USING btree ("tenant_id","created_at","id");--> statement-breakpoint
CREATE UNIQUE INDEX "services_tenant_name_idx" ON "services" USING btree ("tenant_id","name");--> statement-breakpoint
CREATE INDEX "services_tenant_created_idx" ON "services" USING btree ("tenant_id","created_at","id");--> statement-breakpoint
CREATE INDEX "skill_invocations_tenant_created_idx" ON "skill_invocations" USING btree ("tenant_id","created_at","id");--> statement-breakpoint
CREATE UNIQUE INDEX "skills_tenant_name_idx" ON "skills" USING btree ("tenant_id","name");--> statement-breakpoint
CREATE INDEX "skills_tenant_created_idx" ON "skills" USING btree ("tenant_id","created_at","id");