import { env } from "cloudflare:test";
import { describe, expect, inject, it } from "vitest";
import { ScriptFailedError } from "../../src/sandbox";
import { productionEgressEnv, run, scriptOwner } from "../support/sandbox";

const port = () => new URL(inject("loopbackUrl")).port;

async function seenByLoopback(marker: string): Promise<number> {
  const reply = await fetch(`${inject("loopbackUrl")}/__seen?marker=${marker}`);
  return (await reply.json<{ count: number }>()).count;
}

/** Tenant code that fetches `url` and reports what happened instead of failing. */
function fetchingCode(url: string, init = "{}"): string {
  return `module.exports = async () => {
    try {
      const response = await fetch(${JSON.stringify(url)}, ${init});
      return { raw: { status: response.status, location: response.headers.get("location") } };
    } catch (error) {
      return { raw: { refused: String(error.message) } };
    }
  };`;
}

describe("escape suite: tenant code reaches nothing it was not given", () => {
  it("process.env, the global scope and the module system hold no secret and no binding", async () => {
    const code = `module.exports = async () => {
      let workers;
      try { workers = require("cloudflare:workers"); } catch (error) { workers = error.message; }
      return { raw: {
        processEnv: process.env,
        globals: Object.getOwnPropertyNames(globalThis),
        bindings: [typeof DB, typeof LOADER, typeof VAULT_MASTER_KEYS, typeof env],
        workers,
      } };
    };`;
    const result = (await run(code)) as { raw: { processEnv: object; bindings: string[]; workers: string } };
    const everything = JSON.stringify(result);
    for (const entry of env.VAULT_MASTER_KEYS.split(",")) expect(everything).not.toContain(entry.split(":")[1]);
    expect(everything).not.toContain(env.OPERATOR_API_KEY);
    expect(result.raw.processEnv).toEqual({});
    expect(result.raw.bindings).toEqual(["undefined", "undefined", "undefined", "undefined"]);
    expect(result.raw.workers).toContain('cannot use module "cloudflare:workers"');
  });

  it("a dynamic import of the runtime's modules is refused even in code that skipped the save-time check", async () => {
    const failure = run('module.exports = async () => ({ raw: Object.keys((await import("cloudflare:workers")).env) });');
    await expect(failure).rejects.toBeInstanceOf(ScriptFailedError);
    await expect(failure).rejects.toThrow(/dynamic import\(\) is not supported/);
  });

  it("raw sockets are not available", async () => {
    const failure = run('const net = require("net");\nmodule.exports = () => ({});');
    await expect(failure).rejects.toThrow(/cannot use module "net"/);
  });

  it.each([
    ["127.0.0.1", (marker: string) => `http://127.0.0.1:${port()}/${marker}`],
    ["localhost", (marker: string) => `http://localhost:${port()}/${marker}`],
    ["[::1]", (marker: string) => `http://[::1]:${port()}/${marker}`],
    ["0x7f000001", (marker: string) => `http://0x7f000001:${port()}/${marker}`],
    ["[::ffff:127.0.0.1]", (marker: string) => `http://[::ffff:127.0.0.1]:${port()}/${marker}`],
    [
      "a redirect to loopback",
      (marker: string) => `http://127.0.0.1:${port()}/redirect?to=${encodeURIComponent(`http://127.0.0.1:${port()}/${marker}`)}`,
    ],
  ])("fetch to loopback (%s) is refused with the development setting off, and nothing arrives", async (_, urlFor) => {
    const marker = `escape-${crypto.randomUUID()}`;
    const result = await run(fetchingCode(urlFor(marker)), { env: productionEgressEnv() });
    expect(result).toEqual({ raw: { refused: expect.stringContaining("The destination is not allowed") } });
    expect(await seenByLoopback(marker)).toBe(0);
  });

  it("a redirect is handed to tenant code, not followed by the egress", async () => {
    const marker = `manual-${crypto.randomUUID()}`;
    const target = `${inject("loopbackUrl")}/${marker}`;
    const url = `${inject("loopbackUrl")}/redirect?to=${encodeURIComponent(target)}`;
    expect(await run(fetchingCode(url, '{ redirect: "manual" }'))).toEqual({ raw: { status: 302, location: target } });
    // The one request with the marker is the redirect itself (the marker is in its query).
    expect(await seenByLoopback(marker)).toBe(1);
  });

  it("a redirect tenant code follows is judged again by the policy at every hop", async () => {
    const marker = `follow-${crypto.randomUUID()}`;
    const refusedTarget = `http://[::ffff:127.0.0.1]:${port()}/${marker}`;
    const url = `${inject("loopbackUrl")}/redirect?to=${encodeURIComponent(refusedTarget)}`;
    expect(await run(fetchingCode(url))).toEqual({ raw: { refused: expect.stringContaining("IPv4-mapped") } });
    expect(await seenByLoopback(marker)).toBe(1);
  });

  it.each([
    ["eval", "eval('1 + 1')", /threw EvalError: Code generation from strings disallowed/],
    ["new Function", "new Function('return 1')()", /threw EvalError: Code generation from strings disallowed/],
    ["the Function constructor reached through a function", "(() => {}).constructor('return 1')()", /threw EvalError: Code generation/],
    ["the AsyncFunction constructor", "(async () => {}).constructor('return 1')()", /threw EvalError: Code generation/],
    ["setTimeout with a string", "setTimeout('1 + 1', 0)", /threw TypeError: .*setTimeout/],
  ])("%s is refused by the runtime", async (_, expression, message) => {
    // Caught inside: the vault answers only an untyped error's name, and this checks the runtime's reason.
    const code = `module.exports = async () => {
      try { return { raw: ${expression} }; } catch (error) { return { raw: "threw " + error.name + ": " + error.message }; }
    };`;
    expect(await run(code)).toEqual({ raw: expect.stringMatching(message) });
  });

  it("replacing JSON and other intrinsics does not change what the wrapper reports", async () => {
    const code = `
      JSON.stringify = () => '{"raw":"forged"}';
      JSON.parse = () => ({ args: { forged: true }, configuration: {} });
      Object.freeze = (value) => value;
      module.exports = (req) => ({ raw: req.args });`;
    expect(await run(code, { args: { real: 1 } })).toEqual({ raw: { real: 1 } });
  });

  it("replacing the clock and the timers does not lift the CPU limit", async () => {
    const code = `
      performance.now = () => 0;
      Date.now = () => 0;
      globalThis.setTimeout = (callback) => callback();
      module.exports = () => { for (;;) {} };`;
    await expect(run(code)).rejects.toMatchObject({ status: 500, title: "Script Limit Exceeded" });
  });

  it("replacing Reflect, Math and Number does not lift the allocation limit or expose the raw constructor", async () => {
    const code = `
      let leaked = null;
      Reflect.construct = (target) => { leaked = target; return {}; };
      Reflect.apply = (target) => { leaked = target; return {}; };
      Math.max = () => 0;
      globalThis.Number = () => 0;
      module.exports = () => {
        let refused;
        try { new Uint8Array(2 ** 30); refused = "no"; } catch (error) { refused = error.message; }
        return { raw: { refused, leaked: leaked === null ? "nothing" : "constructor" } };
      };`;
    expect(await run(code)).toEqual({ raw: { refused: expect.stringContaining("exceeds the sandbox limit"), leaked: "nothing" } });
  });

  it("the sandbox's own globals cannot be replaced", async () => {
    const code = `
      const name = "$" + "$vaultTickGlobal";
      let replaced;
      try { Object.defineProperty(globalThis, name, { value: () => {} }); replaced = "redefined"; }
      catch (error) { replaced = error.constructor.name; }
      globalThis[name] = () => {};
      module.exports = (req) => { if (req.args.spin) for (;;) {} return { raw: replaced }; };`;
    const owner = scriptOwner();
    expect(await run(code, { owner })).toEqual({ raw: "TypeError" });
    await expect(run(code, { owner, args: { spin: true } })).rejects.toMatchObject({ title: "Script Limit Exceeded" });
  });

  it("returning a function is a clear error", async () => {
    await expect(run("module.exports = () => () => 'hi';")).rejects.toMatchObject({
      status: 500,
      title: "Invalid Script Result",
      message: "The reactor returned a function, which cannot be sent as JSON",
    });
  });

  it("a function inside the result is a clear error naming its key", async () => {
    await expect(
      run("module.exports = () => ({ body: { callback() {} }, headers: {} });", { kind: "request-transform" }),
    ).rejects.toMatchObject({
      message: 'The request transform returned a function at "callback", which cannot be sent as JSON',
    });
  });

  it("returning a cyclic object is a clear error", async () => {
    await expect(run("module.exports = () => { const raw = {}; raw.self = raw; return { raw }; };")).rejects.toMatchObject({
      status: 500,
      title: "Invalid Script Result",
      message: "The reactor returned a cyclic object, which cannot be sent as JSON",
    });
  });

  it("returning a BigInt is a clear error", async () => {
    await expect(run("module.exports = () => ({ raw: 10n });")).rejects.toMatchObject({
      message: 'The reactor returned a BigInt at "raw": convert it to a string or a number',
    });
  });

  it("two owners never share module state, even with the same code", async () => {
    const code = "let calls = 0;\nmodule.exports = () => ({ raw: ++calls });";
    const first = scriptOwner("reactor", "tenant-a");
    const second = scriptOwner("reactor", "tenant-b");
    expect(await run(code, { owner: first })).toEqual({ raw: 1 });
    expect(await run(code, { owner: first })).toEqual({ raw: 2 });
    expect(await run(code, { owner: second })).toEqual({ raw: 1 });
  });

  it("an isolate is reused while the code is unchanged and replaced when it changes", async () => {
    const owner = scriptOwner();
    const version = (tag: string) => `let calls = 0;\nmodule.exports = () => ({ raw: "${tag}" + ++calls });`;
    expect(await run(version("a"), { owner })).toEqual({ raw: "a1" });
    expect(await run(version("a"), { owner })).toEqual({ raw: "a2" });
    expect(await run(version("b"), { owner })).toEqual({ raw: "b1" });
  });
});
