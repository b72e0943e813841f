import { z } from "@hono/zod-openapi";
import { APPLICATION_TYPES, PERMISSIONS } from "../auth/permissions";
import { UNKNOWN_MEMBERS_REFUSED } from "../http/schemas";
import { SECRET_MAX_LENGTH } from "../limits";

export const SignInBody = z
  .strictObject(
    {
      api_key: z
        .string({ error: "is required" })
        .min(1, "must not be empty")
        .max(SECRET_MAX_LENGTH, `must be at most ${SECRET_MAX_LENGTH} characters`)
        .openapi({ description: "A management or private application's API key: sent once, never stored" }),
    },
    UNKNOWN_MEMBERS_REFUSED,
  )
  .openapi("ConsoleSignIn");

export const ConsoleSessionSchema = z
  .object({
    tenant_id: z.string(),
    application: z.object({ id: z.string(), name: z.string(), type: z.enum(APPLICATION_TYPES) }),
    permissions: z.array(z.enum(PERMISSIONS)),
    expires_at: z.string().openapi({ description: "When the session ends unless it is used again (never later than its absolute end)" }),
  })
  .openapi("ConsoleSession");

export type ConsoleSessionResponse = z.infer<typeof ConsoleSessionSchema>;
