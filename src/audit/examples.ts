import { EXAMPLE_IDS, EXAMPLE_TIME } from "../http/examples";
import { entityTypes } from "./service";

/*
 * Examples of the audit log's routes (the API reference page shows them, and
 * test/foundation/platform.test.ts parses each with its operation's schema).
 */

/** The example application reading the example card token. */
export const LOG_ENTRY_EXAMPLE = {
  id: EXAMPLE_IDS.log,
  tenant_id: EXAMPLE_IDS.tenant,
  actor_id: EXAMPLE_IDS.application,
  actor_type: "application" as const,
  credential_id: EXAMPLE_IDS.apiKey,
  entity_type: "token",
  entity_id: EXAMPLE_IDS.token,
  operation: "read",
  message: "Read token",
  status: 200,
  trace_id: "6f1c2a9e-4b7d-4e0a-8c3f-5d2b9a7e1f04",
  created_at: EXAMPLE_TIME,
  seq: 1042,
  hash: "r3JxQ0m8bV4kZ2yT7pW1nC6hF9sL5dA0eG3uK8iO2qM",
};

export const ENTITY_TYPES_EXAMPLE = entityTypes();

export const VERIFICATION_EXAMPLE = {
  verified: true,
  checked: 1042,
  first_seq: 1,
  last_seq: 1042,
  head_seq: 1042,
  anchor_seq: 0,
  pending: 0,
  complete: true,
  broken_at: null,
};
