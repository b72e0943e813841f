-- Custom SQL migration file (drizzle-kit generate --custom): triggers drizzle's schema cannot state.
-- token_counts and container_counts (src/db/data-tables.ts) follow the tokens and token_containers
-- rows themselves, in the statement that writes them: every path that inserts or deletes tokens (the
-- API, the cron's purge of expired tokens, a move's copy and purge, a shredded tenant's purge) keeps
-- them true without knowing of them. No path changes a token's type or tenant, or rewrites a
-- container row in place (an update deletes and inserts side rows), so no UPDATE trigger is needed.
-- A delete finds the type's newest remaining token by tokens_tenant_type, only when it deleted the newest.
CREATE TRIGGER `token_counts_insert` AFTER INSERT ON `tokens` BEGIN
	INSERT INTO `token_counts` (`tenant_id`, `type`, `count`, `last_created_at`) VALUES (NEW.`tenant_id`, NEW.`type`, 1, NEW.`created_at`)
	ON CONFLICT (`tenant_id`, `type`) DO UPDATE SET `count` = `count` + 1, `last_created_at` = max(`last_created_at`, excluded.`last_created_at`);
END;
--> statement-breakpoint
CREATE TRIGGER `token_counts_delete` AFTER DELETE ON `tokens` BEGIN
	DELETE FROM `token_counts` WHERE `tenant_id` = OLD.`tenant_id` AND `type` = OLD.`type` AND `count` <= 1;
	UPDATE `token_counts` SET `count` = `count` - 1, `last_created_at` = CASE WHEN OLD.`created_at` < `last_created_at` THEN `last_created_at`
		ELSE (SELECT coalesce(max(`created_at`), 0) FROM `tokens` WHERE `tenant_id` = OLD.`tenant_id` AND `type` = OLD.`type`) END
	WHERE `tenant_id` = OLD.`tenant_id` AND `type` = OLD.`type`;
END;
--> statement-breakpoint
CREATE TRIGGER `container_counts_insert` AFTER INSERT ON `token_containers` BEGIN
	INSERT INTO `container_counts` (`tenant_id`, `container`, `count`) VALUES (NEW.`tenant_id`, NEW.`container`, 1)
	ON CONFLICT (`tenant_id`, `container`) DO UPDATE SET `count` = `count` + 1;
END;
--> statement-breakpoint
CREATE TRIGGER `container_counts_delete` AFTER DELETE ON `token_containers` BEGIN
	DELETE FROM `container_counts` WHERE `tenant_id` = OLD.`tenant_id` AND `container` = OLD.`container` AND `count` <= 1;
	UPDATE `container_counts` SET `count` = `count` - 1 WHERE `tenant_id` = OLD.`tenant_id` AND `container` = OLD.`container`;
END;
--> statement-breakpoint
-- The tokens written before these triggers, counted once.
INSERT INTO `token_counts` (`tenant_id`, `type`, `count`, `last_created_at`)
	SELECT `tenant_id`, `type`, count(*), max(`created_at`) FROM `tokens` GROUP BY `tenant_id`, `type`;
--> statement-breakpoint
INSERT INTO `container_counts` (`tenant_id`, `container`, `count`)
	SELECT `tenant_id`, `container`, count(*) FROM `token_containers` GROUP BY `tenant_id`, `container`;
