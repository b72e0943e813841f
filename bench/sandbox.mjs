// Sandbox call latency: a trivial request transform run through the sandbox (warm: its isolate is
// loaded; cold: a new owner, so a new isolate is built, checked and loaded) next to the same
// function called in-process, in the same run.
//
// The vault's HTTP routes do more than run a script (auth, D1 reads), so this benchmark builds a
// small bench-only worker around the sandbox module with the same bundler (wrangler) and runtime
// (Miniflare, the Worker Loader). Each call is timed from Node, over HTTP to that worker, for the
// sandbox and for the in-process function alike: the difference is what the sandbox costs. workerd
// rounds performance.now() to milliseconds, so in-worker timing is used only for batch means.
//   npm run bench sandbox [--iterations=500] [--cold=100] [--batch=2000]
import { execFileSync } from "node:child_process";
import { randomBytes } from "node:crypto";
import { mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { Miniflare } from "miniflare";
import { readReply } from "../test/support/reply.mjs";

const root = join(dirname(fileURLToPath(import.meta.url)), "..");
const workDir = join(root, ".bench", "sandbox");

const ENTRY = `
import { requestContextOf } from "../../src/runtime/context";
// The vault's entrypoints (Bridge, Egress), which the sandbox reaches through ctx.exports.
export * from "../../src/index";

const CODE = "module.exports = async function (req) { return { body: req.args.body, headers: req.args.headers }; };";
async function inProcess(req) {
  return { body: req.args.body, headers: req.args.headers };
}
const INPUT = { args: { body: { amount: 100, currency: "EUR" }, headers: { "content-type": "application/json" } }, configuration: {} };

function once(env, mode, owner) {
  if (mode === "in-process") return inProcess(JSON.parse(JSON.stringify(INPUT)));
  // Placed without the directory: this worker's database holds no tenants.
  const { sandbox } = requestContextOf(env, "bench").placed("bench", "DB");
  return sandbox.run({ owner: { tenantId: "bench", id: owner, kind: "request-transform" }, code: CODE, input: INPUT, application: null });
}

export default {
  async fetch(request, env) {
    const url = new URL(request.url);
    const mode = url.searchParams.get("mode");
    const owner = url.searchParams.get("owner") ?? "warm";
    const batch = Number(url.searchParams.get("batch") ?? 1);
    const started = performance.now();
    let result;
    for (let i = 0; i < batch; i++) result = await once(env, mode, owner);
    return Response.json({ ms: performance.now() - started, result });
  },
};
`;

export default async function sandbox(bench) {
  const { iterations, cold: coldIterations, batch } = bench.sizes({ iterations: [500, 1], cold: [100, 1], batch: [2000, 1] });

  const { url, dispose } = await startBenchWorker();
  try {
    const call = async (query) => {
      const reply = await readReply(await fetch(`${url}?${query}`));
      if (reply.status !== 200) throw new Error(`sandbox call failed: ${reply.status} ${reply.text}`);
      return reply.body;
    };
    const expected = JSON.stringify({ body: { amount: 100, currency: "EUR" }, headers: { "content-type": "application/json" } });
    for (const mode of ["sandbox", "in-process"]) {
      const { result } = await call(`mode=${mode}`);
      if (JSON.stringify(result) !== expected) throw new Error(`${mode} returned ${JSON.stringify(result)}`);
    }

    const inProcess = await bench.latency(() => call("mode=in-process"), { iterations });
    const warm = await bench.latency(() => call("mode=sandbox&owner=warm"), { iterations });
    const cold = await bench.latency(() => call(`mode=sandbox&owner=cold-${randomBytes(8).toString("hex")}`), {
      iterations: coldIterations,
      warmup: 5,
    });
    bench.report("warm sandbox call p50 (HTTP round trip)", warm.p50, "in-process call p50 (HTTP round trip)", inProcess.p50, "ms");
    bench.report("warm sandbox call p95 (HTTP round trip)", warm.p95, "in-process call p95 (HTTP round trip)", inProcess.p95, "ms");
    bench.report("cold sandbox call p50 (HTTP round trip)", cold.p50, "in-process call p50 (HTTP round trip)", inProcess.p50, "ms");
    bench.report("cold sandbox call p95 (HTTP round trip)", cold.p95, "in-process call p95 (HTTP round trip)", inProcess.p95, "ms");
    bench.report(
      "warm sandbox cost p50 (minus HTTP floor)",
      warm.p50 - inProcess.p50,
      "cold sandbox cost p50 (minus floor)",
      cold.p50 - inProcess.p50,
      "ms",
    );

    const warmBatch = await call(`mode=sandbox&owner=warm&batch=${batch}`);
    const inProcessBatch = await call(`mode=in-process&batch=${batch}`);
    bench.report(
      `warm sandbox call, in-worker mean of ${batch}`,
      warmBatch.ms / batch,
      "in-process call, in-worker mean",
      inProcessBatch.ms / batch,
      "ms",
    );
  } finally {
    await dispose();
  }
}

/** Bundles the bench worker with wrangler and starts it in Miniflare with the Worker Loader. */
async function startBenchWorker() {
  const wrangler = readFileSync(join(root, "wrangler.toml"), "utf8");
  const compatibilityDate = /compatibility_date\s*=\s*"([^"]+)"/.exec(wrangler)[1];
  const compatibilityFlags = JSON.parse(/compatibility_flags\s*=\s*(\[[^\]]*\])/.exec(wrangler)[1]);
  mkdirSync(workDir, { recursive: true });
  writeFileSync(join(workDir, "entry.ts"), ENTRY);
  writeFileSync(
    join(workDir, "wrangler.toml"),
    `name = "sandbox-bench"\nmain = "entry.ts"\ncompatibility_date = "${compatibilityDate}"\ncompatibility_flags = ${JSON.stringify(compatibilityFlags)}\n`,
  );
  const outDir = join(workDir, "build");
  execFileSync("npx", ["wrangler", "deploy", "--dry-run", "--config", join(workDir, "wrangler.toml"), "--outdir", outDir], {
    cwd: root,
    stdio: "ignore",
    env: { ...process.env, WRANGLER_SEND_METRICS: "false" },
  });
  const mf = new Miniflare({
    modules: true,
    scriptPath: join(outDir, "entry.js"),
    modulesRoot: outDir,
    compatibilityDate,
    compatibilityFlags,
    workerLoaders: { LOADER: {} },
    d1Databases: { DB: "sandbox-bench" },
    bindings: { VAULT_MASTER_KEY: randomBytes(32).toString("base64"), SANDBOX_HOST: "loader", ALLOW_INSECURE_DESTINATIONS: "false" },
    host: "127.0.0.1",
    port: 0,
  });
  const url = (await mf.ready).toString();
  return { url, dispose: () => mf.dispose() };
}
