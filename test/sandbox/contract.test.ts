import { describe, expect, it } from "vitest";
import { CustomResponseError, ScriptFailedError, TenantError } from "../../src/sandbox";
import { run, TYPED_ERRORS } from "../support/sandbox";

describe("code contract", () => {
  it("a CommonJS async function receives args and configuration, and no bt without an application", async () => {
    const result = await run(
      "module.exports = async function (req) { return { raw: { args: req.args, configuration: req.configuration, bt: typeof req.bt } }; };",
      {
        args: { card: "4242" },
        configuration: { region: "eu" },
      },
    );
    expect(result).toEqual({ raw: { args: { card: "4242" }, configuration: { region: "eu" }, bt: "undefined" } });
  });

  it("a synchronous function works", async () => {
    expect(await run("module.exports = function (req) { return { raw: req.args.n + 1 }; };", { args: { n: 1 } })).toEqual({ raw: 2 });
  });

  it("an arrow function works", async () => {
    expect(await run("module.exports = (req) => ({ raw: req.args.n * 2 });", { args: { n: 21 } })).toEqual({ raw: 42 });
  });

  it("an ES module default export works", async () => {
    const code =
      'import { createHash } from "crypto";\nexport default async (req) => ({ raw: createHash("sha256").update(req.args.text).digest("hex").slice(0, 8) });';
    expect(await run(code, { args: { text: "abc" } })).toEqual({ raw: "ba7816bf" });
  });

  it("a transpiled default export (exports.default) works", async () => {
    expect(await run("exports.default = async () => ({ raw: 'ok' });")).toEqual({ raw: "ok" });
  });

  it("require of the Node built-ins crypto, buffer, querystring, url, util and stream works", async () => {
    const code = `
      const crypto = require("crypto");
      const { Buffer } = require("buffer");
      const querystring = require("querystring");
      const { URL } = require("url");
      const util = require("util");
      const { Readable } = require("stream");
      module.exports = async () => ({
        raw: {
          hash: crypto.createHash("sha256").update("x").digest("hex").slice(0, 6),
          base64: Buffer.from("hi").toString("base64"),
          query: querystring.stringify({ a: 1, b: "two" }),
          host: new URL("https://example.com/path").host,
          format: util.format("%s=%d", "n", 3),
          stream: typeof Readable.from,
          prefixed: typeof require("node:crypto").randomUUID,
        },
      });`;
    expect(await run(code)).toEqual({
      raw: {
        hash: "2d7116",
        base64: "aGk=",
        query: "a=1&b=two",
        host: "example.com",
        format: "n=3",
        stream: "function",
        prefixed: "function",
      },
    });
  });

  it("require of any other module is a clear error naming it", async () => {
    const failure = run('const _ = require("lodash");\nmodule.exports = async () => ({});');
    await expect(failure).rejects.toBeInstanceOf(ScriptFailedError);
    await expect(failure).rejects.toThrow(/cannot use module "lodash": tenant code may use only crypto, buffer/);
  });
});

