import { createExecutionContext, env, waitOnExecutionContext } from "cloudflare:test";
import worker from "../../src/index";
import { BASE, type Reply } from "./harness";
import { readReply } from "./reply.mjs";

/**
 * Calls the same worker inside workerd with some configuration changed (HEADER_PREFIX, a missing
 * secret…): configuration is per deployment, so these tests hand the worker another env object.
 */
export async function callConfigured(
  overrides: Record<string, unknown>,
  method: string,
  path: string,
  options: { headers?: Record<string, string>; body?: unknown } = {},
): Promise<Reply> {
  const headers: Record<string, string> = { ...options.headers };
  const body = options.body === undefined ? undefined : JSON.stringify(options.body);
  if (body !== undefined) {
    headers["content-type"] ??= "application/json";
    // As the request would arrive over HTTP: routes that require a body look for its length.
    headers["content-length"] ??= String(new TextEncoder().encode(body).length);
  }
  const request = new Request(`${BASE}${path}`, { method, headers, body });
  const ctx = createExecutionContext();
  const response = await worker.fetch(request as Request<unknown, IncomingRequestCfProperties>, { ...env, ...overrides }, ctx);
  await waitOnExecutionContext(ctx);
  return readReply(response);
}
