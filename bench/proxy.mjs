// Proxy overhead: the same loopback echo destination called directly, through a worker that only
// forwards (the runtime's own floor on this machine), and through /proxy, in the same run.
// Scenarios: no transform (anonymous and authenticated), 1 and 10 detokenized references, a card
// token used through four `json` expressions and a `card_exp`, request and response transforms; and
// one detokenized reference with auditing on, next to a vault with auditing off (AUDIT_LOG=false).
// Prints p50/p95 (and the latency the vault adds) and throughput under 32 concurrent connections,
// each next to the direct call. Scenarios that detokenize are also measured next to a fair floor: a
// bare worker that makes one indexed D1 read by primary key and then forwards.
//   npm run bench proxy [--iterations=500] [--duration=3000] [--scenarios=anonymous,authenticated]
// --scenarios keeps the scenarios whose label contains one of the words (and leaves out the
// auditing comparison unless one word is "auditing"): a bisection measures only what it bisects.
// Direct, forwarded and proxied calls are measured turn about (latency in rounds, throughput in windows).
import { interleavedLatency, interleavedThroughput, send, startEcho } from "./lib/measure.mjs";

const CARD = "4242424242424242";
export const TRANSFORM =
  "module.exports = async function (req) { return { body: { ...req.args.body, seen: true }, headers: req.args.headers }; };";

