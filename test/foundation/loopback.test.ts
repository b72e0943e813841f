import { describe, expect, inject, it } from "vitest";

describe("loopback test server", () => {
  it("echoes requests and counts them by marker", async () => {
    const base = inject("loopbackUrl");
    const echo = await (await fetch(`${base}/hello?marker-abc`)).json<{ path: string; query: string }>();
    expect(echo).toMatchObject({ path: "/hello", query: "?marker-abc" });
    const seen = await (await fetch(`${base}/__seen?marker=marker-abc`)).json<{ count: number }>();
    expect(seen.count).toBe(1);
  });
});
