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
// failing requests measures nothing. The one exception is a token of a type the build does not know
// (bench.createToken): an older commit's build is measured on what it has, and the benchmark says
// which scenario it skipped there and why (bench.skip).
// A latency may carry the CPU time workerd spends a call beside it (bench.report's `cpu`): on a
// machine whose few cores other work shares, that is the figure that resolves a few percent.
import { randomBytes } from "node:crypto";
import { readdirSync } from "node:fs";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import { buildWorker, compatibilityDate, startLocalVault } from "../scripts/local-vault.mjs";
import { readReply } from "../test/support/reply.mjs";
import { buildCommit } from "./lib/builds.mjs";
import { workerdServing } from "./lib/cpu.mjs";
import { busyMicros, profileVault } from "./lib/inspector.mjs";
import { callsAtOnce } from "./lib/measure.mjs";
import { mean, percentiles } from "./lib/statistics.mjs";
import { TRANSFORM } from "./proxy.mjs";

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
const fetchAnyReply = failOnUnsuccessfulReplies();
if (!args.built) {
  console.log("building the worker bundle…");
  buildWorker(buildDir);
}

// The runtime's own floors, for baselines, in the same workerd: a worker that only forwards the
// request to `?to=` and returns the answer; one that makes one indexed D1 read by primary key
// (`?tenant=&id=`, an application row of the vault's database) and answers the row; one that
// first reads a token row so (`?tenant=&id=`) and then forwards; and one that passes the JSON body
// through a trivial isolate of the Worker Loader, as the vault runs tenant code, and then forwards.
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

// The Worker Loader floor: the request's JSON body and headers go as JSON text to `run` of an isolate
// that runs the proxy bench's transform (one isolate, loaded once and reused, as the vault's are per
// transform), its answer's body is forwarded; with `?calls=2` the destination's JSON answer goes
// through it as well, as a response transform's would. The isolate has no network.
const LOADER_ISOLATE_MAIN = `import { WorkerEntrypoint } from "cloudflare:workers";
import transform from "./transform.js";
export default class Transform extends WorkerEntrypoint {
  async run(inputJson) {
    return await transform(JSON.parse(inputJson));
  }
}`;
const LOADER_AND_FORWARD_SCRIPT = `const TRANSFORM = ${JSON.stringify(TRANSFORM)};
const MAIN = ${JSON.stringify(LOADER_ISOLATE_MAIN)};
export default {
  async fetch(request, env) {
    const params = new URL(request.url).searchParams;
    const isolate = env.LOADER.get("bench-transform", () => ({
      compatibilityDate: "${compatibilityDate}",
      mainModule: "main.js",
      modules: { "main.js": MAIN, "transform.js": { cjs: TRANSFORM } },
      globalOutbound: null,
    }));
    const transform = (body, headers) => isolate.getEntrypoint().run(JSON.stringify({ args: { body, headers } }));
    const sent = await transform(await request.json(), Object.fromEntries(request.headers));
    const response = await fetch(params.get("to"), { method: request.method, headers: request.headers, body: JSON.stringify(sent.body) });
    if (params.get("calls") !== "2") return new Response(response.body, response);
    const answered = await transform(await response.json(), Object.fromEntries(response.headers));
    return Response.json(answered.body, { status: response.status });
  },
};`;

// The object store's floor, for the documents benchmark: PUT stores the request's body (its length
// known from Content-Length) as `?key=`, GET answers it; nothing is parsed or encrypted.
const R2_SCRIPT = `export default {
  async fetch(request, env) {
    const key = new URL(request.url).searchParams.get("key");
    if (request.method === "PUT") {
      await env.BUCKET.put(key, request.body);
      return new Response(null, { status: 204 });
    }
    const object = await env.BUCKET.get(key);
    if (!object) return new Response("no such object", { status: 500 });
    return new Response(object.body);
  },
};`;

/**
 * A vault of the bundle in `buildDir` with the runtime's floors beside it, and the `bench` object a
 * benchmark drives it through. Each report is printed and, with `reports`, also collected.
 */
