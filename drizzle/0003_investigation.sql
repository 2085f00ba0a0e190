CREATE TABLE "evidence_items" (
	"id" text PRIMARY KEY NOT NULL,
	"tenant_id" text NOT NULL,
	"incident_id" text NOT NULL,
	"agent_role" text NOT NULL,
	"type" text NOT NULL,
	"source" text NOT NULL,
	"summary" text NOT NULL,
	"severity" text NOT NULL,
	"occurred_at" timestamp (3) with time zone NOT NULL,
	"raw_snippet" text NOT NULL,
	"dedupe_key" text NOT NULL,
	"created_at" timestamp (3) with time zone DEFAULT now() NOT NULL
);
--> statement-breakpoint
CREATE TABLE "investigation_context" (
	"tenant_id" text NOT NULL,
	"incident_id" text NOT NULL,
	"seq" integer NOT NULL,
	"content" text NOT NULL,
	"actor_id" text NOT NULL,
	"created_at" timestamp (3) with time zone DEFAULT now() NOT NULL,
	CONSTRAINT "investigation_context_incident_id_seq_pk" PRIMARY KEY("incident_id","seq")
);
--> statement-breakpoint
CREATE TABLE "investigations" (
	"incident_id" text PRIMARY KEY NOT NULL,
	"tenant_id" text NOT NULL,
	"status" text NOT NULL,
	"root_cause" text,
	"confidence" double precision DEFAULT 0 NOT NULL,
	"recommended_actions" jsonb DEFAULT '[]'::jsonb NOT NULL,
	"findings" jsonb DEFAULT '[]'::jsonb NOT NULL,
	"hypotheses" jsonb DEFAULT '[]'::jsonb NOT NULL,
	"failure" text,
	"model" text,
	"tokens_used" integer DEFAULT 0 NOT NULL,
	"cost_usd" double precision DEFAULT 0 NOT NULL,
	"run" integer DEFAULT 1 NOT NULL,
	"started_at" timestamp (3) with time zone DEFAULT now() NOT NULL,
	"completed_at" timestamp (3) with time zone,
	"updated_at" timestamp (3) with time zone DEFAULT now() NOT NULL
);
--> statement-breakpoint
CREATE TABLE "runbooks" (
	"id" text PRIMARY KEY NOT NULL,
	"tenant_id" text NOT NULL,
	"title" text NOT NULL,
	"service" text,
	"tags" jsonb DEFAULT '[]'::jsonb NOT NULL,
	"content" text NOT NULL,
	"created_at" timestamp (3) with time zone DEFAULT now() NOT NULL,
	"updated_at" timestamp (3) with time zone DEFAULT now() NOT NULL
);
--> statement-breakpoint
CREATE TABLE "triage_results" (
	"incident_id" text PRIMARY KEY NOT NULL,
	"tenant_id" text NOT NULL,
	"priority" text NOT NULL,
	"summary" text NOT NULL,
	"confidence" double precision NOT NULL,
	"reasoning" text NOT NULL,
	"suggested_agents" jsonb NOT NULL,
	"model" text NOT NULL,
	"tokens_used" integer DEFAULT 0 NOT NULL,
	"cost_usd" double precision DEFAULT 0 NOT NULL,
	"run" integer DEFAULT 1 NOT NULL,
	"created_at" timestamp (3) with time zone DEFAULT now() NOT NULL,
	"updated_at" timestamp (3) with time zone DEFAULT now() NOT NULL
);
--> statement-breakpoint
ALTER TABLE "evidence_items" ADD CONSTRAINT "evidence_items_tenant_id_tenants_id_fk" FOREIGN KEY ("tenant_id") REFERENCES "public"."tenants"("id") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "evidence_items" ADD CONSTRAINT "evidence_items_incident_id_incidents_id_fk" FOREIGN KEY ("incident_id") REFERENCES "public"."incidents"("id") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "investigation_context" ADD CONSTRAINT "investigation_context_tenant_id_tenants_id_fk" FOREIGN KEY ("tenant_id") REFERENCES "public"."tenants"("id") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "investigation_context" ADD CONSTRAINT "investigation_context_incident_id_incidents_id_fk" FOREIGN KEY ("incident_id") REFERENCES "public"."incidents"("id") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "investigations" ADD CONSTRAINT "investigations_incident_id_incidents_id_fk" FOREIGN KEY ("incident_id") REFERENCES "public"."incidents"("id") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "investigations" ADD CONSTRAINT "investigations_tenant_id_tenants_id_fk" FOREIGN KEY ("tenant_id") REFERENCES "public"."tenants"("id") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "runbooks" ADD CONSTRAINT "runbooks_tenant_id_tenants_id_fk" FOREIGN KEY ("tenant_id") REFERENCES "public"."tenants"("id") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "triage_results" ADD CONSTRAINT "triage_results_incident_id_incidents_id_fk" FOREIGN KEY ("incident_id") REFERENCES "public"."incidents"("id") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "triage_results" ADD CONSTRAINT "triage_results_tenant_id_tenants_id_fk" FOREIGN KEY ("tenant_id") REFERENCES "public"."tenants"("id") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
CREATE UNIQUE INDEX "evidence_items_dedupe_idx" ON "evidence_items" USING btree ("incident_id","dedupe_key");--> statement-breakpoint
CREATE INDEX "evidence_items_incident_created_idx" ON "evidence_items" USING btree ("tenant_id","incident_id","created_at","id");--> statement-breakpoint
CREATE INDEX "evidence_items_incident_type_idx" ON "evidence_items" USING btree ("tenant_id","incident_id","type","created_at","id");--> statement-breakpoint
CREATE INDEX "investigations_tenant_status_idx" ON "investigations" USING btree ("tenant_id","status");--> statement-breakpoint
CREATE INDEX "runbooks_tenant_created_idx" ON "runbooks" USING btree ("tenant_id","created_at","id");--> statement-breakpoint
CREATE INDEX "runbooks_tenant_service_idx" ON "runbooks" USING btree ("tenant_id","service");--> statement-breakpoint
CREATE INDEX "triage_results_tenant_idx" ON "triage_results" USING btree ("tenant_id");