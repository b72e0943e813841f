CREATE TABLE `write_fences` (
	`tenant_id` text PRIMARY KEY NOT NULL,
	`fenced_at` integer NOT NULL
);
