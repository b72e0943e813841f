ALTER TABLE `idempotency_records` ADD `claimed_at` integer DEFAULT 0 NOT NULL;--> statement-breakpoint
ALTER TABLE `idempotency_records` ADD `commits_with_write` integer DEFAULT false NOT NULL;--> statement-breakpoint
ALTER TABLE `idempotency_records` ADD `outcome` text;