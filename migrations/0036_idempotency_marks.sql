CREATE TABLE `idempotency_marks` (
	`tenant_id` text NOT NULL,
	`application_id` text NOT NULL,
	`key` text NOT NULL,
	`outcome` text NOT NULL,
	`created_at` integer NOT NULL,
	PRIMARY KEY(`tenant_id`, `application_id`, `key`)
);
--> statement-breakpoint
CREATE INDEX `idempotency_marks_created` ON `idempotency_marks` (`created_at`);