import { describe, expect, it } from "vitest";
import { callConfigured } from "../support/configured";
import { call, createApplication, expectProblem, seedTenant } from "../support/harness";
import { expectLoggedError } from "../support/logs";
import { createProxy, destinationSaw, expectProxyError, invoke, loopback } from "../support/proxies";
import { createToken, seedTokenTenant } from "../support/tokens";

const VISA = "4242424242424242";

/** A transform whose body is `statements`, run as `async function (req)`. */
const transform = (statements: string) => `module.exports = async function (req) { ${statements} };`;

/** An anonymous proxy to the loopback echo with the given transforms and other fields. */
async function proxyWith(fields: Record<string, unknown>) {
  const tenant = await seedTenant();
  const proxy = await createProxy(tenant, { require_auth: false, ...fields });
  return { tenant, proxy };
}

describe("proxy transforms: the request transform (rule 6)", () => {
  it("changes the body and headers sent to the destination", async () => {
    const { proxy } = await proxyWith({
      request_transform: {
        code: transform("return { body: { ...req.args.body, added: true }, headers: { ...req.args.headers, 'x-added': 'yes' } };"),
      },
    });
    const reply = await invoke("POST", "", { proxyKey: proxy.key, body: { amount: 100 } });
    expect(reply.status, reply.text).toBe(200);
    expect(JSON.parse(reply.json.body)).toEqual({ amount: 100, added: true });
    expect(reply.json.headers["x-added"]).toBe("yes");
  });

  it("receives method, path, query, headers and the parsed body", async () => {
    const { proxy } = await proxyWith({
      request_transform: { code: transform("return { body: { seen: req.args }, headers: req.args.headers };") },
    });
    const reply = await invoke("PUT", `/v1/charges?expand=card&svc-proxy-key=${proxy.key}`, {
      body: { amount: 100 },
      headers: { "x-caller": "c" },
    });
    const seen = JSON.parse(reply.json.body).seen;
    expect(seen).toMatchObject({
      method: "PUT",
      path: "/v1/charges",
      query: "?expand=card",
      body: { amount: 100 },
      headers: { "x-caller": "c", "content-type": "application/json" },
    });
  });

  it("sees the detokenized data, which never reaches the caller", async () => {
    const tenant = await seedTokenTenant();
    const card = await createToken(tenant.key, { type: "card_number", data: VISA });
    const proxy = await createProxy(tenant, {
      request_transform: { code: transform("return { body: { last4: req.args.body.card.slice(-4) }, headers: {} };") },
    });
    const reply = await invoke("POST", "", { proxyKey: proxy.key, apiKey: tenant.key, body: { card: `{{ ${card.id} }}` } });
    expect(JSON.parse(reply.json.body)).toEqual({ last4: "4242" });
  });

  it("can add back a header whose name the caller may not send", async () => {
    const { proxy } = await proxyWith({
      request_transform: {
        code: transform("return { body: req.args.body, headers: { ...req.args.headers, 'x.restored': 'back' } };"),
      },
    });
    const reply = await invoke("POST", "", { proxyKey: proxy.key, body: {}, headers: { "x.dotted": "dropped" } });
    expect(reply.json.headers["x.restored"]).toBe("back");
    expect(reply.json.headers).not.toHaveProperty(["x.dotted"]);
  });

  it("injects secrets from the proxy's configuration", async () => {
    const { proxy } = await proxyWith({
      configuration: { PARTNER_SECRET: "sk_partner_123", MERCHANT: "m-9" },
      request_transform: {
        code: transform(
          "return { body: { ...req.args.body, merchant: req.configuration.MERCHANT }," +
            " headers: { ...req.args.headers, authorization: 'Bearer ' + req.configuration.PARTNER_SECRET } };",
        ),
      },
    });
    const reply = await invoke("POST", "", { proxyKey: proxy.key, body: { amount: 1 } });
    expect(reply.json.headers.authorization).toBe("Bearer sk_partner_123");
    expect(JSON.parse(reply.json.body)).toEqual({ amount: 1, merchant: "m-9" });
  });

  it("parses a form body for the transform and sends the result as a form", async () => {
    const { proxy } = await proxyWith({
      request_transform: {
        code: transform("return { body: { ...req.args.body, card: { number: req.args.body.number } }, headers: req.args.headers };"),
      },
    });
    const reply = await invoke("POST", "", {
      proxyKey: proxy.key,
      raw: "number=4111&tags=a&tags=b",
      contentType: "application/x-www-form-urlencoded",
    });
    expect(reply.json.headers["content-type"]).toBe("application/x-www-form-urlencoded");
    expect([...new URLSearchParams(reply.json.body)]).toEqual([
      ["number", "4111"],
      ["tags", "a"],
      ["tags", "b"],
      ["card[number]", "4111"],
    ]);
  });

  it("refuses a JSON body that does not parse with proxy_error 400", async () => {
    const { proxy } = await proxyWith({
      destination_url: loopback("/unparsed-for-transform-marker"),
      request_transform: { code: transform("return { body: req.args.body, headers: req.args.headers };") },
    });
    const reply = await invoke("POST", "", { proxyKey: proxy.key, raw: "{not json" });
    expect(expectProxyError(reply, 400).detail).toContain("not valid JSON");
    expect(await destinationSaw("unparsed-for-transform-marker")).toBe(0);
  });

  it("does not run for bodies other than JSON and forms", async () => {
    const { proxy } = await proxyWith({
      request_transform: { code: transform("return { body: { replaced: true }, headers: {} };") },
    });
    const reply = await invoke("POST", "", { proxyKey: proxy.key, raw: "plain text", contentType: "text/plain" });
    expect(reply.json.body).toBe("plain text");
  });
});

