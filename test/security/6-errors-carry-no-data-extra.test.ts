import { describe, expect, it } from "vitest";
import { createProxy, expectProxyError, invoke, loopback } from "../support/proxies";
import { createToken, seedTokenTenant, VISA } from "../support/tokens";

/**
 * Rule 6, further attacks: redaction replaces whole values the request revealed, so what tenant code
 * quotes from elsewhere, or quotes in part, reaches the proxy's caller in `proxy_error`.
 */

describe("rule 6 (extra): tenant code errors reach the proxy's caller without data", () => {
  it("a response transform that fails on the destination's card number does not hand it to the partner", async () => {
    const tenant = await seedTokenTenant();
    // The destination answers a card number; the response transform is there to tokenize it.
    const body = JSON.stringify({ card: VISA });
    const proxy = await createProxy(tenant, {
      require_auth: false,
      application: { id: tenant.applicationId },
      destination_url: loopback(`/respond?content-type=application%2Fjson&body=${encodeURIComponent(body)}`),
      response_transform: { code: "module.exports = async (req) => { throw new Error('could not tokenize ' + req.args.body.card); };" },
    });
    const reply = await invoke("POST", "", { proxyKey: proxy.key, body: {} });
    expectProxyError(reply, 500);
    expect(reply.text).not.toContain(VISA);
  });

  it("JSON.parse of a detokenized document quotes part of it; the partner does not see that part", async () => {
    const tenant = await seedTokenTenant();
    const secret = "diagnosis: stage two, patient Jane Roe, born 1970-01-01";
    const token = await createToken(tenant.key, { type: "token", data: secret });
    const proxy = await createProxy(tenant, {
      require_auth: false,
      application: { id: tenant.applicationId },
      request_transform: { code: "module.exports = async (req) => ({ body: JSON.parse(req.args.body.doc) });" },
    });
    const reply = await invoke("POST", "", { proxyKey: proxy.key, body: { doc: `{{ ${token.id} }}` } });
    expectProxyError(reply, 500);
    expect(reply.text).not.toContain(secret.slice(0, 8));
  });

  it("a detokenized value tenant code normalised (dashes removed) is not quoted to the partner", async () => {
    const tenant = await seedTokenTenant();
    const token = await createToken(tenant.key, { type: "social_security_number", data: "123-45-6789" });
    const proxy = await createProxy(tenant, {
      require_auth: false,
      application: { id: tenant.applicationId },
      request_transform: {
        code: "module.exports = async (req) => { throw new Error('no match for ' + req.args.body.ssn.replace(/-/g, '')); };",
      },
    });
    const reply = await invoke("POST", "", { proxyKey: proxy.key, body: { ssn: `{{ ${token.id} }}` } });
    expectProxyError(reply, 500);
    expect(reply.text).not.toContain("123456789");
  });
});
