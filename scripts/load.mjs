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
// deduplicated value, no 5xx, and the audit log holds each answered request's entries exactly once
// (matched by the {P}-TRACE-ID each request sends) with a chain that verifies. Prints throughput and p50/p95/p99 per operation and the totals;
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
/** The started vault's log lines that name a D1 error (a limit passed, a statement refused); none may appear. */
const d1Errors = [];
let baseUrl = options.url?.replace(/\/$/, "");
let operatorKey = options["operator-key"];
if (!baseUrl) {
  console.log("building and starting a vault…");
  const buildDir = join(process.cwd(), ".wrangler", "load-build");
  buildWorker(buildDir);
  // The runtime's log lines come here rather than through Miniflare's own logging, which under this
  // load made its local queue broker answer some sends with 500; only warnings and errors are shown.
  vault = await startLocalVault({
    buildDir,
    bindings: { HEADER_PREFIX: prefix },
    onLog: ({ level, message }) => {
      if (level === "warn" || level === "error") console.log(`vault ${level}: ${message}`);
      if (/D1_|SQLITE_/.test(message)) d1Errors.push(message);
    },
  });
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
/** Every request of the load sends a trace id of this run, so its audit entries can be found. */
const TRACE_PREFIX = `load-${runId}-`;
let traced = 0;
/** What the audit log check found, for the summary line. */
let auditSummary = "";
try {
  const setup = await prepare();
  console.log(`load for ${duration} s against ${baseUrl} (run ${runId})…`);
  const results = await Promise.all(scenarios(setup).map(run));
  const loadWindow = { startedAt: setup.loadStartedAt, endedAt: Date.now() };
  report(results);
  const failures = await verify(setup, results, loadWindow);
  if (vault === null) console.log("the vault's log is not read: it runs elsewhere (--url)");
  else if (d1Errors.length > 0) failures.push(`the vault logged ${d1Errors.length} D1 errors, the first: ${d1Errors[0]}`);
  else console.log("vault log: no D1 error");
  if (failures.length > 0) {
    console.log("\nFAILED:");
    for (const failure of failures) console.log(`  - ${failure}`);
    process.exitCode = 1;
  } else {
    console.log(`\nall checks passed: 0 lost, 0 doubled, 0 5xx; ${auditSummary}, none lost or doubled`);
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
  const send = () =>
    fetch(`${baseUrl}${path}`, {
      method,
      headers: {
        ...(key ? { [`${prefix}-API-KEY`]: key } : {}),
        ...(body === undefined ? {} : { "content-type": "application/json" }),
        ...headers,
      },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
  try {
    return readReply(await send());
  } catch (error) {
    // A kept-alive connection the runtime closed as it was reused ("other side closed"): a GET
    // changes nothing, so it is sent once more on a fresh connection.
    if (method !== "GET" || error.cause?.code !== "UND_ERR_SOCKET") throw error;
    return readReply(await send());
  }
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
  return { key, managementKey, proxyKey: proxy.key, tokenId: readable.id, loadStartedAt: Date.now() };
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
      logEntries: 1,
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
      // The request's own entry and one per token it created.
      logEntries: 3,
    },
    {
      name: "read token",
      connections: 2,
      request: () => ({ method: "GET", path: `/tokens/${tokenId}`, headers: { [`${prefix}-API-KEY`]: key } }),
      logEntries: 1,
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
      logEntries: 1,
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
      // The invocation and the token it used.
      logEntries: 2,
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
      logEntries: 1,
    },
  ];
}

function run(scenario) {
  return new Promise((resolve, reject) => {
    const durations = [];
    const statuses = new Map();
    const ids = [];
    /** Trace ids of the requests answered. */
    const answered = [];
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
              const next = scenario.request();
              return { ...request, ...next, headers: { ...next.headers, [`${prefix}-TRACE-ID`]: `${TRACE_PREFIX}${++traced}` } };
            },
            onResponse: (status, body, _context, headers) => {
              if (scenario.created && (status === 201 || (scenario.acceptDeduplicated && status === 200))) {
                ids.push(...scenario.created(body));
              }
              answered.push(headers[`${prefix.toLowerCase()}-trace-id`]);
            },
          },
        ],
      },
      // Requests still in flight when the time is up are cut off unanswered: they may or may not
      // have been carried out, so the checks allow for them and no more.
      (error) => (error ? reject(error) : resolve({ scenario, durations, statuses, ids, answered, inFlight: sent - durations.length })),
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

async function verify({ key, managementKey }, results, loadWindow) {
  const failures = [];
  // First, before the checks below add entries of their own: how long the audit log took to hold
  // what the answered requests made.
  await awaitAuditEntries(managementKey, loadWindow, results);
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
  failures.push(...(await verifyAuditLog(managementKey, loadWindow, results)));
  return failures;
}

/**
 * The audit log holds, for every answered request of the load, exactly the entries it makes (none
 * lost, none doubled), and at most that for the requests cut off in flight; and its chain verifies.
 */
async function verifyAuditLog(managementKey, loadWindow, results) {
  const failures = [];
  const expected = new Map();
  for (const { scenario, answered } of results) for (const traceId of answered) expected.set(traceId, scenario.logEntries);
  const inFlight = results.reduce((sum, { inFlight }) => sum + inFlight, 0);
  const expectedTotal = [...expected.values()].reduce((sum, count) => sum + count, 0);

  const entries = await loadEntries(managementKey, loadWindow);
  const counts = countsByTrace(entries);
  let lost = 0;
  let doubled = 0;
  for (const [traceId, count] of expected) {
    const found = counts.get(traceId) ?? 0;
    if (found < count) lost += count - found;
    if (found > count) doubled += found - count;
  }
  const unanswered = [...counts].filter(([traceId]) => !expected.has(traceId));
  const maxPerRequest = Math.max(...results.map(({ scenario }) => scenario.logEntries));
  const strays = unanswered.filter(([, count]) => count > maxPerRequest).length;
  console.log(
    `audit log: ${entries.length} entries for ${expected.size} answered requests (${expectedTotal} expected, ` +
      `${unanswered.length} requests cut off in flight recorded too); ${lost} lost, ${doubled} doubled`,
  );
  if (lost > 0) failures.push(`${lost} audit entries of answered requests are missing`);
  if (doubled > 0 || strays > 0) failures.push(`${doubled + strays} audit entries are doubled`);
  if (unanswered.length > inFlight) failures.push(`${unanswered.length} unanswered requests are logged; only ${inFlight} were in flight`);

  const verification = await verifyWholeChain(managementKey);
  console.log(
    `audit chain: ${verification.verified ? "verified" : "BROKEN"} over ${verification.checked} entries ` +
      `(seq ${verification.anchor_seq + 1} to ${verification.head_seq}, ${verification.calls} calls); ` +
      `${verification.pending} waiting in audit_pending`,
  );
  if (!verification.verified) failures.push(`the audit chain breaks at ${JSON.stringify(verification.broken_at)}`);
  if (verification.complete === false) failures.push(`the audit chain was verified only up to seq ${verification.last_seq}`);
  if (verification.pending !== 0) failures.push(`${verification.pending} audit entries still wait in audit_pending`);
  auditSummary = `${entries.length} log entries for ${expected.size} operations`;
  return failures;
}

/**
 * Verifies the tenant's whole chain: one call checks at most 20,000 entries (`complete: false`), and
 * the next goes on after the last seq it checked.
 */
async function verifyWholeChain(managementKey) {
  let checked = 0;
  let afterSeq;
  for (let calls = 1; ; calls++) {
    const query = afterSeq === undefined ? "" : `?after_seq=${afterSeq}`;
    const verification = (await request("GET", `/logs/verify${query}`, { key: managementKey })).body;
    checked += verification.checked;
    if (!verification.verified || verification.complete || verification.last_seq === null) return { ...verification, checked, calls };
    afterSeq = verification.last_seq;
  }
}

/** The load's entries (by trace id) written since it started, read page by page up to a fixed end. */
/**
 * Waits until the log holds as many entries of the load's time as its answered requests made (the
 * queue consumer writes them a moment after the answers), counting it with one cheap page at a time,
 * and prints how long after the load ended that was.
 */
async function awaitAuditEntries(managementKey, loadWindow, results) {
  const expectedTotal = results.reduce((sum, { scenario, answered }) => sum + answered.length * scenario.logEntries, 0);
  const deadline = Date.now() + 120_000;
  for (;;) {
    if ((await countEntries(managementKey, loadWindow)) >= expectedTotal) {
      const after = (Date.now() - loadWindow.endedAt) / 1000;
      console.log(`\naudit log: as many entries as the answered requests made were there ${after.toFixed(1)} s after the load ended`);
      return;
    }
    if (Date.now() > deadline) {
      console.log("\naudit log: fewer entries than the answered requests made, 120 s after the load ended");
      return;
    }
    await new Promise((resolve) => setTimeout(resolve, 500));
  }
}

/** The log's entries of the load's time; entries of the checks after it are later. */
function logRange({ startedAt, endedAt }) {
  return { start_date: new Date(startedAt).toISOString(), end_date: new Date(endedAt + 1).toISOString() };
}

/** How many entries the log holds of the load's time. */
async function countEntries(managementKey, loadWindow) {
  const range = { ...logRange(loadWindow), size: "1", page: "1" };
  return (await request("GET", `/logs?${new URLSearchParams(range)}`, { key: managementKey })).body.pagination.total_items;
}

async function loadEntries(managementKey, loadWindow) {
  // A fixed end keeps the pages still while the reads of the log are themselves logged.
  const range = { ...logRange(loadWindow), size: "100" };
  const first = (await request("GET", `/logs?${new URLSearchParams({ ...range, page: "1" })}`, { key: managementKey })).body;
  const pages = [first];
  for (let page = 2; page <= first.pagination.total_pages; page += 8) {
    const numbers = Array.from({ length: Math.min(8, first.pagination.total_pages - page + 1) }, (_, i) => page + i);
    const replies = await Promise.all(
      numbers.map((number) => request("GET", `/logs?${new URLSearchParams({ ...range, page: String(number) })}`, { key: managementKey })),
    );
    pages.push(...replies.map((reply) => reply.body));
  }
  // Entries that waited in audit_pending are chained late with their request's time, so a page can
  // shift while it is read: an entry seen on two pages is one entry (ids are unique in the log).
  const entries = pages.flatMap((page) => page.data).filter((entry) => entry.trace_id.startsWith(TRACE_PREFIX));
  return [...new Map(entries.map((entry) => [entry.id, entry])).values()];
}

function countsByTrace(entries) {
  const counts = new Map();
  for (const { trace_id: traceId } of entries) counts.set(traceId, (counts.get(traceId) ?? 0) + 1);
  return counts;
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
