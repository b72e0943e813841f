import { EXAMPLE_IDS, exampleChangedBy } from "../http/examples";
import type { TokenResponse } from "../tokens/schema";
import type { SearchRequest, SearchRequestV2 } from "./schema";

/** Sent to the vault by test/foundation/platform.test.ts: it must stay a query the vault accepts. */
export const SEARCH_REQUEST_EXAMPLE = {
  query: "data:4242424242424242 AND container:/pci/*",
  page: 1,
  size: 20,
} satisfies SearchRequest;

/** The same search a page at a time by cursor (the first page: no `start`). */
export const SEARCH_V2_REQUEST_EXAMPLE = {
  query: SEARCH_REQUEST_EXAMPLE.query,
  size: 20,
} satisfies SearchRequestV2;

/**
 * What SEARCH_REQUEST_EXAMPLE finds: only `token`, social security and employer id tokens have
 * search indexes, so a card number stored as a plain `token` in /pci/ (not the example card token).
 */
export const SEARCHED_TOKEN_EXAMPLE = {
  id: EXAMPLE_IDS.otherToken,
  type: "token",
  tenant_id: EXAMPLE_IDS.tenant,
  data: "XXXXXXXXXXXX4242",
  fingerprint: "wVNbpFtA0mYwBG0P7vLP6Q4RQs9T7D66ODVxXexwuEk",
  containers: ["/pci/high/"],
  metadata: { customer_id: "c-1042" },
  search_indexes: ["{{ data }}"],
  fingerprint_expression: "{{ data | stringify }}",
  mask: "{{ data | reveal_last: 4 }}",
  expires_at: null,
  ...exampleChangedBy(EXAMPLE_IDS.application),
} satisfies TokenResponse;
