import { z } from "@hono/zod-openapi";
import { isEncryptedData, JWE_NOT_OPENED_HERE } from "../client-keys/jwe";
import { DATE_TIME_FORMS, parseDateTime } from "../http/date-times";
import { PageQuery, repeatable, UNKNOWN_MEMBERS_REFUSED } from "../http/schemas";
import { TOKENS } from "../limits";
import { ContainerPath } from "./containers";
import { EXPRESSION_MAX_LENGTH, expressionProblem } from "./expressions";
import { isAliasExpression, normalTokenId, tokenIdProblem } from "./id-format";
import { SEARCHABLE_TYPES, TOKEN_TYPE_RULES, TOKEN_TYPES, type TokenType } from "./types";

export const MAX_CONTAINERS = TOKENS.maxContainers;
export const MAX_SEARCH_INDEXES = TOKENS.maxSearchIndexes;
export const MAX_METADATA_ENTRIES = TOKENS.maxMetadataEntries;
const METADATA_KEY_MAX_LENGTH = TOKENS.metadataKeyMaxLength;
const METADATA_VALUE_MAX_LENGTH = TOKENS.metadataValueMaxLength;

/** Unknown members are refused: a misspelt `search_indexes` must not silently create an unindexed token. */
export const strict = UNKNOWN_MEMBERS_REFUSED;

export const TokenTypeSchema = z.enum(TOKEN_TYPES, { error: `must be one of ${TOKEN_TYPES.join(", ")}` });

export const JsonValue = z.any().openapi({ description: "Any JSON value" });

const Expression = z
  .string({ error: "must be a string" })
  .min(1, "must not be empty")
  .max(EXPRESSION_MAX_LENGTH, `must be at most ${EXPRESSION_MAX_LENGTH} characters`)
  .superRefine((source, ctx) => {
    const problem = expressionProblem(source);
    if (problem) ctx.addIssue({ code: "custom", message: problem });
  })
  .openapi({ description: "A Liquid expression over `data`" });

/** A mask template's JSON text at most this long: it is stored with every token. */
export const MASK_MAX_LENGTH = TOKENS.maskMaxLength;

const MASK_PROBLEM = "must be an expression, or an object or array whose string values are expressions";

/**
 * An expression, or a JSON object or array whose string leaves are expressions (numbers, booleans
 * and null are kept as they are). The body gate bounds its depth.
 */
const Mask = z
  .union([Expression, z.record(z.string(), z.unknown()), z.array(z.unknown())], { error: MASK_PROBLEM })
  .superRefine((mask, ctx) => {
    if (typeof mask === "string") return;
    if (JSON.stringify(mask).length > MASK_MAX_LENGTH) {
      ctx.addIssue({ code: "custom", message: `must be at most ${MASK_MAX_LENGTH} characters as JSON` });
    }
    const visit = (value: unknown, path: (string | number)[]) => {
      if (typeof value === "string") {
        const problem =
          value.length > EXPRESSION_MAX_LENGTH ? `must be at most ${EXPRESSION_MAX_LENGTH} characters` : expressionProblem(value);
        if (problem) ctx.addIssue({ code: "custom", path, message: problem });
      } else if (Array.isArray(value)) for (const [index, item] of value.entries()) visit(item, [...path, index]);
      else if (value !== null && typeof value === "object") for (const [key, item] of Object.entries(value)) visit(item, [...path, key]);
    };
    visit(mask, []);
  })
  .openapi({
    description:
      "A Liquid expression over `data`, or a JSON object or array whose string leaves are expressions (the masked data keeps its shape and a leaf's JSON type)",
  });

export const Metadata = z
  .record(
    z.string().min(1, "keys must not be empty").max(METADATA_KEY_MAX_LENGTH, `keys must be at most ${METADATA_KEY_MAX_LENGTH} characters`),
    z.string({ error: "must be a string" }).max(METADATA_VALUE_MAX_LENGTH, `must be at most ${METADATA_VALUE_MAX_LENGTH} characters`),
    { error: "must be an object of string values" },
  )
  .refine((metadata) => Object.keys(metadata).length <= MAX_METADATA_ENTRIES, `must hold at most ${MAX_METADATA_ENTRIES} entries`);

const Containers = z
  .array(ContainerPath, { error: "must be an array of container paths" })
  .min(1, "must hold at least one container")
  .max(MAX_CONTAINERS, `must hold at most ${MAX_CONTAINERS} containers`);

const SearchIndexes = z
  .array(Expression, { error: "must be an array of expressions" })
  .max(MAX_SEARCH_INDEXES, `must hold at most ${MAX_SEARCH_INDEXES} expressions`);

