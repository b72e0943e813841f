CREATE TABLE `audit_entity_hourly` (
	`tenant_id` text NOT NULL,
	`entity_type` text NOT NULL,
	`hour` integer NOT NULL,
	`entity_id` text NOT NULL,
	`calls` integer NOT NULL,
	`errors` integer NOT NULL,
	PRIMARY KEY(`tenant_id`, `entity_type`, `hour`, `entity_id`)
);
--> statement-breakpoint
CREATE INDEX `audit_entity_hourly_hour` ON `audit_entity_hourly` (`hour`);--> statement-breakpoint
CREATE TABLE `audit_hourly` (
	`tenant_id` text NOT NULL,
	`hour` integer NOT NULL,
	`outcome` integer NOT NULL,
	`requests` integer NOT NULL,
	PRIMARY KEY(`tenant_id`, `hour`, `outcome`)
);
--> statement-breakpoint
CREATE INDEX `audit_hourly_hour` ON `audit_hourly` (`hour`);--> statement-breakpoint
CREATE TABLE `container_counts` (
	`tenant_id` text NOT NULL,
	`container` text NOT NULL,
	`count` integer NOT NULL,
	PRIMARY KEY(`tenant_id`, `container`)
);
--> statement-breakpoint
CREATE TABLE `token_counts` (
	`tenant_id` text NOT NULL,
	`type` text NOT NULL,
	`count` integer NOT NULL,
	`last_created_at` integer NOT NULL,
	PRIMARY KEY(`tenant_id`, `type`)
);
--> statement-breakpoint
CREATE INDEX `audit_log_tenant_errors` ON `audit_log` (`tenant_id`,`created_at`) WHERE status >= 400;