import { env, SELF } from "cloudflare:test";
import { expect } from "vitest";

export const BASE = "http://vault.test";

export interface CallOptions {
  key?: string;
  body?: unknown;
  /** Sent as-is instead of JSON-encoding `body`. */
  raw?: string;
  contentType?: string;
  headers?: Record<string, string>;
}

export interface Reply<T = any> {
  status: number;
  headers: Headers;
  body: T;
}

/** One HTTP call to the vault inside workerd, JSON in and out. */
export async function call<T = any>(method: string, path: string, options: CallOptions = {}): Promise<Reply<T>> {
  const headers: Record<string, string> = { ...options.headers };
  if (options.key) headers["SVC-API-KEY"] = options.key;
  let body: string | undefined = options.raw;
  if (options.body !== undefined) body = JSON.stringify(options.body);
  if (body !== undefined) headers["content-type"] ??= options.contentType ?? "application/json";
  const response = await SELF.fetch(`${BASE}${path}`, { method, headers, body });
  const text = await response.text();
  let parsed: unknown = text;
  try {
    parsed = text ? JSON.parse(text) : null;
  } catch {
    // not JSON: keep the text
  }
  return { status: response.status, headers: response.headers, body: parsed as T };
}

/** Asserts an RFC 7807 problem with the status, and returns it for further checks. */
export function expectProblem(reply: Reply, status: number) {
  expect(reply.status, JSON.stringify(reply.body)).toBe(status);
  expect(reply.headers.get("content-type")).toContain("application/problem+json");
  expect(reply.body).toMatchObject({ status, title: expect.any(String), detail: expect.any(String) });
  return reply.body as { status: number; title: string; detail: string; errors?: Record<string, string[]> };
}

export interface Tenant {
  tenantId: string;
  /** Key of the tenant's management application (every management permission). */
  managementKey: string;
  managementApplicationId: string;
}

let tenantCount = 0;

/** A fresh tenant through the operator endpoint, so tests never share data by accident. */
export async function seedTenant(name = `tenant-${++tenantCount}`): Promise<Tenant> {
  const reply = await call("POST", "/tenants", {
    body: { name },
    headers: { "SVC-OPERATOR-KEY": env.OPERATOR_API_KEY },
  });
  expect(reply.status, JSON.stringify(reply.body)).toBe(201);
  return {
    tenantId: reply.body.tenant.id,
    managementKey: reply.body.application.keys[0].key,
    managementApplicationId: reply.body.application.id,
  };
}

export interface ApplicationSpec {
  name?: string;
  type: "private" | "public" | "management";
  permissions?: string[];
  rules?: { priority: number; container: string; transform: "reveal" | "mask" | "redact"; permissions: string[]; description?: string }[];
}

/** An application of the tenant with exactly the given grants; returns its id and key. */
export async function createApplication(tenant: Tenant, spec: ApplicationSpec): Promise<{ id: string; key: string }> {
  const reply = await call("POST", "/applications", {
    key: tenant.managementKey,
    body: { name: spec.name ?? `${spec.type} app`, type: spec.type, permissions: spec.permissions ?? [], rules: spec.rules ?? [] },
  });
  expect(reply.status, JSON.stringify(reply.body)).toBe(201);
  return { id: reply.body.id, key: reply.body.keys[0].key };
}

/** Every row of every table, as text: for the "nothing stored in plaintext" checks. */
export async function dumpDatabase(): Promise<string> {
  const { results: tables } = await env.DB.prepare(
    "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%' AND name NOT LIKE '_cf_%'",
  ).all<{ name: string }>();
  const dumps = await Promise.all(
    tables.map(async ({ name }) => JSON.stringify((await env.DB.prepare(`SELECT * FROM "${name}"`).all()).results)),
  );
  return dumps.join("\n");
}

/** Row counts of every table: "nothing half-written" checks compare them before and after. */
export async function rowCounts(): Promise<Record<string, number>> {
  const { results: tables } = await env.DB.prepare(
    "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%' AND name NOT LIKE '_cf_%' AND name != 'd1_migrations'",
  ).all<{ name: string }>();
  const counts: Record<string, number> = {};
  for (const { name } of tables) {
    counts[name] = (await env.DB.prepare(`SELECT count(*) AS n FROM "${name}"`).first<{ n: number }>())!.n;
  }
  return counts;
}