export default async function proxy(bench) {
  const { iterations, duration: durationMs } = bench.sizes({ iterations: [500, 1], duration: [3000, 50] });
  const wanted = bench.args.scenarios?.split(",");
  const chosen = (label) => !wanted || wanted.some((word) => label.includes(word));
  const destination = await startEcho();
  try {
    const tenant = await bench.seedTenant();
    const caller = await bench.createApplication(tenant, { type: "private", permissions: ["token:create", "token:use"] });
    const tokenIds = [];
    for (let i = 0; i < 10; i++) {
      const token = await bench.request("POST", "/tokens", { key: caller.key, body: { type: "card_number", data: CARD } });
      if (token.status !== 201) throw new Error(`token creation failed: ${token.status} ${JSON.stringify(token.body)}`);
      tokenIds.push(token.body.id);
    }
    const createProxy = async (body) => {
      const reply = await bench.request("POST", "/proxies", {
        key: tenant.managementKey,
        body: { name: "bench", destination_url: destination.url, ...body },
      });
      if (reply.status !== 201) throw new Error(`proxy creation failed: ${reply.status} ${JSON.stringify(reply.body)}`);
      return reply.body.key;
    };

    // A card token only when its scenario runs: commits before card tokens are benchmarked too.
    const cardId = chosen("card") ? await cardToken(bench, caller.key) : null;
    const cardExpressions = {
      number: `{{ ${cardId} | json: '$.number' }}`,
      month: `{{ ${cardId} | json: '$.expiration_month' }}`,
      year: `{{ ${cardId} | json: '$.expiration_year' }}`,
      cvc: `{{ ${cardId} | json: '$.cvc' }}`,
      expiry: `{{ ${cardId} | card_exp: 'MM/YY' }}`,
    };
    const cardRevealed = { number: CARD, month: "11", year: "2030", cvc: "123", expiry: "11/30" };

    const references = (count) => Object.fromEntries(tokenIds.slice(0, count).map((id, i) => [`card_${i}`, `{{ ${id} }}`]));
    const revealed = (count) => Object.fromEntries(tokenIds.slice(0, count).map((_, i) => [`card_${i}`, CARD]));
    const scenarios = [
      { label: "no transform, anonymous", proxy: { require_auth: false }, body: { amount: 100 } },
      { label: "no transform, authenticated", proxy: {}, apiKey: caller.key, body: { amount: 100 } },
      { label: "1 detokenized reference", proxy: {}, apiKey: caller.key, body: references(1), direct: revealed(1), reads: tokenIds[0] },
      { label: "10 detokenized references", proxy: {}, apiKey: caller.key, body: references(10), direct: revealed(10), reads: tokenIds[0] },
      {
        label: "card: 4 json expressions + card_exp",
        proxy: {},
        apiKey: caller.key,
        body: cardExpressions,
        direct: cardRevealed,
        reads: cardId,
        expect: '\\"expiry\\":\\"11/30\\"',
        compareTo: "1 detokenized reference",
      },
      {
        label: "request + response transforms",
        proxy: { require_auth: false, request_transform: { code: TRANSFORM }, response_transform: { code: TRANSFORM } },
        body: { amount: 100 },
        expect: '"seen":true',
      },
    ];

    // The floor every proxied call pays on this machine: one request to the worker that does nothing.
    const health = await bench.latency(() => fetch(bench.url("/health")).then((reply) => reply.arrayBuffer()), { iterations });
    const echo = await bench.latency(() => send(`${destination.url}/charges`, { amount: 100 }, {}), { iterations });
    bench.report("GET /health (worker floor) p50", health.p50, "direct p50", echo.p50, "ms");

    const measured = new Map();
    for (const scenario of scenarios.filter((each) => chosen(each.label))) {
      const proxyKey = await createProxy(scenario.proxy);
      const viaProxy = () =>
        send(bench.url("/proxy/charges"), scenario.body, {
          "SVC-PROXY-KEY": proxyKey,
          ...(scenario.apiKey ? { "SVC-API-KEY": scenario.apiKey } : {}),
        });
      // Directly, the destination gets what the proxy would send it: the data itself, not references.
      const direct = () => send(`${destination.url}/charges`, scenario.direct ?? scenario.body, {});
      const check = await viaProxy();
      if (check.status !== 200) throw new Error(`${scenario.label}: proxy answered ${check.status} ${check.text}`);
      const expected = scenario.expect ?? (scenario.direct ? CARD : null);
      if (expected && !check.text.includes(expected)) {
        throw new Error(`${scenario.label}: expected ${expected} in the answer, got ${check.text}`);
      }

      // The runtime's own floor: a worker that does nothing but forward the same request.
      const forwarded = () => send(bench.forwardUrl(`${destination.url}/charges`), scenario.direct ?? scenario.body, {});
      // The fair floor of a detokenizing call: one indexed D1 read by primary key, then forwarding.
      const readForwarded = scenario.reads
        ? () => send(bench.readForwardUrl(`${destination.url}/charges`, tenant.tenantId, scenario.reads), scenario.direct, {})
        : null;
      const calls = [direct, forwarded, viaProxy, ...(readForwarded ? [readForwarded] : [])];
      const [directLatency, forwardLatency, proxyLatency, readLatency] = await interleavedLatency(bench, calls, iterations);
      const [directRate, forwardRate, proxyRate, readRate] = await interleavedThroughput(bench, calls, durationMs);
      measured.set(scenario.label, { directLatency, proxyLatency, proxyRate });

      bench.section(scenario.label);
      bench.report("  through the proxy p50", proxyLatency.p50, "direct p50", directLatency.p50, "ms");
      bench.report("  through the proxy p95", proxyLatency.p95, "direct p95", directLatency.p95, "ms");
      bench.report("  through a bare forwarding worker p50", forwardLatency.p50, "direct p50", directLatency.p50, "ms");
      bench.report("  through the proxy p50", proxyLatency.p50, "bare forwarding p50", forwardLatency.p50, "ms");
      bench.report("  through the proxy p95", proxyLatency.p95, "bare forwarding p95", forwardLatency.p95, "ms");
      const added = (figures) =>
        `p50 ${(figures.p50 - directLatency.p50).toFixed(3)} ms, p95 ${(figures.p95 - directLatency.p95).toFixed(3)} ms`;
      console.log(`    added latency: ${added(proxyLatency)} (a bare forwarding worker adds ${added(forwardLatency)})`);
      console.log(
        `    the vault's own share (proxy minus bare forwarding): p50 ${(proxyLatency.p50 - forwardLatency.p50).toFixed(3)} ms,` +
          ` p95 ${(proxyLatency.p95 - forwardLatency.p95).toFixed(3)} ms`,
      );
      bench.report("  throughput, 32 connections", proxyRate.rps, "direct", directRate.rps, "req/s");
      bench.report("  throughput of bare forwarding", forwardRate.rps, "direct", directRate.rps, "req/s");
      bench.report("  throughput of the proxy", proxyRate.rps, "bare forwarding", forwardRate.rps, "req/s");
      if (readForwarded) {
        bench.report("  through one D1 read + forwarding p50", readLatency.p50, "direct p50", directLatency.p50, "ms");
        bench.report("  throughput of the proxy", proxyRate.rps, "one D1 read + forwarding", readRate.rps, "req/s");
      }
      const reference = scenario.compareTo && measured.get(scenario.compareTo);
      if (reference) {
        const addedHere = proxyLatency.p50 - directLatency.p50;
        const addedThere = reference.proxyLatency.p50 - reference.directLatency.p50;
        bench.report("  added p50", addedHere, `added p50, ${scenario.compareTo}`, addedThere, "ms");
        bench.report("  throughput of the proxy", proxyRate.rps, scenario.compareTo, reference.proxyRate.rps, "req/s");
      }
    }
    if (chosen("auditing")) await auditingCost(bench, destination.url, iterations, durationMs);
  } finally {
    await destination.close();
  }
}

