import { SELF } from "cloudflare:test";
import { expect, inject } from "vitest";
import { BASE, call, type Tenant } from "./harness";
import { jsonOf, readReply } from "./reply.mjs";

/** The loopback echo destination started by the test setup, with an optional path. */
export function loopback(path = ""): string {
  return `${inject("loopbackUrl")}${path}`;
}

/** A proxy of the tenant through POST /proxies; defaults to the loopback echo as destination. */
export async function createProxy(tenant: Tenant, body: Record<string, unknown> = {}) {
  const reply = await call("POST", "/proxies", {
    key: tenant.managementKey,
    body: { name: "echo", destination_url: loopback(), ...body },
  });
  expect(reply.status, JSON.stringify(reply.body)).toBe(201);
  return reply.body as { id: string; key: string } & Record<string, any>;
}

export interface InvokeOptions {
  /** Sent as `SVC-PROXY-KEY`. */
  proxyKey?: string;
  /** Sent as `SVC-API-KEY`. */
  apiKey?: string;
  headers?: Record<string, string>;
  /** JSON-encoded unless `raw` is given. */
  body?: unknown;
  raw?: string | Uint8Array | ReadableStream<Uint8Array>;
  contentType?: string;
}

export interface Invocation {
  status: number;
  headers: Headers;
  text: string;
  /** The parsed JSON body, or undefined when it is not JSON. */
  json: any;
}

/**
 * `total` bytes of "x", streamed in 64 KiB chunks, with no length. Past the limit by one byte, so that
 * the vault has read it all when it refuses (a stream cancelled halfway is reported as lost by the
 * sending side).
 */
export function streamOf(total: number): ReadableStream<Uint8Array> {
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

/** One call to `/proxy<path>` inside workerd. The loopback echo answers with what it received. */
export async function invoke(method: string, path: string, options: InvokeOptions = {}): Promise<Invocation> {
  const headers = new Headers(options.headers);
  if (options.proxyKey) headers.set("SVC-PROXY-KEY", options.proxyKey);
  if (options.apiKey) headers.set("SVC-API-KEY", options.apiKey);
  const body = options.raw ?? (options.body === undefined ? undefined : JSON.stringify(options.body));
  if (body !== undefined && !headers.has("content-type")) headers.set("content-type", options.contentType ?? "application/json");
  const reply = await readReply(await SELF.fetch(`${BASE}/proxy${path}`, { method, headers, body, redirect: "manual" }));
  return { status: reply.status, headers: reply.headers, text: reply.text, json: jsonOf(reply.text) };
}

/** Asserts a `{"proxy_error": problem}` reply with the status, and returns the problem. */
export function expectProxyError(reply: Invocation, status: number) {
  expect(reply.status, reply.text).toBe(status);
  expect(reply.headers.get("content-type")).toContain("application/json");
  expect(Object.keys(reply.json ?? {})).toEqual(["proxy_error"]);
  expect(reply.json.proxy_error).toMatchObject({ status, title: expect.any(String), detail: expect.any(String) });
  return reply.json.proxy_error as { status: number; title: string; detail: string; errors?: Record<string, string[]> };
}

/** How many requests the loopback destination saw whose path or query contained the marker. */
export async function destinationSaw(marker: string): Promise<number> {
  const reply = await readReply<{ count: number }>(await fetch(loopback(`/__seen?marker=${encodeURIComponent(marker)}`)));
  return reply.body.count;
}
