CREATE TABLE `webhook_deliveries` (
	`tenant_id` text NOT NULL,
	`webhook_id` text NOT NULL,
	`event_id` text NOT NULL,
	`event_type` text NOT NULL,
	`status` text NOT NULL,
	`attempts` integer NOT NULL,
	`last_outcome` text,
	`first_attempt_at` integer NOT NULL,
	`last_attempt_at` integer NOT NULL,
	PRIMARY KEY(`tenant_id`, `webhook_id`, `event_id`)
);
--> statement-breakpoint
CREATE INDEX `webhook_deliveries_recent` ON `webhook_deliveries` (`tenant_id`,`webhook_id`,`last_attempt_at`);