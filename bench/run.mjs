#!/usr/bin/env node
// Runs the benchmarks under bench/ against the real worker in Miniflare (workerd, local D1 in
// memory, Worker Loader), each figure printed next to a baseline measured in the same run.
//   npm run bench                 every benchmark
//   npm run bench auth search     the named ones; extra --flags are passed to them as bench.args
//   npm run bench proxy -- --against=<commit> [--rounds=2]
//                                 each named benchmark on this build and on <commit>'s, turn about in
//                                 rounds, then every figure of both side by side with its ratio
//   npm run bench -- --smoke      every benchmark once at a tiny size, all at the same time (part of
//                                 npm test): what it checks is that each still runs, not its figures
//   npm run bench -- --built=<dir> this build's worker bundle as already built into <dir> (npm test
//                                 passes its dry run's) instead of building it again
// Every reply a benchmark receives must be a success (2xx), or the benchmark fails: a figure of
// failing requests measures nothing.
import { randomBytes } from "node:crypto";
import { readdirSync } from "node:fs";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import { buildWorker, startLocalVault } from "../scripts/local-vault.mjs";
import { readReply } from "../test/support/reply.mjs";
import { buildCommit } from "./lib/builds.mjs";
import { mean, percentiles } from "./lib/statistics.mjs";

const root = join(dirname(fileURLToPath(import.meta.url)), "..");
const benchDir = join(root, "bench");
const RUNNER_FILES = new Set(["run.mjs"]);

const argv = process.argv.slice(2);
const names = argv.filter((arg) => !arg.startsWith("--"));
const args = Object.fromEntries(
  argv
    .filter((arg) => arg.startsWith("--"))
    .map((arg) => {
      const [key, value = "true"] = arg.slice(2).split("=");
      return [key, value];
    }),
);
const smoke = args.smoke === "true";
const buildDir = args.built ? resolve(args.built) : join(root, ".bench", "build");
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
failOnUnsuccessfulReplies();
if (!args.built) {
  console.log("building the worker bundle…");
  buildWorker(buildDir);
}

// The runtime's own floors, for baselines, in the same workerd: a worker that only forwards the
// request to `?to=` and returns the answer; one that makes one indexed D1 read by primary key
// (`?tenant=&id=`, an application row of the vault's database) and answers the row; and one that
// first reads a token row so (`?tenant=&id=`) and then forwards.
const FORWARD_SCRIPT = `export default {
  async fetch(request) {
    const target = new URL(request.url).searchParams.get("to");
    const response = await fetch(target, { method: request.method, headers: request.headers, body: request.body });
    return new Response(response.body, response);
  },
};`;
const READ_SCRIPT = `export default {
  async fetch(request, env) {
    const params = new URL(request.url).searchParams;
    const row = await env.DB.prepare("SELECT * FROM applications WHERE tenant_id = ? AND id = ?")
      .bind(params.get("tenant"), params.get("id"))
      .first();
    if (!row) return new Response("no such row", { status: 500 });
    return Response.json(row);
  },
};`;
const READ_AND_FORWARD_SCRIPT = `export default {
  async fetch(request, env) {
    const params = new URL(request.url).searchParams;
    const row = await env.DB.prepare("SELECT ciphertext FROM tokens WHERE tenant_id = ? AND id = ?")
      .bind(params.get("tenant"), params.get("id"))
      .first();
    if (!row) return new Response("no such row", { status: 500 });
    const response = await fetch(params.get("to"), { method: request.method, headers: request.headers, body: request.body });
    return new Response(response.body, response);
  },
};`;

/**
 * A vault of the bundle in `buildDir` with the runtime's floors beside it, and the `bench` object a
 * benchmark drives it through. Each report is printed and, with `reports`, also collected.
 */
