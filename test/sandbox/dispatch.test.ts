import { env } from "cloudflare:test";
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import type { ScriptOwner } from "../../src/context";
import { OUTBOUND_PARAMETER, OUTBOUND_SERVICE } from "../../src/egress/outbound";
import type { Bindings } from "../../src/env";
import { ScriptFailedError } from "../../src/sandbox";
import { dispatchScriptName } from "../../src/sandbox/dispatch-host";
import outboundConfig from "../../wrangler.egress.toml?raw";
import vaultConfig from "../../wrangler.toml?raw";
import { sandboxContext } from "../support/context";
import { FAKE_API_BASE, type FakeCloudflare, fakeCloudflare } from "../support/fake-cloudflare";
import { scriptOwner } from "../support/sandbox";

const CODE = "module.exports = async (req) => ({ raw: { doubled: req.args.n * 2 } });";

/** The host a tenant context builds for these bindings (SANDBOX_HOST picks it). */
const sandboxOf = (bindings: Bindings) => sandboxContext("tenant-dispatch", bindings).sandbox;

function runDispatched(cloudflare: FakeCloudflare, owner: ScriptOwner, code = CODE, args: unknown = { n: 21 }) {
  return sandboxOf(cloudflare.env).run({ owner, code, input: { args, configuration: {} }, application: null });
}

