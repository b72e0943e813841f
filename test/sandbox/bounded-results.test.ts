import { describe, expect, it } from "vitest";
import { principalForApplication } from "../../src/auth/service";
import { tenantContext } from "../support/context";
import { expectProblem, seedTenant } from "../support/harness";
import { expectLoggedError } from "../support/logs";
import { createProxy, expectProxyError, invoke } from "../support/proxies";
import { react, reactorRunning } from "../support/reactors";
import { run, scriptOwner } from "../support/sandbox";
import { seedTokenTenant } from "../support/tokens";

/*
 * What tenant code hands back is walked by the vault (checked, tokenized, serialised, sent), so it
 * may nest at most 32 levels of arrays and objects, like any body the vault reads. A deeper result
 * is the code's fault, answered like any result of the wrong shape: a 500 naming the limit, never
 * a stack overflow in the vault.
 */

const LIMIT = "must not nest arrays and objects deeper than 32 levels in its result";
/** A JavaScript expression for a value `depth` arrays deep around `leaf`. */
const nested = (depth: number, leaf = "1") =>
  `(() => { let value = ${leaf}; for (let i = 0; i < ${depth}; i++) value = [value]; return value; })()`;

async function reactorAnswer(code: string) {
  const { caller, reactor } = await reactorRunning(code);
  return expectLoggedError(new RegExp(LIMIT), () => react(caller.key, reactor.id, {}));
}

/** What a `bt` call answers to tenant code acting as a tenant's application: its value or the ApiError. */
async function bridgeAnswer(call: string) {
  const tenant = await seedTokenTenant();
  const application = await principalForApplication(await tenantContext(tenant.tenantId), tenant.applicationId);
  const code = `module.exports = async (req) => {
    try { const value = await ${call}; return { raw: { created: typeof value.id } }; }
    catch (error) { return { raw: { name: error.name, status: error.status, message: error.message } }; }
  };`;
  return run(code, { owner: scriptOwner("reactor", tenant.tenantId), application });
}

describe("bounded sandbox results", () => {
  it("a reactor's raw result 10,000 levels deep is a 500 naming the limit", async () => {
    const reply = await reactorAnswer(`module.exports = async () => ({ raw: ${nested(10_000)} });`);
    expect(expectProblem(reply, 500)).toMatchObject({ title: "Invalid Script Result", detail: `The reactor ${LIMIT}` });
  });

  it("a reactor's tokenize payload 10,000 levels deep is a 500 naming the limit", async () => {
    const reply = await reactorAnswer(`module.exports = async () => ({ tokenize: ${nested(10_000, '{ type: "token", data: "x" }')} });`);
    expect(expectProblem(reply, 500).detail).toBe(`The reactor ${LIMIT}`);
  });

  it("a result 33 levels deep is refused by the vault, whatever the sandbox reported", async () => {
    const reply = await reactorAnswer(`module.exports = async () => ({ raw: ${nested(32)} });`);
    expect(expectProblem(reply, 500).detail).toBe(`The reactor ${LIMIT}`);
  });

  it("a result 32 levels deep is returned as it is", async () => {
    const { caller, reactor } = await reactorRunning(`module.exports = async () => ({ raw: ${nested(31)} });`);
    const reply = await react(caller.key, reactor.id, {});
    expect(reply.status, JSON.stringify(reply.body)).toBe(200);
    expect(JSON.stringify((reply.body as { raw: unknown }).raw)).toBe(`${"[".repeat(31)}1${"]".repeat(31)}`);
  });

  it("a CustomHttpResponseError whose body is 10,000 levels deep is a 500 naming the limit", async () => {
    const reply = await reactorAnswer(`const errors = require("@token-vault/errors");
      module.exports = async () => { throw new errors.CustomHttpResponseError({ status: 402, body: ${nested(10_000)} }); };`);
    expect(expectProblem(reply, 500).detail).toBe(`The reactor ${LIMIT}`);
  });

  it("a request transform returning a body 10,000 levels deep is a proxy_error 500 naming the limit", async () => {
    const proxy = await createProxy(await seedTenant(), {
      require_auth: false,
      request_transform: { code: `module.exports = async (req) => ({ body: ${nested(10_000)}, headers: req.args.headers });` },
    });
    const reply = await expectLoggedError(new RegExp(LIMIT), () => invoke("POST", "", { proxyKey: proxy.key, body: {} }));
    expect(expectProxyError(reply, 500).detail).toBe(`The request transform ${LIMIT}`);
  });
});

describe("bounded bt arguments: they reach the vault as JSON text held to the limits of a request body", () => {
  it("a token's data 33 levels deep is a 400 naming the limit, as on POST /tokens", async () => {
    expect(await bridgeAnswer(`req.bt.tokens.create({ type: "token", data: ${nested(32)} })`)).toEqual({
      raw: { name: "ApiError", status: 400, message: "body: must not nest arrays and objects deeper than 32 levels (400)" },
    });
  });

  it("a value that shares one array until its JSON exceeds 1 MiB is a 413, and the vault never writes it out", async () => {
    const shared = `(() => { let value = "xxxxxxxx"; for (let i = 0; i < 18; i++) value = [value, value]; return value; })()`;
    expect(await bridgeAnswer(`req.bt.tokens.create({ type: "token", data: ${shared} })`)).toEqual({
      raw: { name: "ApiError", status: 413, message: "The request body exceeds the limit of 1048576 bytes (413)" },
    });
  });

  it("a token's data 32 levels deep is created", async () => {
    expect(await bridgeAnswer(`req.bt.tokens.create({ type: "token", data: ${nested(31)} })`)).toEqual({ raw: { created: "string" } });
  });
});
