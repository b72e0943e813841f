import type { D1Migration } from "cloudflare:test";
import type { Bindings } from "../../src/env";

declare global {
  namespace Cloudflare {
    interface Env extends Bindings {
      TEST_MIGRATIONS: D1Migration[];
      VAULT_MASTER_KEY: string;
      BOOTSTRAP_API_KEY: string;
      OPERATOR_API_KEY: string;
      HEADER_PREFIX: string;
    }
  }
}
