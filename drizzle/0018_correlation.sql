CREATE TABLE "alerts" (
	"id" text PRIMARY KEY NOT NULL,
	"tenant_id" text NOT NULL,
	"incident_id" text,
	"state" text NOT NULL,
	"provider" text NOT NULL,
	"fingerprint" text NOT NULL,
	"name" text NOT NULL,
	"service" text,
	"severity" text NOT NULL,
	"status" text NOT NULL,
	"title" text NOT NULL,
	"labels" jsonb DEFAULT '{}'::jsonb NOT NULL,
	"origins" jsonb DEFAULT '[]'::jsonb NOT NULL,
	"correlation" jsonb,
	"rule_id" text,
	"first_seen_at" timestamp (3) with time zone NOT NULL,
	"last_seen_at" timestamp (3) with time zone NOT NULL,
	"occurrence_count" integer DEFAULT 1 NOT NULL,
	"transitions" jsonb DEFAULT '[]'::jsonb NOT NULL,
	"flapping" boolean DEFAULT false NOT NULL,
	"created_at" timestamp (3) with time zone DEFAULT now() NOT NULL
);
--> statement-breakpoint
CREATE TABLE "correlation_rules" (
	"id" text PRIMARY KEY NOT NULL,
	"tenant_id" text NOT NULL,
	"name" text NOT NULL,
	"enabled" boolean DEFAULT true NOT NULL,
	"order" integer DEFAULT 100 NOT NULL,
	"match" jsonb DEFAULT '{}'::jsonb NOT NULL,
	"group_by" jsonb DEFAULT '[]'::jsonb NOT NULL,
	"min_alerts" integer DEFAULT 1 NOT NULL,
	"for_minutes" integer DEFAULT 0 NOT NULL,
	"action" text DEFAULT 'group' NOT NULL,
	"active_from" timestamp (3) with time zone,
	"active_until" timestamp (3) with time zone,
	"last_matched_at" timestamp (3) with time zone,
	"match_count" integer DEFAULT 0 NOT NULL,
	"created_at" timestamp (3) with time zone DEFAULT now() NOT NULL,
	"updated_at" timestamp (3) with time zone DEFAULT now() NOT NULL
);
--> statement-breakpoint
CREATE TABLE "notification_preferences" (
	"tenant_id" text NOT NULL,
	"user_id" text NOT NULL,
	"disabled_types" jsonb DEFAULT '[]'::jsonb NOT NULL,
	"min_severity" text DEFAULT 'low' NOT NULL,
	"updated_at" timestamp (3) with time zone DEFAULT now() NOT NULL
);
--> statement-breakpoint
ALTER TABLE "incidents" ADD COLUMN "merged_into" text;--> statement-breakpoint
ALTER TABLE "ingested_events" ADD COLUMN "alert_id" text;--> statement-breakpoint
ALTER TABLE "alerts" ADD CONSTRAINT "alerts_tenant_id_tenants_id_fk" FOREIGN KEY ("tenant_id") REFERENCES "public"."tenants"("id") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "alerts" ADD CONSTRAINT "alerts_incident_id_incidents_id_fk" FOREIGN KEY ("incident_id") REFERENCES "public"."incidents"("id") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "correlation_rules" ADD CONSTRAINT "correlation_rules_tenant_id_tenants_id_fk" FOREIGN KEY ("tenant_id") REFERENCES "public"."tenants"("id") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "notification_preferences" ADD CONSTRAINT "notification_preferences_tenant_id_tenants_id_fk" FOREIGN KEY ("tenant_id") REFERENCES "public"."tenants"("id") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
CREATE INDEX "alerts_incident_idx" ON "alerts" USING btree ("incident_id","first_seen_at","id");--> statement-breakpoint
CREATE INDEX "alerts_tenant_fingerprint_idx" ON "alerts" USING btree ("tenant_id","fingerprint","last_seen_at");--> statement-breakpoint
CREATE INDEX "alerts_tenant_state_idx" ON "alerts" USING btree ("tenant_id","state","first_seen_at","id");--> statement-breakpoint
CREATE INDEX "alerts_tenant_first_seen_idx" ON "alerts" USING btree ("tenant_id","first_seen_at","id");--> statement-breakpoint
CREATE INDEX "correlation_rules_tenant_order_idx" ON "correlation_rules" USING btree ("tenant_id","order","created_at","id");--> statement-breakpoint
CREATE UNIQUE INDEX "correlation_rules_tenant_name_idx" ON "correlation_rules" USING btree ("tenant_id","name");--> statement-breakpoint
CREATE UNIQUE INDEX "notification_preferences_user_idx" ON "notification_preferences" USING btree ("tenant_id","user_id");--> statement-breakpoint
CREATE INDEX "incidents_open_last_seen_idx" ON "incidents" USING btree ("tenant_id","last_seen_at") WHERE "incidents"."status" not in ('resolved', 'closed');--> statement-breakpoint
-- Every incident opened by an alert before grouping gets its alert record, so repeats keep counting on it.
INSERT INTO "alerts" ("id", "tenant_id", "incident_id", "state", "provider", "fingerprint", "name", "service", "severity", "status", "title", "labels", "correlation", "first_seen_at", "last_seen_at", "occurrence_count")
SELECT 'alt_' || substr(md5(i."id"), 1, 26), i."tenant_id", i."id", 'grouped', coalesce(e."provider", split_part(i."fingerprint", ':', 1)), i."fingerprint",
       coalesce(e."alert_name", i."title"), i."service", i."severity", CASE WHEN i."recovered_at" IS NULL THEN 'firing' ELSE 'resolved' END, i."title",
       coalesce(e."labels", '{}'::jsonb), '{"reason":"fingerprint"}'::jsonb, i."created_at", coalesce(i."last_seen_at", i."created_at"), i."occurrence_count"
FROM "incidents" i
LEFT JOIN LATERAL (
  SELECT ev."provider", ev."alert_name", ev."labels" FROM "ingested_events" ev
  WHERE ev."incident_id" = i."id" AND ev."kind" = 'alert' ORDER BY ev."occurred_at", ev."id" LIMIT 1
) e ON true
WHERE i."fingerprint" IS NOT NULL;--> statement-breakpoint
UPDATE "ingested_events" ev SET "alert_id" = a."id" FROM "alerts" a
WHERE ev."incident_id" = a."incident_id" AND ev."fingerprint" = a."fingerprint" AND ev."kind" = 'alert';
