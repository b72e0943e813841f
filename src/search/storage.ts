import type { Database } from "../db/client";
import type { TokenRow } from "../tokens/storage";
import type { CompiledSearch, Statement } from "./compile";

/** The page and the count of a compiled search, in one batch (one snapshot, so they agree). */
export async function runSearch(db: Database, compiled: CompiledSearch): Promise<{ rows: TokenRow[]; total: number }> {
  const d1 = db.$client;
  const [page, count] = await d1.batch([prepared(d1, compiled.page), prepared(d1, compiled.count)]);
  return { rows: page!.results as TokenRow[], total: (count!.results[0] as { total: number }).total };
}

/** The rows of a cursor page (src/search/compile.ts, compileSearchAfter). */
export async function runPage(db: Database, page: Statement): Promise<TokenRow[]> {
  return (await prepared(db.$client, page).all<TokenRow>()).results;
}

function prepared(d1: D1Database, statement: Statement): D1PreparedStatement {
  return d1.prepare(statement.sql).bind(...statement.params);
}
