CREATE TABLE "api_keys" (
	"id" text PRIMARY KEY NOT NULL,
	"tenant_id" text NOT NULL,
	"name" text NOT NULL,
	"key_hash" text NOT NULL,
	"prefix" text NOT NULL,
	"signing_secret" text NOT NULL,
	"created_at" timestamp (3) with time zone DEFAULT now() NOT NULL,
	"last_used_at" timestamp (3) with time zone,
	"revoked_at" timestamp (3) with time zone,
	CONSTRAINT "api_keys_key_hash_unique" UNIQUE("key_hash")
);
--> statement-breakpoint
CREATE TABLE "ingested_events" (
	"id" text PRIMARY KEY NOT NULL,
	"tenant_id" text NOT NULL,
	"provider" text NOT NULL,
	"kind" text NOT NULL,
	"status" text,
	"fingerprint" text,
	"alert_name" text,
	"service" text,
	"severity" text,
	"title" text NOT NULL,
	"description" text NOT NULL,
	"labels" jsonb DEFAULT '{}'::jsonb NOT NULL,
	"raw" jsonb NOT NULL,
	"occurred_at" timestamp (3) with time zone NOT NULL,
	"received_at" timestamp (3) with time zone DEFAULT now() NOT NULL,
	"incident_id" text,
	"delivered_at" timestamp (3) with time zone
);
--> statement-breakpoint
CREATE TABLE "webhook_deliveries" (
	"tenant_id" text NOT NULL,
	"provider" text NOT NULL,
	"delivery_key" text NOT NULL,
	"response" jsonb,
	"created_at" timestamp (3) with time zone DEFAULT now() NOT NULL,
	CONSTRAINT "webhook_deliveries_tenant_id_provider_delivery_key_pk" PRIMARY KEY("tenant_id","provider","delivery_key")
);
--> statement-breakpoint
ALTER TABLE "incidents" ADD COLUMN "fingerprint" text;--> statement-breakpoint
ALTER TABLE "incidents" ADD COLUMN "service" text;--> statement-breakpoint
ALTER TABLE "incidents" ADD COLUMN "occurrence_count" integer DEFAULT 1 NOT NULL;--> statement-breakpoint
ALTER TABLE "incidents" ADD COLUMN "last_seen_at" timestamp (3) with time zone;--> statement-breakpoint
ALTER TABLE "incidents" ADD COLUMN "recovered_at" timestamp (3) with time zone;--> statement-breakpoint
ALTER TABLE "api_keys" ADD CONSTRAINT "api_keys_tenant_id_tenants_id_fk" FOREIGN KEY ("tenant_id") REFERENCES "public"."tenants"("id") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "ingested_events" ADD CONSTRAINT "ingested_events_tenant_id_tenants_id_fk" FOREIGN KEY ("tenant_id") REFERENCES "public"."tenants"("id") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "ingested_events" ADD CONSTRAINT "ingested_events_incident_id_incidents_id_fk" FOREIGN KEY ("incident_id") REFERENCES "public"."incidents"("id") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "webhook_deliveries" ADD CONSTRAINT "webhook_deliveries_tenant_id_tenants_id_fk" FOREIGN KEY ("tenant_id") REFERENCES "public"."tenants"("id") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
CREATE INDEX "api_keys_tenant_created_idx" ON "api_keys" USING btree ("tenant_id","created_at","id");--> statement-breakpoint
CREATE INDEX "ingested_events_tenant_received_idx" ON "ingested_events" USING btree ("tenant_id","received_at");--> statement-breakpoint
CREATE INDEX "ingested_events_incident_idx" ON "ingested_events" USING btree ("incident_id");--> statement-breakpoint
CREATE INDEX "ingested_events_undelivered_idx" ON "ingested_events" USING btree ("received_at") WHERE "ingested_events"."delivered_at" is null;--> statement-breakpoint
CREATE INDEX "ingested_events_tenant_kind_idx" ON "ingested_events" USING btree ("tenant_id","kind","occurred_at");--> statement-breakpoint
CREATE INDEX "incidents_open_fingerprint_idx" ON "incidents" USING btree ("tenant_id","fingerprint") WHERE "incidents"."fingerprint" is not null and "incidents"."status" not in ('resolved', 'closed');