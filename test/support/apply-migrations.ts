import { applyD1Migrations, env } from "cloudflare:test";

// Idempotent: applyD1Migrations records what it applied.
// The control database and every data database carry the same schema.
await Promise.all([env.DB, env.DB_1, env.DB_2].map((database) => applyD1Migrations(database, env.TEST_MIGRATIONS)));
