#!/usr/bin/env node
// Where a proxy call's time goes inside the vault: the V8 CPU profile of the vault's isolate while
// it serves one scenario of bench/proxy.mjs under 32 concurrent connections, taken through workerd's
// inspector. Prints the functions with the most self time and writes the whole profile (open it in
// Chrome's DevTools, Performance panel, for a flame graph). Nothing of it is in the vault's build.
//   node bench/lib/profile.mjs [anonymous|authenticated|1|10|request-transform|transforms] [--requests=5000] [--built=<dir>] [--out=<file>]
//     [--binding=NAME=value] [--cpu-only]
import { randomBytes } from "node:crypto";
import { existsSync, writeFileSync } from "node:fs";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { buildWorker, startLocalVault } from "../../scripts/local-vault.mjs";
import { TRANSFORM } from "../proxy.mjs";
import { settledCpu, workerdServing } from "./cpu.mjs";
import { busyMicros, profileVault, SAMPLING_INTERVAL_US } from "./inspector.mjs";
import { callsAtOnce, send, startEcho } from "./measure.mjs";

const root = join(dirname(fileURLToPath(import.meta.url)), "..", "..");
const argv = process.argv.slice(2);
const option = (name, fallback) => argv.find((arg) => arg.startsWith(`--${name}=`))?.split("=")[1] ?? fallback;
const scenario = argv.find((arg) => !arg.startsWith("--")) ?? "anonymous";
const requests = Number(option("requests", "5000"));
const buildDir = resolve(option("built", join(root, ".bench", "build")));
const out = option("out", join(root, ".bench", `proxy-${scenario}.cpuprofile`));
if (!existsSync(join(buildDir, "index.js"))) buildWorker(buildDir);

// --binding=NAME=value (repeatable) sets a binding of the vault, e.g. --binding=AUDIT_LOG=false.
const bindings = Object.fromEntries(
  argv.filter((arg) => arg.startsWith("--binding=")).map((arg) => arg.slice("--binding=".length).split("=")),
);
const vault = await startLocalVault({ buildDir, inspectorPort: 0, bindings });
const destination = await startEcho();
try {
  const post = async (path, headers, body) => {
    const reply = await send(`${vault.baseUrl}${path}`, body, headers);
    if (reply.status !== 201) throw new Error(`POST ${path} failed: ${reply.status} ${reply.text}`);
    return JSON.parse(reply.text);
  };
  const tenant = await post("/tenants", { "SVC-OPERATOR-KEY": vault.operatorKey }, { name: `profile-${randomBytes(4).toString("hex")}` });
  const management = { "SVC-API-KEY": tenant.application.keys[0].key };
  const caller = await post("/applications", management, { name: "caller", type: "private", permissions: ["token:create", "token:use"] });
  const references = Number(scenario) || 0;
  const body = { amount: 100 };
  for (let i = 0; i < references; i++) {
    const token = await post("/tokens", { "SVC-API-KEY": caller.key }, { type: "card_number", data: "4242424242424242" });
    body[`card_${i}`] = `{{ ${token.id} }}`;
  }
  // bench/proxy.mjs's transform scenarios: an open proxy with a request transform, or a request and a response transform.
  const transforms = scenario === "transforms";
  const requestTransform = transforms || scenario === "request-transform";
  const anonymous = scenario === "anonymous" || requestTransform;
  const transform = { code: TRANSFORM };
  const proxy = await post("/proxies", management, {
    name: "profile",
    destination_url: destination.url,
    require_auth: !anonymous,
    ...(requestTransform ? { request_transform: transform } : {}),
    ...(transforms ? { response_transform: transform } : {}),
  });
  const headers = { "SVC-PROXY-KEY": proxy.key, ...(anonymous ? {} : { "SVC-API-KEY": caller.key }) };
  const call = async () => {
    const reply = await send(`${vault.baseUrl}/proxy/charges`, body, headers);
    if (reply.status !== 200) throw new Error(`proxy answered ${reply.status} ${reply.text}`);
  };
  const load = (count) => callsAtOnce(call, count, 32);
  await load(500);
  // The CPU time workerd (every worker, D1's SQLite and the queues included) spends a call, what the
  // calls left behind (the audit log's queue consumer) included, which a loaded machine disturbs much
  // less than it does latency.
  const workerd = workerdServing(vault.baseUrl);
  for (let round = 0; round < 3; round++) {
    const before = await settledCpu(workerd);
    const startedAt = performance.now();
    await load(requests);
    const wall = performance.now() - startedAt;
    const spent = (await settledCpu(workerd)) - before;
    console.log(`workerd CPU ${(spent / requests).toFixed(0)} µs a call (${requests} calls in ${wall.toFixed(0)} ms)`);
  }
  // One call at a time: the latency a lone caller sees, with whatever the vault does after each answer.
  const latencies = [];
  for (let i = 0; i < Math.min(requests, 2000); i++) {
    const startedAt = performance.now();
    await call();
    latencies.push(performance.now() - startedAt);
  }
  latencies.sort((a, b) => a - b);
  const at = (q) => latencies[Math.floor(q * (latencies.length - 1))].toFixed(3);
  console.log(`one call at a time: p50 ${at(0.5)} ms, p95 ${at(0.95)} ms, p99 ${at(0.99)} ms`);
  if (argv.includes("--cpu-only")) process.exit(0);

  const started = performance.now();
  const { profile, target, targets } = await profileVault(vault.inspectorUrl, () => load(requests));
  const elapsed = performance.now() - started;
  writeFileSync(out, JSON.stringify(profile));
  printSelfTimes(profile, requests, elapsed);
  console.log(`profile written to ${out} (${targets} inspector targets; profiled ${target})`);
} finally {
  await destination.close();
  await vault.dispose();
}

/** Self and total time per function (name and place), in microseconds per call, most first. */
function printSelfTimes(profile, count, elapsedMs) {
  const byId = new Map(profile.nodes.map((node) => [node.id, node]));
  const parentOf = new Map();
  for (const node of profile.nodes) for (const child of node.children ?? []) parentOf.set(child, node.id);
  const keyOf = (node) => {
    const { functionName, url, lineNumber } = node.callFrame;
    return `${functionName || "(anonymous)"} ${url.split("/").pop()}:${lineNumber + 1}`;
  };
  const self = new Map();
  const total = new Map();
  // Each sample counts as one sampling interval, as busyMicros explains.
  const interval = SAMPLING_INTERVAL_US;
  for (const sampleId of profile.samples) {
    const node = byId.get(sampleId);
    self.set(keyOf(node), (self.get(keyOf(node)) ?? 0) + interval);
    const seen = new Set();
    for (let id = sampleId; id !== undefined; id = parentOf.get(id)) {
      const key = keyOf(byId.get(id));
      if (seen.has(key)) continue;
      seen.add(key);
      total.set(key, (total.get(key) ?? 0) + interval);
    }
  }
  console.log(`${count} calls in ${elapsedMs.toFixed(0)} ms; about ${(busyMicros(profile) / count).toFixed(1)} µs a call sampled busy`);
  const top = (map, limit) =>
    [...map.entries()]
      .sort((a, b) => b[1] - a[1])
      .slice(0, limit)
      .map(([key, micros]) => `  ${(micros / count).toFixed(2).padStart(8)} µs  ${key}`)
      .join("\n");
  console.log(`self time a call:\n${top(self, 40)}`);
  console.log(`total time a call (callees included):\n${top(total, Number(option("totals", "60")))}`);
}
