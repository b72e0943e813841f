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
