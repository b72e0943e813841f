/*
 * A fake of Apple's Apple Pay servers, the one thing the tests cannot reach: bound to the vault as
 * APPLE_PAY_GATEWAY (vitest.config.ts; scripts/local-vault.mjs for the clients suite), where production
 * binds an mTLS certificate binding. It records every request it receives and answers as Apple does.
 * What it answers is chosen by the request (the tests' choice of names):
 *   - a domain or display name starting `unverified.` / `refused`: Apple's 400 refusal, whose
 *     `statusMessage` ("Payment Services Exception …") the vault must never repeat;
 *   - `outage.` / `outage`: a 500;  `redirect.` / `redirect`: a 302 elsewhere;
 *   - `huge.` / `huge`: a 200 of 1 MiB;  display name `not-json`: a 200 of text;
 *   - `endless.` / `endless`: a 200 whose body sends a byte every half second and never ends;
 *   - `sticky.`: registered as any domain, but its deregistration is a 500;
 *   - `race.<label>.<rest>`: a registration held until a second one of a `race.` domain ending in the
 *     same <rest> arrives, then both answered (two requests that raced past the vault's checks).
 * GET /received answers what was received (the vault only POSTs, and only to /paymentservices/ paths).
 */
const received = [];

/** How many registrations of `race.` domains have arrived, by the domain's <rest>. */
const racing = new Map();

/**
 * Waits until a second registration of a `race.` domain ending as `domain` does has arrived. Each
 * request polls the count in its own context: workerd refuses a promise resolved by another request.
 */
async function raced(domain) {
  const rest = domain.split(".").slice(2).join(".");
  racing.set(rest, (racing.get(rest) ?? 0) + 1);
  while (racing.get(rest) < 2) await new Promise((resolve) => setTimeout(resolve, 10));
}

function parsed(text) {
  try {
    return JSON.parse(text);
  } catch {
    return text;
  }
}

/** A body that never ends: a byte every half second, until the reader cancels it. */
function trickle() {
  return new ReadableStream({
    async pull(controller) {
      await new Promise((resolve) => setTimeout(resolve, 500));
      controller.enqueue(new TextEncoder().encode(" "));
    },
  });
}

const refusal = (message) => Response.json({ statusMessage: `Payment Services Exception ${message}`, statusCode: "400" }, { status: 400 });

function answerAs(name) {
  if (name.startsWith("unverified.") || name.startsWith("refused")) return refusal(`domain verification failed for ${name}`);
  if (name.startsWith("outage")) return new Response("Payment Services Exception internal error", { status: 500 });
  if (name.startsWith("redirect")) return new Response(null, { status: 302, headers: { location: "https://elsewhere.example/" } });
  if (name.startsWith("huge")) return new Response("x".repeat(1 << 20), { status: 200 });
  if (name.startsWith("endless")) return new Response(trickle(), { status: 200 });
  return null;
}

export default {
  async fetch(request) {
    const url = new URL(request.url);
    if (request.method === "GET" && url.pathname === "/received") return Response.json(received);
    const body = parsed(await request.text());
    received.push({ method: request.method, url: request.url, body });
    if (url.pathname === "/paymentservices/registerMerchant" || url.pathname === "/paymentservices/unregisterMerchant") {
      const race = (body.domainNames ?? []).find((domain) => domain.startsWith("race."));
      if (race && url.pathname.endsWith("/registerMerchant")) await raced(race);
      for (const domain of body.domainNames ?? []) {
        if (domain.startsWith("sticky.") && url.pathname.endsWith("/unregisterMerchant")) return answerAs("outage");
        const answer = answerAs(domain);
        if (answer) return answer;
      }
      return new Response(null, { status: 200 });
    }
    if (url.pathname === "/paymentservices/paymentSession" || url.pathname === "/paymentservices/startSession") {
      const answer = answerAs(body.displayName ?? "");
      if (answer) return answer;
      if (body.displayName === "not-json") return new Response("<html>session</html>", { status: 200 });
      return Response.json({
        epochTimestamp: 1_700_000_000_000,
        expiresAt: 1_700_003_600_000,
        merchantSessionIdentifier: `SSH-${crypto.randomUUID()}`,
        nonce: "5c2d9a1e",
        merchantIdentifier: body.merchantIdentifier,
        domainName: body.initiativeContext,
        displayName: body.displayName,
        signature: "308006092a864886f70d010702a0803080020101",
        operationalAnalyticsIdentifier: "fake:apple",
        retries: 0,
        pspId: "fake",
      });
    }
    return Response.json({ statusMessage: "Payment Services Exception not found", statusCode: "404" }, { status: 404 });
  },
};
