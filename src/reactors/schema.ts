import { z } from "@hono/zod-openapi";
import { ApplicationSchema } from "../applications/schema";
import { Name, ProblemSchema, UNKNOWN_MEMBERS_REFUSED, Uuid } from "../http/schemas";
import { NAME_MAX_LENGTH, REACTORS, SANDBOX } from "../limits";
import { iconProblem } from "./icon";

export const FORMULA_TYPES = ["official", "private"] as const;
export const FORMULA_STATUSES = ["verified", "coming_soon"] as const;
export const VALUE_TYPES = ["string", "boolean", "number"] as const;
export type ValueType = (typeof VALUE_TYPES)[number];

const CONTRACT_MAX_ELEMENTS = REACTORS.maxContractElements;
const REACTORS_CODE_MAX_LENGTH = SANDBOX.codeMaxLength;

const Description = z
  .string({ error: "must be a string" })
  .max(REACTORS.descriptionMaxLength, `must be at most ${REACTORS.descriptionMaxLength} characters`)
  .nullish();
/** Contract elements: a missing description reads back as null. */
const ElementDescription = Description.default(null);
const ValueTypeSchema = z.enum(VALUE_TYPES, { error: `must be one of ${VALUE_TYPES.join(", ")}` });

const ConfigurationElementSchema = z
  .object({
    name: z
      .string({ error: "is required" })
      .min(1, "must not be empty")
      .max(NAME_MAX_LENGTH, `must be at most ${NAME_MAX_LENGTH} characters`)
      .refine((name) => !name.includes("."), "must not contain dots: configuration is flat"),
    description: ElementDescription,
    type: ValueTypeSchema,
  })
  .openapi("ReactorConfigurationElement");

const RequestParameterSchema = z
  .object({
    name: z
      .string({ error: "is required" })
      .max(NAME_MAX_LENGTH, `must be at most ${NAME_MAX_LENGTH} characters`)
      .refine((name) => name.split(".").every((segment) => segment.length > 0), "must be dot-separated names with no empty segment"),
    description: ElementDescription,
    type: ValueTypeSchema,
    optional: z.boolean({ error: "must be a boolean" }).default(false),
  })
  .openapi("ReactorRequestParameter");

export type ConfigurationElement = z.infer<typeof ConfigurationElementSchema>;
export type RequestParameter = z.infer<typeof RequestParameterSchema>;

/**
 * Names are unique, and a request parameter cannot be both a value and the parent of another
 * (`card` and `card.number`): args could never satisfy both.
 */
function uniqueNames(elements: { name: string; type: ValueType }[], context: z.RefinementCtx) {
  const seen = new Map<string, number>();
  elements.forEach(({ name }, index) => {
    if (seen.has(name)) {
      context.addIssue({ code: "custom", path: [index, "name"], message: `duplicates the name of element ${seen.get(name)}` });
    } else {
      seen.set(name, index);
    }
  });
  elements.forEach(({ name }, index) => {
    const parent = elements.find((other) => name.startsWith(`${other.name}.`));
    if (parent) {
      context.addIssue({
        code: "custom",
        path: [index, "name"],
        message: `is nested inside ${parent.name}, which is itself declared as a ${parent.type}`,
      });
    }
  });
}

const Icon = z
  .string({ error: "must be a string" })
  .superRefine((icon, context) => {
    const problem = iconProblem(icon);
    if (problem) context.addIssue({ code: "custom", message: problem });
  })
  .openapi({ description: "Base64 data URL of an image/png, image/jpg or image/jpeg (at most 64 KiB decoded)" });

export const FormulaBody = z
  .object({
    name: Name,
    description: Description,
    type: z.enum(FORMULA_TYPES, { error: `must be one of ${FORMULA_TYPES.join(", ")}` }),
    icon: Icon.nullish(),
    code: z
      .string({ error: "is required" })
      .min(1, "must not be empty")
      .openapi({ description: "Node 16 style CommonJS (module.exports = async function (req) {…}); checked by the sandbox when saved" }),
    configuration: z
      .array(ConfigurationElementSchema)
      .max(CONTRACT_MAX_ELEMENTS, `must hold at most ${CONTRACT_MAX_ELEMENTS} elements`)
      .superRefine(uniqueNames)
      .default([]),
    request_parameters: z
      .array(RequestParameterSchema)
      .max(CONTRACT_MAX_ELEMENTS, `must hold at most ${CONTRACT_MAX_ELEMENTS} elements`)
      .superRefine(uniqueNames)
      .default([]),
  })
  .openapi("ReactorFormulaInput");