async function startBench(buildDir, reports) {
  const vault = await startLocalVault({
    buildDir,
    workers: [
      { name: "bench-forward", modules: true, script: FORWARD_SCRIPT },
      { name: "bench-read", modules: true, script: READ_SCRIPT, d1Databases: { DB: "vault" } },
      { name: "bench-read-forward", modules: true, script: READ_AND_FORWARD_SCRIPT, d1Databases: { DB: "vault" } },
    ],
  });
  const { db, masterKey, operatorKey, baseUrl } = vault;
  const forwarderUrl = await vault.urlOf("bench-forward");
  const readerUrl = await vault.urlOf("bench-read");
  const readForwarderUrl = await vault.urlOf("bench-read-forward");

  let section = null;
  const bench = {
    args,
    /** A smoke run: every size tiny, the figures meaningless. */
    smoke,
    /**
     * The benchmark's sizes, each declared as `name: [full, smoke]`: the value given as --name=…,
     * else its smoke size in a smoke run, else its full size. A list is given comma-separated.
     */
    sizes: (declared) => Object.fromEntries(Object.entries(declared).map(([name, [full, tiny]]) => [name, sizeOf(name, full, tiny)])),
    /** How many rounds a measurement taken turn about runs: `rounds`, or fewer in a smoke run. */
    rounds: (rounds) => (smoke ? Math.min(rounds, SMOKE.rounds) : rounds),
    db,
    /** This run's own vault, shaped as startVault answers one; never to be disposed by a benchmark. */
    vault: { baseUrl, operatorKey },
    /** Another vault from the same bundle (startLocalVault options, e.g. dataDatabases), to dispose when done. */
    startVault: (options = {}) => startLocalVault({ buildDir, ...options }),
    masterKey,
    operatorKey,
    url: (path) => `${baseUrl}${path}`,
    /** The URL that reaches `target` through a worker that only forwards: the runtime's floor. */
    forwardUrl: (target) => `${forwarderUrl}/?to=${encodeURIComponent(target)}`,
    /** Answers an application's row, read by primary key from the vault's database: the runtime's floor of a GET of one record. */
    readUrl: (tenantId, applicationId) => `${readerUrl}/?tenant=${encodeURIComponent(tenantId)}&id=${encodeURIComponent(applicationId)}`,
    /** Reaches `target` through a worker that reads one token row by primary key, then forwards. */
    readForwardUrl: (target, tenantId, tokenId) =>
      `${readForwarderUrl}/?to=${encodeURIComponent(target)}&tenant=${encodeURIComponent(tenantId)}&id=${encodeURIComponent(tokenId)}`,
    async request(method, path, { key, body, headers = {}, raw } = {}) {
      const sent = { ...headers };
      if (key) sent["SVC-API-KEY"] = key;
      let payload = raw;
      if (body !== undefined) payload = JSON.stringify(body);
      if (payload !== undefined && !Object.keys(sent).some((h) => h.toLowerCase() === "content-type")) {
        sent["content-type"] = "application/json";
      }
      return readReply(await fetch(`${baseUrl}${path}`, { method, headers: sent, body: payload }));
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
      if (smoke) [iterations, warmup] = [Math.min(iterations, SMOKE.iterations), Math.min(warmup, SMOKE.warmup)];
      for (let i = 0; i < warmup; i++) await fn(i);
      const samples = [];
      for (let i = 0; i < iterations; i++) {
        const start = performance.now();
        await fn(i);
        samples.push(performance.now() - start);
      }
      return { ...percentiles(samples), mean: mean(samples) };
    },
    async throughput(fn, { concurrency = 32, durationMs = 3000 } = {}) {
      if (smoke) [concurrency, durationMs] = [Math.min(concurrency, SMOKE.concurrency), Math.min(durationMs, SMOKE.durationMs)];
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
    /** Starts a part of the benchmark: its name is printed, and --against tells its figures apart from other parts' by it. */
    section(name) {
      section = name;
      console.log(`  ${name}`);
    },
    report(label, figure, baselineLabel, baseline, unit) {
      const ratio = baseline === 0 ? Infinity : figure / baseline;
      // Compared by part, figure and baseline: one figure may be reported against several baselines.
      const key = `${section ? `${section}: ` : ""}${label.trim()} ÷ ${baselineLabel}`;
      reports?.push({ label: key, figure, baselineLabel, baseline, unit });
      console.log(
        `  ${label.padEnd(44)} ${format(figure).padStart(10)} ${unit.padEnd(9)}` +
          ` | ${baselineLabel.padEnd(36)} ${format(baseline).padStart(10)} ${unit.padEnd(9)} | ratio ${ratio.toFixed(2)}`,
      );
    },
  };
  return { bench, vault };
}

/** What a smoke run allows the measuring loops at most, whatever the benchmark asks for. */
const SMOKE = { iterations: 1, warmup: 0, durationMs: 50, concurrency: 2, rounds: 1 };

function sizeOf(name, full, tiny) {
  const given = args[name];
  if (given === undefined) return smoke ? tiny : full;
  if (!Array.isArray(full)) return typeof full === "number" ? Number(given) : given;
  return given.split(",").map((item) => (typeof full[0] === "number" ? Number(item) : item));
}

/** Makes every fetch of this process throw on a reply outside 2xx, naming the request and the reply. */
function failOnUnsuccessfulReplies() {
  const fetchOf = globalThis.fetch;
  globalThis.fetch = async (input, init) => {
    const response = await fetchOf(input, init);
    if (!response.ok) {
      const method = init?.method ?? input.method ?? "GET";
      const body = (await response.text()).slice(0, 500);
      throw new Error(`${method} ${input.url ?? input} answered ${response.status}: ${body}`);
    }
    return response;
  };
}

function secondsSince(started) {
  return ((performance.now() - started) / 1000).toFixed(1);
}

function format(value) {
  return value >= 100 ? value.toFixed(0) : value >= 10 ? value.toFixed(1) : value.toFixed(3);
}

/** Runs one benchmark; false when it failed. */
async function runBenchmark(name, bench) {
  try {
    const module = await import(pathToFileURL(join(benchDir, `${name}.mjs`)).href);
    await module.default(bench);
    return true;
  } catch (error) {
    console.error(`  benchmark ${name} failed:`, error);
    return false;
  }
}

/** Runs one benchmark and prints how long it took; false when it failed. */
async function runTimed(name, bench) {
  const started = performance.now();
  const ran = await runBenchmark(name, bench);
  console.log(`  (${secondsSince(started)} s)`);
  return ran;
}

/**
 * Each benchmark on both builds, turn about (the order swaps every round), each on a fresh vault
 * of its build; then every figure's mean over the rounds, this build next to the other, with the
 * ratio of the two and each one's ratio to its own same-run baseline.
 */
async function compareBuilds(against, rounds) {
  const other = buildCommit(against);
  const builds = [
    { name: "this build", buildDir },
    { name: other.commit, buildDir: other.buildDir },
  ];
  let ok = true;
  for (const name of selected) {
    const reports = builds.map(() => []);
    for (let round = 0; round < rounds; round++) {
      const order = round % 2 === 0 ? [1, 0] : [0, 1];
      for (const index of order) {
        console.log(`\n## ${name} on ${builds[index].name} (round ${round + 1} of ${rounds})`);
        const { bench, vault } = await startBench(builds[index].buildDir, reports[index]);
        try {
          ok = (await runTimed(name, bench)) && ok;
        } finally {
          await vault.dispose();
        }
      }
    }
    printComparison(name, builds, reports);
  }
  return ok;
}

function printComparison(name, builds, reports) {
  console.log(`\n## ${name}: ${builds[0].name} ÷ ${builds[1].name}, means of the rounds`);
  const labels = [...new Set(reports[0].map((report) => report.label))];
  for (const label of labels) {
    const [now, then] = reports.map((list) => {
      const matching = list.filter((report) => report.label === label);
      return matching.length === 0
        ? null
        : {
            figure: mean(matching.map((report) => report.figure)),
            ratio: mean(matching.map((report) => report.figure / report.baseline)),
            excess: mean(matching.map((report) => report.figure - report.baseline)),
            unit: matching[0].unit,
          };
    });
    if (!now || !then) continue;
    // A latency's excess over its baseline: the vault's own share, for a figure measured beside a floor.
    const excess = now.unit === "ms" ? ` | less baseline ${format(now.excess)} vs ${format(then.excess)}` : "";
    console.log(
      `  ${label.padEnd(80)} ${format(now.figure).padStart(10)} ${now.unit.padEnd(7)} | ${format(then.figure).padStart(10)} ${then.unit.padEnd(7)}` +
        ` | ratio ${(now.figure / then.figure).toFixed(2)} | to baseline ${now.ratio.toFixed(2)} vs ${then.ratio.toFixed(2)}${excess}`,
    );
  }
}

/**
 * A smoke run: the benchmarks at the same time, since each mostly waits for workerd, printing only
 * whether each ran (its figures mean nothing at these sizes); errors still print.
 */
async function runAllAtOnce(bench) {
  const print = console.log;
  console.log = () => {};
  try {
    const outcomes = await Promise.all(
      selected.map(async (name) => {
        const started = performance.now();
        const ran = await runBenchmark(name, bench);
        print(`  ${name} ${ran ? "ran" : "failed"} (${secondsSince(started)} s)`);
        return ran;
      }),
    );
    return outcomes.every(Boolean);
  } finally {
    console.log = print;
  }
}

let ok = true;
if (args.against) {
  ok = await compareBuilds(args.against, Number(args.rounds ?? 2));
} else {
  const { bench, vault } = await startBench(buildDir);
  try {
    if (smoke) {
      console.log(`smoke run of ${selected.join(", ")}`);
      ok = await runAllAtOnce(bench);
    } else {
      for (const name of selected) {
        console.log(`\n## ${name}`);
        ok = (await runTimed(name, bench)) && ok;
      }
    }
  } finally {
    await vault.dispose();
  }
}
process.exit(ok ? 0 : 1);
