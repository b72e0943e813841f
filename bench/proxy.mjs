// Proxy overhead: the same loopback echo destination called directly, through a worker that only
// forwards (the runtime's own floor on this machine), and through /proxy, in the same run.
// Scenarios: no transform (anonymous and authenticated), 1 and 10 detokenized references, a card
// token used through four `json` expressions and a `card_exp`, a request transform, request and
// response transforms; and one detokenized reference with auditing on, next to a vault with auditing
// off (AUDIT_LOG=false).
// Prints p50/p95 (and the latency the vault adds) and throughput under 32 concurrent connections,
// each next to the direct call and the bare forwarding worker. Scenarios are also measured next to
// fair floors of their own: those that detokenize, a bare worker that makes one indexed D1 read by
// primary key and then forwards; the transforms, a bare worker that passes the body through one call
// of a trivial Worker Loader isolate (and one that does so on the answer too) and forwards.
// Beside each latency: the CPU time workerd spends a call (32 connections, what a call leaves behind
// included) of the call and of its floor, and the vault isolate's JavaScript CPU time a proxied call
// next to the bare forwarding worker's a forwarded call.
//   npm run bench proxy [--iterations=500] [--duration=3000] [--cpu=2000] [--profile=2000]
//     [--scenarios=anonymous,authenticated]
// --scenarios keeps the scenarios whose label contains one of the words (and leaves out the
// auditing comparison unless one word is "auditing"): a bisection measures only what it bisects.
// Direct, forwarded and proxied calls are measured turn about (latency in rounds, throughput in
// windows, CPU in bursts). A scenario whose token type this build does not know (an older commit's,
// under --against) is skipped, and the benchmark says so.
import { interleavedCpu, interleavedLatency, interleavedThroughput, send, startEcho } from "./lib/measure.mjs";

const CARD = "4242424242424242";
export const TRANSFORM =
  "module.exports = async function (req) { return { body: { ...req.args.body, seen: true }, headers: req.args.headers }; };";
const REFERENCES = 10;

