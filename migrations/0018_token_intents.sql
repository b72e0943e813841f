CREATE TABLE `token_intents` (
	`tenant_id` text NOT NULL,
	`id` text NOT NULL,
	`type` text NOT NULL,
	`ciphertext` text NOT NULL,
	`created_by` text NOT NULL,
	`created_at` integer NOT NULL,
	`expires_at` integer NOT NULL,
	`cvc_expires_at` integer,
	PRIMARY KEY(`tenant_id`, `id`)
);
--> statement-breakpoint
CREATE INDEX `token_intents_expires` ON `token_intents` (`expires_at`);--> statement-breakpoint
CREATE INDEX `token_intents_cvc_expires` ON `token_intents` (`cvc_expires_at`) WHERE cvc_expires_at IS NOT NULL;