async function startBench(buildDir, reports) {
  const vault = await startLocalVault({
    buildDir,
    // For bench.vaultJavaScript; the inspector does nothing until a profiler attaches.
    inspectorPort: 0,
    workers: [
      { name: "bench-forward", modules: true, script: FORWARD_SCRIPT },
      { name: "bench-read", modules: true, script: READ_SCRIPT, d1Databases: { DB: "vault" } },
      { name: "bench-read-forward", modules: true, script: READ_AND_FORWARD_SCRIPT, d1Databases: { DB: "vault" } },
      { name: "bench-loader-forward", modules: true, script: LOADER_AND_FORWARD_SCRIPT, workerLoaders: { LOADER: {} } },
      { name: "bench-r2", modules: true, script: R2_SCRIPT, r2Buckets: { BUCKET: "bench-r2-floor" } },
    ],
  });
  const { db, masterKey, operatorKey, baseUrl } = vault;
  const forwarderUrl = await vault.urlOf("bench-forward");
  const readerUrl = await vault.urlOf("bench-read");
  const readForwarderUrl = await vault.urlOf("bench-read-forward");
  const loaderForwarderUrl = await vault.urlOf("bench-loader-forward");
  const r2FloorUrl = await vault.urlOf("bench-r2");
  // The vault and its floors share one workerd, whose CPU time bench/lib/measure.mjs's interleavedCpu reads.
  const workerd = workerdServing(baseUrl);

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
    /** The pid of the workerd that runs this vault and the floors (null off Linux): whose CPU time is read. */
    workerd,
    /** This run's own vault, shaped as startVault answers one; never to be disposed by a benchmark. */
    vault: { baseUrl, operatorKey, workerd },
    /**
     * Another vault from the same bundle (startLocalVault options, e.g. dataDatabases), in a workerd
     * of its own (`workerd`, its pid), to dispose when done.
     */
    startVault: async (options = {}) => {
      const started = await startLocalVault({ buildDir, ...options });
      return { ...started, workerd: workerdServing(started.baseUrl) };
    },
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
    /**
     * Reaches `target` through a worker that passes the JSON body through one call of a trivial Worker
     * Loader isolate, then forwards; with `calls` 2, the JSON answer through a second call too.
     */
    loaderForwardUrl: (target, calls = 1) => `${loaderForwarderUrl}/?to=${encodeURIComponent(target)}&calls=${calls}`,
    /** Stores (PUT) or answers (GET) `key` in a bare R2 bucket: the object store's floor. */
    r2Url: (key) => `${r2FloorUrl}/?key=${encodeURIComponent(key)}`,
    /**
     * The vault isolate's JavaScript CPU time a call, in microseconds: its V8 profile's busy samples
     * while `requests` calls of `fn` run 32 at a time (see bench/lib/inspector.mjs's busyMicros).
     */
    /** The sampled JavaScript time a call of `worker`'s isolate (the vault's, or a floor's by its name) while `fn` runs. */
    async vaultJavaScript(fn, requests, worker = "vault") {
      const count = smoke ? 1 : requests;
      const { profile } = await profileVault(vault.inspectorUrl, () => callsAtOnce(fn, count, 32), worker);
      return busyMicros(profile) / count;
    },
    async request(method, path, { key, body, headers = {}, raw } = {}) {
      const sent = { ...headers };
      if (key) sent["SVC-API-KEY"] = key;
      let payload = raw;
      if (body !== undefined) payload = JSON.stringify(body);
      if (payload !== undefined && !Object.keys(sent).some((h) => h.toLowerCase() === "content-type")) {
        sent["content-type"] = "application/json";
      }
      const send = () => fetch(`${baseUrl}${path}`, { method, headers: sent, body: payload });
      // A setup request, not a measured one: a kept-alive connection that workerd closed as the
      // request went out on it ("other side closed", when all benchmarks start at once in the smoke
      // run) is sent again once, on a new connection. Sent twice, a setup request changes no figure.
      const reply = await send().catch((error) => {
        if (error?.cause?.code !== "UND_ERR_SOCKET") throw error;
        return send();
      });
      return readReply(reply);
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
    /**
     * Creates a token (POST /tokens with `key`) and answers its id; null when this build does not
     * know the token's type (an older commit's, under --against), so that a benchmark skips what
     * needs it. Any other refusal fails the benchmark.
     */
    async createToken(key, body) {
      const reply = await readReply(
        await fetchAnyReply(`${baseUrl}/tokens`, {
          method: "POST",
          headers: { "SVC-API-KEY": key, "content-type": "application/json" },
          body: JSON.stringify(body),
        }),
      );
      if (reply.status === 201) return reply.body.id;
      if (reply.status === 400 && reply.body?.errors?.type) return null;
      throw new Error(`token creation failed: ${reply.status} ${JSON.stringify(reply.body)}`);
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
    /** A part the benchmark did not measure on this build, and why: printed, and named again by --against. */
    skip(name, reason) {
      reports?.push({ skipped: name, reason });
      console.log(`  ${name}: skipped, ${reason}`);
    },
    /**
     * Prints a figure next to its baseline and their ratio. `cpu`, [figure's, baseline's], is the CPU
     * time workerd spends a call of each, in microseconds (interleavedCpu), printed after the ratio;
     * a null one is left out (a direct call, which workerd does not serve).
     */
    report(label, figure, baselineLabel, baseline, unit, { cpu } = {}) {
      // Compared by part, figure and baseline: one figure may be reported against several baselines.
      const key = `${section ? `${section}: ` : ""}${label.trim()} ÷ ${baselineLabel}`;
      reports?.push({ label: key, figure, baselineLabel, baseline, unit, cpu });
      console.log(
        `  ${label.padEnd(50)} ${format(figure).padStart(10)} ${unit.padEnd(9)}` +
          ` | ${baselineLabel.padEnd(40)} ${format(baseline).padStart(10)} ${unit.padEnd(9)} | ratio ${ratioOf(figure, baseline)}${cpuText(cpu)}`,
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

/** Makes every fetch of this process throw on a reply outside 2xx, naming the request and the reply; answers the fetch that does not. */
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
  return fetchOf;
}

function ratioOf(figure, baseline) {
  return (baseline === 0 ? Infinity : figure / baseline).toFixed(2);
}

/** A report's CPU figures: the figure's, then the baseline's and their ratio when there is one. */
function cpuText(cpu) {
  if (!cpu || cpu[0] === null) return "";
  const [figure, baseline] = cpu;
  if (baseline === null) return ` | CPU ${figure.toFixed(0)} µs a call`;
  return ` | CPU ${figure.toFixed(0)} vs ${baseline.toFixed(0)} µs a call, ratio ${ratioOf(figure, baseline)}`;
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
  const figures = reports.map((list) => list.filter((report) => !report.skipped));
  const labels = [...new Set(figures[0].map((report) => report.label))];
  // A p50 and a p95 next to the same baseline carry the same CPU figures: printed once.
  let lastCpuLine = null;
  for (const label of labels) {
    const [now, then] = figures.map((list) => {
      const matching = list.filter((report) => report.label === label);
      const cpu = matching.filter((report) => report.cpu?.[0] != null).map((report) => report.cpu);
      return matching.length === 0
        ? null
        : {
            figure: mean(matching.map((report) => report.figure)),
            ratio: mean(matching.map((report) => report.figure / report.baseline)),
            excess: mean(matching.map((report) => report.figure - report.baseline)),
            unit: matching[0].unit,
            cpu: cpu.length === 0 ? null : mean(cpu.map(([figure]) => figure)),
            cpuRatio: cpu.every(([, baseline]) => baseline != null) ? mean(cpu.map(([figure, baseline]) => figure / baseline)) : null,
          };
    });
    // A figure of a part skipped on one build is named among the skipped parts below.
    if (!now || !then) continue;
    // A latency's excess over its baseline: the vault's own share, for a figure measured beside a floor.
    const excess = now.unit === "ms" ? ` | less baseline ${format(now.excess)} vs ${format(then.excess)}` : "";
    console.log(
      `  ${label.padEnd(96)} ${format(now.figure).padStart(10)} ${now.unit.padEnd(7)} | ${format(then.figure).padStart(10)} ${then.unit.padEnd(7)}` +
        ` | ratio ${(now.figure / then.figure).toFixed(2)} | to baseline ${now.ratio.toFixed(2)} vs ${then.ratio.toFixed(2)}${excess}`,
    );
    if (now.cpu !== null && then.cpu !== null) {
      const toBaseline =
        now.cpuRatio !== null && then.cpuRatio !== null ? ` | to baseline ${now.cpuRatio.toFixed(2)} vs ${then.cpuRatio.toFixed(2)}` : "";
      const cpuLine =
        `  ${"    CPU a call".padEnd(96)} ${now.cpu.toFixed(0).padStart(10)} µs      | ${then.cpu.toFixed(0).padStart(10)} µs     ` +
        ` | ratio ${(now.cpu / then.cpu).toFixed(2)}${toBaseline}`;
      if (cpuLine !== lastCpuLine) console.log(cpuLine);
      lastCpuLine = cpuLine;
    }
  }
  for (const [index, list] of reports.entries()) {
    const skipped = new Map(list.filter((report) => report.skipped).map((report) => [report.skipped, report.reason]));
    for (const [part, reason] of skipped) console.log(`  ${part}: skipped on ${builds[index].name}, ${reason}`);
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
