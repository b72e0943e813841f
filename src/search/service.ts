import { grantedContainers, holdsPermission, type Principal } from "../auth/access";
import { tenantKeysOf } from "../crypto/tenant-keys";
import { databaseOf } from "../db/client";
import type { Bindings } from "../env";
import { ForbiddenError } from "../http/problem";
import { pageOf, type Page } from "../http/schemas";
import { validationErrorOf } from "../http/validation";
import { presentTokens, type TokenResponse, type TokenRow } from "../tokens/service";
import { termsOf, type Query } from "./ast";
import { compileSearch, type Statement } from "./compile";
import { parseQuery } from "./parse";
import { SearchTokensBody, type SearchRequest } from "./schema";

/**
 * The count reads at most this many matches past the start of the page. Counting every match of a
 * broad query over a million tokens would cost far more than the page itself; beyond the horizon
 * `total_items` is a lower bound that grows as the client pages on.
 */
const COUNT_HORIZON = 10_000;

/**
 * The page of tokens matching the query, newest first, among the containers where the principal
 * holds token:search; each token's data follows the principal's transform for it. The request is
 * checked here too, since tenant code in the sandbox calls this directly.
 */
export async function searchTokens(env: Bindings, principal: Principal, request: SearchRequest): Promise<Page<TokenResponse>> {
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
      containers: granted && granted.map((grant) => grant.container),
      blindIndexes: await blindIndexesOf(env, principal.tenantId, query),
    },
    { limit: size, offset, countLimit: offset + COUNT_HORIZON },
  );
  const d1 = databaseOf(env).$client;
  const [page, count] = await d1.batch([prepared(d1, compiled.page), prepared(d1, compiled.count)]);
  const rows = page!.results as TokenRow[];
  const total = (count!.results[0] as { total: number }).total;
  return pageOf(await presentTokens(env, principal, "token:search", rows), total, pageNumber, size);
}

/** `data:` compares keyed HMACs: the value is never compared or stored in the clear. */
async function blindIndexesOf(env: Bindings, tenantId: string, query: Query | null): Promise<Map<string, string>> {
  const values = query ? termsOf(query).flatMap((term) => (term.field === "data" ? [term.value] : [])) : [];
  if (values.length === 0) return new Map();
  const keys = await tenantKeysOf(env, tenantId);
  return new Map(await Promise.all(values.map(async (value) => [value, await keys.blindIndex(value)] as const)));
}

function prepared(d1: D1Database, statement: Statement): D1PreparedStatement {
  return d1.prepare(statement.sql).bind(...statement.params);
}
