import { createRoute, z } from "@hono/zod-openapi";
import { requireOperator } from "../http/operator";
import { createRouter } from "../http/router";
import { IdParams, jsonContent, problemResponses } from "../http/schemas";
import { KEYRING_STATUS_EXAMPLE, REWRAP_EXAMPLE, ROTATION_RUNNING_EXAMPLE, ROTATION_STARTED_EXAMPLE } from "./examples";
import { rotationStatus, startRotation } from "./rotation";
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
  path: "/operator/keys",
  tags,
  security,
  summary: "What the keyring wraps (operators only)",
  description:
    "Needs `SVC-OPERATOR-KEY`. Counts the tenants' data-key records under each key-encryption key of VAULT_MASTER_KEYS, so " +
    "an operator rotating the master key knows when the older versions may leave the keyring (`remaining` 0).",
  middleware: [requireOperator] as const,
  responses: { 200: jsonContent(KeyringStatusSchema, "The keyring's status", KEYRING_STATUS_EXAMPLE), ...problemResponses(401, 404) },
});

const rewrap = createRoute({
  method: "post",
  path: "/operator/keys/rewrap",
  tags,
  security,
  summary: "Re-wrap tenants' data keys under the newest key-encryption key (operators only)",
  description:
    "Needs `SVC-OPERATOR-KEY`. Stores the derived keys of tenants created before envelope encryption, then re-wraps up to " +
    "`max_records` data-key records under the highest version of VAULT_MASTER_KEYS, without touching any token. Call again " +
    "until `remaining` is 0; the older versions may then leave the keyring.",
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
      REWRAP_EXAMPLE,
    ),
    ...problemResponses(400, 401, 404),
  },
});

const RotationSchema = z
  .object({
    tenant_id: z.string(),
    from_version: z.number().int().openapi({ description: "The data-key version being replaced (destroyed once done)" }),
    to_version: z.number().int().openapi({ description: "The new version, which every write uses from the start" }),
    state: z.enum(["waiting", "running", "finishing", "done"]).openapi({
      description:
        "waiting: every isolate learns the new version (one credential time to live); running: re-encrypting; " +
        "finishing: a last check one time to live later; done: the old version is destroyed",
    }),
    done: z.number().int().openapi({ description: "Records re-encrypted so far" }),
    total: z
      .number()
      .int()
      .nullable()
      .openapi({ description: "Records under the old version when re-encryption began; null while waiting" }),
    started_at: z.string(),
    finished_at: z.string().nullable(),
    last_error: z.string().nullable().openapi({ description: "Why the last step failed, while it is being retried" }),
  })
  .openapi("KeyRotation");

const startRotationRoute = createRoute({
  method: "post",
  path: "/tenants/{id}/rotation",
  tags,
  security,
  summary: "Rotate a tenant's data keys, online (operators only)",
  description:
    "Needs `SVC-OPERATOR-KEY`. Stores a new data-key version, which every write uses within one credential time to live, " +
    "then re-encrypts in the background everything the tenant sealed under the old one (tokens with their fingerprints and " +
    "blind indexes, proxies, reactor configurations, webhook secrets, client encryption keys, idempotency records) while reads, `data:` search and " +
    "deduplication match both versions. Once nothing is left the old version is destroyed; 409 while a rotation or a move " +
    "of the tenant runs.",
  middleware: [requireOperator] as const,
  request: { params: IdParams },
  responses: {
    202: jsonContent(RotationSchema, "The rotation has started", ROTATION_STARTED_EXAMPLE),
    ...problemResponses(400, 401, 404, 409),
  },
});

const rotationRoute = createRoute({
  method: "get",
  path: "/tenants/{id}/rotation",
  tags,
  security,
  summary: "Follow a tenant's data-key rotation (operators only)",
  description:
    "Needs `SVC-OPERATOR-KEY`. Answers the state and progress of the tenant's latest data-key rotation; a finished one " +
    "stays readable until the next starts.",
  middleware: [requireOperator] as const,
  request: { params: IdParams },
  responses: { 200: jsonContent(RotationSchema, "The latest rotation", ROTATION_RUNNING_EXAMPLE), ...problemResponses(400, 401, 404) },
});

export const keyRoutes = createRouter()
  .openapi(startRotationRoute, async (c) => {
    const status = await startRotation(c.var.request, c.req.valid("param").id);
    c.var.request.audit.tenantId = status.tenant_id;
    c.var.request.audit.describe({ message: `data keys rotating from version ${status.from_version} to ${status.to_version}` });
    return c.json(status, 202);
  })
  .openapi(rotationRoute, async (c) => c.json(await rotationStatus(c.var.request, c.req.valid("param").id), 200))
  .openapi(status, async (c) => c.json(await keyringStatus(c.var.request), 200))
  .openapi(rewrap, async (c) => {
    const result = await rewrapKeys(c.var.request, c.req.valid("query").max_records);
    c.var.request.audit.describe({
      message: `${result.rewrapped} records re-wrapped under version ${result.kek_version}, ${result.remaining} remaining`,
    });
    return c.json(result, 200);
  });
