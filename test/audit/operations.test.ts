import { env } from "cloudflare:test";
import { beforeAll, describe, expect, it } from "vitest";
import { DEPLOYMENT_TENANT } from "../../src/audit/entry";
import { type LogEntry, logEntries, verifyLog } from "../support/audit";
import { ALL_DATABASES } from "../support/context";
import { call, createApplication, expectProblem, seedTenant, type Tenant } from "../support/harness";
import { createProxy, invoke } from "../support/proxies";
import { createFormula, createReactor, react } from "../support/reactors";
import { createToken, REVEAL_EVERYTHING, SSN, seedTokenTenant, VISA } from "../support/tokens";

/*
 * One tenant does one of everything the log records; its log must then hold exactly the entries
 * the requests made, each once, with the right actor, entity, operation and outcome, and none of
 * the values the requests carried.
 */

type Expected = Pick<LogEntry, "entity_type" | "entity_id" | "operation" | "actor_type" | "actor_id" | "status">;

const SECRET_DATA = "tokenized-secret-5551234";
const PARTNER_SECRET = "partner-api-secret-0042";
const TRANSFORM_MARKER = "transform-marker-7781";
const BODY_MARKER = "body-marker-9923";

let tenant: Tenant;
let app: { id: string; key: string };
const expected: Expected[] = [];
const plaintexts: string[] = [SSN, VISA, SECRET_DATA, PARTNER_SECRET, TRANSFORM_MARKER, BODY_MARKER];

const as = (actor: { id: string }, entry: Omit<Expected, "actor_type" | "actor_id">): Expected => ({
  ...entry,
  actor_type: "application",
  actor_id: actor.id,
});

beforeAll(async () => {
  tenant = await seedTenant();
  plaintexts.push(tenant.managementKey);
  const management = { id: tenant.managementApplicationId };
  expected.push({
    entity_type: "tenant",
    entity_id: tenant.tenantId,
    operation: "create",
    actor_type: "operator",
    actor_id: null,
    status: 201,
  });

  app = await createApplication(tenant, REVEAL_EVERYTHING);
  plaintexts.push(app.key);
  expected.push(as(management, { entity_type: "application", entity_id: app.id, operation: "create", status: 201 }));

  const ssn = await createToken(app.key, { type: "social_security_number", data: SSN });
  expected.push(as(app, { entity_type: "token", entity_id: ssn.id, operation: "create", status: 201 }));
  const card = await createToken(app.key, { type: "card", data: { number: VISA, expiration_month: 12, expiration_year: 2040 } });
  expected.push(as(app, { entity_type: "token", entity_id: card.id, operation: "create", status: 201 }));

  expect((await call("GET", `/tokens/${ssn.id}`, { key: app.key })).status).toBe(200);
  expected.push(as(app, { entity_type: "token", entity_id: ssn.id, operation: "read", status: 200 }));

  expect(
    (
      await call("PATCH", `/tokens/${ssn.id}`, {
        key: app.key,
        body: { metadata: { note: "n" } },
        contentType: "application/merge-patch+json",
      })
    ).status,
  ).toBe(200);
  expected.push(as(app, { entity_type: "token", entity_id: ssn.id, operation: "update", status: 200 }));

  const search = await call("POST", "/tokens/search", { key: app.key, body: { query: `data:${SSN}` } });
  expect(search.status).toBe(200);
  expected.push(as(app, { entity_type: "token", entity_id: null, operation: "search", status: 200 }));

  const tokenized = await call("POST", "/tokenize", { key: app.key, body: { secret: { type: "token", data: SECRET_DATA } } });
  expect(tokenized.status, JSON.stringify(tokenized.body)).toBe(201);
  expected.push(as(app, { entity_type: "token", entity_id: null, operation: "tokenize", status: 201 }));
  expected.push(as(app, { entity_type: "token", entity_id: tokenized.body.secret.id, operation: "create", status: 201 }));

  const detokenized = await call("POST", "/detokenize", { key: app.key, body: { ssn: `{{ ${ssn.id} }}` } });
  expect(detokenized.status, JSON.stringify(detokenized.body)).toBe(200);
  expected.push(as(app, { entity_type: "token", entity_id: null, operation: "detokenize", status: 200 }));
  expected.push(as(app, { entity_type: "token", entity_id: ssn.id, operation: "use", status: 200 }));

  const proxy = await createProxy(tenant, {
    request_transform: {
      code: `module.exports = async (req) => { /* ${TRANSFORM_MARKER} */ return { body: req.args.body, headers: req.args.headers }; };`,
    },
    configuration: { PARTNER: PARTNER_SECRET },
  });
  plaintexts.push(proxy.key);
  expected.push(as(management, { entity_type: "proxy", entity_id: proxy.id, operation: "create", status: 201 }));
  const proxied = await invoke("POST", "", {
    proxyKey: proxy.key,
    apiKey: app.key,
    body: { card: `{{ ${card.id} }}`, marker: BODY_MARKER },
  });
  expect(proxied.status, proxied.text).toBe(200);
  expected.push(as(app, { entity_type: "proxy", entity_id: proxy.id, operation: "invoke", status: 200 }));
  expected.push(as(app, { entity_type: "token", entity_id: card.id, operation: "use", status: 200 }));

  const open = await createProxy(tenant, { require_auth: false, application: { id: app.id } });
  plaintexts.push(open.key);
  expected.push(as(management, { entity_type: "proxy", entity_id: open.id, operation: "create", status: 201 }));
  expect((await invoke("POST", "", { proxyKey: open.key, body: { ssn: `{{ ${ssn.id} }}` } })).status).toBe(200);
  expected.push({ entity_type: "proxy", entity_id: open.id, operation: "invoke", actor_type: "anonymous", actor_id: null, status: 200 });
  expected.push({ entity_type: "token", entity_id: ssn.id, operation: "use", actor_type: "anonymous", actor_id: null, status: 200 });

  const formula = await createFormula(tenant);
  expected.push(as(management, { entity_type: "reactor-formula", entity_id: formula.id, operation: "create", status: 201 }));
  const reactor = await createReactor(tenant, formula.id);
  expected.push(as(management, { entity_type: "reactor", entity_id: reactor.id, operation: "create", status: 201 }));
  const reacted = await react(app.key, reactor.id, { ssn: `{{ ${ssn.id} }}` });
  expect(reacted.status, JSON.stringify(reacted.body)).toBe(200);
  expected.push(as(app, { entity_type: "reactor", entity_id: reactor.id, operation: "react", status: 200 }));
  expected.push(as(app, { entity_type: "token", entity_id: ssn.id, operation: "use", status: 200 }));

  expectProblem(await call("GET", "/applications", { key: app.key }), 403);
  expected.push(as(app, { entity_type: "application", entity_id: null, operation: "list", status: 403 }));

  expect((await call("DELETE", `/tokens/${card.id}`, { key: app.key })).status).toBe(204);
  expected.push(as(app, { entity_type: "token", entity_id: card.id, operation: "delete", status: 204 }));
});

