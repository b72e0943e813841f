#!/usr/bin/env node
import { randomBytes } from "node:crypto";
import { existsSync, readFileSync } from "node:fs";
import { createServer } from "node:http";
import { join } from "node:path";
import { parseArgs } from "node:util";
// Load harness: a mixed load against a running vault for a fixed time, then a check that nothing was
// lost or doubled.
//   npm run load                          starts its own vault (bundled worker in Miniflare)
//   npm run load -- --duration=60         seconds of load (default 30)
//   npm run load -- --url=http://localhost:8787 [--operator-key=…] [--prefix=SVC]
//                                         against `npm start` (the key defaults to .dev.vars')
// The load (autocannon, one instance per operation, all at once): token creates, tokenize, reads,
// searches, detokenizing proxy calls, and deduplicating creates of a few SSNs from many connections.
// Then: every 201 id is readable, search counts equal what was created, exactly one token per
// deduplicated value, and no 5xx. Prints throughput and p50/p95/p99 per operation and the totals;
// exits non-zero when a check fails.
import autocannon from "autocannon";
import { readReply } from "../test/support/reply.mjs";
import { buildWorker, startLocalVault } from "./local-vault.mjs";

const { values: options } = parseArgs({
  options: {
    duration: { type: "string", default: "30" },
    url: { type: "string" },
    "operator-key": { type: "string" },
    prefix: { type: "string", default: "SVC" },
  },
});
const duration = Number(options.duration);
if (!Number.isFinite(duration) || duration <= 0) {
  console.error("--duration must be a positive number of seconds");
  process.exit(2);
}
const prefix = options.prefix.toUpperCase();
/** A few SSNs of this run, each created over and over from many connections at once. */
const DEDUPLICATED_VALUES = Array.from({ length: 5 }, () => {
  const digits = (count) => Array.from(randomBytes(count), (byte) => byte % 10).join("");
  return `${1 + (randomBytes(1)[0] % 8)}${digits(2)}-${digits(2)}-${digits(4)}`;
});

let vault = null;
let baseUrl = options.url?.replace(/\/$/, "");
let operatorKey = options["operator-key"];
if (!baseUrl) {
  console.log("building and starting a vault…");
  const buildDir = join(process.cwd(), ".wrangler", "load-build");
  buildWorker(buildDir);
  vault = await startLocalVault({ buildDir, bindings: { HEADER_PREFIX: prefix } });
  baseUrl = vault.baseUrl;
  operatorKey = vault.operatorKey;
}
operatorKey ??= devVar("OPERATOR_API_KEY");
if (!operatorKey) {
  console.error("an operator key is needed: --operator-key, or OPERATOR_API_KEY in .dev.vars");
  process.exit(2);
}

const destination = await startEcho();
const runId = randomBytes(6).toString("hex");
try {
  const setup = await prepare();
  console.log(`load for ${duration} s against ${baseUrl} (run ${runId})…`);
  const results = await Promise.all(scenarios(setup).map(run));
  report(results);
  const failures = await verify(setup, results);
  if (failures.length > 0) {
    console.log("\nFAILED:");
    for (const failure of failures) console.log(`  - ${failure}`);
    process.exitCode = 1;
  } else {
    console.log("\nall checks passed: 0 lost, 0 doubled, 0 5xx");
  }
} finally {
  await destination.close();
  await vault?.dispose();
}

function devVar(name) {
  const file = join(process.cwd(), ".dev.vars");
  if (!existsSync(file)) return undefined;
  const line = readFileSync(file, "utf8")
    .split("\n")
    .find((entry) => entry.startsWith(`${name}=`));
  return line?.slice(name.length + 1).replace(/^"|"$/g, "");
}

