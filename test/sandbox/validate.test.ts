import { describe, expect, it } from "vitest";
import { ValidationError } from "../../src/errors";
import { validateCode } from "../../src/sandbox";

const FIELD = "request_transform.code";

/** The ValidationError validateCode throws, for its message and field errors. */
function rejection(code: string): ValidationError {
  try {
    validateCode(code, FIELD);
  } catch (error) {
    expect(error).toBeInstanceOf(ValidationError);
    return error as ValidationError;
  }
  throw new Error("the code was accepted");
}

describe("saving tenant code", () => {
  it.each([
    ["an async CommonJS function", "module.exports = async function (req) { return req.args; };"],
    ["a synchronous function", "module.exports = function (req) { return req.args; };"],
    ["an arrow function", "module.exports = (req) => ({ raw: req.args });"],
    ["a function declared first", "async function handler(req) { return {}; }\nmodule.exports = handler;"],
    ["an ES module default export", "export default async function (req) { return {}; }"],
    ["an ES module default arrow", 'import crypto from "crypto";\nexport default (req) => ({ raw: crypto.randomUUID() });'],
    ["a transpiled default export", "exports.default = async (req) => ({});"],
    [
      "code using require of a built-in",
      'const { createHash } = require("crypto");\nmodule.exports = (req) => ({ raw: createHash("sha256").digest("hex") });',
    ],
    ["strict mode code", '"use strict";\nmodule.exports = async (req) => ({});'],
  ])("accepts %s", (_, code) => {
    expect(() => validateCode(code, FIELD)).not.toThrow();
  });

  it("refuses code longer than 50,000 characters, naming the field", () => {
    const code = `module.exports = async () => ({});\n//${"x".repeat(50_000)}`;
    const error = rejection(code);
    expect(error.status).toBe(400);
    expect(error.errors?.[FIELD]?.[0]).toContain("at most 50000 characters");
  });

  it("accepts code of exactly 50,000 characters", () => {
    const head = "module.exports = async () => ({});\n//";
    expect(() => validateCode(head + "x".repeat(50_000 - head.length), FIELD)).not.toThrow();
  });

  it("refuses code that does not parse, naming the line and column", () => {
    const error = rejection("module.exports = async function (req) {\n  const x = ;\n};");
    expect(error.status).toBe(400);
    expect(error.errors?.[FIELD]).toEqual([expect.stringMatching(/^line 2, column 13: syntax error: Unexpected token/)]);
    expect(error.message).toContain(FIELD);
  });

  it("refuses an ES module that does not parse, naming the line and column", () => {
    const error = rejection('import crypto from "crypto";\nexport default async (req) => {\n  return {\n};');
    expect(error.errors?.[FIELD]?.[0]).toMatch(/^line 4, column 3: syntax error/);
  });

  it("refuses code that exports nothing", () => {
    const error = rejection("async function handler(req) { return {}; }");
    expect(error.errors?.[FIELD]?.[0]).toBe("line 1, column 1: the code must export a function: module.exports = async function (req) {…}");
  });

  it("refuses code that exports something other than a function, pointing at it", () => {
    const error = rejection("const x = 1;\nmodule.exports = { handler: async () => ({}) };");
    expect(error.errors?.[FIELD]?.[0]).toBe("line 2, column 18: module.exports must be a function");
  });

  it("refuses an ES module without a default export", () => {
    const error = rejection("export const handler = async () => ({});");
    expect(error.errors?.[FIELD]?.[0]).toContain("the module must export a function");
  });

  it("refuses an ES module whose default export is not a function", () => {
    const error = rejection("export default { run() {} };");
    expect(error.errors?.[FIELD]?.[0]).toBe("line 1, column 16: the default export must be a function");
  });

  it("refuses imports of modules other than the allowed built-ins and the errors module", () => {
    const error = rejection('import fs from "fs";\nexport default async () => ({});');
    expect(error.errors?.[FIELD]?.[0]).toContain('line 1, column 1: cannot use module "fs"');
    expect(() =>
      validateCode('import { BadRequestError } from "@token-vault/errors";\nexport default async () => ({});', FIELD),
    ).not.toThrow();
    expect(() => validateCode('import { Buffer } from "node:buffer";\nexport default async () => ({});', FIELD)).not.toThrow();
  });

  it("refuses dynamic import()", () => {
    const error = rejection('module.exports = async () => {\n  await import("cloudflare:sockets");\n};');
    expect(error.errors?.[FIELD]?.[0]).toMatch(/^line 2, column 9: dynamic import\(\) is not supported/);
  });

  it("refuses with statements", () => {
    const error = rejection("module.exports = function (req) {\n  with (req) { return args; }\n};");
    expect(error.errors?.[FIELD]?.[0]).toBe("line 2, column 3: with statements are not supported");
  });

  it("refuses a top-level let, const or class named require", () => {
    const error = rejection("const require = (name) => name;\nmodule.exports = async () => ({});");
    expect(error.errors?.[FIELD]?.[0]).toBe(
      "line 1, column 7: require is provided by the sandbox and cannot be declared with let, const or class",
    );
  });

  it("refuses names reserved by the sandbox", () => {
    const error = rejection("var $$vaultTick = () => {};\nmodule.exports = async () => ({});");
    expect(error.errors?.[FIELD]?.[0]).toContain("line 1, column 5: names starting with $$vault are reserved");
  });
});
