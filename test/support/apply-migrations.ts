import { applyD1Migrations, env } from "cloudflare:test";
import { ALL_DATABASES } from "./context";

// Idempotent: applyD1Migrations records what it applied.
// The control database and every data database carry the same schema.
await Promise.all(Object.values(ALL_DATABASES).map((database) => applyD1Migrations(database, env.TEST_MIGRATIONS)));
