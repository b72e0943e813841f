import { describe, expect, it } from "vitest";
import { createProxy, expectProxyError, invoke, loopback } from "../support/proxies";
import { createToken, seedTokenTenant, VISA } from "../support/tokens";

/**
 * Rule 2 through detokenization errors. A partner holding only the key of an open proxy may send
 * `{{ token | filters }}` expressions; their results go to the destination, never to the partner.
 * But an expression that fails on the data is a 400 naming the failing string's path, so an
 * expression that fails or not depending on one character of the data is an oracle of it:
 * `{{ id | slice: i, 1 | replace: 'd', 'true' | to_boolean }}` fails unless character i is d.
 * So for such a partner an expression that fails on the data gives null, as an empty result does.
 */

/** Ten expressions per position, one per digit: the one that does not fail names the digit. */
function probes(tokenId: string, positions: number[], select = ""): Record<string, string> {
  const body: Record<string, string> = {};
  for (const i of positions) {
    for (let d = 0; d <= 9; d++) body[`p${i}_${d}`] = `{{ ${tokenId}${select} | slice: ${i}, 1 | replace: '${d}', 'true' | to_boolean }}`;
  }
  return body;
}

async function openProxy() {
  const tenant = await seedTokenTenant();
  // The proxy's application may use every token: the data is meant for the destination.
  const proxy = await createProxy(tenant, {
    require_auth: false,
    application: { id: tenant.applicationId },
    destination_url: loopback("/respond?body=ok"),
  });
  return { tenant, proxy };
}

describe("rule 2 (extra): an open proxy's partner learns nothing of the data from detokenization errors", () => {
  it("a card number cannot be read digit by digit from which expressions fail", async () => {
    const { tenant, proxy } = await openProxy();
    const card = await createToken(tenant.key, { type: "card_number", data: VISA });
    for (const positions of [
      [0, 1, 2, 3, 4, 5, 6, 7, 8, 9],
      [10, 11, 12, 13, 14, 15],
    ]) {
      // Every probe answers alike: the call goes through and the destination's answer comes back.
      const reply = await invoke("POST", "", { proxyKey: proxy.key, body: probes(card.id, positions) });
      expect(reply.status, reply.text).toBe(200);
      expect(reply.text).toBe("ok");
    }
  });

  it("nor a card's cvc, through the json filter", async () => {
    const { tenant, proxy } = await openProxy();
    const card = await createToken(tenant.key, {
      type: "card",
      data: { number: VISA, expiration_month: 12, expiration_year: 2099, cvc: "731" },
    });
    const positions = [0, 1, 2];
    const reply = await invoke("POST", "", { proxyKey: proxy.key, body: probes(card.id, positions, " | json: '$.cvc'") });
    expect(reply.status, reply.text).toBe(200);
    expect(reply.text).toBe("ok");
  });

  it("an expression that does not parse is still refused: that depends on the expression alone", async () => {
    const { tenant, proxy } = await openProxy();
    const card = await createToken(tenant.key, { type: "card_number", data: VISA });
    const reply = await invoke("POST", "", { proxyKey: proxy.key, body: { bad: `{{ ${card.id} | no_such_filter }}` } });
    expect(Object.keys(expectProxyError(reply, 400).errors ?? {})).toEqual([expect.stringContaining("bad")]);
  });

  it("the caller's own detokenization still names the expression that failed", async () => {
    const { tenant } = await openProxy();
    const card = await createToken(tenant.key, { type: "card_number", data: VISA });
    const proxy = await createProxy(tenant, { require_auth: true, destination_url: loopback("/respond?body=ok") });
    const reply = await invoke("POST", "", { proxyKey: proxy.key, apiKey: tenant.key, body: probes(card.id, [0]) });
    expect(Object.keys(expectProxyError(reply, 400).errors ?? {})).toHaveLength(9);
  });
});
