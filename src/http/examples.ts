/**
 * The sample ids and times the OpenAPI examples share, so that the examples of one area refer to
 * the objects of another consistently (the application that created a token, the formula of a
 * reactor). They are documentation only; test/foundation/platform.test.ts parses every example with
 * its operation's own schema.
 */
export const EXAMPLE_IDS = {
  tenant: "7d3f0a9e-1b2c-4d5e-8f90-a1b2c3d4e5f6",
  application: "5b8c1e2a-3d4f-4a6b-9c7d-8e9f0a1b2c3d",
  /** The tenant's first application, which POST /tenants creates and which created the others. */
  managementApplication: "306f0da8-7fa6-40d4-87cc-c907a0f5e475",
  apiKey: "9e4a2f61-7c3b-4d1e-8a5f-2b6c9d0e1f23",
  token: "0c2d7b0e-6f4c-4d8e-9a55-3f1f0b6d2a11",
  otherToken: "4f6a8c0e-2b4d-4f6a-8c0e-2b4d6f8a0c1e",
  tokenIntent: "665bf471-d675-4165-9336-4fc9c1a73fad",
  /** A checkout's public application, which creates token intents. */
  publicApplication: "2f7e9c1a-5b3d-4e8f-a6c2-9d1b3f5e7a90",
  proxy: "b1c2d3e4-f5a6-4b7c-8d9e-0f1a2b3c4d5e",
  formula: "e3f4a5b6-c7d8-4e9f-a0b1-c2d3e4f5a6b7",
  reactor: "a9b8c7d6-e5f4-4a3b-9c2d-1e0f9a8b7c6d",
  webhook: "c5d6e7f8-a9b0-4c1d-8e2f-3a4b5c6d7e8f",
  clientKey: "b1e2c3d4-5678-4234-9abc-def012345678",
  log: "d7e8f9a0-b1c2-4d3e-9f4a-5b6c7d8e9f0a",
  applePayMerchant: "3a6f1c2e-8d4b-4e7a-9b1c-5d2e8f4a6b0c",
  applePayCertificates: "8c1d2e3f-4a5b-4c6d-8e7f-9a0b1c2d3e4f",
  applePayToken: "c2995d93-600a-44a2-b6f1-2c25e46603a9",
} as const;

export const EXAMPLE_TIME = "2026-11-23T12:00:00.000Z";

/** The audit members of an example resource `actor` created at EXAMPLE_TIME, unchanged since. */
export const exampleCreatedBy = (actor: string | null) => ({
  created_by: actor,
  created_at: EXAMPLE_TIME,
  modified_by: null,
  modified_at: null,
});

/** The audit members of an example resource `actor` created and last changed at EXAMPLE_TIME. */
export const exampleChangedBy = (actor: string) => ({
  created_by: actor,
  created_at: EXAMPLE_TIME,
  modified_by: actor,
  modified_at: EXAMPLE_TIME,
});

/** An opaque cursor, as `pagination.next` answers one (src/db/cursors.ts). */
export const EXAMPLE_CURSOR = "q3PHbJ8cHq5Vw0XkS1pJ2m3gZqf4T1nVb9kR0yqHcTj2L8uXoWfD6aEr5sQy7iBz3MhNc0vGxKpU1tOe9dYl4wA";

/** A cursor page holding the one example item, with more after it. */
export const exampleCursorPage = <T>(item: T) => ({ pagination: { page_size: 20, next: EXAMPLE_CURSOR }, data: [item] });

/** A first page holding the one example item. */
export const examplePage = <T>(item: T) => ({
  pagination: { total_items: 1, page_number: 1, page_size: 20, total_pages: 1 },
  data: [item],
});