describe("inputs and return contracts", () => {
  it("a request transform receives body, headers, method, path and query, and returns {body, headers}", async () => {
    const code = `module.exports = async (req) => ({
      body: { ...req.args.body, seen: [req.args.method, req.args.path, req.args.query] },
      headers: { ...req.args.headers, "x-key": req.configuration.key },
    });`;
    const args = { body: { amount: 5 }, headers: { "content-type": "application/json" }, method: "POST", path: "/charges", query: "?a=1" };
    const result = await run(code, { kind: "request-transform", args, configuration: { key: "secret" } });
    expect(result).toEqual({
      body: { amount: 5, seen: ["POST", "/charges", "?a=1"] },
      headers: { "content-type": "application/json", "x-key": "secret" },
    });
  });

  it("a response transform receives the destination's body and headers and returns {body, headers}", async () => {
    const code = "module.exports = (req) => ({ body: { wrapped: req.args.body }, headers: { 'x-status': 'ok' } });";
    const result = await run(code, { kind: "response-transform", args: { body: { id: 1 }, headers: { server: "x" } } });
    expect(result).toEqual({ body: { wrapped: { id: 1 } }, headers: { "x-status": "ok" } });
  });

  it("header values that are numbers or booleans become strings", async () => {
    const result = await run("module.exports = () => ({ body: null, headers: { 'content-length': 12, 'x-flag': true } });", {
      kind: "response-transform",
    });
    expect(result).toEqual({ body: null, headers: { "content-length": "12", "x-flag": "true" } });
  });

  it("a transform may leave the body out: it is null", async () => {
    expect(await run("module.exports = () => ({ headers: {} });", { kind: "request-transform" })).toEqual({ body: null, headers: {} });
  });

  it("a reactor returns raw and tokenize, both optional", async () => {
    expect(await run("module.exports = () => ({ raw: { a: 1 }, tokenize: { card: { type: 'card', data: {} } } });")).toEqual({
      raw: { a: 1 },
      tokenize: { card: { type: "card", data: {} } },
    });
    expect(await run("module.exports = () => ({});")).toEqual({});
  });

  it.each([
    ["request-transform", "module.exports = () => 'text';", "The request transform must return {body, headers}, not a string"],
    ["request-transform", "module.exports = () => {};", "The request transform must return {body, headers}, not null"],
    ["response-transform", "module.exports = () => [1];", "The response transform must return {body, headers}, not an array"],
    [
      "request-transform",
      "module.exports = () => ({ body: {} });",
      "The request transform must return {body, headers}; headers is missing",
    ],
    ["request-transform", "module.exports = () => ({ body: {}, headers: { a: { b: 1 } } });", "headers must be an object of strings"],
    ["response-transform", "module.exports = () => ({ body: {}, headers: {}, status: 201 });", 'unexpected "status"'],
    ["reactor", "module.exports = () => 42;", "The reactor must return {raw?, tokenize?}, not a number"],
    ["reactor", "module.exports = () => ({ raw: 1, tokenise: {} });", 'The reactor must return {raw?, tokenize?}; unexpected "tokenise"'],
    ["reactor", "module.exports = () => ({ tokenize: 'x' });", "tokenize must be an object or an array, not a string"],
  ] as const)("a %s returning the wrong shape is a clear error: %s", async (kind, code, message) => {
    const failure = run(code, { kind });
    await expect(failure).rejects.toBeInstanceOf(ScriptFailedError);
    await expect(failure).rejects.toMatchObject({ status: 500, title: "Invalid Script Result", message: expect.stringContaining(message) });
  });
});

