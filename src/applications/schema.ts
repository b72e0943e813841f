import { z } from "@hono/zod-openapi";
import { CONDITION_ATTRIBUTES, CONDITION_OPERATORS, TRANSFORMS } from "../auth/access";
import { APPLICATION_TYPES, CREATABLE_APPLICATION_TYPES, PERMISSIONS } from "../auth/permissions";
import { Name } from "../http/schemas";
import { APPLICATIONS } from "../limits";
import { RuleContainerPath } from "../tokens/containers";

const Permission = z.enum(PERMISSIONS, { error: `must be one of ${PERMISSIONS.join(", ")}` });

export const AccessRuleSchema = z
  .object({
    description: z.string().max(500).nullish(),
    priority: z.number({ error: "must be an integer" }).int("must be an integer").min(0).max(1_000_000),
    container: RuleContainerPath,
    transform: z.enum(TRANSFORMS, { error: `must be one of ${TRANSFORMS.join(", ")}` }),
    permissions: z.array(Permission).min(1, "must hold at least one permission").max(PERMISSIONS.length),
  })
  .openapi("AccessRule");

/**
 * An exact origin as a browser sends it in `Origin`: http(s), a lower-case host name or IPv4 address,
 * a port only when not the scheme's default, nothing after. The host's characters are held to what
 * DNS names use, since origins are written into the frames' Content-Security-Policy, whose sources
 * cannot name an IPv6 literal: one would be saved and then never match.
 */
const ORIGIN_SHAPE = /^https?:\/\/[a-z0-9-]+(\.[a-z0-9-]+)*(:[0-9]{1,5})?$/;
const ORIGIN_FORM = "must be an exact origin: scheme://host[:port], http or https, without a path, wildcard or trailing slash";
const IPV6_LITERAL = /^https?:\/\/\[/;

function originOf(value: string): string | undefined {
  try {
    return new URL(value).origin;
  } catch {
    return undefined;
  }
}

export const AllowedOrigin = z
  .string()
  .max(APPLICATIONS.allowedOriginMaxLength)
  .refine(
    (value) => !IPV6_LITERAL.test(value),
    "must not be an IPv6 literal: a Content-Security-Policy source cannot name one; use a host name",
  )
  .refine((value) => IPV6_LITERAL.test(value) || (ORIGIN_SHAPE.test(value) && originOf(value) === value), ORIGIN_FORM)
  .openapi({ example: "https://shop.example.com" });

const AllowedOrigins = z
  .array(AllowedOrigin)
  .max(APPLICATIONS.maxAllowedOrigins)
  .refine((origins) => new Set(origins).size === origins.length, "must not list an origin twice")
  .default([])
  .openapi({
    description:
      "Public applications only. When not empty, the elements' frames for this application's keys may be embedded only in pages " +
      "of these origins (Content-Security-Policy frame-ancestors), and a request with one of its keys that carries an Origin header " +
      "naming another origin than these and the vault's own is refused (403). Requests without Origin (servers) are unaffected.",
  });

export const AccessConditionSchema = z
  .strictObject({
    attribute: z.enum(CONDITION_ATTRIBUTES, { error: `must be one of ${CONDITION_ATTRIBUTES.join(", ")}` }),
    operator: z.enum(CONDITION_OPERATORS, { error: `must be one of ${CONDITION_OPERATORS.join(", ")}` }),
    value: z.string().min(1).max(400),
  })
  .openapi("AccessCondition");

/** A rule as applications show it: an expiring application's (a session's) may hold conditions instead of a container. */
const ShownAccessRuleSchema = AccessRuleSchema.extend({
  container: AccessRuleSchema.shape.container.optional(),
  conditions: z.array(AccessConditionSchema).optional(),
});

export const CreateApplicationBody = z
  .object({
    name: Name,
    type: z.enum(CREATABLE_APPLICATION_TYPES, { error: `must be one of ${CREATABLE_APPLICATION_TYPES.join(", ")}` }),
    permissions: z.array(Permission).max(PERMISSIONS.length).default([]),
    rules: z.array(AccessRuleSchema).max(APPLICATIONS.maxRules).default([]),
    allowed_origins: AllowedOrigins,
    create_key: z
      .boolean({ error: "must be true or false" })
      .default(true)
      .openapi({ description: "false: the application gets no key (add one with POST /applications/{id}/keys)" }),
  })
  .openapi("CreateApplication");

export const UpdateApplicationBody = CreateApplicationBody.omit({ create_key: true })
  .extend({ type: CreateApplicationBody.shape.type.optional() })
  .openapi("UpdateApplication");

export type CreateApplication = z.infer<typeof CreateApplicationBody>;
/** What an application is made of, whoever creates it. */
export type ApplicationGrants = Omit<CreateApplication, "create_key">;
export type UpdateApplication = z.infer<typeof UpdateApplicationBody>;

export const ApplicationKeySchema = z
  .object({
    id: z.string(),
    key: z.string().optional(),
    created_at: z.string(),
    expires_at: z.string().nullable().openapi({ description: "When the key stops working (401); null: never" }),
  })
  .openapi("ApplicationKey");

export const ApiKeyBody = z
  .strictObject({
    expires_at: z.iso
      .datetime({ offset: true, error: "must be an ISO 8601 date-time" })
      .optional()
      .openapi({ description: "When the key stops working (401); absent: never" }),
  })
  .openapi("CreateApiKey");

export type ApiKeyInput = z.infer<typeof ApiKeyBody>;

export const ApplicationSchema = z
  .object({
    id: z.string(),
    tenant_id: z.string(),
    name: z.string(),
    type: z.enum(APPLICATION_TYPES),
    permissions: z.array(z.string()),
    rules: z.array(ShownAccessRuleSchema),
    allowed_origins: z.array(z.string()),
    created_by: z.string().nullable(),
    created_at: z.string(),
    modified_by: z.string().nullable(),
    modified_at: z.string().nullable(),
    expires_at: z.string().optional().openapi({ description: "An expiring application's end: its keys answer 401 from then on" }),
  })
  .openapi("Application");

/** `key` is the original interface's member; `keys` holds the same key with its id. Both are shown once. */
export const CreatedApplicationSchema = ApplicationSchema.extend({
  key: z.string().openapi({ description: "The new API key in plaintext; it is never shown again" }),
  keys: z.array(ApplicationKeySchema),
}).openapi("CreatedApplication");

/** POST /applications: as CreatedApplicationSchema, without `key` and with no `keys` when `create_key` was false. */
export const NewApplicationSchema = CreatedApplicationSchema.extend({
  key: CreatedApplicationSchema.shape.key.optional(),
}).openapi("NewApplication");

export type ApplicationResponse = z.infer<typeof ApplicationSchema>;
export type ApplicationKeyResponse = z.infer<typeof ApplicationKeySchema>;
export type NewApplicationResponse = z.infer<typeof NewApplicationSchema>;