describe("Workers for Platforms host", () => {
  let cloudflare: FakeCloudflare;

  beforeEach(() => {
    cloudflare = fakeCloudflare();
  });

  afterEach(() => {
    vi.restoreAllMocks();
  });

  it("publishing uploads the script to the namespace as one multipart form", async () => {
    const owner = scriptOwner("reactor", "tenant-dispatch");
    await sandboxOf(cloudflare.env).publish(owner, CODE);

    expect(cloudflare.calls).toHaveLength(1);
    const [upload] = cloudflare.calls;
    expect(upload).toMatchObject({
      method: "PUT",
      url: expect.stringMatching(
        new RegExp(
          `^${FAKE_API_BASE.replace(/\./g, "\\.")}/accounts/account-1234/workers/dispatch/namespaces/tenant-scripts/scripts/reactor-[0-9a-f]{40}$`,
        ),
      ),
      authorization: "Bearer cloudflare-api-token-for-tests",
      contentType: expect.stringMatching(/^multipart\/form-data; boundary=/),
    });
    expect(upload!.parts.map(({ name, type }) => ({ name, type }))).toEqual([
      { name: "metadata", type: "" },
      { name: "sandbox.js", type: "application/javascript+module" },
      { name: "prelude.js", type: "application/javascript+module" },
      { name: "builtins.js", type: "application/javascript" },
      { name: "@token-vault/errors", type: "application/javascript+module" },
      { name: "@basis-theory/basis-theory-reactor-formulas-sdk-js", type: "application/javascript+module" },
      { name: "tenant.js", type: "application/javascript" },
    ]);
    expect(JSON.parse(upload!.parts[0]!.text)).toEqual({
      main_module: "sandbox.js",
      compatibility_date: "2025-11-10",
      compatibility_flags: ["nodejs_compat"],
      bindings: [],
      tags: ["tenant-tenant-dispatch", "reactor"],
    });
    expect(upload!.parts[6]!.text).toContain("{ raw: { doubled: req.args.n * 2 } }");
  });

  it("an ES module is uploaded as a module part", async () => {
    await sandboxOf(cloudflare.env).publish(scriptOwner(), "export default async () => ({});");
    expect(cloudflare.calls[0]!.parts.find((part) => part.name === "tenant.js")?.type).toBe("application/javascript+module");
  });

  it("the script's name is made of its owner and its code, and holds no tenant-chosen text", async () => {
    const owner = scriptOwner("request-transform", "tenant-dispatch");
    await sandboxOf(cloudflare.env).publish(owner, CODE);
    await sandboxOf(cloudflare.env).publish(owner, CODE);
    await sandboxOf(cloudflare.env).publish(owner, "module.exports = () => ({ body: {}, headers: {} });");
    await sandboxOf(cloudflare.env).publish({ ...owner, kind: "response-transform" }, CODE);
    const [first, again, otherCode, otherKind] = cloudflare.calls.map((call) => call.url.split("/").at(-1));
    expect(again).toBe(first);
    expect(otherCode).not.toBe(first);
    expect(otherKind).not.toBe(first);
    expect(first).toMatch(/^request-transform-[0-9a-f]{40}$/);
    expect(first).toBe(await dispatchScriptName(owner, CODE));
  });

  it("a published script runs through the dispatch namespace with the limits and the egress policy for its outbound worker", async () => {
    const owner = scriptOwner();
    await sandboxOf(cloudflare.env).publish(owner, CODE);
    expect(await runDispatched(cloudflare, owner)).toEqual({ raw: { doubled: 42 } });
    const name = cloudflare.calls[0]!.url.split("/").at(-1);
    const limits = { cpuMs: 200, subRequests: 50 };
    const egress = { allowInsecure: true, timeoutMs: 30_000 };
    // First the check that the outbound worker carries the script's fetches, then the run.
    expect(cloudflare.dispatches).toEqual([
      { name, options: { limits, outbound: { EGRESS: { ...egress, check: expect.any(String) } } } },
      { name, options: { limits, outbound: { EGRESS: egress } } },
    ]);
  });

  it("the outbound worker's own configuration and the binding the vault documents name the service and parameter it uses", () => {
    expect(outboundConfig).toContain(`name = "${OUTBOUND_SERVICE}"`);
    expect(outboundConfig).toContain('main = "src/egress/outbound-worker.ts"');
    expect(vaultConfig).toContain(`# outbound = { service = "${OUTBOUND_SERVICE}", parameters = ["${OUTBOUND_PARAMETER}"] }`);
  });

  it("the outbound worker is checked once per namespace binding and isolate, not on every run", async () => {
    const owner = scriptOwner();
    await sandboxOf(cloudflare.env).publish(owner, CODE);
    await runDispatched(cloudflare, owner);
    await runDispatched(cloudflare, owner);
    const checks = cloudflare.dispatches.filter((dispatch) => dispatch.options?.outbound?.EGRESS?.check !== undefined);
    expect(checks).toHaveLength(1);
    expect(cloudflare.dispatches).toHaveLength(3);
  });

  it("a script run through the namespace keeps the sandbox's contracts and errors", async () => {
    const owner = scriptOwner("request-transform");
    const code =
      'const { BadRequestError } = require("@token-vault/errors");\nmodule.exports = () => { throw new BadRequestError({ card: "invalid" }); };';
    await sandboxOf(cloudflare.env).publish(owner, code);
    await expect(runDispatched(cloudflare, owner, code)).rejects.toMatchObject({ status: 400, errors: { card: ["invalid"] } });
  });

  it("a run dispatches to the script of the code it is given: code the namespace lacks is recorded, uploaded, then run", async () => {
    const owner = scriptOwner();
    await sandboxOf(cloudflare.env).publish(owner, CODE);
    const unpublished = "module.exports = () => ({ raw: 'unpublished' });";
    expect(await runDispatched(cloudflare, owner, unpublished)).toEqual({ raw: "unpublished" });
    const name = await dispatchScriptName(owner, unpublished);
    expect(cloudflare.calls.map((call) => [call.method, call.url.split("/").at(-1)])).toEqual([
      ["PUT", await dispatchScriptName(owner, CODE)],
      ["PUT", name],
    ]);
    expect(await env.DB.prepare("SELECT owner_id FROM dispatch_scripts WHERE name = ?").bind(name).first()).toEqual({ owner_id: owner.id });
  });

  it("a run whose upload the API refuses fails as the script's failure to run", async () => {
    const owner = scriptOwner();
    cloudflare.failNext(500, ["internal error"]);
    await expect(runDispatched(cloudflare, owner)).rejects.toBeInstanceOf(ScriptFailedError);
  });

  it("an upload is recorded before it is made, so that the cron finds what the API may have stored", async () => {
    const owner = scriptOwner("reactor", "tenant-dispatch");
    cloudflare.failNext(500, ["internal error"]);
    await expect(sandboxOf(cloudflare.env).publish(owner, CODE)).rejects.toMatchObject({ status: 502 });
    const recorded = await env.DB.prepare("SELECT tenant_id, kind, owner_id FROM dispatch_scripts WHERE name = ?")
      .bind(await dispatchScriptName(owner, CODE))
      .first();
    expect(recorded).toEqual({ tenant_id: "tenant-dispatch", kind: "reactor", owner_id: owner.id });
  });

  it("an upload the API refuses is a 502 carrying the API's message", async () => {
    cloudflare.failNext(400, ["Uncaught SyntaxError: Unexpected token"]);
    await expect(sandboxOf(cloudflare.env).publish(scriptOwner(), CODE)).rejects.toMatchObject({
      status: 502,
      title: "Script Publish Failed",
      message: "Could not upload the script in the dispatch namespace (400): Uncaught SyntaxError: Unexpected token",
    });
  });

  it("a missing account, token or namespace is a configuration error that names them and no secret", async () => {
    const incomplete = { ...cloudflare.env, CLOUDFLARE_ACCOUNT_ID: undefined } as unknown as Bindings;
    const error = await sandboxOf(incomplete)
      .publish(scriptOwner(), CODE)
      .catch((caught: unknown) => caught as Error);
    expect(error).toMatchObject({
      status: 500,
      message: expect.stringContaining("CLOUDFLARE_ACCOUNT_ID, CLOUDFLARE_API_TOKEN and DISPATCH_NAMESPACE"),
    });
    expect(JSON.stringify({ message: error?.message })).not.toContain("cloudflare-api-token-for-tests");
    expect(cloudflare.calls).toHaveLength(0);
  });

  it("with the Worker Loader host, publishing calls no API", async () => {
    const loaderEnv = { ...cloudflare.env, SANDBOX_HOST: "loader" } as Bindings;
    await sandboxOf(loaderEnv).publish(scriptOwner(), CODE);
    expect(cloudflare.calls).toHaveLength(0);
  });
});
