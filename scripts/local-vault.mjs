// The vault's bundled worker in Miniflare (the same workerd as `wrangler dev` and the tests), with a
// fresh in-memory D1 that has the migrations applied, or D1 kept in a directory across restarts. The
// benchmarks, the Node-side client tests (the JS SDK) and the kill test (scripts/crash.mjs) run against it.
import { execFileSync } from "node:child_process";
import { randomBytes } from "node:crypto";
import { readdirSync, readFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { Miniflare } from "miniflare";

const root = join(dirname(fileURLToPath(import.meta.url)), "..");

/** Bundles the worker as `wrangler deploy` would, into `outdir`, with the sandbox's wrapper built afresh. */
export function buildWorker(outdir) {
  execFileSync("npm", ["run", "--silent", "build:wrapper"], { cwd: root, stdio: ["ignore", "ignore", "inherit"] });
  execFileSync("npm", ["run", "--silent", "build:docs"], { cwd: root, stdio: ["ignore", "ignore", "inherit"] });
  execFileSync("npm", ["run", "--silent", "build:elements"], { cwd: root, stdio: ["ignore", "ignore", "inherit"] });
  execFileSync("npm", ["run", "--silent", "build:console"], { cwd: root, stdio: ["ignore", "ignore", "inherit"] });
  execFileSync("npx", ["wrangler", "deploy", "--dry-run", "--outdir", outdir], {
    cwd: root,
    stdio: "ignore",
    env: { ...process.env, WRANGLER_SEND_METRICS: "false" },
  });
}

/**
 * wrangler.toml's worker options as Miniflare takes them (queues, rate limits, assets): plain data, so
 * a process that starts many vaults reads them once. wrangler is imported here only, as it takes a
 * while to load.
 */
export async function declaredWorkerOptions() {
  const { unstable_getMiniflareWorkerOptions } = await import("wrangler");
  return unstable_getMiniflareWorkerOptions(join(root, "wrangler.toml")).workerOptions;
}

const wrangler = readFileSync(join(root, "wrangler.toml"), "utf8");
export const compatibilityDate = /compatibility_date\s*=\s*"([^"]+)"/.exec(wrangler)[1];
const compatibilityFlags = JSON.parse(/compatibility_flags\s*=\s*(\[[^\]]*\])/.exec(wrangler)[1]);

/**
 * Starts the vault (built into `buildDir`) beside any `workers` given (Miniflare worker options);
 * `onLog({level, message})`, when given, receives every log line instead of the console.
 * `dataDatabases: n` binds DB_1 … DB_n beside the control database DB (none: DB holds the data too).
 * `assets: true` serves wrangler.toml's static assets (public/) in front of the worker.
 * `inspectorPort` opens workerd's inspector on that port (0: any free one); the answer's
 * `inspectorUrl` names it (null without one).
 * `persistTo: dir` keeps the D1 databases in that directory instead of in memory, so that a vault started
 * again on it (with the same `masterKey`, and `migrate: false`: the schema is there) finds its data.
 * `masterKey` and `operatorKey` are random unless given; `declared` is declaredWorkerOptions(), read unless given.
 * Two hops of Miniflare's own are left out, for every worker, because production has neither:
 * - unsafeDirectSockets: requests reach each worker on its own socket instead of through
 *   Miniflare's entry worker (which routes and adds CF-* headers; about 0.7 ms a request here);
 * - stripCfConnectingIp: outbound fetches go straight out instead of through another worker of
 *   Miniflare's that strips one header.
 *
 * `serviceBindings` binds the vault to workers given (the clients suite's fake of Apple's servers as APPLE_PAY_GATEWAY).
 *
 * @param {{ buildDir: string, host?: string, bindings?: Record<string, string>, workers?: object[],
 *   serviceBindings?: Record<string, string>,
 *   onLog?: (log: { level: string, message: string }) => void, dataDatabases?: number, assets?: boolean,
 *   inspectorPort?: number, persistTo?: string, migrate?: boolean, masterKey?: string, operatorKey?: string,
 *   declared?: Record<string, any> }} options
 */
