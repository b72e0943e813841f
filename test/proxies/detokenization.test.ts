import { describe, expect, it } from "vitest";
import { call } from "../support/harness";
import { createProxy, destinationSaw, expectProxyError, invoke, loopback } from "../support/proxies";
import { createToken, expireToken, seedTokenTenant, type TokenTenant } from "../support/tokens";

const VISA = "4242424242424242";

/** A tenant whose application may do everything with tokens, and an authenticated proxy to the echo. */
async function setUp(destinationPath = "") {
  const tenant = await seedTokenTenant();
  const proxy = await createProxy(tenant, { destination_url: loopback(destinationPath) });
  const send = (body: unknown, options: { path?: string; headers?: Record<string, string> } = {}) =>
    invoke("POST", options.path ?? "", { proxyKey: proxy.key, apiKey: tenant.key, body, headers: options.headers });
  return { tenant, proxy, send };
}

const tokenOf = (tenant: TokenTenant, data: unknown) => createToken(tenant.key, { type: "token", data });

/** The JSON body the destination received. */
const forwardedJson = (reply: { json: { body: string } }) => JSON.parse(reply.json.body);

describe("proxy invocation: detokenization (rule 3)", () => {
  it("replaces a reference inside a JSON string with the token's data", async () => {
    const { tenant, send } = await setUp();
    const card = await createToken(tenant.key, { type: "card_number", data: VISA });
    const reply = await send({ card: `{{ ${card.id} }}`, note: `card ${`{{ ${card.id} }}`} on file` });
    expect(reply.status, reply.text).toBe(200);
    expect(forwardedJson(reply)).toEqual({ card: VISA, note: `card ${VISA} on file` });
  });

  it("allows whitespace inside the braces, and none", async () => {
    const { tenant, send } = await setUp();
    const card = await createToken(tenant.key, { type: "card_number", data: VISA });
    const reply = await send({ a: `{{${card.id}}}`, b: `{{   ${card.id}\t}}`, c: `{{\n${card.id}\n}}` });
    expect(forwardedJson(reply)).toEqual({ a: VISA, b: VISA, c: VISA });
  });

  it("accepts token ids in upper case", async () => {
    const { tenant, send } = await setUp();
    const card = await createToken(tenant.key, { type: "card_number", data: VISA });
    expect(forwardedJson(await send({ card: `{{ ${card.id.toUpperCase()} }}` }))).toEqual({ card: VISA });
  });

  it("JSON-escapes the data inside a JSON string", async () => {
    const { tenant, send } = await setUp();
    const tricky = 'he said "hi" \\ then\nleft\u2028 </script>';
    const token = await tokenOf(tenant, tricky);
    const reply = await send({ quoted: `[{{ ${token.id} }}]` });
    expect(forwardedJson(reply)).toEqual({ quoted: `[${tricky}]` });
  });

  it("turns a JSON string that is exactly a reference to an object into that object", async () => {
    const { tenant, send } = await setUp();
    const card = await tokenOf(tenant, { number: VISA, expiry: { month: 12, year: 2030 } });
    const reply = await send({ payment: { card: `{{ ${card.id} }}` } });
    expect(forwardedJson(reply)).toEqual({ payment: { card: { number: VISA, expiry: { month: 12, year: 2030 } } } });
  });

  it("turns a JSON string that is exactly a reference to an array into that array", async () => {
    const { tenant, send } = await setUp();
    const list = await tokenOf(tenant, ["a", 1, null]);
    expect(forwardedJson(await send([`{{ ${list.id} }}`]))).toEqual([["a", 1, null]]);
  });

  it("inserts an object referenced inside a longer string as its JSON text", async () => {
    const { tenant, send } = await setUp();
    const card = await tokenOf(tenant, { number: VISA });
    expect(forwardedJson(await send({ text: `card=${`{{ ${card.id} }}`}` }))).toEqual({ text: `card={"number":"${VISA}"}` });
  });

  it("keeps a whole reference to a number or boolean as text", async () => {
    const { tenant, send } = await setUp();
    const number = await tokenOf(tenant, 42);
    const flag = await tokenOf(tenant, true);
    expect(forwardedJson(await send({ n: `{{ ${number.id} }}`, f: `{{ ${flag.id} }}` }))).toEqual({ n: "42", f: "true" });
  });

  it("replaces references at every depth, and leaves object keys alone", async () => {
    const { tenant, send } = await setUp();
    const card = await createToken(tenant.key, { type: "card_number", data: VISA });
    const reference = `{{ ${card.id} }}`;
    const reply = await send({ a: [{ b: [reference] }], [reference]: 1 });
    expect(forwardedJson(reply)).toEqual({ a: [{ b: [VISA] }], [reference]: 1 });
  });

  it("replaces references in header values", async () => {
    const { tenant, send } = await setUp();
    const secret = await tokenOf(tenant, "partner-api-secret");
    const reply = await send({}, { headers: { authorization: `Bearer {{ ${secret.id} }}`, "x-plain": "kept" } });
    expect(reply.json.headers).toMatchObject({ authorization: "Bearer partner-api-secret", "x-plain": "kept" });
  });

  it("refuses data that cannot be a header value with proxy_error 400, without echoing it", async () => {
    const { tenant, send } = await setUp("/bad-header-marker");
    const multiline = await tokenOf(tenant, "line one\r\nx-injected: yes");
    const reply = await send({}, { headers: { "x-card": `{{ ${multiline.id} }}` } });
    expect(expectProxyError(reply, 400).errors).toHaveProperty(["headers.x-card"]);
    expect(reply.text).not.toContain("injected");
    expect(await destinationSaw("bad-header-marker")).toBe(0);
  });

  it("form-encodes the data in a form body", async () => {
    const { tenant, proxy } = await setUp();
    const awkward = await tokenOf(tenant, "a&b=c d+é");
    const reply = await invoke("POST", "", {
      proxyKey: proxy.key,
      apiKey: tenant.key,
      raw: `name=${encodeURIComponent(`{{ ${awkward.id} }}`)}&plain=1`,
      contentType: "application/x-www-form-urlencoded",
    });
    expect(reply.status, reply.text).toBe(200);
    expect(reply.json.headers["content-type"]).toBe("application/x-www-form-urlencoded");
    expect(Object.fromEntries(new URLSearchParams(reply.json.body))).toEqual({ name: "a&b=c d+é", plain: "1" });
  });

  it("sends a form field that is exactly a reference to an object as bracketed fields", async () => {
    const { tenant, proxy } = await setUp();
    const card = await tokenOf(tenant, { number: VISA, exp_month: 12 });
    const reply = await invoke("POST", "", {
      proxyKey: proxy.key,
      apiKey: tenant.key,
      raw: `amount=100&card={{${card.id}}}`,
      contentType: "application/x-www-form-urlencoded",
    });
    expect([...new URLSearchParams(reply.json.body)]).toEqual([
      ["amount", "100"],
      ["card[number]", VISA],
      ["card[exp_month]", "12"],
    ]);
  });

  it("inserts the data as text in other bodies", async () => {
    const { tenant, proxy } = await setUp();
    const card = await createToken(tenant.key, { type: "card_number", data: VISA });
    const reply = await invoke("POST", "", {
      proxyKey: proxy.key,
      apiKey: tenant.key,
      raw: `<card number="{{ ${card.id} }}"/>`,
      contentType: "application/xml",
    });
    expect(reply.json.body).toBe(`<card number="${VISA}"/>`);
  });

  it("forwards a body that is not UTF-8 text as it is", async () => {
    const { proxy, tenant } = await setUp();
    const bytes = new Uint8Array([0xff, 0xfe, ...new TextEncoder().encode("{{ not-detokenized }}")]);
    const reply = await invoke("POST", "", {
      proxyKey: proxy.key,
      apiKey: tenant.key,
      raw: bytes,
      contentType: "application/octet-stream",
    });
    expect(reply.status, reply.text).toBe(200);
    expect(reply.json.headers["content-length"]).toBe(String(bytes.length));
  });

  it("refuses an unknown token with proxy_error 400", async () => {
    const { send } = await setUp("/unknown-token-marker");
    const unknown = "00000000-0000-4000-8000-000000000000";
    expect(expectProxyError(await send({ card: `{{ ${unknown} }}` }), 400).detail).toContain(unknown);
    expect(await destinationSaw("unknown-token-marker")).toBe(0);
  });

  it("refuses a deleted token with proxy_error 400", async () => {
    const { tenant, send } = await setUp();
    const card = await createToken(tenant.key, { type: "card_number", data: VISA });
    expect((await call("DELETE", `/tokens/${card.id}`, { key: tenant.key })).status).toBe(204);
    expectProxyError(await send({ card: `{{ ${card.id} }}` }), 400);
  });

  it("refuses an expired token with proxy_error 400", async () => {
    const { tenant, send } = await setUp();
    const card = await createToken(tenant.key, { type: "card_number", data: VISA });
    await expireToken(card.id);
    expectProxyError(await send({ card: `{{ ${card.id} }}` }), 400);
  });

  it("accepts 100 references and refuses 101 with proxy_error 400", async () => {
    const { tenant, send } = await setUp();
    const card = await createToken(tenant.key, { type: "card_number", data: VISA });
    const references = (count: number) => Array.from({ length: count }, () => `{{ ${card.id} }}`);
    expect((await send(references(100))).status).toBe(200);
    expect(expectProxyError(await send(references(101)), 400).detail).toContain("100");
  });

  it.each([
    ["empty braces", "{{}}", "must be 3 to 400 characters"],
    ["an id too short to be a token id", "{{ ab }}", "must be 3 to 400 characters"],
    ["an id holding a character token ids cannot hold", "{{ cards/visa }}", "must not hold any of"],
    ["an unknown filter", "{{ 00000000-0000-4000-8000-000000000000 | no_such_filter }}", "no_such_filter"],
  ])("refuses %s as an invalid detokenization expression (400)", async (_case, expression, reason) => {
    const { send } = await setUp("/invalid-expression-marker");
    const problem = expectProxyError(await send({ payment: { card: `pay ${expression}` } }), 400);
    expect(problem.errors?.["body.payment.card"]?.[0]).toContain(`invalid detokenization expression ${expression}`);
    expect(problem.errors?.["body.payment.card"]?.[0]).toContain(reason);
    expect(await destinationSaw("invalid-expression-marker")).toBe(0);
  });

  it.each([
    ["a name that is no token's id", "card_number"],
    ["a name that is not a UUID", "not-a-uuid"],
    ["a token id with trailing text", "00000000-0000-4000-8000-000000000000 x"],
  ])("refuses %s as an unknown token (400)", async (_case, id) => {
    const { send } = await setUp("/unknown-name-marker");
    const problem = expectProxyError(await send({ payment: { card: `pay {{ ${id} }}` } }), 400);
    expect(problem.detail).toContain(`Token ${id} does not exist`);
    expect(await destinationSaw("unknown-name-marker")).toBe(0);
  });

  it("refuses a JSON body that does not parse when it holds references (400)", async () => {
    const { tenant, proxy } = await setUp();
    const card = await createToken(tenant.key, { type: "card_number", data: VISA });
    const reply = await invoke("POST", "", { proxyKey: proxy.key, apiKey: tenant.key, raw: `{"card": "{{ ${card.id} }}"` });
    expect(expectProxyError(reply, 400).detail).toContain("not valid JSON");
  });
});
