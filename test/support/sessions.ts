import { callRoute, createApplication } from "./harness";
import { createToken, seedTokenTenant, type TokenTenant, VISA } from "./tokens";

/** A merchant: its page's public key, and its server's private key that reveals cards in /cards/ and may authorize sessions. */
export interface Merchant extends TokenTenant {
  publicKey: string;
  publicApplicationId: string;
  serverKey: string;
  card: { id: string };
  otherCard: { id: string };
}

export async function seedMerchant(): Promise<Merchant> {
  const tenant = await seedTokenTenant();
  const page = await createApplication(tenant, { type: "public", permissions: ["token:create"] });
  const serverKey = (
    await createApplication(tenant, {
      type: "private",
      rules: [
        { priority: 1, container: "/cards/", transform: "reveal", permissions: ["token:read", "token:search", "token:use"] },
        { priority: 2, container: "/", transform: "mask", permissions: ["token:read", "session:authorize"] },
      ],
    })
  ).key;
  const card = await createToken(tenant.key, { type: "card_number", data: VISA, containers: ["/cards/"] });
  const otherCard = await createToken(tenant.key, { type: "card_number", data: "5555555555554444", containers: ["/cards/"] });
  return { ...tenant, publicKey: page.key, publicApplicationId: page.id, serverKey, card, otherCard };
}

/** POST /sessions with the page's public key: `{session_key, nonce, expires_at}`. */
export async function createSession(publicKey: string) {
  return (await callRoute("POST /sessions", 201, { key: publicKey })).body;
}
