import { describe, expect, it } from "vitest";
import { call } from "../support/harness";

describe("GET /ping", () => {
  it("answers 200 without a key, and reads no key it is sent (the Node SDK's webhooks.ping sends its own)", async () => {
    for (const headers of [{}, { "SVC-API-KEY": "key_not-a-key-of-this-vault" }] as Record<string, string>[]) {
      const reply = await call("GET", "/ping", { headers });
      expect(reply.status).toBe(200);
      expect(reply.body).toEqual({ status: "ok" });
    }
  });
});
