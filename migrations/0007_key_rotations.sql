CREATE TABLE `key_rotations` (
	`tenant_id` text PRIMARY KEY NOT NULL,
	`from_version` integer NOT NULL,
	`to_version` integer NOT NULL,
	`state` text NOT NULL,
	`done` integer DEFAULT 0 NOT NULL,
	`total` integer,
	`started_at` integer NOT NULL,
	`state_started_at` integer NOT NULL,
	`finished_at` integer,
	`runner` text NOT NULL,
	`lease_until` integer NOT NULL,
	`last_error` text
);
--> statement-breakpoint
ALTER TABLE `tokens` ADD `previous_fingerprint` text;--> statement-breakpoint
CREATE INDEX `tokens_tenant_previous_fingerprint` ON `tokens` (`tenant_id`,`previous_fingerprint`) WHERE previous_fingerprint IS NOT NULL;