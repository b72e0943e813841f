CREATE TABLE `client_encryption_keys` (
	`id` text PRIMARY KEY NOT NULL,
	`tenant_id` text NOT NULL,
	`private_key_ciphertext` text NOT NULL,
	`expires_at` integer NOT NULL,
	`created_by` text,
	`created_at` integer NOT NULL
);
--> statement-breakpoint
CREATE INDEX `client_encryption_keys_tenant_created` ON `client_encryption_keys` (`tenant_id`,`created_at`,`id`);