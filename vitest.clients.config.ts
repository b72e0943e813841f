import { defineConfig } from "vitest/config";

/**
 * Tests run from Node against the bundled vault in Miniflare's workerd (scripts/local-vault.mjs):
 * the original interface's own clients (its JS SDK, with HEADER_PREFIX=BT) as those clients run,
 * the cases whose runtime log lines must be captured rather than printed (test/node/), and the
 * browser elements in headless Chromium with the checks of their rules (test/elements/), and the console
 * driven in headless Chromium (test/console/browser/).
 */
export default defineConfig({
  test: {
    include: ["test/clients/**/*.test.ts", "test/node/**/*.test.ts", "test/elements/**/*.test.ts", "test/console/browser/**/*.test.ts"],
    environment: "node",
    testTimeout: 30_000,
    hookTimeout: 180_000,
    // A poll in a browser waits on typing, messages between frames and a vault round trip.
    expect: { poll: { timeout: 10_000 } },
  },
});
