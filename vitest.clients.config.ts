import { defineConfig } from "vitest/config";

/**
 * Tests of the original interface's own clients (its JS SDK), run from Node as those clients run,
 * against the bundled vault in Miniflare's workerd (scripts/local-vault.mjs) with HEADER_PREFIX=BT.
 */
export default defineConfig({
  test: {
    include: ["test/clients/**/*.test.ts"],
    environment: "node",
    testTimeout: 30_000,
    hookTimeout: 180_000,
  },
});
