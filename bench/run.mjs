#!/usr/bin/env node
// Runs the benchmarks under bench/ against the real worker in Miniflare (workerd, local D1 in
// memory, Worker Loader), each figure printed next to a baseline measured in the same run.
//   npm run bench                 every benchmark
//   npm run bench auth search     the named ones; extra --flags are passed to them as bench.args
import { execFileSync } from "node:child_process";
import { randomBytes } from "node:crypto";
import { readdirSync, readFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import { Miniflare } from "miniflare";

const root = join(dirname(fileURLToPath(import.meta.url)), "..");
const benchDir = join(root, "bench");
const buildDir = join(root, ".bench", "build");
const RUNNER_FILES = new Set(["run.mjs"]);

const argv = process.argv.slice(2);
const names = argv.filter((arg) => !arg.startsWith("--"));
const args = Object.fromEntries(
  argv.filter((arg) => arg.startsWith("--")).map((arg) => {
    const [key, value = "true"] = arg.slice(2).split("=");
    return [key, value];
  }),
);
const available = readdirSync(benchDir)
  .filter((file) => file.endsWith(".mjs") && !RUNNER_FILES.has(file))
  .map((file) => file.replace(/\.mjs$/, ""))
  .sort();
const selected = names.length > 0 ? names : available;
for (const name of selected) {
  if (!available.includes(name)) {
    console.error(`unknown benchmark "${name}"; available: ${available.join(", ")}`);
    process.exit(2);
  }
}

process.env.WRANGLER_SEND_METRICS = "false";
console.log("building the worker bundle…");
execFileSync("npx", ["wrangler", "deploy", "--dry-run", "--outdir", buildDir], { cwd: root, stdio: "ignore" });

const masterKey = randomBytes(32).toString("base64");
const operatorKey = `operator-${randomBytes(24).toString("hex")}`;
const wrangler = readFileSync(join(root, "wrangler.toml"), "utf8");
const compatibilityDate = /compatibility_date\s*=\s*"([^"]+)"/.exec(wrangler)[1];
const compatibilityFlags = JSON.parse(/compatibility_flags\s*=\s*(\[[^\]]*\])/.exec(wrangler)[1]);

// The runtime's own floor, for baselines: a worker that only forwards the request to `?to=` and
// returns the answer, in the same workerd.
const FORWARD_SCRIPT = `export default {
  async fetch(request) {
    const target = new URL(request.url).searchParams.get("to");
    const response = await fetch(target, { method: request.method, headers: request.headers, body: request.body });
    return new Response(response.body, response);
  },
};`;

// Two hops of Miniflare's own are left out, for both workers, because production has neither:
// - unsafeDirectSockets: requests reach each worker on its own socket instead of through
//   Miniflare's entry worker (which routes and adds CF-* headers; about 0.7 ms a request here);
// - stripCfConnectingIp: outbound fetches go straight out instead of through another worker of
//   Miniflare's that strips one header.
// `npm start` (wrangler dev) keeps both hops; the tests do not measure time.
const DIRECT_SOCKET = [{ host: "127.0.0.1", port: 0 }];
const mf = new Miniflare({
  host: "127.0.0.1",
  port: 0,
  workers: [
    {
      name: "vault",
      modules: true,
      scriptPath: join(buildDir, "index.js"),
      modulesRoot: buildDir,
      compatibilityDate,
      compatibilityFlags,
      d1Databases: { DB: "bench" },
      workerLoaders: { LOADER: {} },
      stripCfConnectingIp: false,
      unsafeDirectSockets: DIRECT_SOCKET,
      bindings: {
        HEADER_PREFIX: "SVC",
        VAULT_MASTER_KEY: masterKey,
        OPERATOR_API_KEY: operatorKey,
        ALLOW_INSECURE_DESTINATIONS: "true",
        SANDBOX_HOST: "loader",
      },
    },
    {
      name: "bench-forward",
      modules: true,
      script: FORWARD_SCRIPT,
      compatibilityDate,
      stripCfConnectingIp: false,
      unsafeDirectSockets: DIRECT_SOCKET,
    },
  ],
});
await mf.ready;
const urlOf = async (worker) => (await mf.unsafeGetDirectURL(worker)).toString().replace(/\/$/, "");
const baseUrl = await urlOf("vault");
const forwarderUrl = await urlOf("bench-forward");
const db = await mf.getD1Database("DB", "vault");
for (const file of readdirSync(join(root, "migrations")).filter((f) => f.endsWith(".sql")).sort()) {
  const statements = readFileSync(join(root, "migrations", file), "utf8").split("--> statement-breakpoint");
  for (const statement of statements) if (statement.trim()) await db.prepare(statement).run();
}

