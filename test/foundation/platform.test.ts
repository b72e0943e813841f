import { env } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import type { ZodType } from "zod";
import { buildApp } from "../../src/app";
import { FRAME_PATH } from "../../src/elements/frame";
import { honoursIdempotencyKey } from "../../src/idempotency/middleware";
import { callConfigured } from "../support/configured";
import { call, expectProblem, seedTenant } from "../support/harness";
import { expectLoggedError } from "../support/logs";
import { createProxy } from "../support/proxies";
import { seedTokenTenant } from "../support/tokens";

describe("errors", () => {
  it("answers an unknown route with a 404 problem", async () => {
    const problem = expectProblem(await call("GET", "/nowhere"), 404);
    expect(problem.detail).toContain("/nowhere");
  });

  it("answers a known route with the wrong method with a 405 and Allow", async () => {
    const tenant = await seedTenant();
    const reply = await call("PATCH", "/applications", { key: tenant.managementKey, body: {} });
    expectProblem(reply, 405);
    expect(reply.headers.get("allow")).toBe("GET, POST");
  });

  it("answers a body over 1 MB with a 413", async () => {
    const tenant = await seedTenant();
    const reply = await call("POST", "/applications", {
      key: tenant.managementKey,
      body: { name: "x".repeat(1024 * 1024), type: "public" },
    });
    expectProblem(reply, 413);
  });

  it("reports missing configuration clearly, naming the variable but no secret", async () => {
    const reply = await expectLoggedError(/Invalid configuration: VAULT_MASTER_KEY is required/, () =>
      callConfigured({ VAULT_MASTER_KEYS: undefined, VAULT_MASTER_KEY: undefined }, "GET", "/applications", {
        headers: { "SVC-API-KEY": env.BOOTSTRAP_API_KEY },
      }),
    );
    const problem = expectProblem(reply, 500);
    expect(problem.detail).toContain("VAULT_MASTER_KEY");
    expect(JSON.stringify(reply.body)).not.toContain(env.OPERATOR_API_KEY);
  });

  it("reports a malformed master key clearly", async () => {
    const reply = await expectLoggedError(/VAULT_MASTER_KEY must be 32 random bytes/, () =>
      callConfigured({ VAULT_MASTER_KEY: "c2hvcnQ=" }, "GET", "/health"),
    );
    const problem = expectProblem(reply, 500);
    expect(problem.detail).toMatch(/VAULT_MASTER_KEY must be 32 random bytes/);
  });

  it("answers an unexpected failure with a bare 500 that quotes the trace id and no internals", async () => {
    // A control database that is bound but broken: every query throws a TypeError.
    const reply = await expectLoggedError(/\[trace-500\] unexpected error/, () =>
      callConfigured({ DB: {} }, "GET", "/applications", {
        headers: { "SVC-API-KEY": "key_anything", "SVC-TRACE-ID": "trace-500" },
      }),
    );
    const problem = expectProblem(reply, 500);
    expect(problem.title).toBe("Internal Server Error");
    expect(problem.detail).toContain("trace-500");
    expect(JSON.stringify(reply.body)).not.toMatch(/TypeError|undefined|at \w+ \(/);
  });

  it("reports a missing database binding clearly, naming it", async () => {
    const reply = await expectLoggedError(/No D1 database is bound as DB/, () =>
      callConfigured({ DB: undefined }, "GET", "/applications", { headers: { "SVC-API-KEY": "key_anything" } }),
    );
    expect(expectProblem(reply, 500).detail).toBe("No D1 database is bound as DB");
  });
});

describe("trace ids", () => {
  it("echoes the caller's trace id", async () => {
    const reply = await call("GET", "/health", { headers: { "SVC-TRACE-ID": "abc-123" } });
    expect(reply.headers.get("SVC-TRACE-ID")).toBe("abc-123");
  });

  it("assigns a new trace id when none or an unusable one is sent", async () => {
    const none = await call("GET", "/health");
    expect(none.headers.get("SVC-TRACE-ID")).toMatch(/^[0-9a-f-]{36}$/);
    const unusable = await call("GET", "/nowhere", { headers: { "SVC-TRACE-ID": "bad id with spaces" } });
    expect(unusable.headers.get("SVC-TRACE-ID")).toMatch(/^[0-9a-f-]{36}$/);
  });
});

describe("HEADER_PREFIX", () => {
  const XYZ = { HEADER_PREFIX: "XYZ" };

  it("renames the API key header; the old name is ignored", async () => {
    const withNew = await callConfigured(XYZ, "GET", "/applications", { headers: { "XYZ-API-KEY": env.BOOTSTRAP_API_KEY } });
    expect(withNew.status).toBe(200);
    const withOld = await callConfigured(XYZ, "GET", "/applications", { headers: { "SVC-API-KEY": env.BOOTSTRAP_API_KEY } });
    expect(withOld.status).toBe(401);
    expect(withOld.body.detail).toContain("XYZ-API-KEY");
  });

  it("renames the trace id header", async () => {
    const reply = await callConfigured(XYZ, "GET", "/health", { headers: { "XYZ-TRACE-ID": "t-1", "SVC-TRACE-ID": "t-2" } });
    expect(reply.headers.get("XYZ-TRACE-ID")).toBe("t-1");
    expect(reply.headers.get("SVC-TRACE-ID")).toBeNull();
  });

  it("renames the idempotency key header", async () => {
    const body = { name: `prefixed-${crypto.randomUUID()}`, type: "public" };
    const headers = { "XYZ-API-KEY": env.BOOTSTRAP_API_KEY, "XYZ-IDEMPOTENCY-KEY": crypto.randomUUID() };
    const first = await callConfigured(XYZ, "POST", "/applications", { headers, body });
    const second = await callConfigured(XYZ, "POST", "/applications", { headers, body });
    expect(second.body.id).toBe(first.body.id);
    expect(second.headers.get("XYZ-Idempotent-Replayed")).toBe("true");

    const oldName = { "XYZ-API-KEY": env.BOOTSTRAP_API_KEY, "SVC-IDEMPOTENCY-KEY": "ignored" };
    const a = await callConfigured(XYZ, "POST", "/applications", { headers: oldName, body });
    const b = await callConfigured(XYZ, "POST", "/applications", { headers: oldName, body });
    expect(b.body.id).not.toBe(a.body.id);
  });

  it("renames the operator key header", async () => {
    const body = { name: "prefixed tenant" };
    const withNew = await callConfigured(XYZ, "POST", "/tenants", { headers: { "XYZ-OPERATOR-KEY": env.OPERATOR_API_KEY }, body });
    expect(withNew.status).toBe(201);
    const withOld = await callConfigured(XYZ, "POST", "/tenants", { headers: { "SVC-OPERATOR-KEY": env.OPERATOR_API_KEY }, body });
    expect(withOld.status).toBe(401);
  });

  it("renames the proxy key header and query parameter", async () => {
    const tenant = await seedTenant();
    const proxy = await createProxy(tenant, { require_auth: false });
    const byHeader = await callConfigured(XYZ, "POST", "/proxy/prefixed", { headers: { "XYZ-PROXY-KEY": proxy.key }, body: {} });
    expect(byHeader.status, JSON.stringify(byHeader.body)).toBe(200);
    expect(byHeader.body.path).toBe("/prefixed");
    const byQuery = await callConfigured(XYZ, "GET", `/proxy?xyz-proxy-key=${proxy.key}&kept=1`);
    expect(byQuery.status).toBe(200);
    expect(byQuery.body.query).toBe("?kept=1");

    const oldHeader = await callConfigured(XYZ, "POST", "/proxy", { headers: { "SVC-PROXY-KEY": proxy.key }, body: {} });
    expect(oldHeader.status).toBe(401);
    expect(oldHeader.body).toHaveProperty("proxy_error");
    const oldQuery = await callConfigured(XYZ, "GET", `/proxy?svc-proxy-key=${proxy.key}`);
    expect(oldQuery.status).toBe(401);
  });

  it("refuses a prefix that cannot be a header name", async () => {
    const reply = await expectLoggedError(/Invalid configuration: HEADER_PREFIX/, () =>
      callConfigured({ HEADER_PREFIX: "X Y" }, "GET", "/health"),
    );
    const problem = expectProblem(reply, 500);
    expect(problem.detail).toContain("HEADER_PREFIX");
  });
});

describe("tenants (operators)", () => {
  it("creates a tenant with a management application and its key", async () => {
    const reply = await call("POST", "/tenants", { body: { name: "Acme" }, headers: { "SVC-OPERATOR-KEY": env.OPERATOR_API_KEY } });
    expect(reply.status).toBe(201);
    expect(reply.body.tenant).toMatchObject({ id: expect.any(String), name: "Acme" });
    expect(reply.body.application).toMatchObject({ type: "management", tenant_id: reply.body.tenant.id });
    const apps = await call("GET", "/applications", { key: reply.body.application.keys[0].key });
    expect(apps.body.data).toHaveLength(1);
  });

  it("refuses a missing or wrong operator key", async () => {
    expectProblem(await call("POST", "/tenants", { body: { name: "x" } }), 401);
    expectProblem(await call("POST", "/tenants", { body: { name: "x" }, headers: { "SVC-OPERATOR-KEY": "guess" } }), 401);
    expectProblem(await call("POST", "/tenants", { body: { name: "x" }, headers: { "SVC-API-KEY": env.BOOTSTRAP_API_KEY } }), 401);
  });

  it("does not exist without OPERATOR_API_KEY", async () => {
    const reply = await callConfigured({ OPERATOR_API_KEY: undefined }, "POST", "/tenants", {
      headers: { "SVC-OPERATOR-KEY": env.OPERATOR_API_KEY },
      body: { name: "x" },
    });
    expectProblem(reply, 404);
  });

  it("validates the tenant name", async () => {
    const headers = { "SVC-OPERATOR-KEY": env.OPERATOR_API_KEY };
    const problem = expectProblem(await call("POST", "/tenants", { body: { name: "" }, headers }), 400);
    expect(problem.errors).toHaveProperty("name");
    expectProblem(await call("POST", "/tenants", { body: {}, headers }), 400);
  });
});

describe("bootstrap", () => {
  it("creates one tenant and management application for BOOTSTRAP_API_KEY, once", async () => {
    const bootstrapKey = `key_${crypto.randomUUID()}${crypto.randomUUID()}`;
    const first = await callConfigured({ BOOTSTRAP_API_KEY: bootstrapKey }, "GET", "/applications", {
      headers: { "SVC-API-KEY": bootstrapKey },
    });
    expect(first.status).toBe(200);
    expect(first.body.data).toHaveLength(1);
    expect(first.body.data[0]).toMatchObject({ name: "bootstrap", type: "management" });
    expect(first.body.data[0].permissions).toContain("application:create");
    const tenantId = first.body.data[0].tenant_id;
    const { results } = await env.DB.prepare("SELECT count(*) AS n FROM tenants WHERE id = ?").bind(tenantId).all<{ n: number }>();
    expect(results[0]!.n).toBe(1);
    const again = await callConfigured({ BOOTSTRAP_API_KEY: bootstrapKey }, "GET", "/applications", {
      headers: { "SVC-API-KEY": bootstrapKey },
    });
    expect(again.body.data[0].id).toBe(first.body.data[0].id);
  });
});

describe("OpenAPI", () => {
  // /docs is the page that renders the document, and /elements/v1/frame the elements' frame page: pages, not operations of the API.
  it("serves an OpenAPI 3.1 document that covers every route", async () => {
    const reply = await call("GET", "/openapi.json");
    expect(reply.status).toBe(200);
    expect(reply.body.openapi).toBe("3.1.0");
    const documented = new Set(
      Object.entries(reply.body.paths as Record<string, Record<string, unknown>>).flatMap(([path, operations]) =>
        Object.keys(operations).map((method) => `${method.toUpperCase()} ${path}`),
      ),
    );
    const routes = buildApp()
      .routes.filter((route) => route.method !== "ALL" && !["/openapi.json", "/health", "/docs", FRAME_PATH].includes(route.path))
      .map((route) => `${route.method} ${route.path.replace(/:(\w+)(\{[^}]*\})?/g, "{$1}")}`);
    expect(routes.length).toBeGreaterThan(5);
    for (const route of new Set(routes)) expect(documented, route).toContain(route);
  });

  it("shows examples the vault accepts (a card token, a tokenize body, a search, a proxy with a transform, a formula, a reactor with code) and the proxy_error shape", async () => {
    const document = (await call("GET", "/openapi.json")).body;
    const tenant = await seedTokenTenant();
    const examples: [string, string][] = [
      ["/tokens", tenant.key],
      ["/tokenize", tenant.key],
      ["/tokens/search", tenant.key],
      ["/proxies", tenant.managementKey],
      ["/reactor-formulas", tenant.managementKey],
      ["/reactors", tenant.managementKey],
    ];
    for (const [path, key] of examples) {
      const example = document.paths[path].post.requestBody.content["application/json"].example;
      expect(example, path).toBeDefined();
      const reply = await call("POST", path, { key, body: example });
      expect(reply.status, `${path}: ${JSON.stringify(reply.body)}`).toBeLessThan(300);
    }
    expect(document.paths["/tokens"].post.responses["201"].content["application/json"].example).toMatchObject({ type: "card" });
    expect(document.components.schemas.ProxyError).toMatchObject({
      properties: { proxy_error: { $ref: "#/components/schemas/Problem" } },
      example: { proxy_error: { status: 400, title: "Bad Request" } },
    });
  });

  it("describes every operation, with an example of each body and each JSON success, each valid by its own schema", async () => {
    const operations = buildApp().openAPIRegistry.definitions.flatMap((definition) =>
      definition.type === "route" ? [definition.route] : [],
    );
    expect(operations.length).toBeGreaterThan(50);
    const faults: string[] = [];
    for (const operation of operations) {
      const name = `${operation.method.toUpperCase()} ${operation.path}`;
      if (!operation.description?.trim()) faults.push(`${name}: no description`);
      const media = [
        ...Object.entries(operation.request?.body?.content ?? {}).map(([type, content]) => [`${name} body (${type})`, content] as const),
        ...Object.entries(operation.responses)
          .filter(([status]) => status.startsWith("2"))
          .flatMap(([status, response]) =>
            Object.entries(("content" in response && response.content) || {}).map(
              ([type, content]) => [`${name} ${status} (${type})`, content] as const,
            ),
          ),
      ];
      for (const [where, content] of media as [string, { schema: ZodType; example?: unknown }][]) {
        if (content.example === undefined) faults.push(`${where}: no example`);
        else {
          const parsed = await content.schema.safeParseAsync(content.example);
          for (const issue of parsed.error?.issues ?? []) faults.push(`${where}: ${issue.path.join(".")} ${issue.message}`);
        }
      }
    }
    expect(faults).toEqual([]);
  });

  it("lists every tag its operations use at the top of the document, each with a description", async () => {
    const document = (await call("GET", "/openapi.json")).body;
    const used = new Set(operationsOf(document).flatMap(({ operation }) => operation.tags ?? []));
    const listed = document.tags as { name: string; description?: string }[];
    expect(new Set(listed.map((tag) => tag.name))).toEqual(used);
    for (const tag of listed) expect(tag.description?.trim(), tag.name).toBeTruthy();
  });

  it("opens with a short guide: how to authenticate under the deployment's prefix, the error shape, where to start", async () => {
    const guide: string = (await callConfigured({ HEADER_PREFIX: "XYZ" }, "GET", "/openapi.json")).body.info.description;
    expect(guide).not.toContain("README");
    expect(guide.length).toBeLessThan(3000);
    expect(guide).toContain("XYZ-API-KEY");
    expect(guide).toContain("application/problem+json");
    expect(guide).toContain("proxy_error");
    for (const start of ["POST /tokens", "POST /tokens/search", "POST /proxies", "XYZ-PROXY-KEY"]) expect(guide).toContain(start);
  });

  it("documents every prefixed header as a header parameter or security scheme, under the deployment's prefix", async () => {
    const document = (await callConfigured({ HEADER_PREFIX: "XYZ" }, "GET", "/openapi.json")).body;
    const schemes = document.components.securitySchemes as Record<string, { in: string; name: string }>;
    const headerNames = (operation: Operation) =>
      [
        ...(operation.security ?? []).flatMap((requirement) => Object.keys(requirement).map((scheme) => schemes[scheme]!)),
        ...(operation.parameters ?? []).map((parameter) => resolved(document, parameter)),
      ].flatMap((documented) => (documented.in === "header" ? [documented.name] : []));
    const everywhere = new Set(operationsOf(document).flatMap(({ operation }) => headerNames(operation)));
    for (const header of ["API-KEY", "PROXY-KEY", "PROXY-URL", "IDEMPOTENCY-KEY", "OPERATOR-KEY", "CONSISTENCY-BOOKMARK", "TRACE-ID"]) {
      expect(everywhere, header).toContain(`XYZ-${header}`);
    }
    for (const { name, operation } of operationsOf(document)) {
      const names = headerNames(operation);
      expect(names, name).toContain("XYZ-TRACE-ID");
      if (names.includes("XYZ-API-KEY") && !name.includes(" /proxy/")) expect(names, name).toContain("XYZ-CONSISTENCY-BOOKMARK");
    }
    for (const method of ["get", "post", "put", "patch", "delete"]) {
      const names = headerNames(document.paths["/proxy/{path}"][method]);
      for (const header of ["XYZ-PROXY-KEY", "XYZ-API-KEY", "XYZ-PROXY-URL"]) expect(names, `${method} /proxy`).toContain(header);
    }
  });

  it("documents the idempotency key on exactly the operations that honour it", async () => {
    const document = (await call("GET", "/openapi.json")).body;
    const honoured = new Set(
      buildApp()
        .routes.filter((route) => honoursIdempotencyKey(route.handler))
        .map((route) => `${route.method} ${route.path.replace(/:(\w+)/g, "{$1}")}`),
    );
    expect(honoured.size).toBeGreaterThan(5);
    const documented = new Set(
      operationsOf(document)
        .filter(({ operation }) =>
          (operation.parameters ?? []).some((parameter) => resolved(document, parameter).name === "SVC-IDEMPOTENCY-KEY"),
        )
        .map(({ name }) => name),
    );
    expect(documented).toEqual(honoured);
  });

  it("names the headers and the proxy key parameter with the deployment's HEADER_PREFIX", async () => {
    const standard = await call("GET", "/openapi.json");
    expect(standard.body.components.securitySchemes.ApiKey.name).toBe("SVC-API-KEY");
    const renamed = await callConfigured({ HEADER_PREFIX: "XYZ" }, "GET", "/openapi.json");
    expect(renamed.body.components.securitySchemes).toMatchObject({
      ApiKey: { name: "XYZ-API-KEY" },
      OperatorKey: { name: "XYZ-OPERATOR-KEY" },
    });
    const text = JSON.stringify(renamed.body);
    expect(text).toContain("xyz-proxy-key");
    expect(text).not.toMatch(/svc-/i);
  });
});

interface Operation {
  tags?: string[];
  security?: Record<string, string[]>[];
  parameters?: ({ $ref: string } | { name: string; in: string })[];
}

/** Every operation of a served document, named `POST /tokens`. */
function operationsOf(document: any): { name: string; operation: Operation }[] {
  return Object.entries(document.paths as Record<string, Record<string, Operation>>).flatMap(([path, operations]) =>
    Object.entries(operations).map(([method, operation]) => ({ name: `${method.toUpperCase()} ${path}`, operation })),
  );
}

/** A parameter, or the component it refers to. */
function resolved(document: any, parameter: { $ref: string } | { name: string; in: string }): { name: string; in: string } {
  return "$ref" in parameter ? document.components.parameters[parameter.$ref.replace("#/components/parameters/", "")] : parameter;
}
