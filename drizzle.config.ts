import { defineConfig } from "drizzle-kit";

export default defineConfig({
  dialect: "sqlite",
  schema: ["./src/db/control-tables.ts", "./src/db/data-tables.ts"],
  out: "./migrations",
});
