import { env } from "cloudflare:test";
import { exports } from "cloudflare:workers";
import { beforeAll, describe, expect, inject, it } from "vitest";
import { signProps } from "../../src/crypto/entrypoint-props";
import { Keyring } from "../../src/crypto/keyring";
import { EGRESS_FAILURE_HEADER } from "../../src/egress/answer";
import { configOf } from "../../src/env";
import type { BridgeReply } from "../../src/sandbox/bridge-protocol";
import { createToken, seedTokenTenant, type TokenTenant } from "../support/tokens";

/**
 * Rule 7: the Bridge and Egress entrypoints accept only props that carry a MAC the vault made,
 * keyed from the master key. Anyone who can bind an entrypoint of the vault's worker (another
 * entrypoint, a future binding, a test) can choose its props; only the vault can sign them.
 */

interface BridgeStub {
  getToken(idText: string): Promise<BridgeReply>;
}

interface VaultEntrypoints {
  Bridge(options: { props: unknown }): BridgeStub;
  Egress(options: { props: unknown }): Fetcher;
}

const vault = exports as unknown as VaultEntrypoints;

async function seenByLoopback(marker: string): Promise<number> {
  const reply = await fetch(`${inject("loopbackUrl")}/__seen?marker=${marker}`);
  return (await reply.json<{ count: number }>()).count;
}

/** A MAC-shaped value the vault never made: 32 bytes, base64url. */
const FORGED_MAC = "A".repeat(43);

/** The keyring this deployment signs with, and one of another deployment (another master key). */
const vaultKeyring = () => Keyring.of(configOf(env).keyring);
const otherKeyring = () => Keyring.of([{ version: 1, key: btoa("another deployment's master key!") }]);

describe("rule 7: the Bridge accepts only props the vault signed", () => {
  let tenant: TokenTenant;
  let tokenId: string;

  beforeAll(async () => {
    tenant = await seedTokenTenant();
    tokenId = (await createToken(tenant.key, { type: "token", data: "behind the bridge" })).id;
  });

  it.each([
    ["unsigned props", () => ({ tenantId: tenant.tenantId, applicationId: tenant.applicationId })],
    ["props with a forged MAC", () => ({ tenantId: tenant.tenantId, applicationId: tenant.applicationId, mac: FORGED_MAC })],
    ["props whose MAC is not a string", () => ({ tenantId: tenant.tenantId, applicationId: tenant.applicationId, mac: 1 })],
  ])("a Bridge bound with %s acts as no application: 401, and the token is not read", async (_, props) => {
    const reply = await vault.Bridge({ props: props() }).getToken(JSON.stringify(tokenId));
    expect(reply).toEqual({ ok: false, problem: expect.objectContaining({ status: 401, title: "Unauthorized" }) });
    expect(JSON.stringify(reply)).not.toContain("behind the bridge");
  });

  it("props the vault signed act as their application", async () => {
    const props = await signProps(vaultKeyring(), "Bridge", { tenantId: tenant.tenantId, applicationId: tenant.applicationId });
    const reply = await vault.Bridge({ props }).getToken(JSON.stringify(tokenId));
    expect(reply).toMatchObject({ ok: true, value: { id: tokenId, data: "behind the bridge" } });
  });

  it.each([
    [
      "the vault's MAC for another application",
      async () => ({
        ...(await signProps(vaultKeyring(), "Bridge", { tenantId: tenant.tenantId, applicationId: tenant.managementApplicationId })),
        applicationId: tenant.applicationId,
      }),
    ],
    [
      "the vault's MAC for the Egress",
      () => signProps(vaultKeyring(), "Egress", { tenantId: tenant.tenantId, applicationId: tenant.applicationId }),
    ],
    [
      "a MAC keyed from another master key",
      () => signProps(otherKeyring(), "Bridge", { tenantId: tenant.tenantId, applicationId: tenant.applicationId }),
    ],
  ])("a Bridge bound with %s is refused", async (_, props) => {
    const reply = await vault.Bridge({ props: await props() }).getToken(JSON.stringify(tokenId));
    expect(reply).toEqual({ ok: false, problem: expect.objectContaining({ status: 401 }) });
  });
});

describe("rule 7: the Egress accepts only props the vault signed", () => {
  const loopback = (marker: string) => `${inject("loopbackUrl")}/${marker}`;

  it.each([
    ["unsigned props that allow loopback", { allowInsecure: true, timeoutMs: 5_000 }],
    ["props with a forged MAC", { allowInsecure: true, timeoutMs: 5_000, mac: FORGED_MAC }],
  ])("an Egress bound with %s refuses every request, and nothing arrives", async (_, props) => {
    const marker = `forged-egress-${crypto.randomUUID()}`;
    const response = await vault.Egress({ props }).fetch(loopback(marker));
    expect(response.status).toBe(403);
    expect(response.headers.get(EGRESS_FAILURE_HEADER)).toContain("not made by the vault");
    await response.body?.cancel();
    expect(await seenByLoopback(marker)).toBe(0);
  });

  it.each([
    [
      "the vault's MAC over the production setting, with loopback allowed instead",
      async () => ({ ...(await signProps(vaultKeyring(), "Egress", { allowInsecure: false, timeoutMs: 5_000 })), allowInsecure: true }),
    ],
    ["a MAC keyed from another master key", () => signProps(otherKeyring(), "Egress", { allowInsecure: true, timeoutMs: 5_000 })],
  ])("an Egress bound with %s refuses the request, and nothing arrives", async (_, props) => {
    const marker = `replayed-egress-${crypto.randomUUID()}`;
    const response = await vault.Egress({ props: await props() }).fetch(loopback(marker));
    expect(response.headers.get(EGRESS_FAILURE_HEADER)).toContain("not made by the vault");
    await response.body?.cancel();
    expect(await seenByLoopback(marker)).toBe(0);
  });

  it("props the vault signed apply the policy they carry", async () => {
    const marker = `signed-egress-${crypto.randomUUID()}`;
    const response = await vault
      .Egress({ props: await signProps(vaultKeyring(), "Egress", { allowInsecure: true, timeoutMs: 5_000 }) })
      .fetch(loopback(marker));
    expect(response.status).toBe(200);
    await response.body?.cancel();
    expect(await seenByLoopback(marker)).toBe(1);
  });

  it("tenant code in an isolate whose outbound is an Egress with forged props reaches nothing", async () => {
    const marker = `forged-outbound-${crypto.randomUUID()}`;
    const isolate = env.LOADER!.get(`forged-egress-${marker}`, () => ({
      compatibilityDate: "2025-11-10",
      mainModule: "main.js",
      modules: {
        "main.js": `export default {
          async fetch() {
            const response = await fetch(${JSON.stringify(loopback(marker))});
            return Response.json({ status: response.status, failure: response.headers.get(${JSON.stringify(EGRESS_FAILURE_HEADER)}) });
          },
        };`,
      },
      globalOutbound: vault.Egress({ props: { allowInsecure: true, timeoutMs: 5_000 } }),
    }));
    const answer = await (await isolate.getEntrypoint().fetch("http://isolate/")).json<{ status: number; failure: string | null }>();
    expect(answer).toEqual({ status: 403, failure: expect.stringContaining("not made by the vault") });
    expect(await seenByLoopback(marker)).toBe(0);
  });
});
