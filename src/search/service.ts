import { grantedContainers, holdsPermission, type Principal } from "../auth/access";
import type { TenantContext } from "../context";
import { type CursorBinding, pageAfter, positionOf } from "../db/cursors";
import { ForbiddenError } from "../errors";
import { type CursorPage, cursorPageOf, type Page, pageOf } from "../http/schemas";
import { validationErrorOf } from "../http/validation";
import { SEARCH } from "../limits";
import type { TokenResponse } from "../tokens/schema";
import { presentTokens } from "../tokens/service";
import { dataValuesOf, type Query, redactedQuery } from "./ast";
import { compileSearch, compileSearchAfter } from "./compile";
import { listQueryOf } from "./list-filters";
import { parseQuery } from "./parse";
import { type ListTokensV2, type SearchRequest, type SearchRequestV2, SearchTokensBody } from "./schema";
import * as storage from "./storage";

/**
 * The count reads at most this many matches past the start of the page. Counting every match of a
 * broad query over a million tokens would cost far more than the page itself; beyond the horizon
 * `total_items` is a lower bound that grows as the client pages on.
 */
const COUNT_HORIZON = SEARCH.countHorizon;

/**
 * The page of tokens matching the query, newest first, among the containers where the principal
 * holds token:search; each token's data follows the principal's transform for it. The request is
 * checked here too, since tenant code in the sandbox calls this directly.
 */
export async function searchTokens(context: TenantContext, principal: Principal, request: SearchRequest): Promise<Page<TokenResponse>> {
  if (!holdsPermission(principal, "token:search")) throw ForbiddenError.missing("token:search");
  const checked = SearchTokensBody.safeParse(request);
  if (!checked.success) throw validationErrorOf(checked.error);
  const { page: pageNumber, size } = checked.data;
  const query = checked.data.query ? parseQuery(checked.data.query) : null;
  const granted = grantedContainers(principal, "token:search");
  const offset = (pageNumber - 1) * size;
  const compiled = compileSearch(
    query,
    {
      tenantId: principal.tenantId,
      now: Date.now(),
      containers: granted === null ? null : granted.map((grant) => grant.container),
      blindIndexes: await blindIndexesOf(context, query),
    },
    { limit: size, offset, countLimit: offset + COUNT_HORIZON },
  );
  const { rows, total } = await storage.runSearch(context.db, compiled);
  context.audit.describe({ message: `${query ? redactedQuery(query) : "all tokens"}, ${total} result${total === 1 ? "" : "s"}` });
  return pageOf(await presentTokens(context, principal, "token:search", rows), total, pageNumber, size);
}

/**
 * `POST /v2/tokens/search`: the query of POST /tokens/search, the same rules, a page at a time by
 * cursor. The cursor is bound to the query as sent.
 */
export async function searchTokensV2(
  context: TenantContext,
  principal: Principal,
  request: SearchRequestV2,
): Promise<CursorPage<TokenResponse>> {
  if (!holdsPermission(principal, "token:search")) throw ForbiddenError.missing("token:search");
  const query = request.query ? parseQuery(request.query) : null;
  const binding = { list: "POST /v2/tokens/search", applicationId: principal.applicationId, request: { query: request.query || null } };
  return tokensAfter(context, principal, "token:search", query, binding, request);
}

/**
 * `GET /v2/tokens`: the tokens the caller may read, newest first, a page at a time by cursor. Each
 * filter is a term of the search language (container: the container and below it), all ANDed, so
 * the list is the compiled search of those terms under the caller's token:read rules.
 */
export async function listTokensV2(
  context: TenantContext,
  principal: Principal,
  filters: ListTokensV2,
): Promise<CursorPage<TokenResponse>> {
  const { query, request } = listQueryOf(filters);
  const binding = { list: "GET /v2/tokens", applicationId: principal.applicationId, request };
  return tokensAfter(context, principal, "token:read", query, binding, filters);
}

/**
 * One cursor page of the compiled search: the rows after the cursor's position (one more than the
 * page, to know whether another follows), shown through the caller's transform for `permission`.
 */
async function tokensAfter(
  context: TenantContext,
  principal: Principal,
  permission: "token:read" | "token:search",
  query: Query | null,
  binding: CursorBinding,
  paging: { start?: string | null; size: number },
): Promise<CursorPage<TokenResponse>> {
  const keys = await context.keys();
  const after = paging.start ? await positionOf(keys, binding, paging.start) : null;
  const granted = grantedContainers(principal, permission);
  const compiled = compileSearchAfter(
    query,
    {
      tenantId: principal.tenantId,
      now: Date.now(),
      containers: granted === null ? null : granted.map((grant) => grant.container),
      blindIndexes: await blindIndexesOf(context, query),
    },
    { limit: paging.size + 1, after },
  );
  const { page, next } = await pageAfter(keys, binding, await storage.runPage(context.db, compiled.page), paging.size);
  context.audit.describe({
    message: `${query ? redactedQuery(query) : "all tokens"}, ${page.length} on this page${next ? ", more after it" : ""}`,
  });
  return cursorPageOf(await presentTokens(context, principal, permission, page), paging.size, next);
}

/**
 * `data:` compares keyed HMACs: the value is never compared or stored in the clear. While a rotation
 * re-encrypts the tenant's tokens, it compares the value's blind index under each key version held.
 */
async function blindIndexesOf(context: TenantContext, query: Query | null): Promise<Map<string, string[]>> {
  const values = query ? dataValuesOf(query) : [];
  if (values.length === 0) return new Map();
  const keys = await context.keys();
  return new Map(await Promise.all(values.map(async (value) => [value, await keys.blindIndexes(value)] as const)));
}
