import { describe, expect, it } from "vitest";
import { createApplication } from "../support/harness";
import { createProxy, destinationSaw, expectProxyError, invoke, loopback } from "../support/proxies";
import { createToken, seedTokenTenant, type TokenTenant, VISA } from "../support/tokens";

const CARD = { number: VISA, expiration_month: 3, expiration_year: 2025, cvc: "123" };

/** A tenant whose application may do everything with tokens, and an authenticated proxy to the echo. */
async function setUp(destinationPath = "") {
  const tenant = await seedTokenTenant();
  const proxy = await createProxy(tenant, { destination_url: loopback(destinationPath) });
  const send = (body: unknown, headers?: Record<string, string>) =>
    invoke("POST", "", { proxyKey: proxy.key, apiKey: tenant.key, body, headers });
  return { tenant, proxy, send };
}

const tokenOf = (tenant: TokenTenant, data: unknown) => createToken(tenant.key, { type: "token", data });

/** The JSON body the destination received. */
const forwardedJson = (reply: { json: { body: string } }) => JSON.parse(reply.json.body);

describe("detokenization expressions: {{ <token id> | filter: args | … }}", () => {
  it("applies a filter to the token's data", async () => {
    const { tenant, send } = await setUp();
    const card = await tokenOf(tenant, CARD);
    expect(forwardedJson(await send({ number: `{{ ${card.id} | json: '$.number' }}` }))).toEqual({ number: VISA });
  });

  it("applies a chain of filters in order, with their arguments", async () => {
    const { tenant, send } = await setUp();
    const card = await tokenOf(tenant, CARD);
    const reply = await send({
      month: `{{ ${card.id} | json: '$.expiration_month' | pad_left: 2, '0' }}`,
      year: `{{${card.id}|json: '$.expiration_year'|slice: -2, 2}}`,
    });
    expect(forwardedJson(reply)).toEqual({ month: "03", year: "25" });
  });

  it("accepts an upper-case token id before the filters", async () => {
    const { tenant, send } = await setUp();
    const card = await tokenOf(tenant, CARD);
    expect(forwardedJson(await send({ cvc: `{{ ${card.id.toUpperCase()} | json: '$.cvc' }}` }))).toEqual({ cvc: "123" });
  });

  it("concatenates several expressions in one string", async () => {
    const { tenant, send } = await setUp();
    const first = await tokenOf(tenant, "John");
    const last = await tokenOf(tenant, "Brown");
    const owner = await tokenOf(tenant, { first_name: "Ada", last_name: "Smith" });
    const reply = await send({
      plain: `{{ ${first.id} }} {{ ${last.id} }}`,
      filtered: `{{ ${owner.id} | json: '$.first_name' }} {{ ${owner.id} | json: '$.last_name' | upcase }}!`,
    });
    expect(forwardedJson(reply)).toEqual({ plain: "John Brown", filtered: "Ada SMITH!" });
  });

  it("writes a number or boolean result as its text", async () => {
    const { tenant, send } = await setUp();
    const card = await tokenOf(tenant, { ...CARD, expiration_month: 11, verified: true });
    const reply = await send({
      month: `{{ ${card.id} | json: '$.expiration_month' }}`,
      verified: `{{ ${card.id} | json: '$.verified' }}`,
      inside: `month {{ ${card.id} | json: '$.expiration_month' }}`,
    });
    expect(forwardedJson(reply)).toEqual({ month: "11", verified: "true", inside: "month 11" });
  });

  it("turns a string that is exactly one expression with an object or array result into that value", async () => {
    const { tenant, send } = await setUp();
    const profile = await tokenOf(tenant, { card: CARD, tags: ["a", 1] });
    const reply = await send({
      whole: `{{ ${profile.id} | json: '$' }}`,
      card: `{{ ${profile.id} | json: '$.card' }}`,
      tags: `{{ ${profile.id} | json: '$.tags' }}`,
      text: `card: {{ ${profile.id} | json: '$.tags' }}`,
    });
    expect(forwardedJson(reply)).toEqual({ whole: { card: CARD, tags: ["a", 1] }, card: CARD, tags: ["a", 1], text: 'card: ["a",1]' });
  });

  it("applies the filters to the data the caller's token:use transform shows", async () => {
    const { tenant, proxy } = await setUp();
    const card = await createToken(tenant.key, { type: "card_number", data: VISA });
    const masked = await createApplication(tenant, {
      type: "private",
      rules: [{ priority: 1, container: "/", transform: "mask", permissions: ["token:use"] }],
    });
    const reply = await invoke("POST", "", {
      proxyKey: proxy.key,
      apiKey: masked.key,
      body: { first: `{{ ${card.id} | slice: 0, 6 }}`, last: `{{ ${card.id} | last4 }}` },
    });
    expect(forwardedJson(reply)).toEqual({ first: "XXXXXX", last: "4242" });
  });

  it("applies filters in header values", async () => {
    const { tenant, send } = await setUp();
    const credentials = await tokenOf(tenant, { user: "merchant", secret: "s3cr3t" });
    const reply = await send({}, { authorization: `Basic {{ ${credentials.id} | json: '$.secret' | base64_encode }}` });
    expect(reply.json.headers.authorization).toBe(`Basic ${btoa("s3cr3t")}`);
  });

  it("applies filters in form bodies, percent-encoded or not", async () => {
    const { tenant, proxy } = await setUp();
    const card = await tokenOf(tenant, CARD);
    const reply = await invoke("POST", "", {
      proxyKey: proxy.key,
      apiKey: tenant.key,
      raw: `number=${encodeURIComponent(`{{ ${card.id} | json: '$.number' }}`)}&cvc={{${card.id}|json:'$.cvc'}}`,
      contentType: "application/x-www-form-urlencoded",
    });
    expect(Object.fromEntries(new URLSearchParams(reply.json.body))).toEqual({ number: VISA, cvc: "123" });
  });

  it("applies filters in text bodies", async () => {
    const { tenant, proxy } = await setUp();
    const card = await tokenOf(tenant, CARD);
    const reply = await invoke("POST", "", {
      proxyKey: proxy.key,
      apiKey: tenant.key,
      raw: `<card number="{{ ${card.id} | json: '$.number' }}" cvc="{{ ${card.id} | json: '$.cvc' }}"/>`,
      contentType: "application/xml",
    });
    expect(reply.json.body).toBe(`<card number="${VISA}" cvc="123"/>`);
  });

  it("refuses an unknown filter before reading any token (proxy_error 400 naming the path)", async () => {
    const { send } = await setUp("/unknown-filter-marker");
    const unknownToken = "00000000-0000-4000-8000-000000000000";
    const problem = expectProxyError(await send({ card: { number: `{{ ${unknownToken} | no_such_filter }}` } }), 400);
    expect(problem.detail).toContain("Invalid detokenization expression");
    expect(problem.errors?.["body.card.number"]?.[0]).toContain("no_such_filter");
    expect(await destinationSaw("unknown-filter-marker")).toBe(0);
  });

  it("refuses a filter chain that is not valid Liquid (proxy_error 400 naming the path)", async () => {
    const { tenant, send } = await setUp();
    const card = await tokenOf(tenant, CARD);
    const problem = expectProxyError(await send({ number: `{{ ${card.id} | json: '$.number }}` }), 400);
    expect(Object.keys(problem.errors!)).toEqual(["body.number"]);
    expect(problem.errors!["body.number"]![0]).toContain("invalid detokenization expression");
  });

  it("refuses an expression longer than the Liquid source limit (400)", async () => {
    const { tenant, send } = await setUp();
    const card = await tokenOf(tenant, CARD);
    const problem = expectProxyError(await send({ number: `{{ ${card.id} | append: '${"x".repeat(1000)}' }}` }), 400);
    expect(Object.keys(problem.errors!)).toEqual(["body.number"]);
  });

  it("refuses a filter that fails when evaluated with proxy_error 400 naming the path, never echoing the data", async () => {
    const { tenant, send } = await setUp("/failing-filter-marker");
    const card = await tokenOf(tenant, CARD);
    const problem = expectProxyError(await send({ card: { month: `{{ ${card.id} | json: '$.number' | to_boolean }}` } }), 400);
    expect(problem.detail).toBe("A detokenization expression could not be evaluated");
    expect(Object.keys(problem.errors!)).toEqual(["body.card.month"]);
    expect(problem.errors!["body.card.month"]![0]).toContain("could not be evaluated");
    expect(JSON.stringify(problem)).not.toContain(VISA);
    expect(await destinationSaw("failing-filter-marker")).toBe(0);
  });

  it("refuses a JSONPath that selects several values (proxy_error 400 naming the path)", async () => {
    const { tenant, send } = await setUp();
    const card = await tokenOf(tenant, CARD);
    const problem = expectProxyError(await send({ values: [`{{ ${card.id} | json: '$.*' }}`] }), 400);
    expect(Object.keys(problem.errors!)).toEqual(["body.values[0]"]);
    expect(JSON.stringify(problem)).not.toContain(VISA);
  });

  it("names the header whose expression fails", async () => {
    const { tenant, send } = await setUp();
    const secret = await tokenOf(tenant, "not json");
    const problem = expectProxyError(await send({}, { "x-secret": `{{ ${secret.id} | json: '$.key' }}` }), 400);
    expect(Object.keys(problem.errors!)).toEqual(["headers.x-secret"]);
    expect(JSON.stringify(problem)).not.toContain("not json");
  });

  it("counts expressions with filters toward the 100 allowed in one request", async () => {
    const { tenant, send } = await setUp();
    const card = await tokenOf(tenant, CARD);
    const expressions = (count: number) => Array.from({ length: count }, () => `{{ ${card.id} | json: '$.cvc' }}`);
    const accepted = await send(expressions(100));
    expect(accepted.status, accepted.text).toBe(200);
    expect(forwardedJson(accepted)).toEqual(Array.from({ length: 100 }, () => "123"));
    expect(expectProxyError(await send(expressions(101)), 400).detail).toContain("100");
  });

  it("refuses more than 100 expressions before judging them, however many there are", async () => {
    const { send } = await setUp();
    const many = Array.from({ length: 5000 }, (_, i) => `{{ ${i} | no_such_filter_${i} }}`).join("");
    const problem = expectProxyError(await send({ many }), 400);
    expect(problem.detail).toBe("At most 100 token references are allowed in one request; found 5000");
    expect(problem.errors).toBeUndefined();
  });
});
