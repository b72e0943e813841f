CREATE TABLE `tenant_keys` (
	`tenant_id` text NOT NULL,
	`version` integer NOT NULL,
	`kek_version` integer NOT NULL,
	`wrapped` text NOT NULL,
	`created_at` integer NOT NULL,
	PRIMARY KEY(`tenant_id`, `version`)
);
--> statement-breakpoint
CREATE INDEX `tenant_keys_kek` ON `tenant_keys` (`kek_version`);--> statement-breakpoint
ALTER TABLE `tenants` ADD `keys_derived` integer DEFAULT true NOT NULL;--> statement-breakpoint
ALTER TABLE `tokens` ADD `key_version` integer DEFAULT 1 NOT NULL;--> statement-breakpoint
CREATE INDEX `tokens_tenant_key_version` ON `tokens` (`tenant_id`,`key_version`);