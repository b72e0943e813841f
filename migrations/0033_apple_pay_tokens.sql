CREATE TABLE `apple_pay_tokens` (
	`id` text PRIMARY KEY NOT NULL,
	`tenant_id` text NOT NULL,
	`type` text NOT NULL,
	`data_ciphertext` text NOT NULL,
	`authentication_ciphertext` text,
	`authentication_expires_at` integer,
	`transaction_id` text NOT NULL,
	`payment_data_type` text,
	`device_manufacturer_identifier` text,
	`created_by` text NOT NULL,
	`created_at` integer NOT NULL,
	`expires_at` integer NOT NULL
);
--> statement-breakpoint
CREATE INDEX `apple_pay_tokens_tenant` ON `apple_pay_tokens` (`tenant_id`,`id`);--> statement-breakpoint
CREATE INDEX `apple_pay_tokens_expires` ON `apple_pay_tokens` (`expires_at`);--> statement-breakpoint
CREATE INDEX `apple_pay_tokens_authentication_expires` ON `apple_pay_tokens` (`authentication_expires_at`) WHERE authentication_expires_at IS NOT NULL;