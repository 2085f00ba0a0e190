ALTER TABLE "ingested_events" ADD COLUMN "attribution" text;--> statement-breakpoint
ALTER TABLE "services" ADD COLUMN "repositories" jsonb DEFAULT '[]'::jsonb NOT NULL;