const bench = {
  args,
  db,
  masterKey,
  operatorKey,
  url: (path) => `${baseUrl}${path}`,
  /** The URL that reaches `target` through a worker that only forwards: the runtime's floor. */
  forwardUrl: (target) => `${forwarderUrl}/?to=${encodeURIComponent(target)}`,
  async request(method, path, { key, body, headers = {}, raw } = {}) {
    const sent = { ...headers };
    if (key) sent["SVC-API-KEY"] = key;
    let payload = raw;
    if (body !== undefined) payload = JSON.stringify(body);
    if (payload !== undefined && !Object.keys(sent).some((h) => h.toLowerCase() === "content-type")) {
      sent["content-type"] = "application/json";
    }
    const response = await fetch(`${baseUrl}${path}`, { method, headers: sent, body: payload });
    const text = await response.text();
    let parsed = text;
    try {
      parsed = text ? JSON.parse(text) : null;
    } catch {
      // not JSON: keep the text
    }
    return { status: response.status, headers: response.headers, body: parsed };
  },
  async seedTenant(name = `bench-${randomBytes(4).toString("hex")}`) {
    const reply = await bench.request("POST", "/tenants", { body: { name }, headers: { "SVC-OPERATOR-KEY": operatorKey } });
    if (reply.status !== 201) throw new Error(`tenant creation failed: ${reply.status} ${JSON.stringify(reply.body)}`);
    return {
      tenantId: reply.body.tenant.id,
      managementKey: reply.body.application.keys[0].key,
      managementApplicationId: reply.body.application.id,
    };
  },
  async createApplication(tenant, { type, permissions = [], rules = [], name = `${type} app` }) {
    const reply = await bench.request("POST", "/applications", {
      key: tenant.managementKey,
      body: { name, type, permissions, rules },
    });
    if (reply.status !== 201) throw new Error(`application creation failed: ${reply.status} ${JSON.stringify(reply.body)}`);
    return { id: reply.body.id, key: reply.body.keys[0].key };
  },
  async latency(fn, { iterations = 500, warmup = 50 } = {}) {
    for (let i = 0; i < warmup; i++) await fn(i);
    const samples = [];
    for (let i = 0; i < iterations; i++) {
      const start = performance.now();
      await fn(i);
      samples.push(performance.now() - start);
    }
    return summarize(samples);
  },
  async throughput(fn, { concurrency = 32, durationMs = 3000 } = {}) {
    const deadline = performance.now() + durationMs;
    let completed = 0;
    let i = 0;
    const start = performance.now();
    await Promise.all(
      Array.from({ length: concurrency }, async () => {
        while (performance.now() < deadline) {
          await fn(i++);
          completed++;
        }
      }),
    );
    return { rps: completed / ((performance.now() - start) / 1000) };
  },
  report(label, figure, baselineLabel, baseline, unit) {
    const ratio = baseline === 0 ? Infinity : figure / baseline;
    console.log(
      `  ${label.padEnd(44)} ${format(figure).padStart(10)} ${unit.padEnd(9)}` +
        ` | ${baselineLabel.padEnd(36)} ${format(baseline).padStart(10)} ${unit.padEnd(9)} | ratio ${ratio.toFixed(2)}`,
    );
  },
};

function summarize(samples) {
  const sorted = [...samples].sort((a, b) => a - b);
  const at = (q) => sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))];
  return { p50: at(0.5), p95: at(0.95), mean: samples.reduce((a, b) => a + b, 0) / samples.length };
}

function format(value) {
  return value >= 100 ? value.toFixed(0) : value >= 10 ? value.toFixed(1) : value.toFixed(3);
}

let failed = false;
try {
  for (const name of selected) {
    console.log(`\n## ${name}`);
    const started = performance.now();
    try {
      const module = await import(pathToFileURL(join(benchDir, `${name}.mjs`)).href);
      await module.default(bench);
      console.log(`  (${((performance.now() - started) / 1000).toFixed(1)} s)`);
    } catch (error) {
      failed = true;
      console.error(`  benchmark ${name} failed:`, error);
    }
  }
} finally {
  await mf.dispose();
}
process.exit(failed ? 1 : 0);