async function cardToken(bench, key) {
  const card = await bench.request("POST", "/tokens", {
    key,
    body: { type: "card", data: { number: CARD, expiration_month: 11, expiration_year: 2030, cvc: "123" } },
  });
  if (card.status !== 201) throw new Error(`card token creation failed: ${card.status} ${JSON.stringify(card.body)}`);
  return card.body.id;
}

/**
 * The detokenizing scenario (one reference, authenticated) with auditing on and off (AUDIT_LOG=false),
 * each on a fresh vault from the same bundle (this bench's vault still writes the entries of the
 * scenarios before), turn about: what the audit log costs each request, its queue consumer included.
 */
async function auditingCost(bench, destinationUrl, iterations, durationMs) {
  // A smoke run takes the run's own vault as the audited one: a vault's start is seconds of CPU.
  const vaults = await Promise.all([bench.startVault({ bindings: { AUDIT_LOG: "false" } }), ...(bench.smoke ? [] : [bench.startVault()])]);
  const [unaudited, audited = bench.vault] = vaults;
  try {
    const on = await detokenizingCall(audited.baseUrl, audited.operatorKey, destinationUrl);
    const off = await detokenizingCall(unaudited.baseUrl, unaudited.operatorKey, destinationUrl);
    const [onLatency, offLatency] = await interleavedLatency(bench, [on, off], iterations);
    const [onRate, offRate] = await interleavedThroughput(bench, [on, off], durationMs);
    bench.section("1 detokenized reference, auditing on and off");
    bench.report("  auditing on p50", onLatency.p50, "auditing off p50", offLatency.p50, "ms");
    bench.report("  auditing on p95", onLatency.p95, "auditing off p95", offLatency.p95, "ms");
    console.log(
      `    auditing adds p50 ${(onLatency.p50 - offLatency.p50).toFixed(3)} ms, p95 ${(onLatency.p95 - offLatency.p95).toFixed(3)} ms`,
    );
    bench.report("  throughput, auditing on", onRate.rps, "auditing off", offRate.rps, "req/s");
  } finally {
    await Promise.all(vaults.map((vault) => vault.dispose()));
  }
}

/** A tenant, a token and a proxy on the vault at `baseUrl`; answers the call that detokenizes the token through the proxy. */
async function detokenizingCall(baseUrl, operatorKey, destinationUrl) {
  const post = async (path, headers, body) => {
    const reply = await send(`${baseUrl}${path}`, body, headers);
    if (reply.status !== 201) throw new Error(`POST ${path} failed: ${reply.status} ${reply.text}`);
    return JSON.parse(reply.text);
  };
  const tenant = await post("/tenants", { "SVC-OPERATOR-KEY": operatorKey }, { name: "audit-bench" });
  const management = { "SVC-API-KEY": tenant.application.key };
  const caller = await post("/applications", management, { name: "caller", type: "private", permissions: ["token:create", "token:use"] });
  const token = await post("/tokens", { "SVC-API-KEY": caller.key }, { type: "card_number", data: CARD });
  const proxy = await post("/proxies", management, { name: "bench", destination_url: destinationUrl });
  const headers = { "SVC-PROXY-KEY": proxy.key, "SVC-API-KEY": caller.key };
  const body = { card: `{{ ${token.id} }}` };
  return async () => {
    const reply = await send(`${baseUrl}/proxy/charges`, body, headers);
    if (reply.status !== 200) throw new Error(`proxy answered ${reply.status} ${reply.text}`);
  };
}
