CREATE TABLE `apple_pay_certificates` (
	`id` text PRIMARY KEY NOT NULL,
	`tenant_id` text NOT NULL,
	`merchant_registration_id` text NOT NULL,
	`domain` text,
	`certificate` text NOT NULL,
	`public_key_hash` text NOT NULL,
	`fingerprint` text NOT NULL,
	`private_key_ciphertext` text NOT NULL,
	`expires_at` integer NOT NULL,
	`created_by` text,
	`created_at` integer NOT NULL
);
--> statement-breakpoint
CREATE INDEX `apple_pay_certificates_tenant_merchant` ON `apple_pay_certificates` (`tenant_id`,`merchant_registration_id`);--> statement-breakpoint
CREATE INDEX `apple_pay_certificates_tenant_key_hash` ON `apple_pay_certificates` (`tenant_id`,`public_key_hash`);--> statement-breakpoint
CREATE TABLE `apple_pay_merchants` (
	`id` text PRIMARY KEY NOT NULL,
	`tenant_id` text NOT NULL,
	`merchant_identifier` text NOT NULL,
	`created_by` text,
	`created_at` integer NOT NULL
);
--> statement-breakpoint
CREATE INDEX `apple_pay_merchants_tenant_created` ON `apple_pay_merchants` (`tenant_id`,`created_at`,`id`);