async function request(method, path, { key, body, headers = {} } = {}) {
  const response = await fetch(`${baseUrl}${path}`, {
    method,
    headers: {
      ...(key ? { [`${prefix}-API-KEY`]: key } : {}),
      ...(body === undefined ? {} : { "content-type": "application/json" }),
      ...headers,
    },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  return readReply(response);
}

async function expectStatus(reply, status, what) {
  if (reply.status !== status) throw new Error(`${what}: ${reply.status} ${JSON.stringify(reply.body)}`);
  return reply.body;
}

async function prepare() {
  const tenant = await expectStatus(
    await request("POST", "/tenants", { body: { name: `load-${runId}` }, headers: { [`${prefix}-OPERATOR-KEY`]: operatorKey } }),
    201,
    "tenant",
  );
  const managementKey = tenant.application.keys[0].key;
  const application = await expectStatus(
    await request("POST", "/applications", {
      key: managementKey,
      body: {
        name: "load",
        type: "private",
        permissions: ["token:create", "token:read", "token:search", "token:use"],
      },
    }),
    201,
    "application",
  );
  const key = application.keys[0].key;
  const proxy = await expectStatus(
    await request("POST", "/proxies", { key: managementKey, body: { name: "load", destination_url: destination.url } }),
    201,
    "proxy",
  );
  const readable = await expectStatus(
    await request("POST", "/tokens", { key, body: { type: "card_number", data: "4242424242424242" } }),
    201,
    "token",
  );
  return { key, proxyKey: proxy.key, tokenId: readable.id };
}

/** Each scenario is one autocannon instance; `onCreated` collects what its 201s created. */
function scenarios({ key, proxyKey, tokenId }) {
  const json = { "content-type": "application/json", [`${prefix}-API-KEY`]: key };
  let counter = 0;
  const unique = () => `${runId}-${++counter}`;
  return [
    {
      name: "create token",
      connections: 4,
      request: () => ({
        method: "POST",
        path: "/tokens",
        headers: json,
        body: JSON.stringify({ type: "token", data: `secret-${unique()}`, metadata: { run: runId, source: "create" } }),
      }),
      created: (body) => [JSON.parse(body).id],
      counted: "create",
    },
    {
      name: "tokenize",
      connections: 2,
      request: () => ({
        method: "POST",
        path: "/tokenize",
        headers: json,
        body: JSON.stringify({
          name: `name-${unique()}`,
          card: { type: "token", data: { n: unique() }, metadata: { run: runId, source: "tokenize" } },
        }),
      }),
      created: (body) => {
        const answer = JSON.parse(body);
        return [typeof answer.name === "string" ? answer.name : answer.name.id, answer.card.id];
      },
      counted: "tokenize",
    },
    {
      name: "read token",
      connections: 2,
      request: () => ({ method: "GET", path: `/tokens/${tokenId}`, headers: { [`${prefix}-API-KEY`]: key } }),
    },
    {
      name: "search",
      connections: 2,
      request: () => ({
        method: "POST",
        path: "/tokens/search",
        headers: json,
        body: JSON.stringify({ query: `metadata.run:${runId}`, size: 10 }),
      }),
    },
    {
      name: "proxy with a reference",
      connections: 2,
      request: () => ({
        method: "POST",
        path: "/proxy/charges",
        headers: { ...json, [`${prefix}-PROXY-KEY`]: proxyKey },
        body: JSON.stringify({ card: `{{ ${tokenId} }}`, amount: 100 }),
      }),
    },
    {
      name: "deduplicating create",
      connections: 6,
      request: () => ({
        method: "POST",
        path: "/tokens",
        headers: json,
        body: JSON.stringify({
          type: "social_security_number",
          data: DEDUPLICATED_VALUES[counter++ % DEDUPLICATED_VALUES.length],
          deduplicate_token: true,
          metadata: { run: runId, source: "dedup" },
        }),
      }),
      created: (body) => [JSON.parse(body).id],
      acceptDeduplicated: true,
    },
  ];
}

function run(scenario) {
  return new Promise((resolve, reject) => {
    const durations = [];
    const statuses = new Map();
    const ids = [];
    let sent = 0;
    const instance = autocannon(
      {
        url: baseUrl,
        connections: scenario.connections,
        duration,
        requests: [
          {
            setupRequest: (request) => {
              sent++;
              return { ...request, ...scenario.request() };
            },
            onResponse: (status, body) => {
              if (scenario.created && (status === 201 || (scenario.acceptDeduplicated && status === 200))) {
                ids.push(...scenario.created(body));
              }
            },
          },
        ],
      },
      // Requests still in flight when the time is up are cut off unanswered: they may or may not
      // have been carried out, so the checks allow for them and no more.
      (error) => (error ? reject(error) : resolve({ scenario, durations, statuses, ids, inFlight: sent - durations.length })),
    );
    instance.on("response", (_client, status, _bytes, responseTime) => {
      durations.push(responseTime);
      statuses.set(status, (statuses.get(status) ?? 0) + 1);
    });
  });
}

function percentile(sorted, q) {
  return sorted.length === 0 ? 0 : sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))];
}

