import { describe, expect, it } from "vitest";
import { dataDatabaseOf } from "../support/context";
import { call, dumpDatabase } from "../support/harness";
import { withoutIds } from "../support/random-text";
import { createToken, patchToken, seedTokenTenant } from "../support/tokens";

const SSNS = ["518-72-9364", "671-03-5829"];
const CARDS = ["5555555555554444", "378282246310005", "6011111111111117"];

/** Every form of a secret that must never be stored in clear. */
function forms(secret: string): string[] {
  const plain = secret.replace(/-/g, "");
  return [secret, plain, plain.slice(-4)];
}

/**
 * The dump with the parts that are random by construction blanked out: UUIDs (ids), sealed values
 * (`v1.{iv}.{ciphertext}`, `k2.…`: a short SSN's is under 40 characters), long base64url runs
 * (HMACs, key hashes) and millisecond timestamps. A four-digit string could otherwise turn up in
 * them by chance; plaintext stored anywhere else is still found.
 */
function withoutRandomParts(dump: string): string {
  return withoutIds(dump)
    .replace(/\b[vk]\d+\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+/g, "<sealed>")
    .replace(/[A-Za-z0-9_-]{40,}/g, "<opaque>")
    .replace(/\b1\d{12}\b/g, "<time>");
}

describe("encryption at rest", () => {
  it("no table holds a token's plaintext, its dash-less form or its last four digits", async () => {
    const { key } = await seedTokenTenant();
    for (const data of SSNS) await createToken(key, { type: "social_security_number", data });
    for (const data of CARDS) await createToken(key, { type: "card_number", data });
    const tokenized = await call("POST", "/tokenize", {
      key,
      body: { ssn: { type: "social_security_number", data: SSNS[0] }, card: CARDS[0], idempotent: true },
      headers: { "SVC-IDEMPOTENCY-KEY": "encryption-at-rest" },
    });
    expect(tokenized.status).toBe(201);
    const ssn = await createToken(key, { type: "social_security_number", data: "900-11-2222" });
    expect((await patchToken(key, ssn.id, { data: SSNS[1] })).status).toBe(200);

    const dump = withoutRandomParts(await dumpDatabase());
    expect(dump).toContain('"type":"social_security_number"');
    for (const secret of [...SSNS, ...CARDS]) {
      for (const form of forms(secret)) expect(dump, `${form} is stored in clear`).not.toContain(form);
    }
  });

  it("token data is stored as AES-GCM ciphertext that records its key version", async () => {
    const { key } = await seedTokenTenant();
    const token = await createToken(key, { type: "token", data: { secret: "kept" } });
    const row = await (await dataDatabaseOf(token.tenant_id))
      .prepare("SELECT ciphertext FROM tokens WHERE id = ?")
      .bind(token.id)
      .first<{ ciphertext: string }>();
    expect(row!.ciphertext).toMatch(/^v1\.[A-Za-z0-9_-]{16}\.[A-Za-z0-9_-]+$/);
    expect(row!.ciphertext).not.toContain("kept");
  });

  it("equal data encrypts differently each time", async () => {
    const { key } = await seedTokenTenant();
    const a = await createToken(key, { type: "card_number", data: CARDS[1] });
    const b = await createToken(key, { type: "card_number", data: CARDS[1] });
    const { results } = await (await dataDatabaseOf(a.tenant_id))
      .prepare("SELECT ciphertext FROM tokens WHERE id IN (?, ?)")
      .bind(a.id, b.id)
      .all<{ ciphertext: string }>();
    expect(results).toHaveLength(2);
    expect(results[0]!.ciphertext).not.toBe(results[1]!.ciphertext);
  });
});
