import { afterEach, describe, expect, inject, it, vi } from "vitest";
import { callConfigured } from "../support/configured";
import { type FakeNamespaceOptions, fakeCloudflare } from "../support/fake-cloudflare";
import { createApplication, seedTenant } from "../support/harness";
import { createReactor, formulaBody } from "../support/reactors";

/**
 * Rule 5: with SANDBOX_HOST=dispatch every fetch of tenant code passes the egress policy, through
 * the dispatch namespace's outbound worker; without one, tenant code does not run. The namespace
 * is the fake of test/support/fake-cloudflare.ts, running the outbound worker's own code.
 */

const port = () => new URL(inject("loopbackUrl")).port;

async function seenByLoopback(marker: string): Promise<number> {
  const reply = await fetch(`${inject("loopbackUrl")}/__seen?marker=${marker}`);
  return (await reply.json<{ count: number }>()).count;
}

/** Tenant code that fetches the URL it is given and reports what happened instead of failing. */
const FETCHING_CODE = `module.exports = async (req) => {
  try {
    const response = await fetch(req.args.url);
    return { raw: { status: response.status } };
  } catch (error) {
    return { raw: { refused: String(error.message) } };
  }
};`;

/**
 * A reactor whose formula is published to a fake dispatch namespace bound as `namespace` says, and
 * a function that reacts with a URL through the vault's HTTP interface, as a dispatch deployment.
 */
async function reactorOnDispatchHost(namespace: FakeNamespaceOptions = {}, settings: Record<string, string> = {}) {
  const cloudflare = fakeCloudflare(namespace);
  // Production's setting: loopback destinations are refused.
  const deployment = { ...cloudflare.env, ALLOW_INSECURE_DESTINATIONS: "false", ...settings };
  const tenant = await seedTenant();
  const formula = await callConfigured(deployment, "POST", "/reactor-formulas", {
    headers: { "SVC-API-KEY": tenant.managementKey },
    body: formulaBody({ code: FETCHING_CODE }),
  });
  expect(formula.status, JSON.stringify(formula.body)).toBe(201);
  const reactor = await createReactor(tenant, formula.body.id);
  const caller = await createApplication(tenant, { type: "private", permissions: ["token:use"] });
  return (url: string) =>
    callConfigured(deployment, "POST", `/reactors/${reactor.id}/react`, {
      headers: { "SVC-API-KEY": caller.key },
      body: { args: { url } },
    });
}

const ATTACKS: [string, (marker: string) => string, string][] = [
  ["http:// to a public name", (marker) => `http://example.com/${marker}`, "only HTTPS destinations are allowed"],
  ["an IP literal", (marker) => `http://127.0.0.1:${port()}/${marker}`, "127.0.0.1 is a loopback address"],
  ["an odd port on the vault's own host", (marker) => `http://localhost:${port()}/${marker}`, "localhost is a loopback name"],
];

const OUTBOUND_SETTING = 'outbound = { service = "token-vault-egress", parameters = ["EGRESS"] }';

describe("rule 5: production egress fails closed", () => {
  afterEach(() => {
    vi.restoreAllMocks();
  });

  it.each(ATTACKS)(
    "tenant code under the dispatch host fetching %s is refused by the outbound worker, and nothing arrives",
    async (_, urlFor, reason) => {
      const react = await reactorOnDispatchHost();
      const marker = `dispatch-egress-${crypto.randomUUID()}`;
      const reply = await react(urlFor(marker));
      expect(reply.status, JSON.stringify(reply.body)).toBe(200);
      expect(reply.body.raw).toEqual({ refused: `The destination is not allowed: ${reason}` });
      expect(await seenByLoopback(marker)).toBe(0);
    },
  );

  it.each(ATTACKS)("without an outbound worker, tenant code fetching %s never runs: 500 naming the setting", async (_, urlFor) => {
    const react = await reactorOnDispatchHost({ outboundParameters: null });
    const marker = `open-egress-${crypto.randomUUID()}`;
    const reply = await react(urlFor(marker));
    expect(reply.status, JSON.stringify(reply.body)).toBe(500);
    expect(reply.body).toMatchObject({ title: "Service Misconfigured", detail: expect.stringContaining(OUTBOUND_SETTING) });
    expect(await seenByLoopback(marker)).toBe(0);
  });

  it("an outbound worker bound without the EGRESS parameter is refused the same way", async () => {
    const react = await reactorOnDispatchHost({ outboundParameters: [] });
    const marker = `no-parameter-${crypto.randomUUID()}`;
    const reply = await react(`http://127.0.0.1:${port()}/${marker}`);
    expect(reply.status, JSON.stringify(reply.body)).toBe(500);
    expect(reply.body).toMatchObject({ title: "Service Misconfigured", detail: expect.stringContaining(OUTBOUND_SETTING) });
    expect(await seenByLoopback(marker)).toBe(0);
  });

  it("the outbound worker applies the vault's own settings: with the development setting on, loopback is reached", async () => {
    const react = await reactorOnDispatchHost({}, { ALLOW_INSECURE_DESTINATIONS: "true" });
    const marker = `allowed-${crypto.randomUUID()}`;
    const reply = await react(`http://127.0.0.1:${port()}/${marker}`);
    expect(reply.status, JSON.stringify(reply.body)).toBe(200);
    expect(reply.body.raw).toEqual({ status: 200 });
    expect(await seenByLoopback(marker)).toBe(1);
  });
});
