import { describe, expect, it } from "vitest";
import { verifyLog } from "../support/audit";
import { dataDatabaseOf } from "../support/context";
import { call } from "../support/harness";
import { createToken, SSN, seedTokenTenant, type TokenTenant } from "../support/tokens";

/*
 * Rule 7: whoever can edit the D1 file (the rows, not the vault's keys) cannot shorten a tenant's
 * audit log at either end and have GET /logs/verify still hold. The head carries a MAC like the
 * anchor, so the tail cannot be cut and the head moved back; an anchor without its MAC fails.
 */

interface Head {
  headSeq: number;
  headHash: string;
}

async function headOf(d1: D1Database, tenantId: string): Promise<Head | null> {
  return d1.prepare("SELECT head_seq AS headSeq, head_hash AS headHash FROM audit_chains WHERE tenant_id = ?").bind(tenantId).first<Head>();
}

/**
 * Waits until the queue consumer has chained at least `atLeast` entries and the head stopped moving,
 * reading D1 directly: calling GET /logs would log more entries and keep the writer busy while the
 * test edits rows.
 */
async function settledHead(d1: D1Database, tenantId: string, atLeast: number): Promise<Head> {
  const deadline = Date.now() + 20_000;
  let last = null as Head | null;
  let stableSince = Date.now();
  for (;;) {
    const head = await headOf(d1, tenantId);
    if (head?.headSeq !== last?.headSeq) stableSince = Date.now();
    last = head;
    if (head && head.headSeq >= atLeast && Date.now() - stableSince >= 1_000) return head;
    if (Date.now() > deadline) throw new Error(`the chain of ${tenantId} did not settle: ${JSON.stringify(head)}`);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

/** A tenant whose log holds `count` reads after its three set-up entries, the writer idle. */
async function tenantWithLog(count: number): Promise<{ tenant: TokenTenant; d1: D1Database; head: Head }> {
  const tenant = await seedTokenTenant();
  const token = await createToken(tenant.key, { type: "social_security_number", data: SSN });
  for (let i = 0; i < count; i++) expect((await call("GET", `/tokens/${token.id}`, { key: tenant.key })).status).toBe(200);
  const d1 = await dataDatabaseOf(tenant.tenantId);
  // Tenant, application and token creation are the first three entries.
  return { tenant, d1, head: await settledHead(d1, tenant.tenantId, count + 3) };
}

async function hashAt(d1: D1Database, tenantId: string, seq: number): Promise<string> {
  const row = await d1.prepare("SELECT hash FROM audit_log WHERE tenant_id = ? AND seq = ?").bind(tenantId, seq).first<{ hash: string }>();
  return row!.hash;
}

/** Cuts the last `count` entries and moves the head back onto the new last entry, as the writer would have left it. */
async function cutTail(d1: D1Database, tenantId: string, head: Head, count: number): Promise<number> {
  const newHead = head.headSeq - count;
  const newHash = await hashAt(d1, tenantId, newHead);
  await d1.batch([
    d1.prepare("DELETE FROM audit_log WHERE tenant_id = ? AND seq > ?").bind(tenantId, newHead),
    d1.prepare("UPDATE audit_chains SET head_seq = ?, head_hash = ? WHERE tenant_id = ?").bind(newHead, newHash, tenantId),
  ]);
  return newHead;
}

describe("rule 7: audit verification finds a log shortened at either end in D1", { timeout: 30_000 }, () => {
  it("finds the last entries deleted and the head moved back onto the new last entry", async () => {
    const { tenant, d1, head } = await tenantWithLog(5);
    const newHead = await cutTail(d1, tenant.tenantId, head, 2);

    const verification = await verifyLog(tenant);
    expect(verification.verified).toBe(false);
    expect(verification.broken_at).toMatchObject({ seq: newHead, reason: expect.stringContaining("head") });
  });

  it("finds it with the head's MAC removed too, and still after the writer has chained more entries on top", async () => {
    const { tenant, d1, head } = await tenantWithLog(5);
    const newHead = await cutTail(d1, tenant.tenantId, head, 2);
    await d1.prepare("UPDATE audit_chains SET head_mac = NULL WHERE tenant_id = ?").bind(tenant.tenantId).run();
    expect((await verifyLog(tenant)).broken_at).toMatchObject({ seq: newHead, reason: expect.stringContaining("no MAC") });

    // The writer appends on top of the bare head rather than lose entries, and the chain keeps the mark.
    const token = await createToken(tenant.key, { type: "social_security_number", data: SSN });
    expect((await call("GET", `/tokens/${token.id}`, { key: tenant.key })).status).toBe(200);
    await settledHead(d1, tenant.tenantId, newHead + 3);
    const verification = await verifyLog(tenant);
    expect(verification.verified).toBe(false);
    expect(verification.broken_at).toMatchObject({ seq: newHead + 1, reason: expect.stringContaining("deleted") });
    // A range that starts after the mark verifies: the entries written since are vouched for.
    const later = await d1
      .prepare("SELECT created_at AS createdAt FROM audit_log WHERE tenant_id = ? AND seq = ?")
      .bind(tenant.tenantId, newHead + 3)
      .first<{ createdAt: number }>();
    expect((await verifyLog(tenant, { start_date: new Date(later!.createdAt).toISOString() })).verified).toBe(true);
  });

  it("finds entries past the recorded head: a head row restored from an older copy of the database", async () => {
    const { tenant, d1, head } = await tenantWithLog(3);
    const older = (await d1
      .prepare("SELECT * FROM audit_chains WHERE tenant_id = ?")
      .bind(tenant.tenantId)
      .first<Record<string, unknown>>())!;
    const token = await createToken(tenant.key, { type: "social_security_number", data: SSN });
    expect((await call("GET", `/tokens/${token.id}`, { key: tenant.key })).status).toBe(200);
    await settledHead(d1, tenant.tenantId, head.headSeq + 2);

    // Every column as it was, the MAC the vault wrote then included.
    const columns = Object.keys(older).filter((column) => column !== "tenant_id");
    await d1
      .prepare(`UPDATE audit_chains SET ${columns.map((column) => `${column} = ?`).join(", ")} WHERE tenant_id = ?`)
      .bind(...columns.map((column) => older[column]), tenant.tenantId)
      .run();
    const verification = await verifyLog(tenant);
    expect(verification.verified).toBe(false);
    expect(verification.broken_at).toMatchObject({ seq: head.headSeq + 1, reason: expect.stringContaining("past the chain's head") });
  });

  it("finds a prefix deleted and the anchor set to the cut with its MAC null", async () => {
    const { tenant, d1 } = await tenantWithLog(5);
    const cut = 3;
    const cutHash = await hashAt(d1, tenant.tenantId, cut);
    await d1.batch([
      d1.prepare("DELETE FROM audit_log WHERE tenant_id = ? AND seq <= ?").bind(tenant.tenantId, cut),
      d1
        .prepare("UPDATE audit_chains SET anchor_seq = ?, anchor_hash = ?, anchor_mac = NULL WHERE tenant_id = ?")
        .bind(cut, cutHash, tenant.tenantId),
    ]);

    const verification = await verifyLog(tenant);
    expect(verification.verified).toBe(false);
    expect(verification.broken_at).toMatchObject({ seq: cut, reason: expect.stringContaining("anchor") });
  });

  it("finds an entry slipped in before the anchor, where verification never walks", async () => {
    const { tenant, d1 } = await tenantWithLog(3);
    const columns =
      "tenant_id, actor_id, actor_type, credential_id, entity_type, entity_id, operation, message, status, trace_id, created_at, hash";
    await d1
      .prepare(`INSERT INTO audit_log (seq, id, ${columns}) SELECT 0, 'made-up', ${columns} FROM audit_log WHERE tenant_id = ? AND seq = 1`)
      .bind(tenant.tenantId)
      .run();
    expect((await verifyLog(tenant)).broken_at).toMatchObject({ seq: 0, entry_id: "made-up", reason: expect.stringContaining("anchor") });
  });

  it("an untouched log still verifies, all of it", async () => {
    const { tenant, head } = await tenantWithLog(3);
    const verification = await verifyLog(tenant);
    expect(verification).toMatchObject({ verified: true, broken_at: null, first_seq: 1, anchor_seq: 0 });
    expect(verification.head_seq).toBeGreaterThanOrEqual(head.headSeq);
    expect(verification.last_seq).toBe(verification.head_seq);
  });
});
