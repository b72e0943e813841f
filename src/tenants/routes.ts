import { createRoute, z } from "@hono/zod-openapi";
import { CreatedApplicationSchema } from "../applications/schema";
import { requirePermission } from "../auth/middleware";
import { requireContentType } from "../http/middleware";
import { requireOperator } from "../http/operator";
import { createRouter } from "../http/router";
import { IdParams, jsonBody, jsonContent, Name, problemResponses } from "../http/schemas";
import {
  CREATE_TENANT_EXAMPLE,
  CREATED_TENANT_EXAMPLE,
  MOVE_TENANT_EXAMPLE,
  RENAME_TENANT_EXAMPLE,
  RENAMED_TENANT_EXAMPLE,
  SHREDDED_TENANT_EXAMPLE,
  TENANT_EXAMPLE,
  TENANT_MOVE_EXAMPLE,
  USAGE_REPORT_EXAMPLE,
} from "./examples";
import { moveTenant } from "./moves";
import { TenantSchema, UpdateTenantBody, UsageReportSchema } from "./schema";
import { createTenant, getOwnTenant, renameOwnTenant } from "./service";
import { shredTenant } from "./shred";
import { usageReport } from "./usage";

/** The binding of a data database, as wrangler.toml names it. */
const DataBinding = z.string({ error: "is required" }).regex(/^DB(_\d+)?$/, "must be a data database binding (DB_1, DB_2 …)");

const create = createRoute({
  method: "post",
  path: "/tenants",
  tags: ["Operators"],
  security: [{ OperatorKey: [] }],
  summary: "Create a tenant with its first management application and key (operators only)",
  description:
    "Needs `SVC-OPERATOR-KEY`. Places the tenant in the data database named, or in the one holding the fewest tenants, and " +
    "creates its data keys and a management application. The answer is the only place that application's key is shown: " +
    "with it the tenant creates its other applications.",
  middleware: [requireOperator, requireContentType("application/json")] as const,
  request: jsonBody(
    z
      .object({
        name: Name,
        database: DataBinding.optional().openapi({
          description: "The data database to place the tenant in; by default the one holding the fewest tenants",
        }),
      })
      .openapi("CreateTenant"),
    CREATE_TENANT_EXAMPLE,
  ),
  responses: {
    201: jsonContent(
      z.object({
        tenant: z.object({ id: z.string(), name: z.string(), database: z.string(), created_at: z.string() }),
        application: CreatedApplicationSchema,
      }),
      "The tenant, its management application and the application's key (shown once)",
      CREATED_TENANT_EXAMPLE,
    ),
    ...problemResponses(400, 401, 404, 415),
  },
});

const move = createRoute({
  method: "post",
  path: "/tenants/{id}/move",
  tags: ["Operators"],
  security: [{ OperatorKey: [] }],
  summary: "Move a tenant to another data database, online (operators only)",
  description:
    "Needs `SVC-OPERATOR-KEY`. Copies the tenant's tokens and audit log in batches while it keeps working, blocks its writes " +
    "(503 with Retry-After) only to copy the last changes, verifies row counts, switches the directory and purges the old " +
    "copy. Each call advances the move by at most `max_batches` steps and answers its phase: call again until it is `done` " +
    "(409 while the tenant's data keys are being rotated, or while it is moving to another database).",
  middleware: [requireOperator, requireContentType("application/json")] as const,
  request: {
    params: IdParams,
    ...jsonBody(
      z
        .object({
          database: DataBinding,
          max_batches: z.number({ error: "must be an integer" }).int().min(1).max(1_000_000).optional(),
        })
        .openapi("MoveTenant"),
      MOVE_TENANT_EXAMPLE,
    ),
  },
  responses: {
    200: jsonContent(
      z.object({
        tenant_id: z.string(),
        source: z.string(),
        target: z.string(),
        phase: z.enum(["copying", "blocked", "switched", "done"]),
      }),
      "Where the move stands",
      TENANT_MOVE_EXAMPLE,
    ),
    ...problemResponses(400, 401, 404, 409, 415),
  },
});

