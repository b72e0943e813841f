import { env, SELF } from "cloudflare:test";
import type { ExtractSchema } from "hono/types";
import { expect } from "vitest";
import type { applicationRoutes } from "../../src/applications/routes";
import { DEPLOYMENT_TENANT } from "../../src/audit/entry";
import type { permissionRoutes } from "../../src/auth/routes";
import type { detokenizeRoutes } from "../../src/detokenization/routes";
import type { keyRoutes } from "../../src/keys/routes";
import type { proxyRoutes } from "../../src/proxies/routes";
import type { reactorRoutes } from "../../src/reactors/routes";
import type { searchRoutes } from "../../src/search/routes";
import type { sessionRoutes } from "../../src/sessions/routes";
import type { tenantRoutes } from "../../src/tenants/routes";
import type { tokenIntentRoutes } from "../../src/token-intents/routes";
import type { tokenRoutes } from "../../src/tokens/routes";
import { ALL_DATABASES } from "./context";
import { expectDocumentedReply } from "./documented-replies";
import { type Reply, readReply } from "./reply.mjs";

export const BASE = "http://vault.test";

export interface CallOptions {
  key?: string;
  body?: unknown;
  /** Sent as-is instead of JSON-encoding `body`. */
  raw?: string;
  contentType?: string;
  headers?: Record<string, string>;
}

export type { Reply };

/** One HTTP call to the vault inside workerd, JSON in and out; the reply must be the one the OpenAPI document declares. */
export async function call<T = any>(method: string, path: string, options: CallOptions = {}): Promise<Reply<T>> {
  const headers: Record<string, string> = { ...options.headers };
  if (options.key) headers["SVC-API-KEY"] = options.key;
  let body: string | undefined = options.raw;
  if (options.body !== undefined) body = JSON.stringify(options.body);
  if (body !== undefined) headers["content-type"] ??= options.contentType ?? "application/json";
  const reply = await readReply<T>(await SELF.fetch(`${BASE}${path}`, { method, headers, body }));
  expectDocumentedReply(method, path, reply);
  return reply;
}

/** The routers' types: the replies each handler returns, typed by its route's zod response schemas. */
type Routes = ExtractSchema<typeof applicationRoutes> &
  ExtractSchema<typeof permissionRoutes> &
  ExtractSchema<typeof proxyRoutes> &
  ExtractSchema<typeof reactorRoutes> &
  ExtractSchema<typeof searchRoutes> &
  ExtractSchema<typeof sessionRoutes> &
  ExtractSchema<typeof tenantRoutes> &
  ExtractSchema<typeof keyRoutes> &
  ExtractSchema<typeof detokenizeRoutes> &
  ExtractSchema<typeof tokenRoutes> &
  ExtractSchema<typeof tokenIntentRoutes>;

/** A path as the document writes it (`/tokens/{id}`) from the router's (`/tokens/:id`), and back. */
type DocumentPath<P extends string> = P extends `${infer Head}:${infer Name}/${infer Tail}`
  ? `${Head}{${Name}}/${DocumentPath<Tail>}`
  : P extends `${infer Head}:${infer Name}`
    ? `${Head}{${Name}}`
    : P;
type RouterPath<P extends string> = P extends `${infer Head}{${infer Name}}${infer Tail}` ? `${Head}:${Name}${RouterPath<Tail>}` : P;

/** Every documented operation, named as the document does: `GET /tokens/{id}`. */
export type Route = {
  [P in keyof Routes & string]: {
    [M in keyof Routes[P] & string]: M extends `$${infer Method}` ? `${Uppercase<Method>} ${DocumentPath<P>}` : never;
  }[keyof Routes[P] & string];
}[keyof Routes & string];

type Endpoint<R extends Route> = R extends `${infer Method} ${infer Path}`
  ? RouterPath<Path> extends infer Served extends keyof Routes
    ? Routes[Served][`$${Lowercase<Method>}` & keyof Routes[Served]]
    : never
  : never;