export default async function proxy(bench) {
  const {
    iterations,
    duration: durationMs,
    cpu: cpuRequests,
    profile: profileRequests,
  } = bench.sizes({ iterations: [500, 1], duration: [3000, 50], cpu: [2000, 2], profile: [2000, 1] });
  const wanted = bench.args.scenarios?.split(",");
  const chosen = (label) => !wanted || wanted.some((word) => label.includes(word));
  const destination = await startEcho();
  const target = `${destination.url}/charges`;
  try {
    const tenant = await bench.seedTenant();
    const caller = await bench.createApplication(tenant, { type: "private", permissions: ["token:create", "token:use"] });
    // Each token type's ids, or null where this build does not know the type. A card token only when
    // its scenario runs: a bisection of the others needs none.
    const seeded = new Map([["card_number", await tokensOf(bench, caller.key, { type: "card_number", data: CARD }, REFERENCES)]]);
    if (chosen("card")) seeded.set("card", await tokensOf(bench, caller.key, { type: "card", data: CARD_DATA }, 1));
    const cardNumbers = seeded.get("card_number") ?? [];
    const [cardId] = seeded.get("card") ?? [];
    const createProxy = async (body) => {
      const reply = await bench.request("POST", "/proxies", {
        key: tenant.managementKey,
        body: { name: "bench", destination_url: destination.url, ...body },
      });
      if (reply.status !== 201) throw new Error(`proxy creation failed: ${reply.status} ${JSON.stringify(reply.body)}`);
      return reply.body.key;
    };

    const cardExpressions = {
      number: `{{ ${cardId} | json: '$.number' }}`,
      month: `{{ ${cardId} | json: '$.expiration_month' }}`,
      year: `{{ ${cardId} | json: '$.expiration_year' }}`,
      cvc: `{{ ${cardId} | json: '$.cvc' }}`,
      expiry: `{{ ${cardId} | card_exp: 'MM/YY' }}`,
    };
    const cardRevealed = { number: CARD, month: "11", year: "2030", cvc: "123", expiry: "11/30" };

    const references = (count) => Object.fromEntries(cardNumbers.slice(0, count).map((id, i) => [`card_${i}`, `{{ ${id} }}`]));
    const revealed = (count) => Object.fromEntries(cardNumbers.slice(0, count).map((_, i) => [`card_${i}`, CARD]));
    /** The fair floor of a call that detokenizes: one indexed D1 read by primary key (of `tokenId`'s row), then forwarding. */
    const oneRead = (tokenId) => ({ label: "one D1 read + forwarding", url: bench.readForwardUrl(target, tenant.tenantId, tokenId) });
    const scenarios = [
      { label: "no transform, anonymous", proxy: { require_auth: false }, body: { amount: 100 } },
      { label: "no transform, authenticated", proxy: {}, apiKey: caller.key, body: { amount: 100 } },
      {
        label: "1 detokenized reference",
        types: ["card_number"],
        proxy: {},
        apiKey: caller.key,
        body: references(1),
        direct: revealed(1),
        floors: [oneRead(cardNumbers[0])],
      },
      {
        label: `${REFERENCES} detokenized references`,
        types: ["card_number"],
        proxy: {},
        apiKey: caller.key,
        body: references(REFERENCES),
        direct: revealed(REFERENCES),
        floors: [oneRead(cardNumbers[0])],
      },
      {
        label: "card: 4 json expressions + card_exp",
        types: ["card"],
        proxy: {},
        apiKey: caller.key,
        body: cardExpressions,
        direct: cardRevealed,
        floors: [oneRead(cardId)],
        expect: '\\"expiry\\":\\"11/30\\"',
        compareTo: "1 detokenized reference",
      },
      {
        // What the floor is: one call into a Worker Loader isolate, then forwarding.
        label: "request transform",
        proxy: { require_auth: false, request_transform: { code: TRANSFORM } },
        body: { amount: 100 },
        floors: [{ label: "one Worker Loader call + forwarding", url: bench.loaderForwardUrl(target, 1) }],
        // The echo answers what it received as a JSON string: the transformed body, quoted.
        expect: '\\"seen\\":true',
      },
      {
        label: "request + response transforms",
        proxy: { require_auth: false, request_transform: { code: TRANSFORM }, response_transform: { code: TRANSFORM } },
        body: { amount: 100 },
        // The floor is one call; the transforms make two, one on the request and one on the answer.
        floors: [
          { label: "one Worker Loader call + forwarding", url: bench.loaderForwardUrl(target, 1) },
          { label: "two Worker Loader calls + forwarding", url: bench.loaderForwardUrl(target, 2) },
        ],
        expect: '"seen":true',
      },
    ];

    // The floor every proxied call pays on this machine: one request to the worker that does nothing.
    const getHealth = () => fetch(bench.url("/health")).then((reply) => reply.arrayBuffer());
    const health = await bench.latency(getHealth, { iterations });
    const echo = await bench.latency(() => send(target, { amount: 100 }, {}), { iterations });
    const [healthCpu] = await interleavedCpu(bench, [getHealth], cpuRequests);
    bench.report("GET /health (worker floor) p50", health.p50, "direct p50", echo.p50, "ms", { cpu: [healthCpu, null] });

    const measured = new Map();
    for (const scenario of scenarios.filter((each) => chosen(each.label))) {
      bench.section(scenario.label);
      const unknown = scenario.types?.find((type) => seeded.get(type) === null);
      if (unknown) {
        bench.skip(scenario.label, `this build does not know token type ${unknown} (POST /tokens refuses its type)`);
        continue;
      }
      const proxyKey = await createProxy(scenario.proxy);
      const viaProxy = () =>
        send(bench.url("/proxy/charges"), scenario.body, {
          "SVC-PROXY-KEY": proxyKey,
          ...(scenario.apiKey ? { "SVC-API-KEY": scenario.apiKey } : {}),
        });
      // Directly, the destination gets what the proxy would send it: the data itself, not references.
      const sent = scenario.direct ?? scenario.body;
      const direct = () => send(target, sent, {});
      const check = await viaProxy();
      if (check.status !== 200) throw new Error(`${scenario.label}: proxy answered ${check.status} ${check.text}`);
      const expected = scenario.expect ?? (scenario.direct ? CARD : null);
      if (expected && !check.text.includes(expected)) {
        throw new Error(`${scenario.label}: expected ${expected} in the answer, got ${check.text}`);
      }

      // The runtime's own floor: a worker that does nothing but forward the same request.
      const forwarded = () => send(bench.forwardUrl(target), sent, {});
      // The scenario's fair floors are sent what the destination gets directly, as bare forwarding is.
      const floors = (scenario.floors ?? []).map((floor) => ({ ...floor, call: () => send(floor.url, sent, {}) }));
      const served = [forwarded, viaProxy, ...floors.map((floor) => floor.call)];
      const [directLatency, forwardLatency, proxyLatency, ...floorLatencies] = await interleavedLatency(
        bench,
        [direct, ...served],
        iterations,
      );
      const [directRate, forwardRate, proxyRate, ...floorRates] = await interleavedThroughput(bench, [direct, ...served], durationMs);
      const [forwardCpu, proxyCpu, ...floorCpus] = await interleavedCpu(bench, served, cpuRequests);
      const javaScript = await bench.vaultJavaScript(viaProxy, profileRequests);
      // The same figure of the bare forwarding worker: the runtime's own share of a forwarded call (the
      // fetch, the Request and Response) falls on whichever isolate forwards.
      const forwardJavaScript = await bench.vaultJavaScript(forwarded, profileRequests, "bench-forward");
      measured.set(scenario.label, { directLatency, proxyLatency, proxyRate });

      bench.report("  through the proxy p50", proxyLatency.p50, "direct p50", directLatency.p50, "ms", { cpu: [proxyCpu, null] });
      bench.report("  through the proxy p95", proxyLatency.p95, "direct p95", directLatency.p95, "ms", { cpu: [proxyCpu, null] });
      bench.report("  through a bare forwarding worker p50", forwardLatency.p50, "direct p50", directLatency.p50, "ms", {
        cpu: [forwardCpu, null],
      });
      bench.report("  through the proxy p50", proxyLatency.p50, "bare forwarding p50", forwardLatency.p50, "ms", {
        cpu: [proxyCpu, forwardCpu],
      });
      bench.report("  through the proxy p95", proxyLatency.p95, "bare forwarding p95", forwardLatency.p95, "ms", {
        cpu: [proxyCpu, forwardCpu],
      });
      for (const [index, floor] of floors.entries()) {
        const [latency, cpu] = [floorLatencies[index], floorCpus[index]];
        bench.report(`  through ${floor.label} p50`, latency.p50, "direct p50", directLatency.p50, "ms", { cpu: [cpu, null] });
        bench.report("  through the proxy p50", proxyLatency.p50, `${floor.label} p50`, latency.p50, "ms", { cpu: [proxyCpu, cpu] });
      }
      const added = (figures) =>
        `p50 ${(figures.p50 - directLatency.p50).toFixed(3)} ms, p95 ${(figures.p95 - directLatency.p95).toFixed(3)} ms`;
      console.log(`    added latency: ${added(proxyLatency)} (a bare forwarding worker adds ${added(forwardLatency)})`);
      const ownCpu = proxyCpu === null ? "" : `, CPU ${(proxyCpu - forwardCpu).toFixed(0)} µs a call`;
      console.log(
        `    the vault's own share (proxy minus bare forwarding): p50 ${(proxyLatency.p50 - forwardLatency.p50).toFixed(3)} ms,` +
          ` p95 ${(proxyLatency.p95 - forwardLatency.p95).toFixed(3)} ms${ownCpu}`,
      );
      // Of workerd's CPU time a proxied call, the part the vault's JavaScript takes (its V8 profile).
      if (proxyCpu !== null) bench.report("  the vault's JavaScript a call", javaScript, "workerd CPU a call", proxyCpu, "µs");
      bench.report("  the vault's JavaScript a call", javaScript, "bare forwarding's JavaScript", forwardJavaScript, "µs");
      bench.report("  throughput, 32 connections", proxyRate.rps, "direct", directRate.rps, "req/s");
      bench.report("  throughput of bare forwarding", forwardRate.rps, "direct", directRate.rps, "req/s");
      bench.report("  throughput of the proxy", proxyRate.rps, "bare forwarding", forwardRate.rps, "req/s");
      for (const [index, floor] of floors.entries()) {
        bench.report("  throughput of the proxy", proxyRate.rps, floor.label, floorRates[index].rps, "req/s");
      }
      const reference = scenario.compareTo && measured.get(scenario.compareTo);
      if (reference) {
        const addedHere = proxyLatency.p50 - directLatency.p50;
        const addedThere = reference.proxyLatency.p50 - reference.directLatency.p50;
        bench.report("  added p50", addedHere, `added p50, ${scenario.compareTo}`, addedThere, "ms");
        bench.report("  throughput of the proxy", proxyRate.rps, scenario.compareTo, reference.proxyRate.rps, "req/s");
      }
    }
    if (chosen("auditing")) {
      if (seeded.get("card_number") === null) bench.skip("auditing", "this build does not know token type card_number");
      else await auditingCost(bench, destination.url, { iterations, durationMs, cpuRequests });
    }
  } finally {
    await destination.close();
  }
}

