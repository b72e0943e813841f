import type { z } from "@hono/zod-openapi";
import { EXAMPLE_IDS, EXAMPLE_TIME } from "../http/examples";
import type { ClientKeyBody } from "./schema";

/*
 * Examples of the client encryption key routes (the API reference page shows them, and
 * test/foundation/platform.test.ts parses each with its operation's schema).
 */

export const CLIENT_KEY_REQUEST_EXAMPLE = { expires_at: "2027-05-01T00:00:00Z" } satisfies z.input<typeof ClientKeyBody>;

export const CLIENT_KEY_EXAMPLE = {
  id: EXAMPLE_IDS.clientKey,
  key_id: EXAMPLE_IDS.clientKey,
  expires_at: "2027-05-01T00:00:00.000Z",
  created_at: EXAMPLE_TIME,
};

export const CREATED_CLIENT_KEY_EXAMPLE = {
  ...CLIENT_KEY_EXAMPLE,
  public_key_pem: "-----BEGIN PUBLIC KEY-----\nWQ4geAENWHyR7+g94nN6lFZzY7YdGWxPtlX/16fJ4z0=\n-----END PUBLIC KEY-----",
};
