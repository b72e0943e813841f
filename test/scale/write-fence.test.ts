import { env } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { fencedBatch, lowerFence, raiseFence, WRITE_MAX_AGE_MS, type WriteFence } from "../../src/db/write-fence";

/*
 * The write fence (src/db/write-fence.ts): a data database refuses a tenant's write batch itself
 * once a move has fenced the tenant there, or when the write reaches it too long after it began;
 * either refusal is a 503 with Retry-After and writes nothing of the batch.
 */

const d1 = env.DB_1;

function fenceFor(tenantId: string, writtenAt = Date.now()): WriteFence {
  return { tenantId, writtenAt, retryAfterSeconds: 3 };
}

/** A write of the tenant: one row in audit_pending, a table with no rule of its own to refuse it. */
function keep(tenantId: string, id: string): D1PreparedStatement {
  return d1.prepare("INSERT INTO audit_pending (tenant_id, id, entry, created_at) VALUES (?, ?, '{}', 0)").bind(tenantId, id);
}

async function kept(tenantId: string): Promise<string[]> {
  const { results } = await d1.prepare("SELECT id FROM audit_pending WHERE tenant_id = ? ORDER BY id").bind(tenantId).all<{ id: string }>();
  return results.map(({ id }) => id);
}

describe("the write fence", () => {
  it("lets a tenant's batch through when no move fenced it, and answers the batch's own results", async () => {
    const tenantId = crypto.randomUUID();
    const [first, second] = await fencedBatch(d1, fenceFor(tenantId), [keep(tenantId, "a"), keep(tenantId, "b")]);
    expect([first!.meta.changes, second!.meta.changes]).toEqual([1, 1]);
    expect(await kept(tenantId)).toEqual(["a", "b"]);
  });

  it("refuses the whole batch of a fenced tenant with a 503 and its Retry-After, and only that tenant's", async () => {
    const fenced = crypto.randomUUID();
    const other = crypto.randomUUID();
    await raiseFence(d1, fenced, Date.now());
    await expect(fencedBatch(d1, fenceFor(fenced), [keep(fenced, "a"), keep(fenced, "b")])).rejects.toMatchObject({
      status: 503,
      headers: { "Retry-After": "3" },
    });
    expect(await kept(fenced)).toEqual([]);
    await fencedBatch(d1, fenceFor(other), [keep(other, "a")]);
    expect(await kept(other)).toEqual(["a"]);
  });

  it("refuses a batch stamped longer ago than a write may take by the database's clock, fenced or not", async () => {
    const tenantId = crypto.randomUUID();
    const late = fenceFor(tenantId, Date.now() - WRITE_MAX_AGE_MS - 5_000);
    const refusal = await fencedBatch(d1, late, [keep(tenantId, "a")]).catch((error: unknown) => error);
    expect(refusal).toMatchObject({ status: 503, headers: { "Retry-After": "1" } });
    expect((refusal as Error).message).toMatch(/after it began/);
    expect(await kept(tenantId)).toEqual([]);
  });

  it("lets the tenant's writes in again once the fence is lowered (a move bringing the tenant back)", async () => {
    const tenantId = crypto.randomUUID();
    await raiseFence(d1, tenantId, Date.now());
    await raiseFence(d1, tenantId, Date.now());
    await lowerFence(d1, tenantId);
    await fencedBatch(d1, fenceFor(tenantId), [keep(tenantId, "a")]);
    expect(await kept(tenantId)).toEqual(["a"]);
  });
});
