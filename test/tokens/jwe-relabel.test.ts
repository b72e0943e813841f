import { beforeAll, describe, expect, it } from "vitest";
import { dataDatabaseOf } from "../support/context";
import { call, createApplication, expectProblem } from "../support/harness";
import { encryptJwe } from "../support/jwe";
import { seedTokenTenant, type TokenTenant, VISA } from "../support/tokens";

/*
 * A JWE's plaintext carries no type: the type (and containers) of the create are the caller's word.
 * A card a browser encrypted must not become a token a caller that may not see cards reads back
 * (docs/decisions.md, "Client encryption keys").
 */

const CARD = { number: VISA, expiration_month: 12, expiration_year: 2099 };

let tenant: TokenTenant;
let clientKey: { id: string; public_key_pem: string };

async function tokenCount(): Promise<number> {
  const db = await dataDatabaseOf(tenant.tenantId);
  return (await db.prepare("SELECT count(*) AS n FROM tokens WHERE tenant_id = ?").bind(tenant.tenantId).first<{ n: number }>())!.n;
}

const sealed = (data: unknown) => encryptJwe(clientKey.public_key_pem, clientKey.id, JSON.stringify(data));

beforeAll(async () => {
  tenant = await seedTokenTenant();
  const reply = await call("POST", "/keys", { key: tenant.managementKey, body: {} });
  expect(reply.status, JSON.stringify(reply.body)).toBe(201);
  clientKey = reply.body;
});

describe("a client-encrypted card is a card whatever type it is created as", () => {
  it("POST /tokens refuses a card JWE as type token, or in a container outside /pci/, storing nothing", async () => {
    const general = await createApplication(tenant, {
      type: "private",
      permissions: [],
      rules: [
        { description: "general", priority: 1, container: "/general/", transform: "reveal", permissions: ["token:create", "token:read"] },
      ],
    });
    const before = await tokenCount();
    const bodies = [
      { type: "token", data: await sealed(CARD) },
      { type: "token", data: await sealed({ wallet: [{ pan: VISA }] }) },
      { type: "card", containers: ["/general/high/"], data: await sealed(CARD) },
    ];
    for (const body of bodies) {
      const reply = await call("POST", "/tokens", { key: general.key, body });
      expect(JSON.stringify(reply.body), JSON.stringify(body.type)).not.toContain(VISA);
      expect(JSON.stringify(expectProblem(reply, 400).errors)).toContain("card number");
    }
    const tokenized = await call("POST", "/tokenize", { key: general.key, body: { leaf: { type: "token", data: await sealed(VISA) } } });
    expect(JSON.stringify(tokenized.body)).not.toContain(VISA);
    expectProblem(tokenized, 400);
    expect(await tokenCount()).toBe(before);
  });

  it("the card is created as a card in /pci/, and data without a card number under type token as before", async () => {
    const card = await call("POST", "/tokens", { key: tenant.key, body: { type: "card", data: await sealed(CARD) } });
    expect(card.status, JSON.stringify(card.body)).toBe(201);
    const note = await call("POST", "/tokens", {
      key: tenant.key,
      body: { type: "token", data: await sealed({ note: "4242", n: 12345 }) },
    });
    expect(note.status, JSON.stringify(note.body)).toBe(201);
  });
});
