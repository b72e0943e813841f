import { beforeAll, describe, expect, it } from "vitest";
import { call, createApplication } from "../support/harness";
import { encryptJwe } from "../support/jwe";
import { createProxy, destinationSaw, expectProxyError, invoke, loopback } from "../support/proxies";
import { createToken, seedTokenTenant, type TokenTenant, VISA } from "../support/tokens";

/*
 * `SVC-ENCRYPTED`: a proxy call carries data encrypted on the client (a base64 token request whose
 * `encrypted` is a JWE to one of the tenant's client encryption keys, or a map of such requests), and
 * the body reads it as `{{ encrypted | json: "$.data.number" }}`. The JWEs are made by the test's own
 * WebCrypto builder, not by the vault's library.
 */

const CARD = { number: VISA, expiration_month: 12, expiration_year: 2099 };

let tenant: TokenTenant;
let clientKey: { id: string; public_key_pem: string };

const base64 = (value: unknown) => btoa(JSON.stringify(value));
const sealed = (data: unknown, key = clientKey) => encryptJwe(key.public_key_pem, key.id, JSON.stringify(data));

/** An ephemeral proxy call to the loopback echo carrying the header. */
function send(header: string | null, body: unknown, options: { apiKey?: string; path?: string } = {}) {
  return invoke("POST", options.path ?? "", {
    apiKey: options.apiKey ?? tenant.key,
    body,
    headers: { "SVC-PROXY-URL": loopback(), ...(header === null ? {} : { "SVC-ENCRYPTED": header }) },
  });
}

beforeAll(async () => {
  tenant = await seedTokenTenant();
  const reply = await call("POST", "/keys", { key: tenant.managementKey, body: {} });
  expect(reply.status, JSON.stringify(reply.body)).toBe(201);
  clientKey = reply.body;
});

