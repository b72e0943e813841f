import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { APPLICATIONS } from "../../src/limits";
import { call, createApplication, seedTenant } from "../support/harness";

/**
 * A key is written only beside its application and within its application's limit, in the statement
 * that checks both: requests that race a deletion or each other must not leave a key the vault
 * counted on not being there (docs/decisions.md, "A key is written in the statement that checks its
 * application").
 */
describe("application keys under concurrent requests", () => {
  const keysOf = async (applicationId: string) =>
    (await env.DB.prepare("SELECT count(*) AS n FROM api_keys WHERE application_id = ?").bind(applicationId).first<{ n: number }>())!.n;

  it("concurrent key creations never take an application past its limit", async () => {
    const tenant = await seedTenant();
    const app = await createApplication(tenant, { type: "private", permissions: ["token:read"] });
    const replies = await Promise.all(
      Array.from({ length: APPLICATIONS.maxKeys + 10 }, () => call("POST", `/applications/${app.id}/keys`, { key: tenant.managementKey })),
    );
    const created = replies.filter((reply) => reply.status === 201).length;
    expect(replies.every((reply) => reply.status === 201 || reply.status === 409)).toBe(true);
    // The application was created with its first key.
    expect(await keysOf(app.id)).toBe(created + 1);
    expect(created + 1).toBe(APPLICATIONS.maxKeys);
  });

  it("a key created or regenerated while its application is deleted is not left behind", async () => {
    const tenant = await seedTenant();
    for (let round = 0; round < 8; round++) {
      const app = await createApplication(tenant, { type: "private", permissions: ["token:read"] });
      const replies = await Promise.all([
        call("POST", `/applications/${app.id}/keys`, { key: tenant.managementKey }),
        call("POST", `/applications/${app.id}/regenerate`, { key: tenant.managementKey }),
        call("DELETE", `/applications/${app.id}`, { key: tenant.managementKey }),
        call("POST", `/applications/${app.id}/keys`, { key: tenant.managementKey }),
        call("POST", `/applications/${app.id}/regenerate`, { key: tenant.managementKey }),
      ]);
      expect(replies[2]!.status).toBe(204);
      for (const reply of replies) expect([200, 201, 204, 404]).toContain(reply.status);
      expect(await keysOf(app.id)).toBe(0);
    }
  });
});
