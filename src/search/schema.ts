import { z } from "@hono/zod-openapi";
import { PAGE_MAX_SIZE, SEARCH } from "../limits";
import { QUERY_LIMITS } from "./check";

/** Far beyond any page a client reads in order; keeps the offset an exact integer. */
const MAX_PAGE = SEARCH.maxPage;

const integer = z.number({ error: "must be an integer" }).int("must be an integer");

/** Unknown members are refused: a misspelt `query` must not silently match every token. */
export const SearchTokensBody = z
  .strictObject(
    {
      query: z
        .string({ error: "must be a string or null" })
        .nullish()
        .openapi({
          description: `A Lucene-style query (docs/tokens.md, "Token search"), at most ${QUERY_LIMITS.characters} characters; null or empty matches every token the caller may search`,
          example: 'metadata.customer:42 AND (type:social_security_number OR container:"/pii/*")',
        }),
      page: integer.min(1, "must be at least 1").max(MAX_PAGE, `must be at most ${MAX_PAGE}`).default(1),
      size: integer.min(1, "must be at least 1").max(PAGE_MAX_SIZE, `must be at most ${PAGE_MAX_SIZE}`).default(20),
    },
    {
      error: (issue) =>
        issue.code === "unrecognized_keys" ? `unknown field${issue.keys.length > 1 ? "s" : ""}: ${issue.keys.join(", ")}` : undefined,
    },
  )
  .openapi("SearchTokens");

/** What callers outside HTTP (the sandbox) may pass; searchTokens checks it against the schema. */
export type SearchRequest = z.input<typeof SearchTokensBody>;
