import { env } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { databaseOf } from "../../src/db/client";
import { compileSearch, compileSearchAfter, type Statement } from "../../src/search/compile";
import { parseQuery } from "../../src/search/parse";
import { liveTokensPage } from "../../src/tokens/storage";
import { withMethod } from "../support/substitute";

/**
 * The compiled SQL as SQLite plans it (EXPLAIN QUERY PLAN on the real schema): a selective query
 * is a handful of index lookups, never a walk over the tokens table or over all of a tenant's tokens.
 */

const APPLICATION = "5f0c3a52-1111-4c8e-9d1e-2a7b6c9d0e1f";
const SELECTIVE_QUERIES = [
  `id:${crypto.randomUUID()}`,
  "fingerprint:Y6OelKjKnozXPSnWAbjx6JcZZpAN7XGEM4szqq2aCME",
  "data:6789",
  "metadata.customer:42",
  "container:/pii/high/",
  "container:/pii/*",
  `created_by:${APPLICATION}`,
  `modified_by:${APPLICATION}`,
  "(metadata.customer:1 OR metadata.customer:2) AND NOT type:card_number",
  "metadata.customer:42 AND container:/pii/* AND created_at:[2024-01-01 TO *]",
  "type:token AND (data:6789 OR id:1b4e28ba-2fa1-11d2-883f-0016d3cca427) AND NOT metadata.status:closed",
  "(container:/a/ OR (metadata.k:v AND NOT data:x)) AND (type:token OR type:social_security_number)",
];

function compile(query: string, containers: string[] | null = null) {
  const parsed = parseQuery(query);
  const dataValues = ["6789", "x"];
  return compileSearch(
    parsed,
    {
      tenantId: crypto.randomUUID(),
      now: Date.now(),
      containers,
      blindIndexes: new Map(dataValues.map((value) => [value, `hmac-${value}`])),
    },
    { limit: 20, offset: 0, countLimit: 10_000 },
  );
}

/** The page after a token of 2024-06-01, as a v2 cursor resumes (src/db/cursors.ts). */
function compileAfter(query: string, containers: string[] | null = null) {
  return compileSearchAfter(
    parseQuery(query),
    {
      tenantId: crypto.randomUUID(),
      now: Date.now(),
      containers,
      blindIndexes: new Map([
        ["6789", "hmac-6789"],
        ["x", "hmac-x"],
      ]),
    },
    { limit: 21, after: { createdAt: Date.UTC(2024, 5, 1), id: crypto.randomUUID() } },
  );
}

async function planOf(statement: Statement): Promise<string> {
  const { results } = await env.DB.prepare(`EXPLAIN QUERY PLAN ${statement.sql}`)
    .bind(...statement.params)
    .all<{ detail: string }>();
  return results.map((row) => row.detail).join("\n");
}

/**
 * A full scan of a table, or a walk over every token of the tenant (its created_at index without a
 * range). The count's outer `SCAN (subquery-1)` only reads the rows its inner query found.
 */
const WALKS_ALL_TOKENS = /\bSCAN (?!\(subquery-\d+\))|tokens_tenant_created \(tenant_id=\?\)/;

/** The tenant's containers (or metadata) walked for each token, through the primary key's tenant_id prefix. */
const WALKS_TENANT_CONTAINERS = /sqlite_autoindex_token_containers_1 \(tenant_id=\?\)/;
const WALKS_TENANT_METADATA = /sqlite_autoindex_token_metadata_1 \(tenant_id=\?\)/;

/** The statements `run` prepares on the control database (whatever it binds), for their plans. */
async function statementsOf(run: (db: D1Database) => Promise<unknown>): Promise<Statement[]> {
  const statements: Statement[] = [];
  const recording = withMethod(env.DB, "prepare", (sql: string) => {
    const prepared = env.DB.prepare(sql);
    const statement: Statement = { sql, params: [] };
    statements.push(statement);
    return withMethod(prepared, "bind", (...params: unknown[]) => {
      statement.params = params;
      return prepared.bind(...params);
    });
  });
  await run(recording);
  return statements;
}

