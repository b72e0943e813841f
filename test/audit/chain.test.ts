import { describe, expect, it } from "vitest";
import { logEntries, verifyLog } from "../support/audit";
import { dataDatabaseOf } from "../support/context";
import { call } from "../support/harness";
import { createToken, SSN, seedTokenTenant, type TokenTenant } from "../support/tokens";

/*
 * The hash chain: a verification of an untouched log holds; each way of tampering with the rows in
 * D1 (an entry edited, deleted, or two swapped) is found, at the entry where the chain breaks.
 */

/** A tenant whose log holds at least `count` entries besides its reads of the log, all written. */
async function tenantWithLog(count: number): Promise<{ tenant: TokenTenant; d1: D1Database }> {
  const tenant = await seedTokenTenant();
  const token = await createToken(tenant.key, { type: "social_security_number", data: SSN });
  for (let i = 0; i < count; i++) expect((await call("GET", `/tokens/${token.id}`, { key: tenant.key })).status).toBe(200);
  await logEntries(tenant, count + 3);
  return { tenant, d1: await dataDatabaseOf(tenant.tenantId) };
}

describe("GET /logs/verify", () => {
  it("holds for an untouched log, over all of it and over a range", async () => {
    const { tenant } = await tenantWithLog(4);
    const all = await verifyLog(tenant);
    expect(all).toMatchObject({ verified: true, complete: true, broken_at: null, first_seq: 1, anchor_seq: 0 });
    expect(all.last_seq).toBe(all.head_seq);
    expect(all.checked).toBe(all.head_seq);

    const entries = await logEntries(tenant, 7);
    const range = await verifyLog(tenant, { start_date: entries[2]!.created_at });
    expect(range.verified).toBe(true);
    expect(range.first_seq).toBeLessThanOrEqual(entries[2]!.seq);
    expect(range.first_seq).toBeGreaterThan(1);
  });

  it("finds an entry edited in D1", async () => {
    const { tenant, d1 } = await tenantWithLog(4);
    await d1.prepare("UPDATE audit_log SET actor_id = 'someone-else' WHERE tenant_id = ? AND seq = 4").bind(tenant.tenantId).run();
    expect((await verifyLog(tenant)).broken_at).toMatchObject({ seq: 4, reason: expect.stringContaining("altered") });
  });

  it("finds an entry whose hash was recomputed without the key", async () => {
    const { tenant, d1 } = await tenantWithLog(4);
    const forged = "A".repeat(43);
    await d1
      .prepare("UPDATE audit_log SET message = 'nothing', hash = ? WHERE tenant_id = ? AND seq = 3")
      .bind(forged, tenant.tenantId)
      .run();
    expect((await verifyLog(tenant)).broken_at).toMatchObject({ seq: 3 });
  });

  it("finds an entry deleted from the middle, and one deleted from the end", async () => {
    const { tenant, d1 } = await tenantWithLog(4);
    await d1.prepare("DELETE FROM audit_log WHERE tenant_id = ? AND seq = 3").bind(tenant.tenantId).run();
    expect((await verifyLog(tenant)).broken_at).toMatchObject({ seq: 3, reason: expect.stringContaining("missing") });

    const other = await tenantWithLog(4);
    const { headSeq } = (await other.d1
      .prepare("SELECT head_seq AS headSeq FROM audit_chains WHERE tenant_id = ?")
      .bind(other.tenant.tenantId)
      .first<{ headSeq: number }>())!;
    await other.d1.prepare("DELETE FROM audit_log WHERE tenant_id = ? AND seq = ?").bind(other.tenant.tenantId, headSeq).run();
    const verification = await verifyLog(other.tenant);
    expect(verification.verified).toBe(false);
    expect(verification.broken_at!.seq).toBeLessThanOrEqual(headSeq);
  });

  it("finds two entries swapped", async () => {
    const { tenant, d1 } = await tenantWithLog(4);
    await d1.batch([
      d1.prepare("UPDATE audit_log SET seq = -1 WHERE tenant_id = ? AND seq = 2").bind(tenant.tenantId),
      d1.prepare("UPDATE audit_log SET seq = 2 WHERE tenant_id = ? AND seq = 3").bind(tenant.tenantId),
      d1.prepare("UPDATE audit_log SET seq = 3 WHERE tenant_id = ? AND seq = -1").bind(tenant.tenantId),
    ]);
    expect((await verifyLog(tenant)).broken_at).toMatchObject({ seq: 2 });
  });

  it.each([
    ["a search's metadata key holding a lone surrogate (a JSON escape in valid UTF-8)", "POST", "/tokens/search", "metadata.a\ud800b:x"],
    ["a search's metadata key holding a NUL character", "POST", "/tokens/search", "metadata.a\u0000b:x"],
    // The entry keeps an id's first 200 characters: here, half of the emoji's surrogate pair.
    ["a token id cut inside a surrogate pair", "GET", `/tokens/${"a".repeat(199)}${encodeURIComponent("\u{1F600}")}`, null],
  ])("holds after %s lands in an entry", async (_, method, path, query) => {
    const tenant = await seedTokenTenant();
    const reply = await call(method, path, { key: tenant.key, ...(query === null ? {} : { body: { query } }) });
    expect(reply.status, reply.text).toBeLessThan(500);
    const [entry] = await logEntries(tenant, 1, { entity_type: "token" });
    expect(entry, "the request is logged").toBeDefined();
    expect(await verifyLog(tenant)).toMatchObject({ verified: true, broken_at: null });
  });

  it("needs log:read", async () => {
    const tenant = await seedTokenTenant();
    const reply = await call("GET", "/logs/verify", { key: tenant.key });
    expect(reply.status).toBe(403);
  });
});