describe("the audit log", () => {
  it("holds every operation once, with its actor, entity and outcome", async () => {
    const entries = await logEntries(tenant, expected.length);
    const described = ({ entity_type, entity_id, operation, actor_type, actor_id, status }: Expected) =>
      JSON.stringify({ entity_type, entity_id, operation, actor_type, actor_id, status });
    expect(entries.map(described).toSorted()).toEqual(expected.map(described).toSorted());
    for (const entry of entries) {
      expect(entry.tenant_id).toBe(tenant.tenantId);
      expect(entry.trace_id).toEqual(expect.any(String));
      expect(Date.parse(entry.created_at)).toBeGreaterThan(Date.now() - 120_000);
    }
  });

  it("names the API key of a refused request, and logs searches without their data values", async () => {
    const entries = await logEntries(tenant, expected.length);
    const refused = entries.find((entry) => entry.status === 403)!;
    const { results } = await env.DB.prepare("SELECT id FROM api_keys WHERE application_id = ?").bind(app.id).all<{ id: string }>();
    expect(refused.credential_id).toBe(results[0]!.id);
    const search = entries.find((entry) => entry.operation === "search")!;
    expect(search.message).toBe("Searched tokens: data:[redacted], 1 result");
  });

  it("never holds a value the requests carried: token data, keys, configuration, code or bodies", async () => {
    await logEntries(tenant, expected.length);
    for (const database of Object.values(ALL_DATABASES)) {
      for (const table of ["audit_log", "audit_pending", "audit_chains"]) {
        const rows = JSON.stringify((await database.prepare(`SELECT * FROM ${table}`).all()).results);
        for (const plaintext of plaintexts) expect(rows, `${table} holds ${plaintext}`).not.toContain(plaintext);
      }
    }
  });

  it("records a refused request whose key names no tenant in the deployment's own log", async () => {
    const traceId = `unknown-key-${crypto.randomUUID()}`;
    expectProblem(await call("GET", "/tokens", { key: "key_no-such-key-0123456789", headers: { "SVC-TRACE-ID": traceId } }), 401);
    const deadline = Date.now() + 15_000;
    let row: Record<string, unknown> | null = null;
    while (row === null && Date.now() < deadline) {
      row = await env.DB.prepare("SELECT * FROM audit_log WHERE tenant_id = ? AND trace_id = ?").bind(DEPLOYMENT_TENANT, traceId).first();
      if (row === null) await new Promise((resolve) => setTimeout(resolve, 100));
    }
    expect(row).toMatchObject({ actor_type: "anonymous", actor_id: null, entity_type: "token", operation: "list", status: 401 });
  });

  it("records each of many concurrent requests of two tenants once, in its own tenant's log, and both chains verify", async () => {
    // Concurrent requests share one send to the queue (src/audit/recorder.ts); no entry may be lost,
    // doubled, or chained into the other tenant's log.
    const tenants = [await seedTokenTenant(), await seedTokenTenant()];
    const tokens = await Promise.all(tenants.map((owner) => createToken(owner.key, { type: "social_security_number", data: SSN })));
    const reads = Array.from({ length: 30 }, (_, i) => ({ owner: i % 2, traceId: `concurrent-${i}-${crypto.randomUUID()}` }));
    const replies = await Promise.all(
      reads.map(({ owner, traceId }) =>
        call("GET", `/tokens/${tokens[owner]!.id}`, { key: tenants[owner]!.key, headers: { "SVC-TRACE-ID": traceId } }),
      ),
    );
    expect(replies.map((reply) => reply.status)).toEqual(reads.map(() => 200));
    for (const [owner, logOwner] of tenants.entries()) {
      const own = reads.filter((read) => read.owner === owner).map((read) => read.traceId);
      const entries = await logEntries(logOwner, own.length + 1, { entity_type: "token" });
      const traces = entries.map((entry) => entry.trace_id).filter((traceId) => traceId.startsWith("concurrent-"));
      expect(traces.toSorted()).toEqual(own.toSorted());
      expect((await verifyLog(logOwner)).verified).toBe(true);
    }
  });
});