/** A time to come, in either form parseDateTime reads; normalised to ISO 8601 in UTC. */
export const FutureTime = z
  .string({ error: `must be ${DATE_TIME_FORMS}` })
  .transform((text, ctx) => {
    const time = parseDateTime(text);
    if (time === null) {
      ctx.addIssue({ code: "custom", message: `must be ${DATE_TIME_FORMS}` });
      return z.NEVER;
    }
    if (time <= Date.now()) {
      ctx.addIssue({ code: "custom", message: "must be in the future" });
      return z.NEVER;
    }
    return new Date(time).toISOString();
  })
  .openapi({
    type: "string",
    description:
      "In the future: ISO 8601 with a time zone (2030-08-26T19:23:57-07:00), or the original docs' form (8/26/2030 7:23:57 PM -07:00)",
  });

/**
 * A chosen token id: a literal id, or an alias expression over `data` whose rendered value must
 * then satisfy the same rule (checked when the token is created).
 */
const ChosenTokenId = z
  .string({ error: "must be a string" })
  .superRefine((id, ctx) => {
    const problem = isAliasExpression(id)
      ? id.length > EXPRESSION_MAX_LENGTH
        ? `must be at most ${EXPRESSION_MAX_LENGTH} characters`
        : expressionProblem(id)
      : tokenIdProblem(id);
    if (problem) ctx.addIssue({ code: "custom", message: problem });
  })
  .openapi({
    description:
      "The token's id: 3 to 400 characters without # / \\ + ? [ ] | & = % < > { } ^, or an alias expression " +
      "such as `{{ data | alias_preserve_format: 0, 4 }}`. A random UUID when absent.",
  });

/** A token id in a path or a filter: the id rule applies, UUIDs compare case-insensitively. */
export const TokenIdText = z
  .string()
  .superRefine((id, ctx) => {
    const problem = tokenIdProblem(id);
    if (problem) ctx.addIssue({ code: "custom", message: problem });
  })
  .transform(normalTokenId);

export const TokenIdParams = z.object({ id: TokenIdText.openapi({ param: { name: "id", in: "path" }, type: "string" }) });

/** The members a token is defined by; null or absent means the type's default. */
const definition = {
  metadata: Metadata.nullish(),
  containers: Containers.nullish(),
  search_indexes: SearchIndexes.nullish(),
  fingerprint_expression: Expression.nullish(),
  mask: Mask.nullish(),
  expires_at: FutureTime.nullish(),
};

/**
 * What a create request may set besides its type and data: a conversion of a token intent (POST /tokens
 * with `token_intent_id`, src/token-intents/) takes these with the intent's type and data.
 */
export const TOKEN_REQUEST_MEMBERS = {
  id: ChosenTokenId.nullish(),
  ...definition,
  deduplicate_token: z.boolean({ error: "must be true or false" }).default(false),
};

/** A token's data, checked against its type's rules (a token intent's too): an issue per refused member, never echoing it. */
export const TokenData = JsonValue.refine((data) => data !== undefined, "is required").openapi({
  description:
    "`card`: {number, expiration_month?, expiration_year? (both or neither), cvc?}; `bank`: {routing_number, account_number}; a string for the other typed types; any JSON value but null for type token",
});

/** What the type's rules refuse in the data, each with its path under `data`. */
export function dataRefusals(type: TokenType, data: unknown): { path: (string | number)[]; message: string }[] {
  return (data === undefined ? [] : TOKEN_TYPE_RULES[type].refuse(data)).map((refusal) => ({
    path: ["data", ...refusal.path],
    message: `${refusal.message} for type ${type}`,
  }));
}

/** Adds an issue under `data` for each member the type's rules refuse. */
export function refuseData(type: TokenType, data: unknown, ctx: z.RefinementCtx): void {
  for (const { path, message } of dataRefusals(type, data)) ctx.addIssue({ code: "custom", path, message });
}

export const CreateTokenBody = z
  .strictObject({ type: TokenTypeSchema, data: TokenData, ...TOKEN_REQUEST_MEMBERS }, strict)
  .superRefine((token, ctx) => {
    const rules = TOKEN_TYPE_RULES[token.type];
    // A JWE's plaintext is checked once the vault has decrypted it (creation.ts).
    if (!isEncryptedData(token.data)) refuseData(token.type, token.data, ctx);
    if (token.search_indexes && token.search_indexes.length > 0 && rules.defaultSearchIndexes === null) {
      ctx.addIssue({
        code: "custom",
        path: ["search_indexes"],
        message: `are only allowed on types ${SEARCHABLE_TYPES.join(", ")}`,
      });
    }
  })
  .openapi("CreateToken");

export type CreateToken = z.infer<typeof CreateTokenBody>;

/** A JSON merge patch (RFC 7396): `data` and `metadata` merge, the other members replace. */
export const UpdateTokenBody = z
  .strictObject(
    {
      data: JsonValue.refine((data) => data !== null, "cannot be removed")
        .refine((data) => !isEncryptedData(data), JWE_NOT_OPENED_HERE)
        .optional(),
      metadata: z
        .record(z.string(), z.string({ error: "must be a string, or null to remove the entry" }).nullable(), {
          error: "must be an object of string values",
        })
        .nullish(),
      containers: definition.containers,
      search_indexes: definition.search_indexes,
      fingerprint_expression: definition.fingerprint_expression,
      mask: definition.mask,
      expires_at: definition.expires_at,
      deduplicate_token: z
        .boolean({ error: "must be true or false" })
        .nullish()
        .openapi({ description: "When the updated token duplicates another token, answer that one and leave this token as it was" }),
    },
    strict,
  )
  .openapi("UpdateToken");

