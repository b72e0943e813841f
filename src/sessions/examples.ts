import type { z } from "@hono/zod-openapi";
import { EXAMPLE_IDS } from "../http/examples";
import type { AuthorizeSessionBody, CreatedSessionSchema } from "./schema";

export const CREATED_SESSION_EXAMPLE = {
  session_key: "key_qG9t2XnB0yS5mVd7cE1hJ4kL8pR3wZ6aF0uI2oT5eYs",
  // Signed by the vault: it carries 12:00 and 12:03 below, the application's id and the session key's digest.
  nonce: "AQGiCEb-AAGiCEm9IFuMHio9T0prnH2OnwobLD1lzMeRBpy7Mp_u7xJra4gglrFNb_v3KdMEXdEBWIAaWn5wH_MFZD_hZ4sOclHN8SRDxEQ8WN-MYOlKUBdcUm9M",
  expires_at: "2026-11-23T12:03:00.000Z",
} satisfies z.output<typeof CreatedSessionSchema>;

/** The merchant's server lets the page's session reveal one card token, read by id, for the session's minute. */
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
