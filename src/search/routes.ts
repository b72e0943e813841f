import { createRoute } from "@hono/zod-openapi";
import type { MiddlewareHandler } from "hono";
import { requirePermission } from "../auth/middleware";
import { countKeyRequests } from "../auth/rate-limits";
import type { AppEnv } from "../http/context";
import { exampleCursorPage, examplePage } from "../http/examples";
import { isPlainObject } from "../http/json";
import { requireContentType, staleReadsAllowed } from "../http/middleware";
import { createRouter } from "../http/router";
import { cursorPaginated, jsonBody, jsonContent, paginated, problemResponses } from "../http/schemas";
import { TokenSchema } from "../tokens/schema";
import { dataValuesOf } from "./ast";
import { InvalidQueryError } from "./errors";
import { SEARCH_REQUEST_EXAMPLE, SEARCH_V2_REQUEST_EXAMPLE, SEARCHED_TOKEN_EXAMPLE } from "./examples";
import { parseQuery } from "./parse";
import { ListTokensV2Query, SearchTokensBody, SearchTokensV2Body } from "./schema";
import { listTokensV2, searchTokens, searchTokensV2 } from "./service";

/** `Server-Timing: search;dur=…`: time spent inside the worker, next to what the client measures. */
const timeSearch: MiddlewareHandler<AppEnv> = async (c, next) => {
  const started = performance.now();
  await next();
  c.res.headers.set("Server-Timing", `search;dur=${(performance.now() - started).toFixed(2)}`);
};

/**
 * Each distinct `data:` value after the first counts as one more request (authentication counted
 * the first): it tests one guessed value against every token in the key's reach, so a query of
 * many confirms no more guesses than as many searches. It runs before the search does anything.
 */
const countDataGuesses: MiddlewareHandler<AppEnv> = async (c, next) => {
  const guesses = dataGuessesIn(await c.req.json().catch(() => null));
  if (guesses > 1) await countKeyRequests(c.var.request, c.var.principal, c.req.raw.headers, guesses - 1);
  await next();
};

/** A body or query that is not valid counts nothing here: the search answers it with a 400. */
function dataGuessesIn(body: unknown): number {
  if (!isPlainObject(body) || typeof body.query !== "string") return 0;
  try {
    const query = parseQuery(body.query);
    return query ? dataValuesOf(query).length : 0;
  } catch (error) {
    if (error instanceof InvalidQueryError) return 0;
    throw error;
  }
}

/** What both searches (by page number and by cursor) run before the query: one rule for both. */
const SEARCH_MIDDLEWARE = [
  requirePermission("token:search"),
  requireContentType("application/json"),
  countDataGuesses,
  staleReadsAllowed,
  timeSearch,
];

const search = createRoute({
  method: "post",
  path: "/tokens/search",
  tags: ["Tokens"],
  security: [{ ApiKey: [] }],
  summary: "Search tokens with a Lucene-style query",
  description:
    "Terms `field:value` joined by AND, OR, NOT (also `!`, `-`) and grouped with parentheses; fields id, type, " +
    "fingerprint, data, container, metadata.<key>, created_by, created_at, modified_by, modified_at. Results are " +
    "newest first, limited to the containers where the caller holds token:search, with data per its access transform. " +
    "Each distinct `data:` value after the first counts as one more request against the key's rate limits.",
  middleware: SEARCH_MIDDLEWARE,
  request: jsonBody(SearchTokensBody, SEARCH_REQUEST_EXAMPLE),
  responses: {
    200: jsonContent(paginated(TokenSchema), "A page of tokens, newest first", examplePage(SEARCHED_TOKEN_EXAMPLE)),
    ...problemResponses(400, 401, 403, 413, 415),
  },
});

const searchV2 = createRoute({
  method: "post",
  path: "/v2/tokens/search",
  tags: ["Tokens"],
  security: [{ ApiKey: [] }],
  summary: "Search tokens with a Lucene-style query, a page at a time by cursor",
  description:
    "The query language, rules and order of POST /tokens/search, boolean queries included. `start` is the " +
    "`pagination.next` of the previous page (opaque, and good only for the same query and key); the last page has no " +
    "`next`. No count: each page reads from where the previous one ended, so a deep page costs what the first does.",
  middleware: SEARCH_MIDDLEWARE,
  request: jsonBody(SearchTokensV2Body, SEARCH_V2_REQUEST_EXAMPLE),
  responses: {
    200: jsonContent(cursorPaginated(TokenSchema), "A page of tokens, newest first", exampleCursorPage(SEARCHED_TOKEN_EXAMPLE)),
    ...problemResponses(400, 401, 403, 413, 415),
  },
});

const listV2 = createRoute({
  method: "get",
  path: "/v2/tokens",
  tags: ["Tokens"],
  security: [{ ApiKey: [] }],
  summary: "List tokens, a page at a time by cursor",
  description:
    "Newest first, among the containers where the caller holds token:read, with data per its access transform. " +
    "Filters, ANDed: `type`, `container` (and its sub-containers), `fingerprint`, and metadata as `metadata.<key>=<value>` " +
    'or `metadata={"<key>":"<value>"}` (case-insensitive exact match). `start` is the `pagination.next` of the previous ' +
    "page (good only for the same filters and key); the last page has no `next`.",
  middleware: [requirePermission("token:read"), staleReadsAllowed] as const,
  request: { query: ListTokensV2Query },
  responses: {
    200: jsonContent(cursorPaginated(TokenSchema), "A page of tokens, newest first", exampleCursorPage(SEARCHED_TOKEN_EXAMPLE)),
    ...problemResponses(400, 401, 403),
  },
});

export const searchRoutes = createRouter()
  .openapi(search, async (c) => c.json(await searchTokens(c.var.context, c.var.principal, c.req.valid("json")), 200))
  .openapi(searchV2, async (c) => c.json(await searchTokensV2(c.var.context, c.var.principal, c.req.valid("json")), 200))
  .openapi(listV2, async (c) => c.json(await listTokensV2(c.var.context, c.var.principal, c.req.valid("query")), 200));
