CREATE TABLE `reactor_requests` (
	`tenant_id` text NOT NULL,
	`id` text NOT NULL,
	`reactor_id` text NOT NULL,
	`application_id` text NOT NULL,
	`status` text NOT NULL,
	`args` text,
	`result` text,
	`detokenized` text,
	`created_at` integer NOT NULL,
	`started_at` integer,
	`completed_at` integer,
	`expires_at` integer NOT NULL,
	PRIMARY KEY(`tenant_id`, `id`)
);
--> statement-breakpoint
CREATE INDEX `reactor_requests_expires` ON `reactor_requests` (`expires_at`);--> statement-breakpoint
CREATE INDEX `reactor_requests_open` ON `reactor_requests` (`tenant_id`,`created_at`) WHERE status IN ('pending', 'running');--> statement-breakpoint
PRAGMA foreign_keys=OFF;--> statement-breakpoint
CREATE TABLE `__new_reactors` (
	`id` text PRIMARY KEY NOT NULL,
	`tenant_id` text NOT NULL,
	`name` text NOT NULL,
	`formula_id` text,
	`code` text,
	`configuration` text,
	`application_id` text,
	`created_by` text,
	`created_at` integer NOT NULL,
	`modified_by` text,
	`modified_at` integer,
	CONSTRAINT "reactors_formula_or_code" CHECK((formula_id IS NULL) != (code IS NULL))
);
--> statement-breakpoint
INSERT INTO `__new_reactors`("id", "tenant_id", "name", "formula_id", "code", "configuration", "application_id", "created_by", "created_at", "modified_by", "modified_at") SELECT "id", "tenant_id", "name", "formula_id", "code", "configuration", "application_id", "created_by", "created_at", "modified_by", "modified_at" FROM `reactors`;--> statement-breakpoint
DROP TABLE `reactors`;--> statement-breakpoint
ALTER TABLE `__new_reactors` RENAME TO `reactors`;--> statement-breakpoint
PRAGMA foreign_keys=ON;--> statement-breakpoint
CREATE INDEX `reactors_tenant_created` ON `reactors` (`tenant_id`,`created_at`,`id`);--> statement-breakpoint
CREATE INDEX `reactors_tenant_formula` ON `reactors` (`tenant_id`,`formula_id`);