describe("SVC-ENCRYPTED: client-encrypted data in a proxy call", () => {
  it("reads one token request's decrypted data as `encrypted`", async () => {
    const header = base64({ type: "card", encrypted: await sealed(CARD) });
    const reply = await send(header, {
      number: '{{ encrypted | json: "$.data.number" }}',
      month: '{{ encrypted | json: "$.data.expiration_month" }}',
      type: '{{ encrypted | json: "$.type" }}',
    });
    expect(reply.status, reply.text).toBe(200);
    expect(JSON.parse(reply.json.body)).toEqual({ number: VISA, month: "12", type: "card" });
  });

  it("reads each of several token requests under its name, beside ordinary references", async () => {
    const stored = await createToken(tenant.key, { type: "token", data: "stored-secret" });
    const header = base64({
      tokenA: { type: "card", encrypted: await sealed(CARD) },
      tokenB: { type: "token", encrypted: await sealed({ name: "Jane Doe" }) },
    });
    const reply = await send(header, {
      card: '{{ encrypted | json: "$.tokenA.data.number" }}',
      name: '{{ encrypted | json: "$.tokenB.data.name" }}',
      stored: `{{ ${stored.id} }}`,
    });
    expect(reply.status, reply.text).toBe(200);
    expect(JSON.parse(reply.json.body)).toEqual({ card: VISA, name: "Jane Doe", stored: "stored-secret" });
  });

  it("never forwards the header, and a pre-configured proxy's transform sees the decrypted data", async () => {
    const proxy = await createProxy(tenant, {
      request_transform: {
        code: "module.exports = async (req) => ({ body: { last4: req.args.body.n.slice(-4) }, headers: req.args.headers });",
      },
    });
    const reply = await invoke("POST", "", {
      proxyKey: proxy.key,
      apiKey: tenant.key,
      body: { n: '{{ encrypted | json: "$.data.number" }}' },
      headers: { "SVC-ENCRYPTED": base64({ type: "card", encrypted: await sealed(CARD) }) },
    });
    expect(reply.status, reply.text).toBe(200);
    expect(JSON.parse(reply.json.body)).toEqual({ last4: VISA.slice(-4) });
    expect(reply.json.headers).not.toHaveProperty("svc-encrypted");
  });

  it("refuses a JWE to a deleted key, and the destination sees nothing", async () => {
    const doomed = (await call("POST", "/keys", { key: tenant.managementKey, body: {} })).body;
    const header = base64({ type: "card", encrypted: await sealed(CARD, doomed) });
    expect((await call("DELETE", `/keys/${doomed.id}`, { key: tenant.managementKey })).status).toBe(204);
    const problem = expectProxyError(await send(header, { n: "{{ encrypted }}" }, { path: "/deleted-key" }), 400);
    expect(JSON.stringify(problem)).toContain("no client encryption key");
    expect(await destinationSaw("deleted-key")).toBe(0);
  });

  it("checks the decrypted data against its type, never echoing it", async () => {
    const bad = { number: "4242424242424241", expiration_month: 12, expiration_year: 2099 };
    const header = base64({ type: "card", encrypted: await sealed(bad) });
    const reply = await send(header, { n: "{{ encrypted }}" }, { path: "/bad-card" });
    const problem = expectProxyError(reply, 400);
    expect(problem.errors).toHaveProperty(["headers.svc-encrypted.data.number"]);
    expect(reply.text).not.toContain("4242424242424241");
    expect(await destinationSaw("bad-card")).toBe(0);
  });

  it("refuses a header that is not a base64 token request of JWEs", async () => {
    const jwe = await sealed(CARD);
    const cases: [string, string][] = [
      ["not base64 !", "base64"],
      [btoa("not json"), "JSON"],
      [base64(["a"]), "token request"],
      [base64({ type: "card", encrypted: CARD }), "encrypted"],
      [base64({ type: "card", data: CARD }), "encrypted"],
      [base64({ type: "nonsense", encrypted: jwe }), "type"],
      [base64({ a: { type: "card", encrypted: jwe }, b: "x" }), "b"],
      [base64({}), "token request"],
    ];
    for (const [header, mention] of cases) {
      const problem = expectProxyError(await send(header, { n: "{{ encrypted }}" }, { path: "/malformed" }), 400);
      expect(JSON.stringify(problem), header).toContain(mention);
    }
    expect(await destinationSaw("malformed")).toBe(0);
  });

  it("bounds how many token requests one header decrypts", async () => {
    const jwe = await sealed(CARD);
    const many = Object.fromEntries(Array.from({ length: 21 }, (_, i) => [`t${i}`, { type: "card", encrypted: jwe }]));
    const problem = expectProxyError(await send(base64(many), { n: "{{ encrypted }}" }, { path: "/too-many" }), 400);
    expect(problem.detail).toContain("20");
    expect(await destinationSaw("too-many")).toBe(0);
  });

  it("is refused on an open proxy: an anonymous partner cannot have the tenant's key decrypt for it", async () => {
    // The proxy's application may use tokens: only the header's rule refuses the call.
    const user = await createApplication(tenant, { type: "private", permissions: ["token:use"] });
    const proxy = await createProxy(tenant, {
      require_auth: false,
      application: { id: user.id },
      destination_url: loopback("/open-encrypted"),
    });
    const reply = await invoke("POST", "", {
      proxyKey: proxy.key,
      body: { n: '{{ encrypted | json: "$.data.number" }}' },
      headers: { "SVC-ENCRYPTED": base64({ type: "card", encrypted: await sealed(CARD) }) },
    });
    expect(expectProxyError(reply, 403).detail).toContain("SVC-ENCRYPTED");
    expect(reply.text).not.toContain(VISA);
    expect(await destinationSaw("open-encrypted")).toBe(0);
  });

  it("needs token:use under reveal on the type's container, as the caller's own token of that type would", async () => {
    const header = base64({ type: "card", encrypted: await sealed(CARD) });
    const rule = (container: string, transform: "reveal" | "mask" | "redact") => ({
      type: "private" as const,
      permissions: [],
      rules: [{ description: "use", priority: 1, container, transform, permissions: ["token:use"] }],
    });
    const weak: [string, "reveal" | "mask" | "redact"][] = [
      ["/general/", "reveal"],
      ["/pci/", "mask"],
      ["/pci/", "redact"],
    ];
    for (const [container, transform] of weak) {
      const app = await createApplication(tenant, rule(container, transform));
      const reply = await send(header, { n: '{{ encrypted | json: "$.data.number" }}' }, { apiKey: app.key, path: "/weak-rule" });
      expect(expectProxyError(reply, 403).detail, `${container} ${transform}`).toContain("/pci/high/");
      expect(reply.text).not.toContain(VISA);
    }
    expect(await destinationSaw("weak-rule")).toBe(0);
    const revealing = await createApplication(tenant, rule("/pci/", "reveal"));
    const reply = await send(header, { n: '{{ encrypted | json: "$.data.number" }}' }, { apiKey: revealing.key });
    expect(reply.status, reply.text).toBe(200);
    expect(JSON.parse(reply.json.body)).toEqual({ n: VISA });
  });

  it("leaves `encrypted` a token id when the header is absent", async () => {
    const problem = expectProxyError(await send(null, { n: "{{ encrypted }}" }, { path: "/no-header" }), 400);
    expect(JSON.stringify(problem)).toContain("encrypted");
    expect(await destinationSaw("no-header")).toBe(0);
  });
});
