import { z } from "@hono/zod-openapi";
import { Cursor, PageQuery } from "../http/schemas";
import { PAGE_MAX_SIZE, SEARCH } from "../limits";
import { ContainerPath } from "../tokens/containers";
import { MAX_METADATA_ENTRIES, Metadata, TokenTypeSchema } from "../tokens/schema";
import { QUERY_LIMITS } from "./check";

/** Far beyond any page a client reads in order; keeps the offset an exact integer. */
const MAX_PAGE = SEARCH.maxPage;

const integer = z.number({ error: "must be an integer" }).int("must be an integer");

const QueryText = z
  .string({ error: "must be a string or null" })
  .nullish()
  .openapi({
    description: `A Lucene-style query (docs/tokens.md, "Token search"), at most ${QUERY_LIMITS.characters} characters; null or empty matches every token the caller may search`,
    example: 'metadata.customer:42 AND (type:social_security_number OR container:"/pii/*")',
  });

const PageSize = integer.min(1, "must be at least 1").max(PAGE_MAX_SIZE, `must be at most ${PAGE_MAX_SIZE}`).default(20);

/** Unknown members are refused: a misspelt `query` must not silently match every token. */
const unknownMembers = {
  error: (issue: z.core.$ZodRawIssue) =>
    issue.code === "unrecognized_keys" ? `unknown field${issue.keys.length > 1 ? "s" : ""}: ${issue.keys.join(", ")}` : undefined,
};

export const SearchTokensBody = z
  .strictObject(
    {
      query: QueryText,
      page: integer.min(1, "must be at least 1").max(MAX_PAGE, `must be at most ${MAX_PAGE}`).default(1),
      size: PageSize,
    },
    unknownMembers,
  )
  .openapi("SearchTokens");

/** What callers outside HTTP (the sandbox) may pass; searchTokens checks it against the schema. */
export type SearchRequest = z.input<typeof SearchTokensBody>;

/** `POST /v2/tokens/search`: the same query, paged by cursor (a `page` is refused as an unknown member). */
export const SearchTokensV2Body = z
  .strictObject({ query: QueryText, start: Cursor.nullish(), size: PageSize }, unknownMembers)
  .openapi("SearchTokensV2");

export type SearchRequestV2 = z.infer<typeof SearchTokensV2Body>;

const METADATA_FILTER_PREFIX = "metadata.";

/** A query parameter given at most once: a repeated one is refused rather than one of its values picked. */
const once = <T extends z.ZodType>(schema: T) =>
  z.preprocess((value, ctx) => {
    if (!Array.isArray(value)) return value;
    ctx.addIssue({ code: "custom", message: "may be given only once" });
    return z.NEVER;
  }, schema);

/** `metadata` as the Node SDK sends it: a JSON object of strings (`{"customer":"42"}`). */
const MetadataJson = z.string().transform((text, ctx) => {
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    ctx.addIssue({ code: "custom", message: 'must be a JSON object of strings, as in {"customer":"42"}' });
    return z.NEVER;
  }
  const checked = Metadata.safeParse(parsed);
  if (!checked.success) {
    for (const issue of checked.error.issues) ctx.addIssue({ code: "custom", message: issue.message });
    return z.NEVER;
  }
  return checked.data;
});

const LIST_V2_PARAMETERS = ["type", "container", "fingerprint", "metadata", "start", "size"];

/**
 * `GET /v2/tokens`: filters that become terms of the search language, ANDed (src/search/service.ts),
 * and the cursor. `metadata.<key>=value` may stand beside `metadata`; any other parameter is refused,
 * so a misspelt filter never lists every token, nor `page` the first page again.
 */
export const ListTokensV2Query = z
  .looseObject({
    type: once(TokenTypeSchema).optional().openapi({ description: "Only tokens of this type" }),
    container: once(ContainerPath)
      .optional()
      .openapi({ description: "Only tokens in this container or below it (`/pii/` lists `/pii/` and `/pii/high/`)", type: "string" }),
    fingerprint: once(
      z.string().min(1, "must not be empty").max(QUERY_LIMITS.characters, `must be at most ${QUERY_LIMITS.characters} characters`),
    )
      .optional()
      .openapi({ description: "Only tokens with this fingerprint", type: "string" }),
    metadata: once(MetadataJson).optional().openapi({
      description: 'Metadata every token listed holds, as a JSON object (`{"customer":"42"}`); also `metadata.<key>=<value>`',
      type: "string",
    }),
    start: once(Cursor).optional(),
    size: once(PageQuery.shape.size),
  })
  .superRefine((query, ctx) => {
    for (const [name, value] of Object.entries(query)) {
      if (LIST_V2_PARAMETERS.includes(name)) continue;
      if (!name.startsWith(METADATA_FILTER_PREFIX)) {
        const hint = name === "page" ? ": this list pages by cursor (start)" : "";
        ctx.addIssue({ code: "custom", path: [name], message: `unknown parameter${hint}` });
      } else if (Array.isArray(value)) {
        ctx.addIssue({ code: "custom", path: [name], message: "may be given only once" });
      } else {
        const checked = Metadata.safeParse({ [name.slice(METADATA_FILTER_PREFIX.length)]: value });
        for (const issue of checked.error?.issues ?? []) ctx.addIssue({ code: "custom", path: [name], message: issue.message });
      }
    }
    if (metadataFiltersOf(query).length > MAX_METADATA_ENTRIES) {
      ctx.addIssue({ code: "custom", path: ["metadata"], message: `at most ${MAX_METADATA_ENTRIES} metadata filters are allowed` });
    }
  });

export type ListTokensV2 = z.infer<typeof ListTokensV2Query>;

/** Every metadata filter of the list, `metadata` and `metadata.<key>` alike, as (key, value) pairs. */
export function metadataFiltersOf(query: ListTokensV2): [string, string][] {
  const pairs: [string, string][] = Object.entries(query.metadata ?? {});
  for (const [name, value] of Object.entries(query)) {
    if (name.startsWith(METADATA_FILTER_PREFIX) && typeof value === "string")
      pairs.push([name.slice(METADATA_FILTER_PREFIX.length), value]);
  }
  return pairs;
}
