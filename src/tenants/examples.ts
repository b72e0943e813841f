import type { z } from "@hono/zod-openapi";
import { MANAGEMENT_PERMISSIONS } from "../auth/permissions";
import { EXAMPLE_IDS, EXAMPLE_TIME, exampleCreatedBy } from "../http/examples";
import type { TenantResponse, UpdateTenantBody, UsageReport } from "./schema";

/*
 * Examples of the operator routes on tenants (the API reference page shows them, and
 * test/foundation/platform.test.ts parses each with its operation's schema).
 */

export const CREATE_TENANT_EXAMPLE = { name: "Acme Payments" };

const MANAGEMENT_KEY_ID = "d16bc61f-4c9e-4e9c-b962-798170c142fe";
const MANAGEMENT_KEY = "key_HEHYoR1Nneqe1rRoP6ti4nOIz7Ix6ZH_cyveZ7XX8T8";

/**
 * The tenant and its first application: a management application whose key only this answer shows.
 * The deployment binds DB_1 and DB_2 as data databases; the tenant went to DB_1, the one holding fewer tenants.
 */
export const CREATED_TENANT_EXAMPLE = {
  tenant: { id: EXAMPLE_IDS.tenant, name: CREATE_TENANT_EXAMPLE.name, database: "DB_1", created_at: EXAMPLE_TIME },
  application: {
    id: EXAMPLE_IDS.managementApplication,
    tenant_id: EXAMPLE_IDS.tenant,
    name: `${CREATE_TENANT_EXAMPLE.name} management`,
    type: "management" as const,
    permissions: [...MANAGEMENT_PERMISSIONS],
    rules: [],
    allowed_origins: [],
    ...exampleCreatedBy(null),
    key: MANAGEMENT_KEY,
    keys: [{ id: MANAGEMENT_KEY_ID, key: MANAGEMENT_KEY, created_at: EXAMPLE_TIME, expires_at: null }],
  },
};

/** The example tenant to DB_2, ten steps at most; call again until the phase is done. */
export const MOVE_TENANT_EXAMPLE = { database: "DB_2", max_batches: 10 };

export const TENANT_MOVE_EXAMPLE = { tenant_id: EXAMPLE_IDS.tenant, source: "DB_1", target: "DB_2", phase: "copying" as const };

/** Its keys are gone; the cron has yet to purge its rows. */
export const SHREDDED_TENANT_EXAMPLE = {
  tenant_id: EXAMPLE_IDS.tenant,
  shredded_at: "2027-05-04T08:30:00.000Z",
  derived_keys: false,
  remaining_rows: 12840,
};

/** The example tenant as its management key reads it (GET /tenants/self). */
export const TENANT_EXAMPLE = {
  id: EXAMPLE_IDS.tenant,
  name: CREATE_TENANT_EXAMPLE.name,
  created_by: null,
  created_at: EXAMPLE_TIME,
  modified_by: null,
  modified_at: null,
} satisfies TenantResponse;

export const RENAME_TENANT_EXAMPLE = { name: "Acme Payments (production)" } satisfies z.input<typeof UpdateTenantBody>;

export const RENAMED_TENANT_EXAMPLE = {
  ...TENANT_EXAMPLE,
  name: RENAME_TENANT_EXAMPLE.name,
  modified_by: EXAMPLE_IDS.managementApplication,
  modified_at: "2027-01-04T10:00:00.000Z",
} satisfies TenantResponse;

/** A tenant holding cards and bank accounts, most of them in /customers/… containers. */
export const USAGE_REPORT_EXAMPLE = {
  token_report: {
    total_tokens: 1250,
    metrics_by_type: {
      card: { count: 1200, last_created_at: "2027-05-04T08:30:00.000Z" },
      bank: { count: 50, last_created_at: "2027-04-28T14:02:11.000Z" },
    },
    metrics_by_container: { "/": { count: 40 }, "/customers/eu/": { count: 810 }, "/customers/us/": { count: 400 } },
    metrics_by_container_complete: true,
  },
  total_tokens: 1250,
} satisfies UsageReport;
