CREATE TABLE `documents` (
	`id` text PRIMARY KEY NOT NULL,
	`tenant_id` text NOT NULL,
	`metadata` text NOT NULL,
	`content_type` text NOT NULL,
	`size` integer NOT NULL,
	`data_key_ciphertext` text NOT NULL,
	`created_by` text,
	`created_at` integer NOT NULL
);
--> statement-breakpoint
CREATE INDEX `documents_tenant_created` ON `documents` (`tenant_id`,`created_at`,`id`);