describe("proxy transforms: the response transform (rule 6)", () => {
  it("changes the body and headers returned to the caller", async () => {
    const { proxy } = await proxyWith({
      response_transform: {
        code: transform(
          "return { body: { path: req.args.body.path, wrapped: true }, headers: { 'x-transformed': req.args.headers['x-echo'] } };",
        ),
      },
    });
    const reply = await invoke("GET", "/thing", { proxyKey: proxy.key });
    expect(reply.status, reply.text).toBe(200);
    expect(reply.json).toEqual({ path: "/thing", wrapped: true });
    expect(reply.headers.get("x-transformed")).toBe("true");
    expect(reply.headers.get("x-echo")).toBeNull();
    expect(reply.headers.get("content-type")).toContain("application/json");
  });

  it("keeps the destination's status", async () => {
    const { proxy } = await proxyWith({
      response_transform: { code: transform("return { body: { ok: true }, headers: {} };") },
    });
    const reply = await invoke("GET", "/status/201", { proxyKey: proxy.key });
    expect(reply.status).toBe(201);
    expect(reply.json).toEqual({ ok: true });
  });

  it("keeps a 204 response without a body", async () => {
    const { proxy } = await proxyWith({
      response_transform: { code: transform("return { body: { body_for: req.args.body }, headers: { 'x-seen': 'yes' } };") },
    });
    const reply = await invoke("DELETE", "/status/204", { proxyKey: proxy.key });
    expect(reply.status).toBe(204);
    expect(reply.text).toBe("");
    expect(reply.headers.get("x-seen")).toBe("yes");
  });

  it("runs only on 2xx responses", async () => {
    const { proxy } = await proxyWith({
      response_transform: { code: transform("return { body: { replaced: true }, headers: {} };") },
    });
    const reply = await invoke("GET", "/status/404", { proxyKey: proxy.key });
    expect(reply.status).toBe(404);
    expect(reply.json.path).toBe("/status/404");
  });

  it("runs only on JSON and form responses", async () => {
    const { proxy } = await proxyWith({
      response_transform: { code: transform("return { body: { replaced: true }, headers: {} };") },
    });
    const reply = await invoke("GET", "/respond?content-type=text%2Fplain&body=untouched", { proxyKey: proxy.key });
    expect(reply.text).toBe("untouched");
  });

  it("parses a form response and serialises the result as a form", async () => {
    const { proxy } = await proxyWith({
      response_transform: {
        code: transform("return { body: { status: req.args.body.status.toUpperCase() }, headers: req.args.headers };"),
      },
    });
    const reply = await invoke("GET", `/respond?content-type=${encodeURIComponent("application/x-www-form-urlencoded")}&body=status%3Dok`, {
      proxyKey: proxy.key,
    });
    expect(reply.headers.get("content-type")).toBe("application/x-www-form-urlencoded");
    expect(reply.text).toBe("status=OK");
  });

  it("refuses a JSON response that does not parse with proxy_error 502", async () => {
    const { proxy } = await proxyWith({
      response_transform: { code: transform("return { body: {}, headers: {} };") },
    });
    const reply = await expectLoggedError(/The destination's response is not valid JSON/, () =>
      invoke("GET", `/respond?content-type=application%2Fjson&body=%7Bbroken`, { proxyKey: proxy.key }),
    );
    expectProxyError(reply, 502);
  });
});

