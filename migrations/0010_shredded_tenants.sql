CREATE TABLE `shredded_tenants` (
	`tenant_id` text PRIMARY KEY NOT NULL,
	`shredded_at` integer NOT NULL
);