export type FormulaInput = z.infer<typeof FormulaBody>;

const audit = {
  created_by: z.string().nullable(),
  created_at: z.string(),
  modified_by: z.string().nullable(),
  modified_at: z.string().nullable(),
};

export const FormulaSchema = z
  .object({
    id: z.string(),
    name: z.string(),
    description: z.string().nullable(),
    type: z.enum(FORMULA_TYPES),
    status: z.enum(FORMULA_STATUSES),
    icon: z.string().nullable(),
    code: z.string(),
    configuration: z.array(ConfigurationElementSchema),
    request_parameters: z.array(RequestParameterSchema),
    ...audit,
  })
  .openapi("ReactorFormula");

export type FormulaResponse = z.infer<typeof FormulaSchema>;

/** Configuration values are scalars; strings that convert losslessly are accepted for numbers and booleans. */
const ConfigurationValue = z.union([z.string(), z.number(), z.boolean()], { error: "must be a string, number or boolean" });
/** `{"id": …}` naming a formula or an application: any other member would be dropped, so it is refused. */
const Reference = (what: string) =>
  z.strictObject(
    { id: Uuid },
    {
      error: (issue: { code?: string; keys?: string[] }) =>
        issue.code === "unrecognized_keys"
          ? `unknown field${issue.keys!.length > 1 ? "s" : ""}: ${issue.keys!.join(", ")} (only the ${what}'s id is sent)`
          : `must be an object {"id": <${what} id>}`,
    },
  );

/**
 * The one runtime reactor code has here: the sandbox (Node 16 style CommonJS or an ES module, the
 * modules docs/proxies.md lists, no packages to install). The original interface's other images and
 * settings (node22, dependencies, timeout, …) would be dropped, so they are refused.
 */
export const RUNTIME_IMAGE = "node-bt";
export const RuntimeSchema = z
  .strictObject(
    { image: z.literal(RUNTIME_IMAGE, { error: `must be "${RUNTIME_IMAGE}": reactor code runs in the vault's sandbox` }) },
    {
      error: (issue: { code?: string; keys?: string[] }) =>
        issue.code === "unrecognized_keys"
          ? `not supported: ${issue.keys!.join(", ")} (reactor code runs in the vault's sandbox, runtime "${RUNTIME_IMAGE}", with nothing to install)`
          : issue.code === "invalid_type"
            ? "must be a JSON object"
            : undefined,
    },
  )
  .openapi("ReactorRuntime");
export type Runtime = z.infer<typeof RuntimeSchema>;

const ReactorCode = z
  .string({ error: "must be a string" })
  .min(1, "must not be empty")
  .openapi({
    description: `The reactor's own code, instead of a formula: Node 16 style CommonJS (module.exports = async function (req) {…}), at most ${REACTORS_CODE_MAX_LENGTH} characters; checked by the sandbox when saved`,
  });

/** What a reactor runs: one of a formula and its own code. */
const reactorMembers = {
  name: Name,
  formula: Reference("formula").optional(),
  code: ReactorCode.optional(),
  runtime: RuntimeSchema.nullish(),
  configuration: z.record(z.string(), ConfigurationValue, { error: "must be an object" }).default({}),
  application: Reference("application").nullish(),
};

/** A reactor runs either a formula or its own code: never both, and on creation one of them. */
const oneProgram =
  (required: boolean) =>
  (body: { formula?: unknown; code?: unknown }, context: z.RefinementCtx): void => {
    if (body.formula !== undefined && body.code !== undefined) {
      context.addIssue({
        code: "custom",
        path: ["code"],
        message: "cannot be sent with formula: a reactor runs either a formula or its own code",
      });
    } else if (required && body.formula === undefined && body.code === undefined) {
      for (const [member, other] of [
        ["formula", "code"],
        ["code", "formula"],
      ]) {
        context.addIssue({
          code: "custom",
          path: [member!],
          message: `is required without ${other}: a reactor runs either a formula or its own code`,
        });
      }
    }
  };

export const ReactorBody = z.strictObject(reactorMembers, UNKNOWN_MEMBERS_REFUSED).superRefine(oneProgram(true)).openapi("ReactorInput");

/**
 * PUT: as on creation, except that without `formula` and `code` the reactor keeps what it runs (the
 * original interface's update of a formula reactor sends neither).
 */
