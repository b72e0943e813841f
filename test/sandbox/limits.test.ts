import { env, SELF } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import type { Bindings } from "../../src/env";
import { ScriptFailedError, ScriptTimeoutError } from "../../src/sandbox";
import { run, scriptOwner } from "../support/sandbox";

const CPU_LIMIT = { status: 500, title: "Script Limit Exceeded", message: "The reactor exceeded its CPU limit and was stopped" };

describe("limits", () => {
  it("an input over 1 MB is refused before the script runs", async () => {
    const failure = run("module.exports = () => ({});", { args: { blob: "x".repeat(1024 * 1024) } });
    await expect(failure).rejects.toMatchObject({ status: 413, message: "The input of the reactor exceeds 1048576 bytes" });
  });

  it("an infinite loop is stopped with a clear error", async () => {
    const failure = run("module.exports = async () => { while (true) {} };");
    await expect(failure).rejects.toBeInstanceOf(ScriptFailedError);
    await expect(failure).rejects.toMatchObject(CPU_LIMIT);
  });

  it("the vault goes on serving other requests when a script loops", async () => {
    const looping = run("module.exports = () => { for (;;) {} };").catch((error: unknown) => error);
    const health = await SELF.fetch("http://vault.test/health");
    expect(health.status).toBe(200);
    expect(await looping).toMatchObject(CPU_LIMIT);
  });

  it("time spent waiting does not count against the CPU limit", async () => {
    const code = `module.exports = async () => {
      let sum = 0;
      for (let round = 0; round < 3; round++) {
        await new Promise((resolve) => setTimeout(resolve, 150));
        for (let i = 0; i < 1000; i++) sum += i;
      }
      return { raw: sum };
    };`;
    expect(await run(code)).toEqual({ raw: 3 * 499500 });
  });

  it("an infinite loop while the module loads is stopped", async () => {
    await expect(run("for (;;) {}\nmodule.exports = () => ({});")).rejects.toMatchObject({
      status: 500,
      message: expect.stringContaining("CPU limit exceeded"),
    });
  });

  it("an endless chain of promises that never yields is stopped", async () => {
    await expect(run("module.exports = async () => { for (;;) await null; };")).rejects.toMatchObject(CPU_LIMIT);
  });

  it("endless recursion ends with the runtime's stack overflow", async () => {
    await expect(run("function down(n) { return down(n + 1) + 1; }\nmodule.exports = () => down(0);")).rejects.toMatchObject({
      status: 500,
      message: "The reactor threw RangeError",
    });
  });

  it("catching the limit error does not let the script run on", async () => {
    const code = "module.exports = () => { for (;;) { try { for (;;) {} } catch (stopped) { continue; } } };";
    await expect(run(code)).rejects.toMatchObject(CPU_LIMIT);
  });

  it("the same script runs again after it was stopped", async () => {
    const owner = scriptOwner();
    const code = "module.exports = (req) => { while (req.args.spin) {} return { raw: 'done' }; };";
    await expect(run(code, { owner, args: { spin: true } })).rejects.toMatchObject(CPU_LIMIT);
    expect(await run(code, { owner, args: { spin: false } })).toEqual({ raw: "done" });
  });

  it("a promise that never settles ends with a clear error", async () => {
    await expect(run("module.exports = () => new Promise(() => {});")).rejects.toMatchObject({
      status: 500,
      message: "The reactor never settled its result (a promise that never resolves)",
    });
  });

  it("a script past the wall-clock limit ends with 504", async () => {
    const shortWallClock = { ...env, SANDBOX_WALL_TIME_MS: "200" } as Bindings;
    const failure = run("module.exports = () => new Promise((resolve) => setTimeout(resolve, 60000));", { env: shortWallClock });
    await expect(failure).rejects.toBeInstanceOf(ScriptTimeoutError);
    await expect(failure).rejects.toMatchObject({ status: 504, message: "The reactor did not finish within 200 ms" });
  });

  it.each([
    ["new ArrayBuffer", "new ArrayBuffer(2 ** 30)"],
    ["new Uint8Array", "new Uint8Array(2 ** 30)"],
    ["new Float64Array", "new Float64Array(2 ** 27)"],
    ["a typed array from an array-like", "Uint8Array.from({ length: 2 ** 30 })"],
    ["Buffer.alloc", 'require("buffer").Buffer.alloc(2 ** 30)'],
    ["Buffer.allocUnsafe", "Buffer.allocUnsafe(2 ** 30)"],
    ["new Array", "new Array(2 ** 27).fill(0)"],
    ["a constructor reached through a prototype", "new (new Uint8Array(1).buffer.constructor)(2 ** 30)"],
  ])("a 1 GB allocation (%s) ends with a clear error", async (_, allocation) => {
    await expect(run(`module.exports = () => { const big = ${allocation}; return { raw: big.length }; };`)).rejects.toMatchObject({
      status: 500,
      title: "Script Limit Exceeded",
      message: expect.stringContaining("exceeds the sandbox limit of 134217728 bytes"),
    });
  });

  it("a 1 GB string ends with the runtime's clear error", async () => {
    await expect(run("module.exports = () => ({ raw: 'x'.repeat(2 ** 30).length });")).rejects.toMatchObject({
      status: 500,
      message: "The reactor threw RangeError",
    });
  });

  it("allocations under the limit work", async () => {
    expect(await run("module.exports = () => ({ raw: new Uint8Array(16 * 1024 * 1024).length + Buffer.alloc(1024).length });")).toEqual({
      raw: 16 * 1024 * 1024 + 1024,
    });
  });
});