const shred = createRoute({
  method: "delete",
  path: "/tenants/{id}",
  tags: ["Operators"],
  security: [{ OperatorKey: [] }],
  summary: "Delete a tenant by crypto-shredding it (operators only)",
  description:
    "Needs `SVC-OPERATOR-KEY`. Destroys the tenant's data keys, applications, API keys, proxies, reactors, formulas and " +
    "webhooks in one batch, so nothing it stored can be decrypted any more; the cron then purges its rows in bounded " +
    "batches. Calling again answers the same status until the purge is done (then 404); 409 while the tenant is being moved.",
  middleware: [requireOperator] as const,
  request: { params: IdParams },
  responses: {
    200: jsonContent(
      z
        .object({
          tenant_id: z.string(),
          shredded_at: z.string(),
          derived_keys: z.boolean().openapi({
            description:
              "The tenant predates envelope encryption: its keys derive from keyring version 1, so its data is unreadable only once that version leaves the keyring",
          }),
          remaining_rows: z.number().int().openapi({ description: "Rows the cron has still to purge" }),
        })
        .openapi("ShreddedTenant"),
      "The tenant's keys are destroyed",
      SHREDDED_TENANT_EXAMPLE,
    ),
    ...problemResponses(400, 401, 404, 409),
  },
});

export const tenantRoutes = createRouter()
  .openapi(create, async (c) => {
    const created = await createTenant(c.var.request, c.req.valid("json"));
    c.var.request.audit.tenantId = created.tenant.id;
    c.var.request.audit.describe({ entityId: created.tenant.id });
    return c.json(created, 201);
  })
  .openapi(shred, async (c) => {
    const status = await shredTenant(c.var.request, c.req.valid("param").id);
    c.var.request.audit.describe({ message: `${status.remaining_rows} rows left to purge` });
    return c.json(status, 200);
  })
  .openapi(move, async (c) => {
    const status = await moveTenant(c.var.request, c.req.valid("param").id, c.req.valid("json"));
    // Recorded in the tenant's own log once the directory knows it (a 404 goes to the deployment's).
    c.var.request.audit.tenantId = status.tenant_id;
    c.var.request.audit.describe({ message: `to ${status.target}, ${status.phase}` });
    return c.json(status, 200);
  });

const getSelf = createRoute({
  method: "get",
  path: "/tenants/self",
  tags: ["Tenants"],
  security: [{ ApiKey: [] }],
  summary: "Get the caller's own tenant",
  description: "Needs tenant:read (a management permission). The tenant of the calling key: its id, name and times.",
  middleware: [requirePermission("tenant:read")] as const,
  responses: { 200: jsonContent(TenantSchema, "The caller's tenant", TENANT_EXAMPLE), ...problemResponses(401, 403, 404) },
});

const updateSelf = createRoute({
  method: "put",
  path: "/tenants/self",
  tags: ["Tenants"],
  security: [{ ApiKey: [] }],
  summary: "Rename the caller's own tenant",
  description:
    "Needs tenant:update (a management permission). `name` is all a tenant changes of itself: `settings` (the original " +
    "interface's tenant settings) are not supported and refused with a 400.",
  middleware: [requirePermission("tenant:update"), requireContentType("application/json")] as const,
  request: jsonBody(UpdateTenantBody, RENAME_TENANT_EXAMPLE),
  responses: {
    200: jsonContent(TenantSchema, "The renamed tenant", RENAMED_TENANT_EXAMPLE),
    ...problemResponses(400, 401, 403, 404, 415),
  },
});

const getUsage = createRoute({
  method: "get",
  path: "/tenants/self/reports/usage",
  tags: ["Tenants"],
  security: [{ ApiKey: [] }],
  summary: "Get the caller's tenant's usage report: its tokens by type and by container",
  description:
    "Needs tenant:read (a management permission). Counts, never token data: the counts are kept as tokens are written, " +
    "deleted, moved and purged, so a report costs the same whatever the tenant holds. Tokens past their expiry count until " +
    "the cron purges them (every 15 minutes).",
  middleware: [requirePermission("tenant:read")] as const,
  responses: {
    200: jsonContent(UsageReportSchema, "The tenant's usage report", USAGE_REPORT_EXAMPLE),
    ...problemResponses(401, 403),
  },
});

/** The caller's own tenant, for its API keys: mounted among the authenticated routes, unlike the operators' above. */
export const tenantSelfRoutes = createRouter()
  .openapi(getSelf, async (c) => c.json(await getOwnTenant(c.var.context, c.var.principal), 200))
  .openapi(getUsage, async (c) => c.json(await usageReport(c.var.context), 200))
  .openapi(updateSelf, async (c) => c.json(await renameOwnTenant(c.var.context, c.var.principal, c.req.valid("json")), 200));
