import { env } from "cloudflare:test";
import { beforeAll, describe, expect, it } from "vitest";
import { runCron } from "../support/cron";
import { call, createApplication, expectProblem, rowCounts } from "../support/harness";
import { createSession, type Merchant, seedMerchant } from "../support/sessions";
import { VISA } from "../support/tokens";

/*
 * Rule 8, sessions (issue 34): no lockout through sessions awaiting authorization. The attack: every
 * POST /sessions stored a pending row, capped at 10,000 per application, so 10,000 sessions from
 * 168 addresses locked every shopper out of reveal for three minutes. A session now costs no row
 * until its server authorizes it: the nonce is signed by the vault and carries what authorization
 * needs. What the vault signed is all a nonce can be: altered, spliced or foreign, it is a 404 that
 * writes nothing, and it still authorizes once.
 */

const revealCards = [{ priority: 1, container: "/cards/", transform: "reveal", permissions: ["token:read"] }];

function authorize(key: string, nonce: string) {
  return call("POST", "/sessions/authorize", { key, body: { nonce, rules: revealCards } });
}

async function sessionRowsOf(tenantId: string): Promise<number> {
  const row = await env.DB.prepare("SELECT count(*) AS n FROM sessions WHERE tenant_id = ?").bind(tenantId).first<{ n: number }>();
  return row!.n;
}

/** The 404 a nonce the vault never made gets: every forged nonce must get exactly this. */
async function unknownNonceDetail(serverKey: string): Promise<string> {
  return expectProblem(await authorize(serverKey, "4J7SiRvfADwJ9ZqwviJJs8"), 404).detail;
}

/** The nonce with the character at `index` replaced by another of the base64url alphabet. */
function flipped(nonce: string, index: number): string {
  const replacement = nonce[index] === "A" ? "B" : "A";
  return nonce.slice(0, index) + replacement + nonce.slice(index + 1);
}

let merchant: Merchant;
beforeAll(async () => {
  merchant = await seedMerchant();
});

