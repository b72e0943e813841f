import { describe, expect, it, vi } from "vitest";
import { createApplication } from "../support/harness";
import { createProxy, expectProxyError, invoke, loopback } from "../support/proxies";
import { withoutIds } from "../support/random-text";
import { createFormula, createReactor, react } from "../support/reactors";
import { createToken, seedTokenTenant, VISA } from "../support/tokens";

/**
 * Rule 6: a value a request detokenized, or that tenant code read from a token, never appears in an
 * error: not in `proxy_error`, a reactor's or transform's error, a problem's detail or errors, nor
 * the worker's log lines. The vault writes `[redacted]` in its place.
 */

const SSN = "123-45-6789";

/**
 * Runs the action while collecting every console line, and returns both. Ids are taken out of the
 * lines: the checks below look for three digits, which a random UUID can hold.
 */
async function withLogLines<T>(action: () => Promise<T>): Promise<{ result: T; lines: string }> {
  const lines: string[] = [];
  const spies = (["error", "warn", "log", "info"] as const).map((level) =>
    vi.spyOn(console, level).mockImplementation((...args: unknown[]) => {
      lines.push(args.map((arg) => (arg instanceof Error ? `${arg.message} ${arg.stack}` : String(arg))).join(" "));
    }),
  );
  try {
    return { result: await action(), lines: withoutIds(lines.join("\n")) };
  } finally {
    for (const spy of spies) spy.mockRestore();
  }
}

/** A tenant, one of its tokens, and an open proxy acting as the tenant's application with the transform. */
async function openProxyWith(token: { type: string; data: unknown }, transform: Record<string, unknown>) {
  const tenant = await seedTokenTenant();
  const created = await createToken(tenant.key, token);
  const proxy = await createProxy(tenant, { require_auth: false, application: { id: tenant.applicationId }, ...transform });
  return { tenant, token: created, proxy };
}

describe("rule 6: errors never carry token data", () => {
  it("a request transform that throws an error built from a detokenized value answers only the error's name", async () => {
    const { token, proxy } = await openProxyWith(
      { type: "social_security_number", data: SSN },
      {
        request_transform: { code: "module.exports = async (req) => { throw new Error('cannot send ' + req.args.body.ssn); };" },
      },
    );
    const { result, lines } = await withLogLines(() => invoke("POST", "", { proxyKey: proxy.key, body: { ssn: `{{ ${token.id} }}` } }));
    const problem = expectProxyError(result, 500);
    expect(result.text).not.toContain(SSN);
    expect(problem.detail).toBe("The request transform threw Error");
    expect(lines).not.toContain(SSN);
    expect(lines).not.toContain("cannot send");
  });

  it("a request transform's typed error built from a detokenized value answers [redacted]", async () => {
    const { token, proxy } = await openProxyWith(
      { type: "social_security_number", data: SSN },
      {
        request_transform: {
          code: "const { BadRequestError } = require('@token-vault/errors'); module.exports = async (req) => { throw new BadRequestError('cannot send ' + req.args.body.ssn); };",
        },
      },
    );
    const { result, lines } = await withLogLines(() => invoke("POST", "", { proxyKey: proxy.key, body: { ssn: `{{ ${token.id} }}` } }));
    const problem = expectProxyError(result, 400);
    expect(result.text).not.toContain(SSN);
    expect(problem).toMatchObject({ detail: "Bad Request", errors: { error: ["cannot send [redacted]"] } });
    expect(lines).not.toContain(SSN);
  });

  it("a filtered detokenized value is redacted too", async () => {
    const { token, proxy } = await openProxyWith(
      { type: "card_number", data: VISA },
      {
        request_transform: { code: "module.exports = async (req) => { throw new Error('bin ' + req.args.body.bin); };" },
      },
    );
    const { result, lines } = await withLogLines(() =>
      invoke("POST", "", { proxyKey: proxy.key, body: { bin: `{{ ${token.id} | slice: 0, 8 }}` } }),
    );
    expectProxyError(result, 500);
    expect(result.text).not.toContain(VISA.slice(0, 8));
    expect(lines).not.toContain(VISA.slice(0, 8));
  });

  it("a reactor's typed error quoting its detokenized args answers [redacted]", async () => {
    const tenant = await seedTokenTenant();
    const token = await createToken(tenant.key, { type: "social_security_number", data: SSN });
    const formula = await createFormula(tenant, {
      code: "const { BadRequestError } = require('@basis-theory/basis-theory-reactor-formulas-sdk-js'); module.exports = async (req) => { throw new BadRequestError('bad ' + req.args.ssn); };",
      request_parameters: [{ name: "ssn", type: "string", optional: false }],
    });
    const reactor = await createReactor(tenant, formula.id, { applicationId: tenant.applicationId });
    const caller = await createApplication(tenant, { type: "private", permissions: ["token:use"] });
    const reply = await react(caller.key, reactor.id, { ssn: `{{ ${token.id} }}` });
    expect(reply.status, reply.text).toBe(400);
    expect(reply.text).not.toContain(SSN);
    expect(reply.text).toContain("[redacted]");
  });

  it("a value tenant code read through bt and quoted in its error answers [redacted]", async () => {
    const { token, proxy } = await openProxyWith(
      { type: "social_security_number", data: SSN },
      {
        request_transform: {
          code: `module.exports = async (req) => {
          const token = await req.bt.tokens.retrieve(req.args.body.id);
          throw new Error('read ' + token.data);
        };`,
        },
      },
    );
    const { result, lines } = await withLogLines(() => invoke("POST", "", { proxyKey: proxy.key, body: { id: token.id } }));
    expectProxyError(result, 500);
    expect(result.text).not.toContain(SSN);
    expect(lines).not.toContain(SSN);
  });

  it("a destination's body is never quoted in an error", async () => {
    const tenant = await seedTokenTenant();
    // The JSON parser quotes the text around a fault in its own message.
    const malformed = `${SSN} is not JSON`;
    const proxy = await createProxy(tenant, {
      require_auth: false,
      application: { id: tenant.applicationId },
      destination_url: loopback(`/respond?content-type=application%2Fjson&body=${encodeURIComponent(malformed)}`),
      response_transform: { code: "module.exports = async (req) => ({ body: req.args.body, headers: req.args.headers });" },
    });
    const { result, lines } = await withLogLines(() => invoke("POST", "", { proxyKey: proxy.key, body: {} }));
    expectProxyError(result, 502);
    expect(result.text).not.toContain(SSN.slice(0, 3));
    expect(lines).not.toContain(SSN.slice(0, 3));
  });
});