describe("proxy transforms: bt and errors", () => {
  it("gives bt acting with the proxy's application, which can tokenize", async () => {
    const tenant = await seedTokenTenant();
    const tokenizer = await createApplication(tenant, { type: "private", permissions: ["token:create"] });
    const proxy = await createProxy(tenant, {
      require_auth: false,
      application: { id: tokenizer.id },
      response_transform: {
        code: transform(
          "const sent = JSON.parse(req.args.body.body);" +
            " const token = await req.bt.tokenize({ type: 'card_number', data: sent.card });" +
            " return { body: { card_token: token.id }, headers: {} };",
        ),
      },
    });
    const reply = await invoke("POST", "", { proxyKey: proxy.key, body: { card: VISA } });
    expect(reply.status, reply.text).toBe(200);
    expect(reply.text).not.toContain(VISA);
    const stored = await call("GET", `/tokens/${reply.json.card_token}`, { key: tenant.key });
    expect(stored.body).toMatchObject({ data: VISA, created_by: tokenizer.id });
  });

  it("gives no bt to a proxy without an application", async () => {
    const { proxy } = await proxyWith({
      request_transform: { code: transform("return { body: { has_bt: req.bt !== undefined && req.bt !== null }, headers: {} };") },
    });
    const reply = await invoke("POST", "", { proxyKey: proxy.key, body: {} });
    expect(JSON.parse(reply.json.body)).toEqual({ has_bt: false });
  });

  it("answers a typed error thrown by a transform as proxy_error with its status, forwarding nothing", async () => {
    const { proxy } = await proxyWith({
      destination_url: loopback("/typed-error-marker"),
      request_transform: {
        code: transform("const { BadRequestError } = require('@token-vault/errors'); throw new BadRequestError({ amount: 'too large' });"),
      },
    });
    const problem = expectProxyError(await invoke("POST", "", { proxyKey: proxy.key, body: {} }), 400);
    expect(problem.errors).toEqual({ amount: ["too large"] });
    expect(await destinationSaw("typed-error-marker")).toBe(0);
  });

  it("answers any other error thrown by a transform as proxy_error 500 naming the error, without its message", async () => {
    const { proxy } = await proxyWith({ response_transform: { code: transform("throw new Error('partner format changed');") } });
    const reply = await expectLoggedError(/The response transform threw Error$/, () => invoke("GET", "", { proxyKey: proxy.key }));
    expect(expectProxyError(reply, 500).detail).toBe("The response transform threw Error");
  });

  it("returns a CustomHttpResponseError to the caller as given", async () => {
    const { proxy } = await proxyWith({
      destination_url: loopback("/custom-response-marker"),
      request_transform: {
        code: transform(
          "const { CustomHttpResponseError } = require('@token-vault/errors');" +
            " throw new CustomHttpResponseError({ status: 402, headers: { 'x-reason': 'limit' }, body: { declined: true } });",
        ),
      },
    });
    const reply = await invoke("POST", "", { proxyKey: proxy.key, body: {} });
    expect(reply.status).toBe(402);
    expect(reply.headers.get("x-reason")).toBe("limit");
    expect(reply.json).toEqual({ declined: true });
    expect(await destinationSaw("custom-response-marker")).toBe(0);
  });

  it("answers a transform returning the wrong shape as proxy_error", async () => {
    const { proxy } = await proxyWith({ request_transform: { code: transform("return 'not an object';") } });
    const reply = await expectLoggedError(/must return \{body, headers\}/, () => invoke("POST", "", { proxyKey: proxy.key, body: {} }));
    expect(reply.json).toHaveProperty(["proxy_error"]);
    expect(reply.json.proxy_error.detail).toContain("body");
  });
});

