/**
 * Proxies with versioned transforms under the dispatch host, for the tests of dispatched scripts
 * (test/sandbox/dispatch-*.test.ts): saving them, reading and running the code on record, and the
 * script names their versions get.
 */
import { expect } from "vitest";
import type { ScriptOwner } from "../../src/context";
import { dispatchScriptName } from "../../src/sandbox/dispatch-host";
import { callConfigured } from "./configured";
import { sandboxContext } from "./context";
import type { FakeCloudflare } from "./fake-cloudflare";
import type { Tenant } from "./harness";
import { loopback } from "./proxies";

/** A transform that says which version it is. */
export const transform = (version: string) => `module.exports = async () => ({ body: { version: "${version}" }, headers: {} });`;

export const MINUTE = 60_000;

export function saveProxy(
  bindings: Record<string, unknown>,
  tenant: Tenant,
  method: "POST" | "PUT",
  path: string,
  request: string | null,
  response: string | null = null,
) {
  return callConfigured(bindings, method, path, {
    headers: { "SVC-API-KEY": tenant.managementKey },
    body: {
      name: "attacked",
      destination_url: loopback(),
      request_transform: request === null ? null : { code: transform(request) },
      response_transform: response === null ? null : { code: transform(response) },
    },
  });
}

export async function createProxy(bindings: Record<string, unknown>, tenant: Tenant, request: string, response: string | null = null) {
  const created = await saveProxy(bindings, tenant, "POST", "/proxies", request, response);
  expect(created.status, JSON.stringify(created.body)).toBe(201);
  return created.body.id as string;
}

/** Runs a transform as /proxy does: the row's code, through the namespace. */
export async function runOnRecord(
  cloudflare: FakeCloudflare,
  tenant: Tenant,
  id: string,
  kind: "request-transform" | "response-transform" = "request-transform",
) {
  const read = await callConfigured(cloudflare.env, "GET", `/proxies/${id}`, { headers: { "SVC-API-KEY": tenant.managementKey } });
  expect(read.status).toBe(200);
  const code = read.body[kind === "request-transform" ? "request_transform" : "response_transform"].code as string;
  return sandboxContext(tenant.tenantId, cloudflare.env).sandbox.run({
    owner: { tenantId: tenant.tenantId, id, kind },
    code,
    input: { args: {}, configuration: {} },
    application: null,
  });
}

export const scriptOf = (tenant: Tenant, id: string, version: string, kind: ScriptOwner["kind"] = "request-transform") =>
  dispatchScriptName({ tenantId: tenant.tenantId, id, kind }, transform(version));

/** The request transform the proxy's row holds, as the API shows it. */
export async function codeOnRecord(cloudflare: FakeCloudflare, tenant: Tenant, id: string): Promise<string> {
  const read = await callConfigured(cloudflare.env, "GET", `/proxies/${id}`, { headers: { "SVC-API-KEY": tenant.managementKey } });
  expect(read.status).toBe(200);
  return read.body.request_transform.code as string;
}
