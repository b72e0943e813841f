ALTER TABLE `audit_chains` ADD `head_mac` text;--> statement-breakpoint
ALTER TABLE `audit_chains` ADD `head_mac_since` integer DEFAULT 0 NOT NULL;