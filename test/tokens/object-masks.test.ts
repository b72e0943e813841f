import { describe, expect, it } from "vitest";
import { type ApplicationSpec, call, createApplication, expectProblem } from "../support/harness";
import { createToken, patchToken, seedTokenTenant } from "../support/tokens";

const CARD = { number: "4242424242424242", expiration_month: 11, expiration_year: 2030, cvc: "123" };
const MASK = {
  last: "{{ data.number | last4 }}",
  month: "{{ data.expiration_month }}",
  label: "card ending {{ data.number | last4 }}",
  fixed: 7,
  nested: { year: "{{ data.expiration_year }}", list: ["{{ data.expiration_month }}", null] },
};
const MASKED = { last: "4242", month: 11, label: "card ending 4242", fixed: 7, nested: { year: 2030, list: [11, null] } };

const everythingWith = (transform: "reveal" | "mask" | "redact"): ApplicationSpec => ({
  type: "private",
  rules: [
    {
      priority: 1,
      container: "/",
      transform,
      permissions: ["token:create", "token:read", "token:update", "token:search", "token:use"],
    },
  ],
});

describe("object masks", () => {
  it("a mask may be a JSON template: string leaves are expressions, a leaf that is one output keeps its JSON type, other values stay", async () => {
    const tenant = await seedTokenTenant();
    const masking = await createApplication(tenant, everythingWith("mask"));
    const token = await createToken(masking.key, { type: "card", data: CARD, mask: MASK });
    expect(token.mask).toEqual(MASK);
    expect(token.data).toEqual(MASKED);
  });

  it("reveal shows the data, mask the template's rendering, redact no data", async () => {
    const tenant = await seedTokenTenant();
    const token = await createToken(tenant.key, { type: "card", data: CARD, mask: MASK });
    const read = async (transform: "reveal" | "mask" | "redact") => {
      const app = await createApplication(tenant, everythingWith(transform));
      const reply = await call("GET", `/tokens/${token.id}`, { key: app.key });
      expect(reply.status).toBe(200);
      return reply.body;
    };
    expect((await read("reveal")).data).toEqual(CARD);
    expect((await read("mask")).data).toEqual(MASKED);
    const redacted = await read("redact");
    expect(redacted).not.toHaveProperty("data");
    expect(redacted.mask).toEqual(MASK);
  });

  it("search under a masking rule answers the template's rendering", async () => {
    const tenant = await seedTokenTenant();
    const masking = await createApplication(tenant, everythingWith("mask"));
    const token = await createToken(tenant.key, { type: "card", data: CARD, mask: MASK });
    const found = await call("POST", "/tokens/search", { key: masking.key, body: { query: `id:${token.id}` } });
    expect(found.status, JSON.stringify(found.body)).toBe(200);
    expect(found.body.data.map((each: { data: unknown }) => each.data)).toEqual([MASKED]);
  });

  it("string types take templates too, and detokenizing under a masking use rule gives the rendering", async () => {
    const tenant = await seedTokenTenant();
    const masking = await createApplication(tenant, everythingWith("mask"));
    const token = await createToken(masking.key, {
      type: "social_security_number",
      data: "123-45-6789",
      mask: { last4: "{{ data | last4 }}" },
    });
    expect(token.data).toEqual({ last4: "6789" });
    const used = await call("POST", "/detokenize", { key: masking.key, body: { ssn: `{{ ${token.id} }}` } });
    expect(used.body).toEqual({ ssn: { last4: "6789" } });
  });

  it("a mask may be an array template", async () => {
    const tenant = await seedTokenTenant();
    const masking = await createApplication(tenant, everythingWith("mask"));
    const mask = ["{{ data[0] | reveal_last: 2 }}", "{{ data[1] }}"];
    const token = await createToken(masking.key, { type: "token", data: ["secret", 42], mask });
    expect(token.mask).toEqual(mask);
    expect(token.data).toEqual(["XXXXet", 42]);
  });

  it("a string mask stays a string, even one that reads like JSON", async () => {
    const tenant = await seedTokenTenant();
    const masking = await createApplication(tenant, everythingWith("mask"));
    const mask = '{"last": "{{ data | last4 }}"}';
    const token = await createToken(masking.key, { type: "token", data: "4242424242424242", mask });
    expect(token.mask).toBe(mask);
    expect(token.data).toBe('{"last": "4242"}');
    expect((await call("GET", `/tokens/${token.id}`, { key: masking.key })).body).toMatchObject({ mask, data: '{"last": "4242"}' });
  });

  it("PATCH replaces a template with a string and back, and null restores the type's default", async () => {
    const tenant = await seedTokenTenant();
    const masking = await createApplication(tenant, everythingWith("mask"));
    const token = await createToken(masking.key, { type: "card", data: CARD, mask: MASK });
    // Changing a mask needs a caller that sees the data (test/security/1-expressions-need-reveal.test.ts).
    const maskedRead = async () => (await call("GET", `/tokens/${token.id}`, { key: masking.key })).body;
    await patchToken(tenant.key, token.id, { mask: "{{ data.number | last4 }}" });
    expect(await maskedRead()).toMatchObject({ mask: "{{ data.number | last4 }}", data: "4242" });
    await patchToken(tenant.key, token.id, { mask: { month: "{{ data.expiration_month }}" } });
    expect(await maskedRead()).toMatchObject({ mask: { month: "{{ data.expiration_month }}" }, data: { month: 11 } });
    await patchToken(tenant.key, token.id, { mask: null });
    expect((await maskedRead()).data).toEqual({ number: "XXXXXXXXXXXX4242", expiration_month: 11, expiration_year: 2030 });
  });

  it("each leaf is checked like a string mask: a bad leaf is a 400 at its path, never echoing the data", async () => {
    const { key } = await seedTokenTenant();
    const reply = await call("POST", "/tokens", {
      key,
      body: {
        type: "card",
        data: CARD,
        mask: { number: "{{ data.number | no_such_filter }}", nested: { list: ["{{ data.number", "ok"] } },
      },
    });
    const problem = expectProblem(reply, 400);
    expect(problem.errors).toEqual({
      "mask.number": ["is not a valid expression: undefined filter: no_such_filter, line:1, col:1"],
      "mask.nested.list[0]": ['is not a valid expression: output "{{ data.number" not closed, line:1, col:1'],
    });
    expect(JSON.stringify(problem)).not.toContain(CARD.number);
  });

  it("a leaf that fails on the data is a 400 at its path", async () => {
    const { key } = await seedTokenTenant();
    const reply = await call("POST", "/tokens", { key, body: { type: "card", data: CARD, mask: { month: "{{ data | json: '$..*' }}" } } });
    expect(expectProblem(reply, 400).errors).toEqual({
      "mask.month": ["could not be evaluated: json path selects 4 values; it must select one"],
    });
  });

  it("a mask that is neither an expression nor a template is a 400", async () => {
    const { key } = await seedTokenTenant();
    for (const mask of [42, true]) {
      const reply = await call("POST", "/tokens", { key, body: { type: "card", data: CARD, mask } });
      expect(expectProblem(reply, 400).errors).toEqual({
        mask: ["must be an expression, or an object or array whose string values are expressions"],
      });
    }
  });

  it("a template is at most 10,000 characters as JSON", async () => {
    const { key } = await seedTokenTenant();
    const mask = Object.fromEntries(Array.from({ length: 20 }, (_, i) => [`pad${i}`, "x".repeat(500)]));
    const reply = await call("POST", "/tokens", { key, body: { type: "token", data: "x", mask } });
    expect(expectProblem(reply, 400).errors).toEqual({ mask: ["must be at most 10000 characters as JSON"] });
  });
});