describe("rule 8: sessions awaiting authorization lock nobody out", () => {
  it("POST /sessions stores no row: a flood leaves no session behind, and a shopper's session is still created and authorized", async () => {
    for (let wave = 0; wave < 20; wave++) {
      await Promise.all(Array.from({ length: 10 }, () => createSession(merchant.publicKey)));
    }
    expect(await sessionRowsOf(merchant.tenantId)).toBe(0);

    const shopper = await createSession(merchant.publicKey);
    const reply = await authorize(merchant.serverKey, shopper.nonce);
    expect(reply.status, JSON.stringify(reply.body)).toBe(200);
    const read = await call("GET", `/tokens/${merchant.card.id}`, { key: shopper.session_key });
    expect(read.status).toBe(200);
    expect(read.body.data).toBe(VISA);
    expect(await sessionRowsOf(merchant.tenantId)).toBe(1);
  }, 30_000);

  it("an altered nonce is the 404 of an unknown one and writes nothing; the nonce itself still authorizes", async () => {
    const session = await createSession(merchant.publicKey);
    const unknown = await unknownNonceDetail(merchant.serverKey);
    const before = await rowCounts();
    const positions = [...Array.from({ length: Math.ceil(session.nonce.length / 5) }, (_, i) => i * 5), session.nonce.length - 1];
    for (const index of positions) {
      const refused = expectProblem(await authorize(merchant.serverKey, flipped(session.nonce, index)), 404);
      expect(refused.detail, `character ${index} flipped`).toBe(unknown);
    }
    for (const altered of [
      session.nonce.slice(0, -1),
      `${session.nonce}A`,
      session.nonce.toUpperCase(),
      `${session.nonce.slice(0, -2)}==`,
    ]) {
      expect(expectProblem(await authorize(merchant.serverKey, altered), 404).detail).toBe(unknown);
    }
    expect(await rowCounts()).toEqual(before);
    expectProblem(await call("GET", `/tokens/${merchant.card.id}`, { key: session.session_key }), 401);
    expect((await authorize(merchant.serverKey, session.nonce)).status).toBe(200);
  }, 30_000);

  it("another tenant's nonce is the 404 of an unknown one and writes nothing", async () => {
    const intruder = await seedMerchant();
    const session = await createSession(merchant.publicKey);
    const before = await rowCounts();
    const refused = expectProblem(await authorize(intruder.serverKey, session.nonce), 404);
    expect(refused.detail).toBe(await unknownNonceDetail(intruder.serverKey));
    expect(await rowCounts()).toEqual(before);
    expectProblem(await call("GET", `/tokens/${intruder.card.id}`, { key: session.session_key }), 401);
    expect((await authorize(merchant.serverKey, session.nonce)).status).toBe(200);
  });

  it("a nonce spliced from two applications' nonces is the 404 of an unknown one and writes nothing", async () => {
    const otherPage = await createApplication(merchant, { type: "public", permissions: ["token:create"] });
    const ours = await createSession(merchant.publicKey);
    const theirs = await createSession(otherPage.key);
    const unknown = await unknownNonceDetail(merchant.serverKey);
    const before = await rowCounts();
    // Cut on 4-character boundaries (3 bytes): each splice holds one nonce's bytes up to the cut, the other's after.
    // Nonces made a moment apart share their first bytes (the times), so some splices are a nonce itself: left out.
    for (let cut = 4; cut < ours.nonce.length; cut += 4) {
      const splices = [theirs.nonce.slice(0, cut) + ours.nonce.slice(cut), ours.nonce.slice(0, cut) + theirs.nonce.slice(cut)];
      for (const spliced of splices.filter((nonce) => nonce !== ours.nonce && nonce !== theirs.nonce)) {
        const refused = expectProblem(await authorize(merchant.serverKey, spliced), 404);
        expect(refused.detail, `cut at ${cut}`).toBe(unknown);
      }
    }
    expect(await rowCounts()).toEqual(before);
  }, 30_000);

  it("the nonce of a public application deleted since is the 404 of an unknown one and writes nothing", async () => {
    const page = await createApplication(merchant, { type: "public", permissions: ["token:create"] });
    const session = await createSession(page.key);
    expect((await call("DELETE", `/applications/${page.id}`, { key: merchant.managementKey })).status).toBe(204);
    const before = await rowCounts();
    const refused = expectProblem(await authorize(merchant.serverKey, session.nonce), 404);
    expect(refused.detail).toBe(await unknownNonceDetail(merchant.serverKey));
    expect(await rowCounts()).toEqual(before);
    expectProblem(await call("GET", `/tokens/${merchant.card.id}`, { key: session.session_key }), 401);
  });

  it("a nonce authorizes once, even when two authorizations race: one 200, one 409, one session", async () => {
    const session = await createSession(merchant.publicKey);
    const before = await rowCounts();
    const replies = await Promise.all([authorize(merchant.serverKey, session.nonce), authorize(merchant.serverKey, session.nonce)]);
    expect(replies.map((reply) => reply.status).sort()).toEqual([200, 409]);
    const again = expectProblem(await authorize(merchant.serverKey, session.nonce), 409);
    expect(again.detail).toContain("once");
    const after = await rowCounts();
    expect(after["DB.sessions"]! - before["DB.sessions"]!).toBe(1);
    expect(after["DB.applications"]! - before["DB.applications"]!).toBe(1);
    expect(after["DB.api_keys"]! - before["DB.api_keys"]!).toBe(1);
  });

  it("a nonce authorizes once, even after the cron purged a session that ended within the nonce's minute", async () => {
    const session = await createSession(merchant.publicKey);
    const soon = new Date(Date.now() + 1_000).toISOString();
    const body = { nonce: session.nonce, rules: revealCards, expires_at: soon };
    expect((await call("POST", "/sessions/authorize", { key: merchant.serverKey, body })).status).toBe(200);
    await new Promise((resolve) => setTimeout(resolve, 1_500));
    await runCron();
    const again = await call("POST", "/sessions/authorize", {
      key: merchant.serverKey,
      body: { nonce: session.nonce, rules: revealCards },
    });
    expectProblem(again, 409);
    expectProblem(await call("GET", `/tokens/${merchant.card.id}`, { key: session.session_key }), 401);
  });
});
