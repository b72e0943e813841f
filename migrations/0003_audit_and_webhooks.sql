CREATE TABLE `audit_chains` (
	`tenant_id` text PRIMARY KEY NOT NULL,
	`head_seq` integer NOT NULL,
	`head_hash` text NOT NULL,
	`anchor_seq` integer DEFAULT 0 NOT NULL,
	`anchor_hash` text DEFAULT '' NOT NULL,
	`anchor_mac` text
);
--> statement-breakpoint
CREATE TABLE `audit_log` (
	`tenant_id` text NOT NULL,
	`seq` integer NOT NULL,
	`id` text NOT NULL,
	`actor_id` text,
	`actor_type` text NOT NULL,
	`credential_id` text,
	`entity_type` text NOT NULL,
	`entity_id` text,
	`operation` text NOT NULL,
	`message` text NOT NULL,
	`status` integer NOT NULL,
	`trace_id` text NOT NULL,
	`created_at` integer NOT NULL,
	`hash` text NOT NULL,
	PRIMARY KEY(`tenant_id`, `seq`)
);
--> statement-breakpoint
CREATE UNIQUE INDEX `audit_log_tenant_id` ON `audit_log` (`tenant_id`,`id`);--> statement-breakpoint
CREATE INDEX `audit_log_tenant_created` ON `audit_log` (`tenant_id`,`created_at`);--> statement-breakpoint
CREATE INDEX `audit_log_tenant_entity` ON `audit_log` (`tenant_id`,`entity_type`,`entity_id`,`seq`);--> statement-breakpoint
CREATE TABLE `audit_pending` (
	`tenant_id` text NOT NULL,
	`id` text NOT NULL,
	`entry` text NOT NULL,
	`created_at` integer NOT NULL,
	PRIMARY KEY(`tenant_id`, `id`)
);
--> statement-breakpoint
CREATE TABLE `webhooks` (
	`id` text PRIMARY KEY NOT NULL,
	`tenant_id` text NOT NULL,
	`name` text NOT NULL,
	`url` text NOT NULL,
	`events` text NOT NULL,
	`status` text DEFAULT 'enabled' NOT NULL,
	`notify_email` text,
	`secret_ciphertext` text NOT NULL,
	`consecutive_failures` integer DEFAULT 0 NOT NULL,
	`created_by` text,
	`created_at` integer NOT NULL,
	`modified_by` text,
	`modified_at` integer
);
--> statement-breakpoint
CREATE INDEX `webhooks_tenant_created` ON `webhooks` (`tenant_id`,`created_at`,`id`);