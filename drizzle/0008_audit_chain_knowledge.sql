CREATE TABLE "audit_chain_heads" (
	"tenant_id" text PRIMARY KEY NOT NULL,
	"last_seq" bigint DEFAULT 0 NOT NULL,
	"last_hash" text NOT NULL
);
--> statement-breakpoint
CREATE TABLE "audit_exports" (
	"id" text PRIMARY KEY NOT NULL,
	"tenant_id" text NOT NULL,
	"status" text DEFAULT 'queued' NOT NULL,
	"format" text NOT NULL,
	"range_from" timestamp (3) with time zone NOT NULL,
	"range_to" timestamp (3) with time zone NOT NULL,
	"filters" jsonb DEFAULT '{}'::jsonb NOT NULL,
	"destination" jsonb,
	"estimated_rows" integer DEFAULT 0 NOT NULL,
	"row_count" integer,
	"bytes" bigint,
	"location" text,
	"failure" text,
	"requested_by" text NOT NULL,
	"submitted_at" timestamp (3) with time zone DEFAULT now() NOT NULL,
	"started_at" timestamp (3) with time zone,
	"completed_at" timestamp (3) with time zone,
	"workflow_started_at" timestamp (3) with time zone
);
--> statement-breakpoint
CREATE TABLE "chat_messages" (
	"id" text PRIMARY KEY NOT NULL,
	"tenant_id" text NOT NULL,
	"session_id" text NOT NULL,
	"role" text NOT NULL,
	"content" text NOT NULL,
	"sources" jsonb DEFAULT '[]'::jsonb NOT NULL,
	"model" text,
	"tokens_used" integer DEFAULT 0 NOT NULL,
	"cost_usd" double precision DEFAULT 0 NOT NULL,
	"created_at" timestamp (3) with time zone DEFAULT now() NOT NULL
);
--> statement-breakpoint
CREATE TABLE "chat_sessions" (
	"id" text PRIMARY KEY NOT NULL,
	"tenant_id" text NOT NULL,
	"user_id" text NOT NULL,
	"incident_id" text,
	"title" text NOT NULL,
	"message_count" integer DEFAULT 0 NOT NULL,
	"created_at" timestamp (3) with time zone DEFAULT now() NOT NULL,
	"updated_at" timestamp (3) with time zone DEFAULT now() NOT NULL
);
--> statement-breakpoint
CREATE TABLE "feedback" (
	"id" text PRIMARY KEY NOT NULL,
	"tenant_id" text NOT NULL,
	"incident_id" text NOT NULL,
	"pattern_id" text,
	"pattern_key" text DEFAULT '' NOT NULL,
	"user_id" text NOT NULL,
	"type" text NOT NULL,
	"comment" text,
	"updated_confidence" double precision,
	"created_at" timestamp (3) with time zone DEFAULT now() NOT NULL,
	"updated_at" timestamp (3) with time zone DEFAULT now() NOT NULL
);
--> statement-breakpoint
CREATE TABLE "pattern_occurrences" (
	"pattern_id" text NOT NULL,
	"incident_id" text NOT NULL,
	"tenant_id" text NOT NULL,
	"created_at" timestamp (3) with time zone DEFAULT now() NOT NULL,
	CONSTRAINT "pattern_occurrences_pattern_id_incident_id_pk" PRIMARY KEY("pattern_id","incident_id")
);
--> statement-breakpoint
CREATE TABLE "patterns" (
	"id" text PRIMARY KEY NOT NULL,
	"tenant_id" text NOT NULL,
	"title" text NOT NULL,
	"signature_key" text NOT NULL,
	"service" text,
	"alert_names" jsonb DEFAULT '[]'::jsonb NOT NULL,
	"labels" jsonb DEFAULT '{}'::jsonb NOT NULL,
	"category" text NOT NULL,
	"evidence_types" jsonb DEFAULT '[]'::jsonb NOT NULL,
	"root_cause" text NOT NULL,
	"fix" jsonb DEFAULT '[]'::jsonb NOT NULL,
	"confirms" integer DEFAULT 0 NOT NULL,
	"rejects" integer DEFAULT 0 NOT NULL,
	"occurrences" integer DEFAULT 0 NOT NULL,
	"confidence" double precision DEFAULT 0.5 NOT NULL,
	"status" text DEFAULT 'emerging' NOT NULL,
	"created_at" timestamp (3) with time zone DEFAULT now() NOT NULL,
	"last_seen_at" timestamp (3) with time zone DEFAULT now() NOT NULL,
	"updated_at" timestamp (3) with time zone DEFAULT now() NOT NULL
);
--> statement-breakpoint
CREATE TABLE "root_cause_revisions" (
	"id" text PRIMARY KEY NOT NULL,
	"tenant_id" text NOT NULL,
	"incident_id" text NOT NULL,
	"previous_root_cause" text,
	"root_cause" text NOT NULL,
	"source" text NOT NULL,
	"actor_id" text NOT NULL,
	"created_at" timestamp (3) with time zone DEFAULT now() NOT NULL
);
--> statement-breakpoint
ALTER TABLE "audit_log" ADD COLUMN "history_event_id" integer;--> statement-breakpoint
ALTER TABLE "audit_log" ADD COLUMN "seq" bigint;--> statement-breakpoint
ALTER TABLE "audit_log" ADD COLUMN "prev_hash" text;--> statement-breakpoint
ALTER TABLE "audit_log" ADD COLUMN "hash" text;--> statement-breakpoint
ALTER TABLE "audit_chain_heads" ADD CONSTRAINT "audit_chain_heads_tenant_id_tenants_id_fk" FOREIGN KEY ("tenant_id") REFERENCES "public"."tenants"("id") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "audit_exports" ADD CONSTRAINT "audit_exports_tenant_id_tenants_id_fk" FOREIGN KEY ("tenant_id") REFERENCES "public"."tenants"("id") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "chat_messages" ADD CONSTRAINT "chat_messages_tenant_id_tenants_id_fk" FOREIGN KEY ("tenant_id") REFERENCES "public"."tenants"("id") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "chat_messages" ADD CONSTRAINT "chat_messages_session_id_chat_sessions_id_fk" FOREIGN KEY ("session_id") REFERENCES "public"."chat_sessions"("id") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "chat_sessions" ADD CONSTRAINT "chat_sessions_tenant_id_tenants_id_fk" FOREIGN KEY ("tenant_id") REFERENCES "public"."tenants"("id") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "chat_sessions" ADD CONSTRAINT "chat_sessions_incident_id_incidents_id_fk" FOREIGN KEY ("incident_id") REFERENCES "public"."incidents"("id") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "feedback" ADD CONSTRAINT "feedback_tenant_id_tenants_id_fk" FOREIGN KEY ("tenant_id") REFERENCES "public"."tenants"("id") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "feedback" ADD CONSTRAINT "feedback_incident_id_incidents_id_fk" FOREIGN KEY ("incident_id") REFERENCES "public"."incidents"("id") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "feedback" ADD CONSTRAINT "feedback_pattern_id_patterns_id_fk" FOREIGN KEY ("pattern_id") REFERENCES "public"."patterns"("id") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "pattern_occurrences" ADD CONSTRAINT "pattern_occurrences_pattern_id_patterns_id_fk" FOREIGN KEY ("pattern_id") REFERENCES "public"."patterns"("id") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "pattern_occurrences" ADD CONSTRAINT "pattern_occurrences_incident_id_incidents_id_fk" FOREIGN KEY ("incident_id") REFERENCES "public"."incidents"("id") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "pattern_occurrences" ADD CONSTRAINT "pattern_occurrences_tenant_id_tenants_id_fk" FOREIGN KEY ("tenant_id") REFERENCES "public"."tenants"("id") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "patterns" ADD CONSTRAINT "patterns_tenant_id_tenants_id_fk" FOREIGN KEY ("tenant_id") REFERENCES "public"."tenants"("id") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "root_cause_revisions" ADD CONSTRAINT "root_cause_revisions_tenant_id_tenants_id_fk" FOREIGN KEY ("tenant_id") REFERENCES "public"."tenants"("id") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "root_cause_revisions" ADD CONSTRAINT "root_cause_revisions_incident_id_incidents_id_fk" FOREIGN KEY ("incident_id") REFERENCES "public"."incidents"("id") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
CREATE INDEX "audit_exports_tenant_submitted_idx" ON "audit_exports" USING btree ("tenant_id","submitted_at","id");--> statement-breakpoint
CREATE INDEX "audit_exports_unstarted_idx" ON "audit_exports" USING btree ("submitted_at") WHERE "audit_exports"."workflow_started_at" is null;--> statement-breakpoint
CREATE INDEX "chat_messages_session_idx" ON "chat_messages" USING btree ("session_id","created_at","id");--> statement-breakpoint
CREATE INDEX "chat_sessions_user_idx" ON "chat_sessions" USING btree ("tenant_id","user_id","created_at","id");--> statement-breakpoint
CREATE UNIQUE INDEX "feedback_verdict_idx" ON "feedback" USING btree ("incident_id","user_id","pattern_key");--> statement-breakpoint
CREATE INDEX "feedback_tenant_created_idx" ON "feedback" USING btree ("tenant_id","created_at","id");--> statement-breakpoint
CREATE INDEX "pattern_occurrences_incident_idx" ON "pattern_occurrences" USING btree ("tenant_id","incident_id");--> statement-breakpoint
CREATE UNIQUE INDEX "patterns_tenant_signature_idx" ON "patterns" USING btree ("tenant_id","signature_key");--> statement-breakpoint
CREATE INDEX "patterns_tenant_created_idx" ON "patterns" USING btree ("tenant_id","created_at","id");--> statement-breakpoint
CREATE INDEX "root_cause_revisions_incident_idx" ON "root_cause_revisions" USING btree ("tenant_id","incident_id","created_at");--> statement-breakpoint
CREATE UNIQUE INDEX "audit_tenant_seq_idx" ON "audit_log" USING btree ("tenant_id","seq");--> statement-breakpoint
CREATE INDEX "audit_tenant_incident_idx" ON "audit_log" USING btree ("tenant_id","incident_id","occurred_at","id") WHERE "audit_log"."incident_id" is not null;