const CARD_DATA = { number: CARD, expiration_month: 11, expiration_year: 2030, cvc: "123" };

/** `count` tokens of the body's type and data, or null when this build does not know the type. */
async function tokensOf(bench, key, body, count) {
  const ids = [];
  for (let i = 0; i < count; i++) {
    const id = await bench.createToken(key, body);
    if (id === null) return null;
    ids.push(id);
  }
  return ids;
}

/**
 * The detokenizing scenario (one reference, authenticated) with auditing on and off (AUDIT_LOG=false),
 * each on a fresh vault from the same bundle (this bench's vault still writes the entries of the
 * scenarios before), turn about: what the audit log costs each request, its queue consumer included.
 */
async function auditingCost(bench, destinationUrl, { iterations, durationMs, cpuRequests }) {
  // A smoke run takes the run's own vault as the audited one: a vault's start is seconds of CPU.
  const vaults = await Promise.all([bench.startVault({ bindings: { AUDIT_LOG: "false" } }), ...(bench.smoke ? [] : [bench.startVault()])]);
  const [unaudited, audited = bench.vault] = vaults;
  try {
    const on = await detokenizingCall(audited.baseUrl, audited.operatorKey, destinationUrl);
    const off = await detokenizingCall(unaudited.baseUrl, unaudited.operatorKey, destinationUrl);
    const [onLatency, offLatency] = await interleavedLatency(bench, [on, off], iterations);
    const [onRate, offRate] = await interleavedThroughput(bench, [on, off], durationMs);
    // Each vault runs in a workerd of its own, whose CPU time is its calls' alone.
    const cpu = await interleavedCpu(bench, [on, off], cpuRequests, [audited.workerd, unaudited.workerd]);
    bench.section("1 detokenized reference, auditing on and off");
    bench.report("  auditing on p50", onLatency.p50, "auditing off p50", offLatency.p50, "ms", { cpu });
    bench.report("  auditing on p95", onLatency.p95, "auditing off p95", offLatency.p95, "ms", { cpu });
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
