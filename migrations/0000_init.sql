CREATE TABLE `api_keys` (
	`id` text PRIMARY KEY NOT NULL,
	`tenant_id` text NOT NULL,
	`application_id` text NOT NULL,
	`hash` text NOT NULL,
	`created_at` integer NOT NULL
);
--> statement-breakpoint
CREATE UNIQUE INDEX `api_keys_hash` ON `api_keys` (`hash`);--> statement-breakpoint
CREATE INDEX `api_keys_application` ON `api_keys` (`tenant_id`,`application_id`);--> statement-breakpoint
CREATE TABLE `applications` (
	`id` text PRIMARY KEY NOT NULL,
	`tenant_id` text NOT NULL,
	`name` text NOT NULL,
	`type` text NOT NULL,
	`permissions` text DEFAULT '[]' NOT NULL,
	`rules` text DEFAULT '[]' NOT NULL,
	`created_by` text,
	`created_at` integer NOT NULL,
	`modified_by` text,
	`modified_at` integer
);
--> statement-breakpoint
CREATE INDEX `applications_tenant_created` ON `applications` (`tenant_id`,`created_at`,`id`);--> statement-breakpoint
CREATE TABLE `idempotency_records` (
	`tenant_id` text NOT NULL,
	`application_id` text NOT NULL,
	`key` text NOT NULL,
	`request_hash` text NOT NULL,
	`status` integer,
	`response` text,
	`created_at` integer NOT NULL,
	PRIMARY KEY(`tenant_id`, `application_id`, `key`)
);
--> statement-breakpoint
CREATE INDEX `idempotency_records_created` ON `idempotency_records` (`created_at`);--> statement-breakpoint
CREATE TABLE `proxies` (
	`id` text PRIMARY KEY NOT NULL,
	`tenant_id` text NOT NULL,
	`name` text NOT NULL,
	`key_hash` text NOT NULL,
	`key_ciphertext` text NOT NULL,
	`destination_url` text NOT NULL,
	`request_transform_code` text,
	`response_transform_code` text,
	`application_id` text,
	`configuration` text,
	`require_auth` integer DEFAULT true NOT NULL,
	`created_by` text,
	`created_at` integer NOT NULL,
	`modified_by` text,
	`modified_at` integer
);
--> statement-breakpoint
CREATE UNIQUE INDEX `proxies_key_hash` ON `proxies` (`key_hash`);--> statement-breakpoint
CREATE INDEX `proxies_tenant_created` ON `proxies` (`tenant_id`,`created_at`,`id`);--> statement-breakpoint
CREATE TABLE `reactor_formulas` (
	`id` text PRIMARY KEY NOT NULL,
	`tenant_id` text,
	`name` text NOT NULL,
	`description` text,
	`type` text NOT NULL,
	`status` text DEFAULT 'verified' NOT NULL,
	`icon` text,
	`code` text NOT NULL,
	`configuration` text DEFAULT '[]' NOT NULL,
	`request_parameters` text DEFAULT '[]' NOT NULL,
	`created_by` text,
	`created_at` integer NOT NULL,
	`modified_by` text,
	`modified_at` integer
);
--> statement-breakpoint
CREATE INDEX `reactor_formulas_tenant_created` ON `reactor_formulas` (`tenant_id`,`created_at`,`id`);--> statement-breakpoint
CREATE TABLE `reactors` (
	`id` text PRIMARY KEY NOT NULL,
	`tenant_id` text NOT NULL,
	`name` text NOT NULL,
	`formula_id` text NOT NULL,
	`configuration` text,
	`application_id` text,
	`created_by` text,
	`created_at` integer NOT NULL,
	`modified_by` text,
	`modified_at` integer
);
--> statement-breakpoint
CREATE INDEX `reactors_tenant_created` ON `reactors` (`tenant_id`,`created_at`,`id`);--> statement-breakpoint
CREATE INDEX `reactors_tenant_formula` ON `reactors` (`tenant_id`,`formula_id`);--> statement-breakpoint
CREATE TABLE `tenants` (
	`id` text PRIMARY KEY NOT NULL,
	`name` text NOT NULL,
	`created_at` integer NOT NULL
);
--> statement-breakpoint
CREATE TABLE `token_containers` (
	`tenant_id` text NOT NULL,
	`container` text NOT NULL,
	`token_id` text NOT NULL,
	PRIMARY KEY(`tenant_id`, `container`, `token_id`)
);
--> statement-breakpoint
CREATE INDEX `token_containers_token` ON `token_containers` (`token_id`);--> statement-breakpoint
CREATE TABLE `token_metadata` (
	`tenant_id` text NOT NULL,
	`key` text NOT NULL,
	`value` text NOT NULL,
	`token_id` text NOT NULL,
	PRIMARY KEY(`tenant_id`, `key`, `value`, `token_id`)
);
--> statement-breakpoint
CREATE INDEX `token_metadata_token` ON `token_metadata` (`token_id`);--> statement-breakpoint
CREATE TABLE `token_search_index` (
	`tenant_id` text NOT NULL,
	`blind_index` text NOT NULL,
	`token_id` text NOT NULL,
	PRIMARY KEY(`tenant_id`, `blind_index`, `token_id`)
);
--> statement-breakpoint
CREATE INDEX `token_search_index_token` ON `token_search_index` (`token_id`);--> statement-breakpoint
CREATE TABLE `tokens` (
	`id` text NOT NULL,
	`tenant_id` text NOT NULL,
	`type` text NOT NULL,
	`ciphertext` text NOT NULL,
	`fingerprint` text NOT NULL,
	`fingerprint_expression` text NOT NULL,
	`mask` text,
	`search_indexes` text DEFAULT '[]' NOT NULL,
	`metadata` text DEFAULT '{}' NOT NULL,
	`containers` text DEFAULT '[]' NOT NULL,
	`expires_at` integer,
	`cvc_expires_at` integer,
	`created_by` text,
	`created_at` integer NOT NULL,
	`modified_by` text,
	`modified_at` integer NOT NULL,
	PRIMARY KEY(`tenant_id`, `id`)
);
--> statement-breakpoint
CREATE INDEX `tokens_tenant_created` ON `tokens` (`tenant_id`,`created_at`,`id`);--> statement-breakpoint
CREATE INDEX `tokens_tenant_modified` ON `tokens` (`tenant_id`,`modified_at`);--> statement-breakpoint
CREATE INDEX `tokens_tenant_fingerprint` ON `tokens` (`tenant_id`,`fingerprint`,`type`);--> statement-breakpoint
CREATE INDEX `tokens_tenant_type` ON `tokens` (`tenant_id`,`type`,`created_at`);--> statement-breakpoint
CREATE INDEX `tokens_tenant_created_by` ON `tokens` (`tenant_id`,`created_by`);--> statement-breakpoint
CREATE INDEX `tokens_tenant_modified_by` ON `tokens` (`tenant_id`,`modified_by`);--> statement-breakpoint
CREATE INDEX `tokens_expires` ON `tokens` (`expires_at`) WHERE expires_at IS NOT NULL;--> statement-breakpoint
CREATE INDEX `tokens_cvc_expires` ON `tokens` (`cvc_expires_at`) WHERE cvc_expires_at IS NOT NULL;