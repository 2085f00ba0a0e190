CREATE TABLE "billing_accounts" (
	"tenant_id" text PRIMARY KEY NOT NULL,
	"provider_customer_id" text,
	"pending_plan_id" text,
	"pending_effective_at" timestamp (3) with time zone,
	"updated_at" timestamp (3) with time zone DEFAULT now() NOT NULL
);
--> statement-breakpoint
CREATE TABLE "billing_payments" (
	"id" text PRIMARY KEY NOT NULL,
	"tenant_id" text NOT NULL,
	"kind" text NOT NULL,
	"item" text NOT NULL,
	"amount_cents" integer NOT NULL,
	"currency" text NOT NULL,
	"idempotency_key" text NOT NULL,
	"provider_payment_id" text,
	"client_secret" text,
	"status" text DEFAULT 'pending' NOT NULL,
	"failure_message" text,
	"requested_by" text NOT NULL,
	"created_at" timestamp (3) with time zone DEFAULT now() NOT NULL,
	"settled_at" timestamp (3) with time zone
);
--> statement-breakpoint
CREATE TABLE "billing_webhook_events" (
	"event_id" text PRIMARY KEY NOT NULL,
	"type" text NOT NULL,
	"tenant_id" text,
	"payment_id" text,
	"outcome" text NOT NULL,
	"received_at" timestamp (3) with time zone DEFAULT now() NOT NULL
);
--> statement-breakpoint
ALTER TABLE "usage_counters" ADD COLUMN "credits" integer DEFAULT 0 NOT NULL;--> statement-breakpoint
ALTER TABLE "billing_accounts" ADD CONSTRAINT "billing_accounts_tenant_id_tenants_id_fk" FOREIGN KEY ("tenant_id") REFERENCES "public"."tenants"("id") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "billing_payments" ADD CONSTRAINT "billing_payments_tenant_id_tenants_id_fk" FOREIGN KEY ("tenant_id") REFERENCES "public"."tenants"("id") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
CREATE UNIQUE INDEX "billing_payments_tenant_key_idx" ON "billing_payments" USING btree ("tenant_id","idempotency_key");--> statement-breakpoint
CREATE UNIQUE INDEX "billing_payments_pending_upgrade_idx" ON "billing_payments" USING btree ("tenant_id") WHERE kind = 'upgrade' and status = 'pending';--> statement-breakpoint
CREATE INDEX "billing_payments_tenant_created_idx" ON "billing_payments" USING btree ("tenant_id","created_at");