import { EXAMPLE_IDS, EXAMPLE_TIME } from "../http/examples";

/*
 * Examples of the operator routes on keys (the API reference page shows them, and
 * test/foundation/platform.test.ts parses each with its operation's schema).
 */

/** A deployment half-way through moving to key-encryption key 2 (VAULT_MASTER_KEYS holds 2 and 1). */
export const KEYRING_STATUS_EXAMPLE = {
  keyring_versions: [2, 1],
  records_by_kek_version: { "1": 140, "2": 60 },
  tenants_with_derived_keys: 0,
  remaining: 140,
};

/** A call with `max_records=100`: 40 records are left for the next. */
export const REWRAP_EXAMPLE = {
  kek_version: 2,
  rewrapped: 100,
  ...KEYRING_STATUS_EXAMPLE,
  records_by_kek_version: { "1": 40, "2": 160 },
  remaining: 40,
};

export const ROTATION_STARTED_EXAMPLE = {
  tenant_id: EXAMPLE_IDS.tenant,
  from_version: 1,
  to_version: 2,
  state: "waiting" as const,
  done: 0,
  total: null,
  started_at: EXAMPLE_TIME,
  finished_at: null,
  last_error: null,
};

export const ROTATION_RUNNING_EXAMPLE = { ...ROTATION_STARTED_EXAMPLE, state: "running" as const, done: 4200, total: 20000 };
