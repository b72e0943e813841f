import { SELF } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { BASE, seedTenant } from "../support/harness";
import { createProxy, destinationSaw, expectProxyError, loopback } from "../support/proxies";
import { readReply } from "../support/reply.mjs";

/*
 * Attacks on /proxy as answered outside the API's router (src/index.ts, src/runtime/proxy-calls.ts,
 * src/proxies/calls.ts): what the middleware used to guarantee must hold without it.
 */

/**
 * `total` bytes of "x", streamed in 64 KiB chunks. Past the limit by one byte, so that the vault has
 * read it all when it refuses (a stream cancelled halfway is reported as lost by the sending side).
 */
function streamOf(total: number): ReadableStream<Uint8Array> {
  let sent = 0;
  return new ReadableStream<Uint8Array>({
    pull(controller) {
      if (sent >= total) return controller.close();
      const size = Math.min(64 * 1024, total - sent);
      sent += size;
      controller.enqueue(new Uint8Array(size).fill(0x78));
    },
  });
}

describe("/proxy bodies whose length lies", () => {
  it.each([
    ["with Transfer-Encoding (which frames the body, as HTTP/1.1 has it)", { "transfer-encoding": "chunked" }],
    ["alone", {}],
  ])("a Content-Length of 5 on a body one byte past 1 MB, %s, is a 413 and nothing is forwarded", async (_, extra) => {
    const marker = `lying-length-${crypto.randomUUID()}`;
    const proxy = await createProxy(await seedTenant(), { require_auth: false, destination_url: loopback(`/${marker}`) });
    const reply = await readReply(
      await SELF.fetch(`${BASE}/proxy`, {
        method: "POST",
        headers: { "SVC-PROXY-KEY": proxy.key, "content-type": "text/plain", "content-length": "5", ...extra },
        body: streamOf(1024 * 1024 + 1),
      }),
    );
    // Only the start of the text: a forwarded body would be echoed whole.
    expect(reply.status, reply.text.slice(0, 200)).toBe(413);
    expectProxyError({ ...reply, json: JSON.parse(reply.text) }, 413);
    expect(await destinationSaw(marker)).toBe(0);
  });
});
