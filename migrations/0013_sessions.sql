CREATE TABLE `sessions` (
	`id` text PRIMARY KEY NOT NULL,
	`tenant_id` text NOT NULL,
	`application_id` text NOT NULL,
	`key_hash` text NOT NULL,
	`nonce_hash` text NOT NULL,
	`created_at` integer NOT NULL,
	`expires_at` integer NOT NULL,
	`expiring_application_id` text
);
--> statement-breakpoint
CREATE UNIQUE INDEX `sessions_nonce` ON `sessions` (`tenant_id`,`nonce_hash`);--> statement-breakpoint
CREATE INDEX `sessions_pending` ON `sessions` (`tenant_id`,`application_id`,`expires_at`);--> statement-breakpoint
CREATE INDEX `sessions_expires` ON `sessions` (`expires_at`);--> statement-breakpoint
ALTER TABLE `applications` ADD `expires_at` integer;--> statement-breakpoint
CREATE INDEX `applications_expires` ON `applications` (`expires_at`);