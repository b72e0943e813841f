import { createPublicKey } from "node:crypto";
import { join } from "node:path";
import { BasisTheoryClient } from "@basis-theory/node-sdk";
import { CompactEncrypt } from "jose";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { buildWorker, startLocalVault } from "../../scripts/local-vault.mjs";

/*
 * The original interface's current Node SDK (5.7.0), unchanged, against the vault with HEADER_PREFIX=BT:
 * client encryption keys (`keys`), and a token created from data encrypted to one in node, as a
 * browser or app would encrypt it.
 */

const CARD = { number: "4242424242424242", expiration_month: 11, expiration_year: 2030 };

let vault: Awaited<ReturnType<typeof startLocalVault>>;
let management: BasisTheoryClient;
let server: BasisTheoryClient;

const client = (apiKey?: string) => new BasisTheoryClient({ apiKey, baseUrl: vault.baseUrl, maxRetries: 0 });

beforeAll(async () => {
  const buildDir = join(process.cwd(), ".wrangler", "clients-node-sdk-keys-build");
  buildWorker(buildDir);
  vault = await startLocalVault({ buildDir, bindings: { HEADER_PREFIX: "BT" } });
  const tenant = await fetch(`${vault.baseUrl}/tenants`, {
    method: "POST",
    headers: { "content-type": "application/json", "BT-OPERATOR-KEY": vault.operatorKey },
    body: JSON.stringify({ name: "node-sdk keys" }),
  }).then((reply) => reply.json() as Promise<any>);
  management = client(tenant.application.key);
  const application = await management.applications.create({
    name: "server",
    type: "private",
    rules: [{ description: "all", priority: 1, container: "/", transform: "reveal", permissions: ["token:create", "token:read"] }],
  });
  server = client(application.key);
});

afterAll(async () => {
  await vault?.dispose();
});

/** The 32-byte public key between the PEM markers, as a node KeyObject. */
function publicKeyOf(pem: string) {
  const raw = Buffer.from(pem.replace(/-----(BEGIN|END) PUBLIC KEY-----/g, "").replaceAll(/\s/g, ""), "base64");
  return createPublicKey({ key: { kty: "OKP", crv: "X25519", x: raw.toString("base64url") }, format: "jwk" });
}

describe("the Node SDK 5.7 against the vault with HEADER_PREFIX=BT: client encryption keys", () => {
  it("keys.create answers the public key once; keys.get and keys.list read the key without it; keys.delete removes it", async () => {
    const expiresAt = new Date(Date.now() + 30 * 86_400_000);
    const created = await management.keys.create({ expiresAt });
    expect(created.keyId).toEqual(expect.any(String));
    expect(created.publicKeyPem).toMatch(/^-----BEGIN PUBLIC KEY-----\n/);
    expect(created.expiresAt).toEqual(new Date(expiresAt.toISOString()));
    const read = await management.keys.get(created.keyId!);
    expect(read).toMatchObject({ keyId: created.keyId, expiresAt: created.expiresAt });
    expect(read).not.toHaveProperty("publicKeyPem");
    expect((await management.keys.list()).map((key) => key.keyId)).toContain(created.keyId);
    await management.keys.delete(created.keyId!);
    await expect(management.keys.get(created.keyId!)).rejects.toMatchObject({ statusCode: 404 });
  });

  it("tokens.create takes data encrypted with jose in node to the key, and the token reads back decrypted", async () => {
    const key = await management.keys.create({});
    const jwe = await new CompactEncrypt(new TextEncoder().encode(JSON.stringify(CARD)))
      .setProtectedHeader({ alg: "ECDH-ES", enc: "A256GCM", kid: key.keyId })
      .encrypt(publicKeyOf(key.publicKeyPem!));
    const token = await server.tokens.create({ type: "card", data: jwe });
    expect((await server.tokens.get(token.id!)).data).toEqual(CARD);
  });
});
