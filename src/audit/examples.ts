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

const SUMMARY_FROM = Date.parse("2027-05-03T09:00:00.000Z");

/** A day of a tenant whose checkout proxy calls a card processor, which failed for a few minutes at 02:00. */
export const SUMMARY_EXAMPLE = {
  window: "24h" as const,
  from: new Date(SUMMARY_FROM).toISOString(),
  to: "2027-05-04T08:30:00.000Z",
  requests_by_hour: Array.from({ length: 24 }, (_, i) => ({
    hour: new Date(SUMMARY_FROM + i * 3_600_000).toISOString(),
    "2xx": 1_200 + ((i * 137) % 400),
    "3xx": 0,
    "4xx": 10 + ((i * 7) % 9),
    "5xx": i === 17 ? 42 : 0,
  })),
  busiest_proxies: [{ id: EXAMPLE_IDS.proxy, name: "Card processor", calls: 28_410, errors: 96 }],
  busiest_reactors: [],
  recent_errors: [
    {
      created_at: "2027-05-04T02:04:51.000Z",
      operation: "invoke",
      status: 502,
      trace_id: "0b8e4d6a-2f1c-4a7e-9d3b-6c5a8e2f1d07",
      entity_type: "proxy",
      entity_id: EXAMPLE_IDS.proxy,
    },
  ],
};
