import type { D1Migration } from "cloudflare:test";
import type { FakeNamespace } from "./fake-namespace-worker";

declare global {
  namespace Cloudflare {
    interface Env {
      DISPATCHER?: DispatchNamespace;
      DB_1: D1Database;
      DB_2: D1Database;
      TEST_MIGRATIONS: D1Migration[];
      /** The fake dispatch namespace, a worker beside the vault (vitest.config.ts). */
      FAKE_NAMESPACE: Service<FakeNamespace>;
      /** The fake of Apple's Apple Pay servers (test/support/fake-apple-pay-gateway.mjs). */
      APPLE_PAY_GATEWAY: Fetcher;
      VAULT_MASTER_KEYS: string;
      BOOTSTRAP_API_KEY: string;
      OPERATOR_API_KEY: string;
      HEADER_PREFIX: string;
      /** Low rate limits that test/security/4-rate-limits.test.ts swaps in (vitest.config.ts). */
      LOW_KEY_RATE_LIMIT: RateLimit;
      DEFAULT_PUBLIC_KEY_RATE_LIMIT: RateLimit;
      DEFAULT_PUBLIC_CLIENT_RATE_LIMIT: RateLimit;
    }
  }
}