export type UpdateToken = z.infer<typeof UpdateTokenBody>;

export const TokenizePayload = JsonValue.refine((payload) => payload !== undefined, "is required").openapi("TokenizePayload", {
  description:
    "Any JSON. Each object with `type` and `data` is a token create request; every other primitive leaf becomes a `token`-type token.",
});

export const TokenSchema = z
  .object({
    id: z.string(),
    type: TokenTypeSchema,
    tenant_id: z.string(),
    data: JsonValue.optional().openapi({ description: "Per the caller's access transform; absent when redacted" }),
    fingerprint: z.string().optional().openapi({
      description: "Absent for public and session keys, and under a redacting rule: a fingerprint is an oracle of the data",
    }),
    containers: z.array(z.string()),
    metadata: z.record(z.string(), z.string()),
    search_indexes: z.array(z.string()),
    fingerprint_expression: z.string(),
    mask: z.union([z.string(), z.record(z.string(), z.any()), z.array(z.any())]).nullable(),
    expires_at: z.string().nullable(),
    created_by: z.string().nullable(),
    created_at: z.string(),
    modified_by: z.string().nullable(),
    modified_at: z.string().nullable(),
  })
  .openapi("Token");

export type TokenResponse = z.infer<typeof TokenSchema>;

/** How a create or update answered the token (the current interface's `_extras`; response only). */
const extrasOf = (deduplicated: string) =>
  z.object({ deduplicated: z.boolean().openapi({ description: deduplicated }) }).openapi({ description: "How the token was answered" });

export const CreatedTokenSchema = TokenSchema.extend({
  _extras: extrasOf("True when an existing token was returned instead of a new one"),
}).openapi("CreatedToken");

export type CreatedTokenResponse = z.infer<typeof CreatedTokenSchema>;

/**
 * A PATCH answer: the updated token, or with `deduplicate_token` the existing token it would have
 * duplicated, whose definition is left out when the caller may not read that token. A public key's
 * update answers only the token's id, type, metadata and times.
 */
export const UpdatedTokenSchema = TokenSchema.partial({
  containers: true,
  metadata: true,
  search_indexes: true,
  fingerprint_expression: true,
  mask: true,
})
  .extend({ _extras: extrasOf("True when an existing token was returned and this token left as it was") })
  .openapi("UpdatedToken");

export type UpdatedTokenResponse = z.infer<typeof UpdatedTokenSchema>;

const METADATA_FILTER_PREFIX = "metadata.";

/** `GET /tokens`. Members `metadata.<key>=value` filter by metadata; metadataFilterOf reads them. */
export const ListTokensQuery = z
  .looseObject({
    page: PageQuery.shape.page,
    size: PageQuery.shape.size,
    id: repeatable(TokenIdText).openapi({ description: "Token ids; repeat for several (`?id=a&id=b`)" }),
    type: repeatable(TokenTypeSchema).openapi({ description: "Token types; repeat for several (`?type=a&type=b`)" }),
  })
  .superRefine((query, ctx) => {
    // Refused rather than ignored: a client paging by cursor would otherwise read page 1 again.
    if ("start" in query) ctx.addIssue({ code: "custom", path: ["start"], message: "cursor paging is not supported; use page and size" });
    const names = Object.keys(query).filter((name) => name.startsWith(METADATA_FILTER_PREFIX));
    if (names.length > MAX_METADATA_ENTRIES) {
      ctx.addIssue({ code: "custom", path: ["metadata"], message: `at most ${MAX_METADATA_ENTRIES} metadata filters are allowed` });
    }
    for (const name of names) {
      const key = name.slice(METADATA_FILTER_PREFIX.length);
      if (key.length === 0 || key.length > METADATA_KEY_MAX_LENGTH) {
        ctx.addIssue({ code: "custom", path: [name], message: `must name a metadata key of 1 to ${METADATA_KEY_MAX_LENGTH} characters` });
      }
    }
  });

export type ListTokens = z.infer<typeof ListTokensQuery>;

/**
 * The query's `metadata.<key>=value` filters as lower-cased pairs (metadata matches
 * case-insensitively). A key given twice counts once, with its first value.
 */
export function metadataFilterOf(query: ListTokens): [string, string][] {
  return Object.entries(query).flatMap(([name, value]) => {
    if (!name.startsWith(METADATA_FILTER_PREFIX)) return [];
    const first = Array.isArray(value) ? value[0] : value;
    return [[name.slice(METADATA_FILTER_PREFIX.length).toLowerCase(), String(first).toLowerCase()] as [string, string]];
  });
}
