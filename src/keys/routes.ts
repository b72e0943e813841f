import { createRoute, z } from "@hono/zod-openapi";
import { requireOperator } from "../http/operator";
import { createRouter } from "../http/router";
import { jsonContent, problemResponses } from "../http/schemas";
import { keyringStatus, REWRAP_MAX, rewrapKeys } from "./service";

const tags = ["Operators"];
const security = [{ OperatorKey: [] }];

const KeyringStatusSchema = z
  .object({
    keyring_versions: z.array(z.number().int()).openapi({ description: "The key-encryption keys configured, highest (wrapping) first" }),
    records_by_kek_version: z
      .record(z.string(), z.number().int())
      .openapi({ description: "How many tenant data-key records each key-encryption key wraps" }),
    tenants_with_derived_keys: z
      .number()
      .int()
      .openapi({ description: "Tenants whose keys still derive from keyring version 1 (created before envelope encryption)" }),
    remaining: z.number().int().openapi({ description: "Records a rewrap still has to do; at 0 only the highest version is needed" }),
  })
  .openapi("KeyringStatus");

const status = createRoute({
  method: "get",
  path: "/keys",
  tags,
  security,
  summary: "What the keyring wraps (operators only)",
  middleware: [requireOperator] as const,
  responses: { 200: jsonContent(KeyringStatusSchema, "The keyring's status"), ...problemResponses(401, 404) },
});

const rewrap = createRoute({
  method: "post",
  path: "/keys/rewrap",
  tags,
  security,
  summary: "Re-wrap tenants' data keys under the newest key-encryption key (operators only)",
  description:
    "Stores the derived keys of tenants created before envelope encryption, then re-wraps up to max_records data-key records " +
    "under the highest version of VAULT_MASTER_KEYS. No token is touched. Call again until remaining is 0; older versions " +
    "may then leave the keyring.",
  middleware: [requireOperator] as const,
  request: {
    query: z.object({
      max_records: z.coerce
        .number({ error: "must be an integer" })
        .int("must be an integer")
        .min(1)
        .max(REWRAP_MAX)
        .optional()
        .openapi({ description: `At most this many records per call (default and maximum ${REWRAP_MAX})` }),
    }),
  },
  responses: {
    200: jsonContent(
      KeyringStatusSchema.extend({
        kek_version: z.number().int().openapi({ description: "The version that now wraps" }),
        rewrapped: z.number().int().openapi({ description: "Records stored or re-wrapped by this call" }),
      }).openapi("Rewrap"),
      "What was re-wrapped, and what remains",
    ),
    ...problemResponses(400, 401, 404),
  },
});

export const keyRoutes = createRouter()
  .openapi(status, async (c) => c.json(await keyringStatus(c.var.request), 200))
  .openapi(rewrap, async (c) => {
    const result = await rewrapKeys(c.var.request, c.req.valid("query").max_records);
    c.var.request.audit.describe({
      message: `${result.rewrapped} records re-wrapped under version ${result.kek_version}, ${result.remaining} remaining`,
    });
    return c.json(result, 200);
  });
