import { grantedContainers, holdsPermission, type Principal } from "../auth/access";
import type { TenantContext } from "../context";
import { ForbiddenError } from "../errors";
import { type Page, pageOf } from "../http/schemas";
import { validationErrorOf } from "../http/validation";
import { SEARCH } from "../limits";
import type { TokenResponse } from "../tokens/schema";
import { presentTokens } from "../tokens/service";
import { dataValuesOf, type Query, redactedQuery } from "./ast";
import { compileSearch } from "./compile";
import { parseQuery } from "./parse";
import { type SearchRequest, SearchTokensBody } from "./schema";
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
 * `data:` compares keyed HMACs: the value is never compared or stored in the clear. While a rotation
 * re-encrypts the tenant's tokens, it compares the value's blind index under each key version held.
 */
async function blindIndexesOf(context: TenantContext, query: Query | null): Promise<Map<string, string[]>> {
  const values = query ? dataValuesOf(query) : [];
  if (values.length === 0) return new Map();
  const keys = await context.keys();
  return new Map(await Promise.all(values.map(async (value) => [value, await keys.blindIndexes(value)] as const)));
}
