import { describe, expect, it } from "vitest";
import { dataDatabaseOf } from "../support/context";
import { call, createApplication } from "../support/harness";
import { seedTokenTenant } from "../support/tokens";

/*
 * Deduplication is enforced by the database: the insert of a deduplicating token refuses a live
 * duplicate in the same statement, so of concurrent deduplicating creates of one value exactly one
 * inserts and every other caller gets that token with _extras: { deduplicated: true }.
 */

const CONCURRENT = 20;
const ROUNDS = 5;

function ssnOf(round: number): string {
  return `${String(100 + round).padStart(3, "0")}-${String(10 + round).padStart(2, "0")}-${String(4000 + round)}`;
}

async function storedTokensOfType(tenantId: string, type: string): Promise<number> {
  const row = await (await dataDatabaseOf(tenantId))
    .prepare("SELECT count(*) AS n FROM tokens WHERE tenant_id = ? AND type = ?")
    .bind(tenantId, type)
    .first<{ n: number }>();
  return row!.n;
}

/** A caller with container rules (its create scope is a list of containers), or with plain permissions (any container). */
const CALLERS = ["with access rules", "with plain permissions"] as const;

describe("deduplication under concurrency", () => {
  it.each(CALLERS)(
    `${CONCURRENT} concurrent deduplicating creates of one SSN give one token, round after round, for a caller %s`,
    async (caller) => {
      const tenant = await seedTokenTenant();
      const key =
        caller === "with access rules"
          ? tenant.key
          : (await createApplication(tenant, { type: "private", permissions: ["token:create", "token:read", "token:search"] })).key;
      for (let round = 0; round < ROUNDS; round++) {
        const replies = await Promise.all(
          Array.from({ length: CONCURRENT }, () =>
            call("POST", "/tokens", {
              key,
              body: { type: "social_security_number", data: ssnOf(round), deduplicate_token: true },
            }),
          ),
        );
        const ids = new Set(replies.map((reply) => reply.body.id));
        expect(ids.size, `round ${round}`).toBe(1);
        expect(replies.filter((reply) => reply.status === 201)).toHaveLength(1);
        const others = replies.filter((reply) => reply.status !== 201);
        expect(others.every((reply) => reply.status === 200 && reply.body._extras.deduplicated === true)).toBe(true);
      }
      expect(await storedTokensOfType(tenant.tenantId, "social_security_number")).toBe(ROUNDS);
      const search = await call("POST", "/tokens/search", { key, body: { query: `data:${ssnOf(0)}` } });
      expect(search.body.pagination.total_items).toBe(1);
    },
    // 100 creates in rounds of 20: past vitest's 5 s on a loaded machine.
    30_000,
  );

  it("concurrent tokenize calls deduplicate against each other too", async () => {
    const tenant = await seedTokenTenant();
    const replies = await Promise.all(
      Array.from({ length: 10 }, () =>
        call("POST", "/tokenize", {
          key: tenant.key,
          body: { ssn: { type: "social_security_number", data: "555-44-3333", deduplicate_token: true } },
        }),
      ),
    );
    expect(replies.every((reply) => reply.status === 201)).toBe(true);
    expect(new Set(replies.map((reply) => reply.body.ssn.id)).size).toBe(1);
    expect(await storedTokensOfType(tenant.tenantId, "social_security_number")).toBe(1);
  });

  it("keeps the scope: concurrent creates in containers the other caller cannot create in stay apart", async () => {
    const tenant = await seedTokenTenant();
    const only = (container: string) =>
      createApplication(tenant, {
        type: "private",
        rules: [{ priority: 1, container, transform: "reveal", permissions: ["token:create"] }],
      });
    const [a, b] = await Promise.all([only("/pii/a/"), only("/pii/b/")]);
    const create = (key: string, container: string) =>
      call("POST", "/tokens", {
        key,
        body: { type: "social_security_number", data: "666-55-4444", containers: [container], deduplicate_token: true },
      });
    const replies = await Promise.all([
      ...Array.from({ length: 5 }, () => create(a.key, "/pii/a/")),
      ...Array.from({ length: 5 }, () => create(b.key, "/pii/b/")),
    ]);
    expect(new Set(replies.slice(0, 5).map((reply) => reply.body.id)).size).toBe(1);
    expect(new Set(replies.slice(5).map((reply) => reply.body.id)).size).toBe(1);
    expect(replies[0]!.body.id).not.toBe(replies[5]!.body.id);
    expect(await storedTokensOfType(tenant.tenantId, "social_security_number")).toBe(2);
  });
});
