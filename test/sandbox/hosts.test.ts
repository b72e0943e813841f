import { env } from "cloudflare:test";
import { afterEach, describe, expect, it, vi } from "vitest";
import type { ScriptHost, ScriptKind, ScriptOwner } from "../../src/context";
import { configOf } from "../../src/env";
import { RevealedValues } from "../../src/errors";
import { SANDBOX } from "../../src/limits";
import { ScriptFailedError } from "../../src/sandbox";
import { DispatchHost } from "../../src/sandbox/dispatch-host";
import { LoaderHost } from "../../src/sandbox/loader-host";
import { requestContext } from "../support/context";
import { fakeCloudflare } from "../support/fake-cloudflare";
import { scriptOwner } from "../support/sandbox";

/**
 * The ScriptHost port (src/context.ts), one conformance suite for both of its hosts: the Worker
 * Loader, and Workers for Platforms against the fake Cloudflare API and dispatch namespace.
 */
const HOSTS: { name: string; build(): ScriptHost }[] = [
  { name: "Worker Loader", build: () => new LoaderHost(env, configOf(env), new RevealedValues()) },
  {
    name: "Workers for Platforms",
    build() {
      const { env: bindings } = fakeCloudflare();
      return new DispatchHost(bindings, configOf(bindings), new RevealedValues(), requestContext(bindings).control);
    },
  },
];

describe.each(HOSTS)("the $name host", ({ build }) => {
  afterEach(() => {
    vi.restoreAllMocks();
  });

  /** Publishes the code as its owner's, as saving a proxy or formula does, then runs it. */
  async function publishAndRun(host: ScriptHost, code: string, args: unknown = {}, kind: ScriptKind = "reactor", owner?: ScriptOwner) {
    const scriptOwnerOfRun = owner ?? scriptOwner(kind);
    await host.publish(scriptOwnerOfRun, code);
    // Awaited, not returned: workerd reports a rejection adopted one microtask late as unhandled.
    return await host.run({ owner: scriptOwnerOfRun, code, input: { args, configuration: {} }, application: null });
  }

  it("a published script runs on its input and answers its result", async () => {
    const result = await publishAndRun(build(), "module.exports = async (req) => ({ raw: { doubled: req.args.n * 2 } });", { n: 21 });
    expect(result).toEqual({ raw: { doubled: 42 } });
  });

  it("an ES module runs as a CommonJS script does", async () => {
    expect(await publishAndRun(build(), "export default async (req) => ({ raw: req.args.text.toUpperCase() });", { text: "ok" })).toEqual({
      raw: "OK",
    });
  });

  it("a transform's result is held to the {body, headers} contract of its kind", async () => {
    await expect(publishAndRun(build(), "module.exports = () => 42;", {}, "request-transform")).rejects.toBeInstanceOf(ScriptFailedError);
    expect(
      await publishAndRun(build(), "module.exports = () => ({ body: { a: 1 }, headers: { n: 2 } });", {}, "response-transform"),
    ).toEqual({ body: { a: 1 }, headers: { n: "2" } });
  });

  it("a typed error of the errors module answers its status and field errors", async () => {
    const code =
      'const { BadRequestError } = require("@token-vault/errors");\nmodule.exports = () => { throw new BadRequestError({ card: "invalid" }); };';
    await expect(publishAndRun(build(), code, {}, "request-transform")).rejects.toMatchObject({
      status: 400,
      errors: { card: ["invalid"] },
    });
  });

  it("a script that throws is a ScriptFailedError", async () => {
    await expect(publishAndRun(build(), 'module.exports = () => { throw new Error("broken"); };')).rejects.toBeInstanceOf(
      ScriptFailedError,
    );
  });

  it("an input over the limit is refused with a 413 before the script runs", async () => {
    const args = { huge: "x".repeat(SANDBOX.inputMaxBytes) };
    await expect(publishAndRun(build(), "module.exports = () => ({ raw: null });", args)).rejects.toMatchObject({ status: 413 });
  });

  it("publishing again replaces the owner's code", async () => {
    const host = build();
    const owner = scriptOwner();
    expect(await publishAndRun(host, "module.exports = () => ({ raw: 'first' });", {}, "reactor", owner)).toEqual({ raw: "first" });
    expect(await publishAndRun(host, "module.exports = () => ({ raw: 'second' });", {}, "reactor", owner)).toEqual({ raw: "second" });
  });

  it("a run runs the code it is given, whichever version of its owner's code was published last", async () => {
    const host = build();
    const owner = scriptOwner();
    const first = "module.exports = () => ({ raw: 'first' });";
    await host.publish(owner, first);
    await host.publish(owner, "module.exports = () => ({ raw: 'second' });");
    expect(await host.run({ owner, code: first, input: { args: {}, configuration: {} }, application: null })).toEqual({ raw: "first" });
  });
});