describe("query plans", () => {
  it("a selective query never scans the tokens table or all of a tenant's tokens", async () => {
    for (const query of SELECTIVE_QUERIES) {
      const compiled = compile(query);
      expect(compiled.driven, query).toBe(true);
      for (const statement of [compiled.page, compiled.count]) {
        const plan = await planOf(statement);
        expect(plan, `${query}\n${plan}`).not.toMatch(WALKS_ALL_TOKENS);
      }
    }
  });

  it("the caller's container rules are checked per token found, not by walking the containers", async () => {
    for (const query of [...SELECTIVE_QUERIES, "container:/pii/*", ""]) {
      const plan = await planOf(compile(query, ["/pii/", "/pci/high/", "/"]).page);
      if (query !== "") expect(plan, `${query}\n${plan}`).not.toMatch(WALKS_ALL_TOKENS);
      expect(plan, `${query}\n${plan}`).not.toMatch(WALKS_TENANT_CONTAINERS);
      expect(plan, `${query}\n${plan}`).toMatch(/token_containers_token \(tenant_id=\? AND token_id=\?\)/);
    }
  });

  it("GET /tokens checks container rules and metadata filters per token listed, not by walking the tenant's rows", async () => {
    const filter = {
      ids: [],
      types: [],
      metadata: [["customer", "42"]] as [string, string][],
      containerPrefixes: ["/pii/", "/"],
      page: 1,
      size: 20,
    };
    const statements = await statementsOf((d1) =>
      liveTokensPage(databaseOf({ ...env, DB: d1 } as never), crypto.randomUUID(), filter, Date.now()),
    );
    expect(statements).toHaveLength(2);
    for (const statement of statements) {
      const plan = await planOf(statement);
      expect(plan, `${statement.sql}\n${plan}`).not.toMatch(WALKS_TENANT_CONTAINERS);
      expect(plan, `${statement.sql}\n${plan}`).not.toMatch(WALKS_TENANT_METADATA);
      expect(plan, `${statement.sql}\n${plan}`).toMatch(/token_containers_token \(tenant_id=\? AND token_id=\?\)/);
      expect(plan, `${statement.sql}\n${plan}`).toMatch(/token_metadata_token \(tenant_id=\? AND token_id=\?\)/);
    }
  });

  it("a date range reads the matching stretch of the created_at index, newest first", async () => {
    const plan = await planOf(compile("created_at:[2024-01-01 TO 2024-02-01}").page);
    expect(plan).toMatch(/tokens_tenant_created \(tenant_id=\? AND created_at>\? AND created_at<\?\)/);
    expect(plan).not.toMatch(/TEMP B-TREE/);
  });

  it("a query without a selective term walks the tenant's tokens newest first and stops when the page is full", async () => {
    for (const query of ["", "NOT type:card_number", "NOT metadata.status:closed OR NOT container:/pii/*"]) {
      const compiled = compile(query);
      expect(compiled.driven, query).toBe(false);
      const plan = await planOf(compiled.page);
      expect(plan, `${query}\n${plan}`).toMatch(/SEARCH t USING INDEX tokens_tenant_created \(tenant_id=\?\)/);
      expect(plan, `${query}\n${plan}`).not.toMatch(/TEMP B-TREE/);
    }
  });

  it("a cursor page skips no rows: its statement has no OFFSET, only the position as a condition", () => {
    for (const query of [...SELECTIVE_QUERIES, "", "NOT type:card_number", "created_at:[2024-01-01 TO *]"]) {
      const { sql } = compileAfter(query).page;
      expect(sql, query).not.toMatch(/\bOFFSET\b/);
      expect(sql, query).toMatch(/\(t\.created_at, t\.id\) < \(/);
    }
  });

  it("a cursor page of a query without a selective term reads the created_at index from the cursor's position on", async () => {
    for (const query of ["", "NOT type:card_number", "type:token"]) {
      for (const containers of [null, ["/pii/", "/"]]) {
        const compiled = compileAfter(query, containers);
        expect(compiled.driven, query).toBe(false);
        const plan = await planOf(compiled.page);
        expect(plan, `${query}\n${plan}`).toMatch(
          /SEARCH t USING INDEX tokens_tenant_created \(tenant_id=\? AND \(created_at,id\)<\(\?,\?\)\)/,
        );
        expect(plan, `${query}\n${plan}`).not.toMatch(/TEMP B-TREE/);
      }
    }
  });

  it("a cursor page of a date range starts at the cursor's position, not at the range's end", async () => {
    for (const query of ["created_at:[2024-01-01 TO 2025-01-01}", "created_at:[2024-01-01 TO *]", "created_at:2024-06-01"]) {
      const plan = await planOf(compileAfter(query).page);
      expect(plan, `${query}\n${plan}`).toMatch(/tokens_tenant_created \(tenant_id=\? AND created_at>\? AND \(created_at,id\)<\(\?,\?\)\)/);
    }
  });

  it("a cursor page of a selective query is driven by the same index lookups as its first page", async () => {
    for (const query of SELECTIVE_QUERIES) {
      const compiled = compileAfter(query, ["/pii/", "/"]);
      expect(compiled.driven, query).toBe(true);
      const plan = await planOf(compiled.page);
      expect(plan, `${query}\n${plan}`).not.toMatch(WALKS_ALL_TOKENS);
      expect(plan, `${query}\n${plan}`).not.toMatch(WALKS_TENANT_CONTAINERS);
    }
  });
});
