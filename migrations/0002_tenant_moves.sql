CREATE TABLE `tenant_moves` (
	`tenant_id` text PRIMARY KEY NOT NULL,
	`source` text NOT NULL,
	`target` text NOT NULL,
	`phase` text NOT NULL,
	`cursor` text DEFAULT '' NOT NULL,
	`copy_started_at` integer NOT NULL,
	`phase_started_at` integer NOT NULL
);
