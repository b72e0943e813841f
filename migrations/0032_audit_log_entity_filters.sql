DROP INDEX `audit_log_tenant_entity`;--> statement-breakpoint
CREATE INDEX `audit_log_tenant_entity_type` ON `audit_log` (`tenant_id`,`entity_type`,`created_at`,`seq`);--> statement-breakpoint
CREATE INDEX `audit_log_tenant_entity` ON `audit_log` (`tenant_id`,`entity_id`,`created_at`,`seq`);