describe("errors thrown by tenant code", () => {
  it.each(TYPED_ERRORS)("%s is a %i with detail %s and its message in errors", async (name, status, detail) => {
    const code = `const { ${name} } = require("@token-vault/errors");\nmodule.exports = async () => { throw new ${name}("card declined"); };`;
    const failure = run(code);
    await expect(failure).rejects.toBeInstanceOf(TenantError);
    await expect(failure).rejects.toMatchObject({ status, errors: { error: ["card declined"] }, message: detail });
  });

  it.each([
    ["a string", '"bad card"', { error: ["bad card"] }],
    ["an array", '["bad card", "bad expiry"]', { error: ["bad card", "bad expiry"] }],
    ["an object", '{ card: "invalid", expiry: ["past", "malformed"] }', { card: ["invalid"], expiry: ["past", "malformed"] }],
    ["an Error", 'new Error("upstream said no")', { error: ["upstream said no"] }],
  ])("a typed error takes %s", async (_, argument, errors) => {
    const code = `const { BadRequestError } = require("@token-vault/errors");\nmodule.exports = () => { throw new BadRequestError(${argument}); };`;
    await expect(run(code)).rejects.toMatchObject({ status: 400, errors });
  });

  it("typed errors can be imported by an ES module", async () => {
    const code = 'import { RateLimitError } from "@token-vault/errors";\nexport default () => { throw new RateLimitError("slow down"); };';
    await expect(run(code)).rejects.toMatchObject({ status: 429, errors: { error: ["slow down"] } });
  });

  it("CustomHttpResponseError is returned to the caller as given", async () => {
    const code = `const { CustomHttpResponseError } = require("@token-vault/errors");
      module.exports = () => { throw new CustomHttpResponseError({ status: 418, headers: { "x-teapot": "yes" }, body: { brewed: false } }); };`;
    const error = await run(code, { kind: "request-transform" }).catch((caught: unknown) => caught);
    expect(error).toBeInstanceOf(CustomResponseError);
    const custom = error as CustomResponseError;
    expect(custom).toMatchObject({ status: 418, headers: { "x-teapot": "yes" }, body: { brewed: false } });
    const response = custom.toResponse();
    expect(response.status).toBe(418);
    expect(response.headers.get("x-teapot")).toBe("yes");
    expect(response.headers.get("content-type")).toBe("application/json");
    expect(await response.json()).toEqual({ brewed: false });
  });

  it("a CustomHttpResponseError with a string body is sent as is", async () => {
    const code = `const { CustomHttpResponseError } = require("@token-vault/errors");
      module.exports = () => { throw new CustomHttpResponseError({ status: 302, headers: { location: "https://example.com/" }, body: "moved" }); };`;
    const response = ((await run(code).catch((caught: unknown) => caught)) as CustomResponseError).toResponse();
    expect(response.status).toBe(302);
    expect(response.headers.get("location")).toBe("https://example.com/");
    expect(await response.text()).toBe("moved");
  });

  it.each([[700], [101], ["'200'"]])("a CustomHttpResponseError with status %s (outside 200-599) is a clear error", async (status) => {
    const code = `const { CustomHttpResponseError } = require("@token-vault/errors");
      module.exports = () => { throw new CustomHttpResponseError({ status: ${status}, body: {} }); };`;
    await expect(run(code)).rejects.toMatchObject({ status: 500, message: expect.stringContaining("status outside 200-599") });
  });

  it("anything else thrown is a 500 naming the error, without its message, which may quote data", async () => {
    const failure = run("module.exports = () => { throw new TypeError('card.number is undefined'); };");
    await expect(failure).rejects.toBeInstanceOf(ScriptFailedError);
    await expect(failure).rejects.toMatchObject({ status: 500, message: "The reactor threw TypeError" });
  });

  it("a thrown non-Error value is a 500 that does not repeat it", async () => {
    await expect(run("module.exports = async () => { throw 'plain string'; };")).rejects.toMatchObject({
      status: 500,
      message: "The reactor threw an error",
    });
  });

  it.each([
    ["a value", "4242424242424242 expired"],
    ["a name longer than 50 characters", "E".repeat(51)],
  ])("an error whose name is not an identifier of at most 50 characters (%s) is answered as an error", async (_, name) => {
    const code = `module.exports = () => { const error = new Error("x"); error.name = ${JSON.stringify(name)}; throw error; };`;
    await expect(run(code)).rejects.toMatchObject({ status: 500, message: "The reactor threw an error" });
  });

  it("a typed error renamed to a value is answered as an error", async () => {
    const code = `const { BadRequestError } = require("@token-vault/errors");
      module.exports = () => { const error = new BadRequestError("no"); error.name = "4242 4242"; throw error; };`;
    await expect(run(code)).rejects.toMatchObject({ status: 500, message: "The reactor threw an error" });
  });

  it("an error whose name getter throws is still a 500 that quotes nothing", async () => {
    const code = `module.exports = () => {
      const error = new Error("x");
      Object.defineProperty(error, "name", { get() { const inner = new Error("4242424242424242"); Object.defineProperty(inner, "name", { get() { throw "4242424242424242"; } }); throw inner; } });
      throw error;
    };`;
    await expect(run(code)).rejects.toMatchObject({ status: 500, message: "The reactor threw an error" });
  });

  it("an error thrown while the module loads is a 500 with its message", async () => {
    await expect(run("throw new Error('bad setup');\nmodule.exports = () => ({});")).rejects.toMatchObject({
      status: 500,
      message: expect.stringContaining("bad setup"),
    });
  });
});
