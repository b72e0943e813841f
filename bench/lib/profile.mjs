#!/usr/bin/env node
// Where a proxy call's time goes inside the vault: the V8 CPU profile of the vault's isolate while
// it serves one scenario of bench/proxy.mjs under 32 concurrent connections, taken through workerd's
// inspector. Prints the functions with the most self time and writes the whole profile (open it in
// Chrome's DevTools, Performance panel, for a flame graph). Nothing of it is in the vault's build.
//   node bench/lib/profile.mjs [anonymous|authenticated|1|10|transforms] [--requests=5000] [--built=<dir>] [--out=<file>]
//     [--binding=NAME=value] [--cpu-only]
import { randomBytes } from "node:crypto";
import { existsSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import WebSocket from "ws";
import { buildWorker, startLocalVault } from "../../scripts/local-vault.mjs";
import { TRANSFORM } from "../proxy.mjs";
import { send, startEcho } from "./measure.mjs";

const root = join(dirname(fileURLToPath(import.meta.url)), "..", "..");
const argv = process.argv.slice(2);
const option = (name, fallback) => argv.find((arg) => arg.startsWith(`--${name}=`))?.split("=")[1] ?? fallback;
const scenario = argv.find((arg) => !arg.startsWith("--")) ?? "anonymous";
const requests = Number(option("requests", "5000"));
const buildDir = resolve(option("built", join(root, ".bench", "build")));
const out = option("out", join(root, ".bench", `proxy-${scenario}.cpuprofile`));
if (!existsSync(join(buildDir, "index.js"))) buildWorker(buildDir);

const SAMPLING_INTERVAL_US = 100;
const inspectorPort = 9300 + Math.floor(Math.random() * 500);
// --binding=NAME=value (repeatable) sets a binding of the vault, e.g. --binding=AUDIT_LOG=false.
const bindings = Object.fromEntries(
  argv.filter((arg) => arg.startsWith("--binding=")).map((arg) => arg.slice("--binding=".length).split("=")),
);
const vault = await startLocalVault({ buildDir, inspectorPort, bindings });
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
  // bench/proxy.mjs's transforms scenario: an open proxy with a request and a response transform.
  const transforms = scenario === "transforms";
  const anonymous = scenario === "anonymous" || transforms;
  const transform = { code: TRANSFORM };
  const proxy = await post("/proxies", management, {
    name: "profile",
    destination_url: destination.url,
    require_auth: !anonymous,
    ...(transforms ? { request_transform: transform, response_transform: transform } : {}),
  });
  const headers = { "SVC-PROXY-KEY": proxy.key, ...(anonymous ? {} : { "SVC-API-KEY": caller.key }) };
  const call = async () => {
    const reply = await send(`${vault.baseUrl}/proxy/charges`, body, headers);
    if (reply.status !== 200) throw new Error(`proxy answered ${reply.status} ${reply.text}`);
  };
  const load = async (count) => {
    let next = 0;
    await Promise.all(
      Array.from({ length: 32 }, async () => {
        while (next++ < count) await call();
      }),
    );
  };
  await load(500);
  // The CPU time workerd (every worker, D1's SQLite and the queues included) spends a call, which a
  // loaded machine disturbs much less than it does latency.
  const workerd = childWorkerd();
  for (let round = 0; round < 3; round++) {
    const before = cpuMicros(workerd);
    const startedAt = performance.now();
    await load(requests);
    const wall = performance.now() - startedAt;
    console.log(
      `workerd CPU ${((cpuMicros(workerd) - before) / requests).toFixed(0)} µs a call (${requests} calls in ${wall.toFixed(0)} ms)`,
    );
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

  const targets = await (await fetch(`http://127.0.0.1:${inspectorPort}/json/list`)).json();
  const target = targets.find((each) => each.title?.includes("vault") || each.url?.includes("vault")) ?? targets[0];
  const inspector = await connect(target.webSocketDebuggerUrl);
  await inspector.call("Profiler.enable");
  await inspector.call("Profiler.setSamplingInterval", { interval: SAMPLING_INTERVAL_US });
  await inspector.call("Profiler.start");
  const started = performance.now();
  await load(requests);
  const elapsed = performance.now() - started;
  const { profile } = await inspector.call("Profiler.stop");
  inspector.close();
  writeFileSync(out, JSON.stringify(profile));
  printSelfTimes(profile, requests, elapsed);
  console.log(`profile written to ${out} (${targets.length} inspector targets; profiled ${target.title ?? target.url})`);
} finally {
  await destination.close();
  await vault.dispose();
}

/** The workerd process this script's Miniflare started. */
function childWorkerd() {
  for (const pid of readdirSync("/proc").filter((name) => /^\d+$/.test(name))) {
    try {
      const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
      const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
      if (stat.includes("(workerd)") && Number(fields[1]) === process.pid) return pid;
    } catch {}
  }
  throw new Error("no workerd child process found");
}

/** User and system CPU time of a process so far, in microseconds. */
function cpuMicros(pid) {
  const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
  const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
  return ((Number(fields[11]) + Number(fields[12])) * 1e6) / 100;
}

function connect(url) {
  return new Promise((resolvePromise, reject) => {
    const socket = new WebSocket(url);
    const pending = new Map();
    let id = 0;
    socket.on("message", (data) => {
      const message = JSON.parse(data.toString());
      const waiter = pending.get(message.id);
      if (!waiter) return;
      pending.delete(message.id);
      if (message.error) waiter.reject(new Error(message.error.message));
      else waiter.resolve(message.result);
    });
    socket.on("error", reject);
    socket.on("open", () =>
      resolvePromise({
        call: (method, params = {}) =>
          new Promise((resolveCall, rejectCall) => {
            pending.set(++id, { resolve: resolveCall, reject: rejectCall });
            socket.send(JSON.stringify({ id, method, params }));
          }),
        close: () => socket.close(),
      }),
    );
  });
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
  // Each sample counts as one sampling interval: on a loaded machine the sampler is starved and the
  // recorded gaps between samples (often milliseconds) measure the scheduler, not the code.
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
  const all = [...self.values()].reduce((sum, value) => sum + value, 0);
  const idle = [...self.entries()].filter(([key]) => key.startsWith("(idle)")).reduce((sum, [, value]) => sum + value, 0);
  console.log(`${count} calls in ${elapsedMs.toFixed(0)} ms; about ${((all - idle) / count).toFixed(1)} µs a call sampled busy`);
  const top = (map, limit) =>
    [...map.entries()]
      .sort((a, b) => b[1] - a[1])
      .slice(0, limit)
      .map(([key, micros]) => `  ${(micros / count).toFixed(2).padStart(8)} µs  ${key}`)
      .join("\n");
  console.log(`self time a call:\n${top(self, 40)}`);
  console.log(`total time a call (callees included):\n${top(total, Number(option("totals", "60")))}`);
}