export async function startLocalVault({
  buildDir,
  host = "127.0.0.1",
  bindings = {},
  workers = [],
  serviceBindings = {},
  onLog,
  dataDatabases = 0,
  assets = false,
  inspectorPort,
  persistTo,
  migrate = true,
  masterKey = randomBytes(32).toString("base64"),
  operatorKey = `operator-${randomBytes(24).toString("hex")}`,
  declared,
}) {
  const databases = {
    DB: "vault",
    ...Object.fromEntries(Array.from({ length: dataDatabases }, (_, i) => [`DB_${i + 1}`, `vault-data-${i + 1}`])),
  };
  const direct = [{ host, port: 0 }];
  declared ??= await declaredWorkerOptions();
  // wrangler.toml's rate limits, raised out of the way of benchmarks and client tests, which send many
  // requests with one key: every request is still counted, so benchmarks include what counting costs.
  const ratelimits = Object.fromEntries(
    Object.entries(declared.ratelimits ?? {}).map(([name, { simple }]) => [name, { simple: { ...simple, limit: 1_000_000_000 } }]),
  );
  const mf = new Miniflare({
    host,
    port: 0,
    // A profiler (bench/lib/inspector.mjs) attaches to the workers through the inspector; port 0 takes a free one.
    ...(inspectorPort !== undefined ? { inspectorPort } : {}),
    // A caller that captures the runtime's logs (workerd's and the workers' console) gets them all.
    ...(onLog ? { handleStructuredLogs: onLog } : {}),
    ...(persistTo ? { d1Persist: persistTo, r2Persist: persistTo } : {}),
    workers: [
      {
        name: "vault",
        modules: true,
        scriptPath: join(buildDir, "index.js"),
        modulesRoot: buildDir,
        compatibilityDate,
        compatibilityFlags,
        d1Databases: databases,
        // The queues as wrangler.toml declares them (producers and this worker's consumers).
        queueProducers: declared.queueProducers,
        queueConsumers: declared.queueConsumers,
        ratelimits,
        // Documents' bytes (R2), in memory, or in `persistTo` beside the databases.
        r2Buckets: declared.r2Buckets,
        // With `assets`, the static assets (public/: the API reference page's, the elements) are served in front
        // of the worker, as in production; left out by default, so benchmarks measure the worker alone.
        ...(assets ? { assets: declared.assets } : {}),
        workerLoaders: { LOADER: {} },
        serviceBindings,
        stripCfConnectingIp: false,
        unsafeDirectSockets: direct,
        bindings: {
          HEADER_PREFIX: "SVC",
          VAULT_MASTER_KEY: masterKey,
          OPERATOR_API_KEY: operatorKey,
          ALLOW_INSECURE_DESTINATIONS: "true",
          SANDBOX_HOST: "loader",
          ...bindings,
        },
      },
      ...workers.map((worker) => ({ compatibilityDate, stripCfConnectingIp: false, unsafeDirectSockets: direct, ...worker })),
    ],
  });
  await mf.ready;
  const urlOf = async (worker) => (await mf.unsafeGetDirectURL(worker)).toString().replace(/\/$/, "");
  // Every database, the control one and each data one, carries the same schema, applied in one batch
  // (one transaction): each call through Miniflare's proxy is a round trip to workerd.
  const migrations = readdirSync(join(root, "migrations"))
    .filter((f) => f.endsWith(".sql"))
    .sort();
  for (const binding of migrate ? Object.keys(databases) : []) {
    const database = await mf.getD1Database(binding, "vault");
    const statements = migrations.flatMap((file) =>
      readFileSync(join(root, "migrations", file), "utf8")
        .split("--> statement-breakpoint")
        .filter((statement) => statement.trim()),
    );
    await database.batch(statements.map((statement) => database.prepare(statement)));
  }
  const db = await mf.getD1Database("DB", "vault");
  const inspectorUrl = inspectorPort !== undefined ? (await mf.getInspectorURL()).toString() : null;
  return { mf, db, masterKey, operatorKey, baseUrl: await urlOf("vault"), urlOf, inspectorUrl, dispose: () => mf.dispose() };
}