function report(results) {
  console.log(
    `\n${"operation".padEnd(26)} ${"requests".padStart(9)} ${"req/s".padStart(8)} ${"p50 ms".padStart(8)} ${"p95 ms".padStart(8)} ${"p99 ms".padStart(8)}  statuses`,
  );
  let total = 0;
  const all = [];
  for (const { scenario, durations, statuses } of results) {
    const sorted = [...durations].sort((a, b) => a - b);
    total += durations.length;
    all.push(...durations);
    const statusText = [...statuses].map(([status, count]) => `${status}×${count}`).join(" ");
    console.log(
      `${scenario.name.padEnd(26)} ${String(durations.length).padStart(9)} ${(durations.length / duration).toFixed(0).padStart(8)}` +
        ` ${percentile(sorted, 0.5).toFixed(1).padStart(8)} ${percentile(sorted, 0.95).toFixed(1).padStart(8)} ${percentile(sorted, 0.99).toFixed(1).padStart(8)}  ${statusText}`,
    );
  }
  const sorted = all.sort((a, b) => a - b);
  console.log(
    `${"total".padEnd(26)} ${String(total).padStart(9)} ${(total / duration).toFixed(0).padStart(8)}` +
      ` ${percentile(sorted, 0.5).toFixed(1).padStart(8)} ${percentile(sorted, 0.95).toFixed(1).padStart(8)} ${percentile(sorted, 0.99).toFixed(1).padStart(8)}`,
  );
}

async function verify({ key }, results) {
  const failures = [];
  for (const { scenario, statuses } of results) {
    const errors = [...statuses].filter(([status]) => status >= 500);
    if (errors.length > 0) failures.push(`${scenario.name}: ${errors.map(([s, n]) => `${n}× ${s}`).join(", ")}`);
    const unexpected = [...statuses].filter(([status]) => status < 500 && status >= 300);
    if (unexpected.length > 0) failures.push(`${scenario.name}: unexpected ${unexpected.map(([s, n]) => `${n}× ${s}`).join(", ")}`);
  }

  // Every id a 201 (or a deduplicated 200) answered must be readable.
  const ids = [...new Set(results.flatMap(({ ids }) => ids))];
  let lost = 0;
  for (let i = 0; i < ids.length; i += 16) {
    const replies = await Promise.all(ids.slice(i, i + 16).map((id) => request("GET", `/tokens/${encodeURIComponent(id)}`, { key })));
    lost += replies.filter((reply) => reply.status !== 200).length;
  }
  console.log(`\nread back ${ids.length} created ids: ${lost} lost`);
  if (lost > 0) failures.push(`${lost} created tokens are not readable`);

  // Search counts equal what was created, per source (a page near the end keeps the count exact):
  // every answered create, plus at most the requests cut off in flight at the end.
  for (const source of ["create", "tokenize"]) {
    const counted = results.filter(({ scenario }) => scenario.counted === source);
    const answered = counted.reduce((sum, { statuses }) => sum + (statuses.get(201) ?? 0), 0);
    const inFlight = counted.reduce((sum, { inFlight }) => sum + inFlight, 0);
    const page = Math.max(1, Math.floor(answered / 100));
    const reply = await request("POST", "/tokens/search", {
      key,
      body: { query: `metadata.run:${runId} AND metadata.source:${source}`, page, size: 100 },
    });
    const found = reply.body?.pagination?.total_items;
    console.log(`search metadata.source:${source}: ${found} found, ${answered} answered 201 (+ ${inFlight} cut off in flight)`);
    if (!(found >= answered && found <= answered + inFlight)) {
      failures.push(`search found ${found} ${source}d tokens; ${answered} were answered 201 and ${inFlight} were in flight`);
    }
  }

  // Exactly one token per deduplicated value.
  for (const value of DEDUPLICATED_VALUES) {
    const reply = await request("POST", "/tokens/search", { key, body: { query: `data:"${value}" AND metadata.run:${runId}` } });
    const found = reply.body?.pagination?.total_items;
    if (found !== 1) failures.push(`${found} tokens hold the deduplicated value ending ${value.slice(-4)}; expected 1`);
  }
  const dedupIds = new Set(results.find(({ scenario }) => scenario.acceptDeduplicated)?.ids ?? []);
  console.log(`deduplicating creates: ${dedupIds.size} distinct ids for ${DEDUPLICATED_VALUES.length} values`);
  if (dedupIds.size !== DEDUPLICATED_VALUES.length)
    failures.push(`deduplicating creates gave ${dedupIds.size} ids for ${DEDUPLICATED_VALUES.length} values`);
  return failures;
}

/** A loopback destination that answers every request with a small JSON body. */
async function startEcho() {
  const server = createServer((request, response) => {
    request.resume();
    request.on("end", () => {
      response.writeHead(200, { "content-type": "application/json" });
      response.end('{"ok":true}');
    });
  });
  server.keepAliveTimeout = 60_000;
  await new Promise((resolve) => server.listen(0, "127.0.0.1", resolve));
  return { url: `http://127.0.0.1:${server.address().port}`, close: () => new Promise((resolve) => server.close(resolve)) };
}
