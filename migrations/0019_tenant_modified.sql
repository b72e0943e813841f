ALTER TABLE `tenants` ADD `modified_by` text;--> statement-breakpoint
ALTER TABLE `tenants` ADD `modified_at` integer;