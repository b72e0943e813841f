import { z } from "@hono/zod-openapi";
import { AccessConditionSchema, AccessRuleSchema } from "../applications/schema";
import { TOKEN_PERMISSIONS } from "../auth/permissions";
import { APPLICATIONS } from "../limits";

export const CreatedSessionSchema = z
  .object({
    session_key: z.string().openapi({ description: "The session's API key: it authenticates nothing until the session is authorized" }),
    nonce: z.string().openapi({
      description:
        "The one-time code the application's server authorizes the session with: 124 base64url characters, signed by the vault " +
        "(it carries the session's times, its application and the session key's digest, so an unauthorized session is stored nowhere)",
    }),
    expires_at: z.string().openapi({
      description: "When the nonce can no longer be authorized, and the session's end unless its authorization sets another time",
    }),
  })
  .openapi("CreatedSession");

const TokenPermission = z.enum(TOKEN_PERMISSIONS, {
  error: `must be one of ${TOKEN_PERMISSIONS.join(", ")}: a session holds token permissions only`,
});

/** A session's rule: a container, or conditions naming its tokens (`id` or `container`, `equals` or `starts_with`), not both. */
export const SessionRuleSchema = AccessRuleSchema.extend({
  container: AccessRuleSchema.shape.container.optional(),
  conditions: z.array(AccessConditionSchema).min(1, "must hold at least one condition").max(10).optional(),
  permissions: z.array(TokenPermission).min(1, "must hold at least one permission").max(TOKEN_PERMISSIONS.length),
})
  .refine((rule) => (rule.container === undefined) !== (rule.conditions === undefined), {
    error: "a rule has either a container or conditions",
    path: ["container"],
  })
  .openapi("SessionAccessRule");

export const AuthorizeSessionBody = z
  .strictObject({
    // Longer than any nonce the vault makes (124 characters), so that an altered one is still the 404 of an unknown one.
    nonce: z.string({ error: "is required" }).min(1, "must not be empty").max(200),
    permissions: z.array(TokenPermission).max(TOKEN_PERMISSIONS.length).default([]),
    rules: z.array(SessionRuleSchema).max(APPLICATIONS.maxRules).default([]),
    expires_at: z.iso
      .datetime({ offset: true, error: "must be an ISO 8601 date-time" })
      .optional()
      .openapi({
        description:
          "When the session ends: at most a day after it was created, and not after the authorizing key's own expiry (400); " +
          "absent: the end POST /sessions answered, or the authorizing key's expiry when that comes first",
      }),
  })
  .openapi("AuthorizeSession");

export type AuthorizeSession = z.infer<typeof AuthorizeSessionBody>;
export type SessionRule = z.infer<typeof SessionRuleSchema>;
