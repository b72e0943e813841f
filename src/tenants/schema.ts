import { z } from "@hono/zod-openapi";
import { Name } from "../http/schemas";

/** A tenant as its own keys see it (GET and PUT /tenants/self): never its placement or keys. */
export const TenantSchema = z
  .object({
    id: z.string(),
    name: z.string(),
    created_by: z.null().openapi({ description: "Tenants are created by operators, not by an application" }),
    created_at: z.string(),
    modified_by: z.string().nullable().openapi({ description: "The application that last renamed the tenant" }),
    modified_at: z.string().nullable(),
  })
  .openapi("Tenant");

export type TenantResponse = z.infer<typeof TenantSchema>;

export const UpdateTenantBody = z
  .object({
    name: Name,
    settings: z
      .unknown()
      .refine(
        (settings) => settings === undefined || settings === null,
        "is not supported: this vault has no tenant settings (tokens are always fingerprinted, and deduplicated when a request asks with deduplicate_token)",
      )
      .optional()
      .openapi({ description: "Not supported: absent or null, else a 400" }),
  })
  .openapi("UpdateTenant");

export type UpdateTenant = z.infer<typeof UpdateTenantBody>;

/** Containers a usage report lists at most, in path order: a tenant may make any number of them. */
export const REPORTED_CONTAINERS = 1_000;

/**
 * The original interface's usage report (its clients parse `total_tokens` and `token_report`), with
 * the vault's extension `metrics_by_container`. Monthly active tokens are not kept, so not reported.
 */
export const UsageReportSchema = z
  .object({
    token_report: z.object({
      total_tokens: z.number().int().openapi({ description: "Tokens the tenant holds, of every type" }),
      metrics_by_type: z
        .record(
          z.string(),
          z.object({
            count: z.number().int(),
            last_created_at: z.string().openapi({ description: "When the newest token of the type still held was created" }),
          }),
        )
        .openapi({ description: "Tokens by type; a type the tenant holds none of is absent" }),
      metrics_by_container: z.record(z.string(), z.object({ count: z.number().int() })).openapi({
        description:
          "Tokens by container, each counted in exactly the containers it names (not their parents). " +
          `At most ${REPORTED_CONTAINERS} containers, the first in path order: see metrics_by_container_complete`,
      }),
      metrics_by_container_complete: z.boolean().openapi({ description: "False when the tenant has more containers than listed" }),
    }),
    total_tokens: z.number().int(),
  })
  .openapi("TenantUsageReport");

export type UsageReport = z.infer<typeof UsageReportSchema>;
