import { env } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { configOf } from "../../src/env";
import { logEntries, verifyLog } from "../support/audit";
import { dataDatabaseOf } from "../support/context";
import { runCron } from "../support/cron";
import { call } from "../support/harness";
import { createToken, SSN, seedTokenTenant } from "../support/tokens";

const DAY_MS = 86_400_000;
// The test pool leaves AUDIT_RETENTION_DAYS at its default.
const RETENTION_DAYS = configOf(env).AUDIT_RETENTION_DAYS;

describe("audit log retention", () => {
  it("the cron purges entries older than AUDIT_RETENTION_DAYS, and the chain verifies from its new start", async () => {
    const tenant = await seedTokenTenant();
    const token = await createToken(tenant.key, { type: "social_security_number", data: SSN });
    const older = await logEntries(tenant, 3);
    await new Promise((resolve) => setTimeout(resolve, 20));
    for (let i = 0; i < 3; i++) expect((await call("GET", `/tokens/${token.id}`, { key: tenant.key })).status).toBe(200);
    const reads = (await logEntries(tenant, 4, { entity_type: "token" })).filter((entry) => entry.operation === "read");
    expect(reads).toHaveLength(3);
    const firstKept = reads[0]!;

    // As if the cron ran RETENTION_DAYS after the first read: everything before it is older than that.
    await runCron(Date.parse(firstKept.created_at) + RETENTION_DAYS * DAY_MS);

    const d1 = await dataDatabaseOf(tenant.tenantId);
    const oldest = await d1
      .prepare("SELECT min(seq) AS seq FROM audit_log WHERE tenant_id = ?")
      .bind(tenant.tenantId)
      .first<{ seq: number }>();
    expect(oldest!.seq).toBe(firstKept.seq);
    for (const entry of older) {
      expect(await d1.prepare("SELECT 1 FROM audit_log WHERE tenant_id = ? AND id = ?").bind(tenant.tenantId, entry.id).first()).toBeNull();
    }
    const verification = await verifyLog(tenant);
    expect(verification).toMatchObject({ verified: true, anchor_seq: firstKept.seq - 1, first_seq: firstKept.seq });

    // Moving the anchor further, to hide more deletions, is found.
    await d1.batch([
      d1.prepare("DELETE FROM audit_log WHERE tenant_id = ? AND seq = ?").bind(tenant.tenantId, firstKept.seq),
      d1
        .prepare("UPDATE audit_chains SET anchor_seq = ?, anchor_hash = ? WHERE tenant_id = ?")
        .bind(firstKept.seq, firstKept.hash, tenant.tenantId),
    ]);
    expect((await verifyLog(tenant)).broken_at).toMatchObject({ reason: expect.stringContaining("anchor") });
  });
});
