import { describe, expect, it } from "vitest";
import { expectProblem, seedTenant } from "../support/harness";
import { expectLoggedError } from "../support/logs";
import { createProxy, expectProxyError, invoke } from "../support/proxies";
import { react, reactorRunning } from "../support/reactors";

/*
 * What tenant code hands back is walked by the vault (checked, tokenized, serialised, sent), so it
 * may nest at most 32 levels of arrays and objects, like any body the vault reads. A deeper result
 * is the code's fault, answered like any result of the wrong shape: a 500 naming the limit, never
 * a stack overflow in the vault.
 */

const LIMIT = "must not nest arrays and objects deeper than 32 levels in its result";
/** A JavaScript expression for a value `depth` arrays deep around `leaf`. */
const nested = (depth: number, leaf = "1") => `(() => { let value = ${leaf}; for (let i = 0; i < ${depth}; i++) value = [value]; return value; })()`;

async function reactorAnswer(code: string) {
  const { caller, reactor } = await reactorRunning(code);
  return expectLoggedError(new RegExp(LIMIT), () => react(caller.key, reactor.id, {}));
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
