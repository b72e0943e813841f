CREATE TABLE `google_pay_merchant_keys` (
	`id` text PRIMARY KEY NOT NULL,
	`tenant_id` text NOT NULL,
	`merchant_id` text NOT NULL,
	`private_key_ciphertext` text NOT NULL,
	`fingerprint` text NOT NULL,
	`created_by` text,
	`created_at` integer NOT NULL
);
--> statement-breakpoint
CREATE INDEX `google_pay_merchant_keys_merchant` ON `google_pay_merchant_keys` (`tenant_id`,`merchant_id`,`created_at`,`id`);--> statement-breakpoint
CREATE TABLE `google_pay_merchants` (
	`id` text PRIMARY KEY NOT NULL,
	`tenant_id` text NOT NULL,
	`merchant_identifier` text NOT NULL,
	`created_by` text,
	`created_at` integer NOT NULL
);
--> statement-breakpoint
CREATE INDEX `google_pay_merchants_tenant_created` ON `google_pay_merchants` (`tenant_id`,`created_at`,`id`);