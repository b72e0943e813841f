DROP INDEX `token_containers_token`;--> statement-breakpoint
CREATE INDEX `token_containers_token` ON `token_containers` (`tenant_id`,`token_id`);--> statement-breakpoint
DROP INDEX `token_metadata_token`;--> statement-breakpoint
CREATE INDEX `token_metadata_token` ON `token_metadata` (`tenant_id`,`token_id`);--> statement-breakpoint
DROP INDEX `token_search_index_token`;--> statement-breakpoint
CREATE INDEX `token_search_index_token` ON `token_search_index` (`tenant_id`,`token_id`);