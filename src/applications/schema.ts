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
  })
  .openapi("CreateApplication");

export const UpdateApplicationBody = CreateApplicationBody.extend({
  type: CreateApplicationBody.shape.type.optional(),
}).openapi("UpdateApplication");

export type CreateApplication = z.infer<typeof CreateApplicationBody>;
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

export type ApplicationResponse = z.infer<typeof ApplicationSchema>;
export type ApplicationKeyResponse = z.infer<typeof ApplicationKeySchema>;
