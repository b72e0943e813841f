CREATE TABLE `google_pay_resources` (
	`id` text PRIMARY KEY NOT NULL,
	`tenant_id` text NOT NULL,
	`ciphertext` text NOT NULL,
	`authentication_ciphertext` text,
	`authentication_expires_at` integer,
	`details` text NOT NULL,
	`created_by` text,
	`created_at` integer NOT NULL,
	`expires_at` integer
);
--> statement-breakpoint
CREATE INDEX `google_pay_resources_tenant` ON `google_pay_resources` (`tenant_id`,`id`);--> statement-breakpoint
CREATE INDEX `google_pay_resources_expires` ON `google_pay_resources` (`expires_at`) WHERE expires_at IS NOT NULL;--> statement-breakpoint
CREATE INDEX `google_pay_resources_authentication_expires` ON `google_pay_resources` (`authentication_expires_at`) WHERE authentication_expires_at IS NOT NULL;