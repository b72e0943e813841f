import { describe, expect, it } from "vitest";
import { requestBodyWithin } from "../../src/http/body";
import { call, createApplication, seedTenant } from "../support/harness";
import { createProxy, destinationSaw, expectProxyError, invoke, loopback } from "../support/proxies";

/*
 * Attacks on the native read of a proxy body framed by its Content-Length (requestBodyWithin) and on
 * what detokenization makes of a body (stepsOut's are in calls-attacks.test.ts).
 */

/** `total` bytes of "x" in 64 KiB chunks, of bytes or JavaScript chunks, counting in `pulled` how many the reader took. */
function countedStream(total: number, pulled: { bytes: number }, type?: "bytes"): ReadableStream<Uint8Array> {
  const source = {
    pull(controller: { enqueue(chunk: Uint8Array): void; close(): void }) {
      if (pulled.bytes >= total) return controller.close();
      const size = Math.min(64 * 1024, total - pulled.bytes);
      pulled.bytes += size;
      controller.enqueue(new Uint8Array(size).fill(0x78));
    },
  };
  return type === "bytes" ? new ReadableStream({ type, ...source }) : new ReadableStream<Uint8Array>(source);
}

describe("requestBodyWithin on a body whose Content-Length alone lies (in-process)", () => {
  // Over HTTP the runtime ends a body at its Content-Length; a Request handed over in-process (a
  // service binding's, this one) carries any stream beside any header.
  it.each([
    ["bytes", "bytes" as const],
    ["JavaScript chunks", undefined],
  ])("a Content-Length of 5 on an 8 MB stream of %s is refused once little more than 5 bytes are read", async (_, type) => {
    const pulled = { bytes: 0 };
    const request = new Request("https://vault.example/proxy", {
      method: "POST",
      headers: { "content-length": "5" },
      body: countedStream(8 * 1024 * 1024, pulled, type),
    });
    const refused = new Error("too large");
    await expect(requestBodyWithin(request, 1024 * 1024, () => refused)).rejects.toBe(refused);
    expect(pulled.bytes).toBeLessThan(2 * 1024 * 1024);
  });
});

describe("/proxy bodies framed by their Content-Length, read natively", () => {
  it.each([0, 1, 64 * 1024 - 1, 64 * 1024, 64 * 1024 + 1, 1024 * 1024])("%i bytes with their length are forwarded whole", async (size) => {
    const proxy = await createProxy(await seedTenant(), { require_auth: false });
    const raw = "y".repeat(size);
    const reply = await invoke("POST", "", {
      proxyKey: proxy.key,
      headers: { "content-length": String(size) },
      raw,
      contentType: "text/plain",
    });
    expect(reply.status, reply.text.slice(0, 200)).toBe(200);
    expect(reply.json.body.length).toBe(size);
  });

  it("a body one byte past its Content-Length (in-process), within 1 MB, is counted on and forwarded whole", async () => {
    const proxy = await createProxy(await seedTenant(), { require_auth: false });
    const reply = await invoke("POST", "", {
      proxyKey: proxy.key,
      headers: { "content-length": String(64 * 1024) },
      raw: countedStream(64 * 1024 + 1, { bytes: 0 }),
      contentType: "text/plain",
    });
    expect(reply.status, reply.text.slice(0, 200)).toBe(200);
    expect(reply.json.body.length).toBe(64 * 1024 + 1);
  });
});

describe("a detokenized body many times its own size", () => {
  // 100 references (the most a body may hold) to one token of 900 KB: without a bound on what
  // substitution produces, a 2.5 KB body became a 92 MB one, held several times over in the isolate.
  it("is a 400 naming the bound, and nothing is forwarded", async () => {
    const tenant = await seedTenant();
    const caller = await createApplication(tenant, { type: "private", permissions: ["token:create", "token:use"] });
    const created = await call("POST", "/tokens", { key: caller.key, body: { type: "token", data: "x".repeat(900_000) } });
    expect(created.status).toBe(201);
    const marker = `expanded-${crypto.randomUUID()}`;
    const proxy = await createProxy(tenant, { destination_url: loopback(`/${marker}`) });
    const body = Object.fromEntries(Array.from({ length: 100 }, (_, i) => [`field_${i}`, `{{ ${created.body.id} }}`]));
    const reply = await invoke("POST", "", { proxyKey: proxy.key, apiKey: caller.key, body });
    expect(expectProxyError(reply, 400).detail).toMatch(/detokeniz/i);
    expect(await destinationSaw(marker)).toBe(0);
  });
});
