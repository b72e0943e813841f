import type { z } from "@hono/zod-openapi";
import { EXAMPLE_IDS } from "../http/examples";
import type { AuthorizeSessionBody, CreatedSessionSchema } from "./schema";

export const CREATED_SESSION_EXAMPLE = {
  session_key: "key_qG9t2XnB0yS5mVd7cE1hJ4kL8pR3wZ6aF0uI2oT5eYs",
  nonce: "4J7SiRvfADwJ9ZqwviJJs8",
  expires_at: "2026-11-23T12:03:00.000Z",
} satisfies z.output<typeof CreatedSessionSchema>;

/** The merchant's server lets the page's session reveal one card token, read by id, for the session's 3 minutes. */
export const AUTHORIZE_SESSION_EXAMPLE = {
  nonce: CREATED_SESSION_EXAMPLE.nonce,
  rules: [
    {
      description: "Reveal this customer's card",
      priority: 1,
      conditions: [{ attribute: "id", operator: "equals", value: EXAMPLE_IDS.token }],
      transform: "reveal",
      permissions: ["token:read"],
    },
  ],
} satisfies z.input<typeof AuthorizeSessionBody>;
