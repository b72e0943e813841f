ALTER TABLE `api_keys` ADD `expires_at` integer;--> statement-breakpoint
ALTER TABLE `proxies` ADD `previous_key_hash` text;--> statement-breakpoint
ALTER TABLE `proxies` ADD `previous_key_expires_at` integer;--> statement-breakpoint
CREATE UNIQUE INDEX `proxies_previous_key_hash` ON `proxies` (`previous_key_hash`);