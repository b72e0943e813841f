import { describe, expect, it } from "vitest";
import { call, expectProblem, seedTenant } from "../support/harness";
import { expectLoggedError } from "../support/logs";
import { createProxy, destinationSaw, expectProxyError, invoke, loopback } from "../support/proxies";
import { react, reactorRunning } from "../support/reactors";

/*
 * Transforms and formulas written for the original product require its errors package by name.
 * The sandbox answers that name with the same module as `@token-vault/errors`.
 */

const ORIGINAL = "@basis-theory/basis-theory-reactor-formulas-sdk-js";

describe("the errors module under the original package name", () => {
  it("a formula requiring it throws typed errors with their status and field messages", async () => {
    const { caller, reactor } = await reactorRunning(
      `const { AuthenticationError, BadRequestError, CustomHttpResponseError } = require('${ORIGINAL}');\n` +
        "module.exports = async (req) => {\n" +
        "  if (req.args.fail === 'auth') throw new AuthenticationError('partner key rejected');\n" +
        "  if (req.args.fail === 'custom') throw new CustomHttpResponseError({ status: 409, headers: { 'x-partner': 'dup' }, body: { duplicate: true } });\n" +
        "  throw new BadRequestError({ card: 'declined' });\n" +
        "};",
    );
    expect(expectProblem(await react(caller.key, reactor.id, { fail: "auth" }), 401)).toMatchObject({
      detail: "Authentication Failed",
      errors: { error: ["partner key rejected"] },
    });
    expect(expectProblem(await react(caller.key, reactor.id, { fail: "bad" }), 400).errors).toEqual({ card: ["declined"] });
    const custom = await react(caller.key, reactor.id, { fail: "custom" });
    expect(custom.status).toBe(409);
    expect(custom.headers.get("x-partner")).toBe("dup");
    expect(custom.body).toEqual({ duplicate: true });
  });

  it.each([
    ["a string", "'My error message'", { error: ["My error message"] }],
    ["an array", '["error 1", "error 2"]', { error: ["error 1", "error 2"] }],
    [
      "an object",
      "{ error1: 'description 1', error2: ['description 2', 'description 3'] }",
      {
        error1: ["description 1"],
        error2: ["description 2", "description 3"],
      },
    ],
  ])("ReactorRuntimeError constructed with %s answers as the reactor errors page shows", async (_, argument, errors) => {
    const { caller, reactor } = await reactorRunning(
      `const { ReactorRuntimeError } = require('${ORIGINAL}');\nmodule.exports = async () => { throw new ReactorRuntimeError(${argument}); };`,
    );
    const reply = await expectLoggedError(/Reactor Runtime Error/, () => react(caller.key, reactor.id, {}));
    expect(expectProblem(reply, 500)).toMatchObject({ status: 500, detail: "Reactor Runtime Error", errors });
  });

  it("yields the very classes of @token-vault/errors, so instanceof holds across both names", async () => {
    const { caller, reactor } = await reactorRunning(
      `const original = require('${ORIGINAL}');\nconst vault = require('@token-vault/errors');\n` +
        "module.exports = async () => ({ raw: { same: original === vault, instance: new original.RateLimitError('x') instanceof vault.RateLimitError } });",
    );
    const reply = await react(caller.key, reactor.id, {});
    expect(reply.status, JSON.stringify(reply.body)).toBe(200);
    expect(reply.body.raw).toEqual({ same: true, instance: true });
  });

  it("an ES module formula may import it", async () => {
    const { caller, reactor } = await reactorRunning(
      `import { InvalidPaymentMethodError } from '${ORIGINAL}';\nexport default async () => { throw new InvalidPaymentMethodError('card expired'); };`,
    );
    expect(expectProblem(await react(caller.key, reactor.id, {}), 402)).toMatchObject({
      detail: "Invalid Payment Method",
      errors: { error: ["card expired"] },
    });
  });

  it("a proxy transform requiring it answers proxy_error with the typed error's status, forwarding nothing", async () => {
    const tenant = await seedTenant();
    const proxy = await createProxy(tenant, {
      require_auth: false,
      destination_url: loopback("/original-errors-marker"),
      request_transform: {
        code: `module.exports = async function (req) { const { BadRequestError } = require('${ORIGINAL}'); throw new BadRequestError({ amount: 'too large' }); };`,
      },
    });
    const problem = expectProxyError(await invoke("POST", "", { proxyKey: proxy.key, body: {} }), 400);
    expect(problem.errors).toEqual({ amount: ["too large"] });
    expect(await destinationSaw("original-errors-marker")).toBe(0);
  });

  it("a proxy transform's AuthenticationError answers the proxy errors page's proxy_error", async () => {
    const tenant = await seedTenant();
    const proxy = await createProxy(tenant, {
      require_auth: false,
      destination_url: loopback("/original-authentication-marker"),
      request_transform: {
        code:
          `const { AuthenticationError } = require('${ORIGINAL}');\n` +
          "module.exports = async function (req) {\n" +
          "  const apiKey = req.args.headers['MY-CUSTOM-API-KEY'];\n" +
          "  if (!apiKey) throw new AuthenticationError('MY-CUSTOM-API-KEY header is required');\n" +
          "  return { body: req.args.body, headers: req.args.headers };\n" +
          "};",
      },
    });
    const problem = expectProxyError(await invoke("POST", "", { proxyKey: proxy.key, body: {} }), 401);
    expect(problem).toMatchObject({
      status: 401,
      detail: "Authentication Failed",
      errors: { error: ["MY-CUSTOM-API-KEY header is required"] },
    });
    expect(await destinationSaw("original-authentication-marker")).toBe(0);
  });

  it("is named among the allowed modules when saved code imports an unknown one", async () => {
    const tenant = await seedTenant();
    const reply = await call("POST", "/reactor-formulas", {
      key: tenant.managementKey,
      body: { name: "Unknown import", type: "private", code: "import _ from 'lodash';\nexport default async () => ({});" },
    });
    expect(expectProblem(reply, 400).errors?.code?.[0]).toContain(`@token-vault/errors, ${ORIGINAL}`);
  });
});
