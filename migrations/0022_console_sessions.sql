CREATE TABLE `console_sessions` (
	`id` text PRIMARY KEY NOT NULL,
	`tenant_id` text NOT NULL,
	`application_id` text NOT NULL,
	`key_id` text NOT NULL,
	`token_hash` text NOT NULL,
	`created_at` integer NOT NULL,
	`renewed_at` integer NOT NULL,
	`expires_at` integer NOT NULL,
	`ends_at` integer NOT NULL
);
--> statement-breakpoint
CREATE UNIQUE INDEX `console_sessions_token` ON `console_sessions` (`token_hash`);--> statement-breakpoint
CREATE INDEX `console_sessions_application` ON `console_sessions` (`tenant_id`,`application_id`);--> statement-breakpoint
CREATE INDEX `console_sessions_expires` ON `console_sessions` (`expires_at`);