describe("proxy transforms: checked when saved", () => {
  it.each([
    ["request_transform", "module.exports = async function (req) { return {"],
    ["response_transform", "const x = 1;"],
  ])("refuses %s code that does not parse or export a function, naming line and column", async (field, code) => {
    const tenant = await seedTenant();
    const reply = await call("POST", "/proxies", {
      key: tenant.managementKey,
      body: { name: "a", destination_url: "https://example.com", [field]: { code } },
    });
    const problem = expectProblem(reply, 400);
    expect(problem.errors?.[`${field}.code`]?.[0]).toMatch(/line \d+/);
  });

  it("refuses code over 50,000 characters", async () => {
    const tenant = await seedTenant();
    const code = `module.exports = async function (req) { return req.args; };//${"x".repeat(50_000)}`;
    const reply = await call("POST", "/proxies", {
      key: tenant.managementKey,
      body: { name: "a", destination_url: "https://example.com", request_transform: { code } },
    });
    expect(expectProblem(reply, 400).errors).toHaveProperty(["request_transform.code"]);
  });
});

describe("proxy transforms: published where the sandbox runs them", () => {
  it("uploads transforms when a proxy is saved; dropping or deleting one removes nothing at once (the cron does)", async () => {
    const tenant = await seedTenant();
    const run = crypto.randomUUID();
    // The loopback echo stands in for the Cloudflare API; each phase uses its own namespace name.
    const dispatchHost = (phase: string) => ({
      SANDBOX_HOST: "dispatch",
      CLOUDFLARE_API_BASE: loopback("/cloudflare-api"),
      CLOUDFLARE_ACCOUNT_ID: "account",
      CLOUDFLARE_API_TOKEN: "api-token",
      DISPATCH_NAMESPACE: `${phase}-${run}`,
    });
    const headers = { "SVC-API-KEY": tenant.managementKey };
    const code = transform("return { body: req.args.body, headers: req.args.headers };");
    const both = { name: "a", destination_url: "https://example.com", request_transform: { code }, response_transform: { code } };

    const created = await callConfigured(dispatchHost("create"), "POST", "/proxies", { headers, body: both });
    expect(created.status, JSON.stringify(created.body)).toBe(201);
    expect(await destinationSaw(`create-${run}`)).toBe(2);

    const requestOnly = { ...both, response_transform: null };
    const updated = await callConfigured(dispatchHost("update"), "PUT", `/proxies/${created.body.id}`, { headers, body: requestOnly });
    expect(updated.status, JSON.stringify(updated.body)).toBe(200);
    expect(await destinationSaw(`update-${run}`)).toBe(1);

    const deleted = await callConfigured(dispatchHost("delete"), "DELETE", `/proxies/${created.body.id}`, { headers });
    expect(deleted.status).toBe(204);
    expect(await destinationSaw(`delete-${run}`)).toBe(0);
  });
});
