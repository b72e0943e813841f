import { MANAGEMENT_PERMISSIONS } from "../auth/permissions";
import { EXAMPLE_IDS, EXAMPLE_TIME } from "../http/examples";

/*
 * Examples of the operator routes on tenants (the API reference page shows them, and
 * test/foundation/platform.test.ts parses each with its operation's schema).
 */

export const CREATE_TENANT_EXAMPLE = { name: "Acme Payments" };

const MANAGEMENT_KEY = "key_q8Xv2mR4tY7wZ1bN5cE9hK3jL6pA0sD4fG7uI2oQ8rT";

/** The tenant and its first application: a management application whose key only this answer shows. */
export const CREATED_TENANT_EXAMPLE = {
  tenant: { id: EXAMPLE_IDS.tenant, name: CREATE_TENANT_EXAMPLE.name, database: "DB", created_at: EXAMPLE_TIME },
  application: {
    id: EXAMPLE_IDS.managementApplication,
    tenant_id: EXAMPLE_IDS.tenant,
    name: `${CREATE_TENANT_EXAMPLE.name} management`,
    type: "management" as const,
    permissions: [...MANAGEMENT_PERMISSIONS],
    rules: [],
    created_by: null,
    created_at: EXAMPLE_TIME,
    modified_by: null,
    modified_at: null,
    key: MANAGEMENT_KEY,
    keys: [{ id: EXAMPLE_IDS.apiKey, key: MANAGEMENT_KEY, created_at: EXAMPLE_TIME, expires_at: null }],
  },
};

/** Ten steps of copying at most; call again until the phase is done. */
export const MOVE_TENANT_EXAMPLE = { database: "DB_2", max_batches: 10 };

export const TENANT_MOVE_EXAMPLE = { tenant_id: EXAMPLE_IDS.tenant, source: "DB_1", target: "DB_2", phase: "copying" as const };

export const SHREDDED_TENANT_EXAMPLE = {
  tenant_id: EXAMPLE_IDS.tenant,
  shredded_at: EXAMPLE_TIME,
  derived_keys: false,
  remaining_rows: 12840,
};
