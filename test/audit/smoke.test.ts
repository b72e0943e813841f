import { describe, expect, it } from "vitest";
import { logEntries } from "../support/audit";
import { createToken, SSN, seedTokenTenant } from "../support/tokens";

describe("audit smoke", () => {
  it("records a token creation", async () => {
    const tenant = await seedTokenTenant();
    const token = await createToken(tenant.key, { type: "social_security_number", data: SSN });
    const entries = await logEntries(tenant, 1, { entity_type: "token" });
    console.log(JSON.stringify(entries, null, 1));
    expect(entries.map((e) => e.entity_id)).toContain(token.id);
  });
});
