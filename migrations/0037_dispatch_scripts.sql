CREATE TABLE `dispatch_scripts` (
	`name` text PRIMARY KEY NOT NULL,
	`tenant_id` text,
	`kind` text NOT NULL,
	`owner_id` text NOT NULL,
	`published_at` integer NOT NULL,
	`checked_at` integer NOT NULL,
	`unused_since` integer
);
--> statement-breakpoint
CREATE INDEX `dispatch_scripts_checked` ON `dispatch_scripts` (`checked_at`);