type ParamNames<P extends string> = P extends `${string}{${infer Name}}${infer Tail}` ? Name | ParamNames<Tail> : never;
type RouteOptions<R extends Route> = CallOptions &
  ([ParamNames<R>] extends [never] ? { params?: never } : { params: Record<ParamNames<R>, string> });

/**
 * One call to a documented operation that must answer `status`; the reply's body is typed by the
 * schema of that response. `call` stays the general form, for replies a test expects to be refused.
 */
export async function callRoute<R extends Route, S extends Endpoint<R>["status"]>(
  route: R,
  status: S,
  options: RouteOptions<R>,
): Promise<Reply<Extract<Endpoint<R>, { status: S }>["output"]>> {
  const [method, template] = route.split(" ") as [string, string];
  const params: Record<string, string> = options.params ?? {};
  const path = template.replace(/\{([^}]+)\}/g, (_, name: string) => encodeURIComponent(params[name]!));
  const reply = await call(method, path, options);
  expect(reply.status, `${method} ${path}: ${JSON.stringify(reply.body)}`).toBe(status);
  return reply;
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
  const reply = await callRoute("POST /tenants", 201, {
    body: { name },
    headers: { "SVC-OPERATOR-KEY": env.OPERATOR_API_KEY },
  });
  return {
    tenantId: reply.body.tenant.id,
    managementKey: reply.body.application.key,
    managementApplicationId: reply.body.application.id,
  };
}

export interface ApplicationSpec {
  name?: string;
  type: "private" | "public" | "management";
  permissions?: string[];
  rules?: { priority: number; container: string; transform: "reveal" | "mask" | "redact"; permissions: string[]; description?: string }[];
  allowed_origins?: string[];
}

/** An application of the tenant with exactly the given grants; returns its id and key. */
export async function createApplication(tenant: Tenant, spec: ApplicationSpec): Promise<{ id: string; key: string }> {
  const reply = await callRoute("POST /applications", 201, {
    key: tenant.managementKey,
    body: {
      name: spec.name ?? `${spec.type} app`,
      type: spec.type,
      permissions: spec.permissions ?? [],
      rules: spec.rules ?? [],
      allowed_origins: spec.allowed_origins ?? [],
    },
  });
  // Created with its key (create_key is left to its default).
  return { id: reply.body.id, key: reply.body.key! };
}

/** Every row of every table of every database, as text: for the "nothing stored in plaintext" checks. */
export async function dumpDatabase(): Promise<string> {
  const dumps: string[] = [];
  for (const database of Object.values(ALL_DATABASES)) {
    const { results: tables } = await database
      .prepare(
        "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%' AND name NOT LIKE '_cf_%' AND name != 'd1_migrations'",
      )
      .all<{ name: string }>();
    // d1_migrations holds only file names (0005_… would read as a card's last four digits).
    for (const { name } of tables) dumps.push(JSON.stringify((await database.prepare(`SELECT * FROM "${name}"`).all()).results));
  }
  return dumps.join("\n");
}

/** Row counts of every table of every database (`DB_1.tokens`): "nothing half-written" checks compare them before and after. */
export async function rowCounts(): Promise<Record<string, number>> {
  const counts: Record<string, number> = {};
  for (const [binding, database] of Object.entries(ALL_DATABASES)) {
    const { results: tables } = await database
      .prepare(
        // The audit log records failed requests too, a moment later: it is checked by test/audit.
        "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%' AND name NOT LIKE '_cf_%' AND name != 'd1_migrations' AND name NOT LIKE 'audit_%'",
      )
      .all<{ name: string }>();
    for (const { name } of tables) {
      // The deployment's own key record is written by the audit writer too, on its first entry.
      const deployment = name === "tenant_keys" ? ` WHERE tenant_id != '${DEPLOYMENT_TENANT}'` : "";
      counts[`${binding}.${name}`] = (await database.prepare(`SELECT count(*) AS n FROM "${name}"${deployment}`).first<{ n: number }>())!.n;
    }
  }
  return counts;
}
