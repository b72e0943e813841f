CREATE TABLE `apple_pay_domains` (
	`domain` text PRIMARY KEY NOT NULL,
	`tenant_id` text NOT NULL,
	`created_by` text,
	`created_at` integer NOT NULL
);
--> statement-breakpoint
CREATE INDEX `apple_pay_domains_tenant` ON `apple_pay_domains` (`tenant_id`,`domain`);