export const ReactorReplacementBody = z
  .strictObject(reactorMembers, UNKNOWN_MEMBERS_REFUSED)
  .superRefine(oneProgram(false))
  .openapi("ReactorReplacement");

/** RFC 7396: a member set to null is removed (a configuration value, or the application). */
export const ReactorPatchBody = z
  .strictObject(
    {
      name: Name.optional(),
      formula: Reference("formula").optional(),
      code: ReactorCode.optional(),
      runtime: RuntimeSchema.nullish(),
      configuration: z.record(z.string(), ConfigurationValue.nullable(), { error: "must be an object" }).optional(),
      application: Reference("application").nullish(),
    },
    UNKNOWN_MEMBERS_REFUSED,
  )
  .superRefine(oneProgram(false))
  .openapi("ReactorPatch");

export type ReactorInput = z.infer<typeof ReactorBody>;
export type ReactorReplacement = z.infer<typeof ReactorReplacementBody>;
export type ReactorPatch = z.infer<typeof ReactorPatchBody>;

export const ReactorSchema = z
  .object({
    id: z.string(),
    tenant_id: z.string(),
    name: z.string(),
    formula: FormulaSchema.nullable().openapi({ description: "The formula the reactor runs; null for a reactor with its own code" }),
    code: z.string().nullable().openapi({ description: "The reactor's own code; null for a reactor of a formula" }),
    runtime: RuntimeSchema.nullable().openapi({ description: "Where the reactor's own code runs; null for a reactor of a formula" }),
    configuration: z.record(z.string(), z.union([z.string(), z.number(), z.boolean()])),
    application: ApplicationSchema.nullable().openapi({ description: "The application whose key `bt` uses; null without one" }),
    application_id: z.string().nullable(),
    ...audit,
  })
  .openapi("Reactor");

export type ReactorResponse = z.infer<typeof ReactorSchema>;

export const ReactBody = z
  .strictObject(
    {
      args: z.record(z.string(), z.unknown(), { error: "must be an object" }).default({}),
    },
    UNKNOWN_MEMBERS_REFUSED,
  )
  .openapi("ReactRequest");

export const ReactResultSchema = z
  .object({
    tokens: z.unknown().openapi({ description: "The `tokenize` output, tokenized like POST /tokenize; null without one" }),
    raw: z.unknown().openapi({ description: "The `raw` output as returned by the code; null without one" }),
  })
  .openapi("ReactResult");

export type ReactResult = z.infer<typeof ReactResultSchema>;

/** The reactor and one of its async reactions. */
export const ReactionParams = z.object({
  id: Uuid.openapi({ param: { name: "id", in: "path" } }),
  request_id: Uuid.openapi({ param: { name: "request_id", in: "path" } }),
});

/** What react-async answers at once, as the original interface names it. */
export const ReactionAcceptedSchema = z
  .object({
    asyncReactorRequestId: z.string().openapi({ description: "Names the reaction in GET /reactors/{id}/results/{request_id}" }),
  })
  .openapi("AsyncReactResponse");

export const REACTION_STATUSES = ["pending", "running", "completed", "failed"] as const;

export const ReactionResultSchema = z
  .object({
    id: z.string().openapi({ description: "The request id react-async answered" }),
    reactor_id: z.string(),
    status: z.enum(REACTION_STATUSES).openapi({
      description: "pending (queued), running, completed (`tokens` and `raw` as react answers them) or failed (`error`)",
    }),
    tokens: z.unknown().openapi({ description: "Completed: the `tokenize` output, tokenized like POST /tokenize; otherwise null" }),
    raw: z.unknown().openapi({ description: "Completed: the `raw` output as returned by the code; otherwise null" }),
    error: ProblemSchema.nullable().openapi({ description: "Failed: the problem react would have answered; otherwise null" }),
    response: z
      .object({ status: z.number().int(), headers: z.record(z.string(), z.string()), body: z.unknown() })
      .nullable()
      .openapi({ description: "Failed because the code threw CustomHttpResponseError: the response it chose; otherwise null" }),
    created_at: z.string(),
    completed_at: z.string().nullable(),
    expires_at: z
      .string()
      .openapi({ description: "When the result is gone: a day after the request, or a detokenized card cvc's deadline" }),
  })
  .openapi("ReactionResult");

export type ReactionResult = z.infer<typeof ReactionResultSchema>;
