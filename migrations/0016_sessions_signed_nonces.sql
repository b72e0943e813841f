PRAGMA foreign_keys=OFF;--> statement-breakpoint
CREATE TABLE `__new_sessions` (
	`id` text PRIMARY KEY NOT NULL,
	`tenant_id` text NOT NULL,
	`application_id` text NOT NULL,
	`key_hash` text NOT NULL,
	`nonce_hash` text NOT NULL,
	`created_at` integer NOT NULL,
	`expires_at` integer NOT NULL,
	`expiring_application_id` text NOT NULL
);
--> statement-breakpoint
INSERT INTO `__new_sessions`("id", "tenant_id", "application_id", "key_hash", "nonce_hash", "created_at", "expires_at", "expiring_application_id") SELECT "id", "tenant_id", "application_id", "key_hash", "nonce_hash", "created_at", "expires_at", "expiring_application_id" FROM `sessions`;--> statement-breakpoint
DROP TABLE `sessions`;--> statement-breakpoint
ALTER TABLE `__new_sessions` RENAME TO `sessions`;--> statement-breakpoint
PRAGMA foreign_keys=ON;--> statement-breakpoint
CREATE UNIQUE INDEX `sessions_nonce` ON `sessions` (`tenant_id`,`nonce_hash`);--> statement-breakpoint
CREATE INDEX `sessions_expires` ON `sessions` (`expires_at`);--> statement-breakpoint
ALTER TABLE `applications` ADD `authorizer_key_id` text;