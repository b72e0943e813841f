#!/usr/bin/env node
// The kill test: every write path of the vault survives `kill -9`. `npm test` runs it; alone:
//   node scripts/crash.mjs                        bundles the worker, then runs every case
//   node scripts/crash.mjs --built=<dir>          with a bundle `wrangler deploy --dry-run` made already
//   node scripts/crash.mjs --cases=tokenize,move  some cases only (tokenize, rotation, creates, move, dedup, control)
//
// The vault runs in a process group of its own (scripts/vault-process.mjs: Miniflare's workerd, the
// same as `npm start` and the tests) on D1 kept in a temporary directory. Each case drives a write
// path, kills the whole group with SIGKILL at a point chosen while that path is half done (after so
// many answers with requests still in flight, or once its progress shows it part-way), starts the
// vault again on the same directory, and checks what the kill left: nothing lost, doubled or
// half-written, no idempotency claim stuck past its lease, a rotation and a move that finish, and an
// audit chain that verifies with nothing left in audit_pending once the cron and the queues have run.
//
// What a kill is allowed to lose, and so is counted and reported but fails nothing: audit entries of
// requests answered shortly before it. A request's entries wait up to 10 ms in its isolate for a
// shared send (src/audit/recorder.ts, docs/decisions.md), and Miniflare's queues are in memory, so
// messages sent and not yet consumed (the audit queue waits up to a second for a batch) die with the
// process, where Cloudflare Queues would keep and redeliver them. For the same reason a rotation's
// queued next step dies with the process: the cron's resumption is what this test sees restart it.
// Exits non-zero when any case fails; prints each case's figures either way.
import { fork } from "node:child_process";
import { randomBytes } from "node:crypto";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { request as httpRequest } from "node:http";
import { tmpdir } from "node:os";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { parseArgs } from "node:util";
import { readReply } from "../test/support/reply.mjs";
import { inspectVault } from "./inspector.mjs";
import { buildWorker, declaredWorkerOptions } from "./local-vault.mjs";

const root = join(dirname(fileURLToPath(import.meta.url)), "..");
const CASES = ["tokenize", "rotation", "creates", "move", "dedup", "control"];
const { values: options } = parseArgs({
  options: { built: { type: "string" }, cases: { type: "string", default: CASES.join(",") } },
});
const chosen = options.cases.split(",").map((name) => name.trim());
const unknown = chosen.filter((name) => !CASES.includes(name));
if (unknown.length > 0) {
  console.error(`unknown case ${unknown.join(", ")}; the cases are ${CASES.join(", ")}`);
  process.exit(2);
}

process.env.WRANGLER_SEND_METRICS = "false";
// Miniflare would fetch a sample `request.cf` from Cloudflare at every start (scripts/start.mjs says why not).
process.env.CLOUDFLARE_CF_FETCH_ENABLED = "false";

/** The idempotency lease the vault runs with here: past it a retry takes a claim over, so the test waits it out. */
const LEASE_MS = 15_000;
const RUN = randomBytes(4).toString("hex");
const PREFIX = "SVC";
const operatorKey = `operator-${randomBytes(24).toString("hex")}`;
const masterKey = randomBytes(32).toString("base64");
const TOKEN_PERMISSIONS = ["token:create", "token:read", "token:update", "token:delete", "token:search", "token:use"];

const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

/** The items by `keyOf` (Map.groupBy, which Node 20 lacks). */
function groupBy(items, keyOf) {
  const groups = new Map();
  for (const item of items) {
    const key = keyOf(item);
    groups.set(key, [...(groups.get(key) ?? []), item]);
  }
  return groups;
}

/** The runtime's warnings and errors, as each vault process reported them, since the case began. */
const vaultLogs = [];

/** The vault in its own process group, on the run's D1 directory (scripts/vault-process.mjs). */
class VaultProcess {
  static async start({ buildDir, persistTo, migrate, declared }) {
    const child = fork(join(root, "scripts", "vault-process.mjs"), [], {
      // A process group of its own (setsid), which holds workerd too: one kill takes both.
      detached: true,
      stdio: ["ignore", "inherit", "inherit", "ipc"],
      env: {
        ...process.env,
        VAULT_PROCESS: JSON.stringify({
          buildDir,
          persistTo,
          migrate,
          masterKey,
          operatorKey,
          dataDatabases: 2,
          declared,
          bindings: {
            IDEMPOTENCY_LEASE_MS: String(LEASE_MS),
            // Steps of 50 records, so that a rotation of a few hundred tokens reports progress several times,
            // without rests between them (the tests' setting too): this case checks what a rotation does, not its pace.
            ROTATION_BATCH_SIZE: "50",
            ROTATION_DUTY_CYCLE: "1",
          },
        }),
      },
    });
    const vault = new VaultProcess(child, buildDir);
    const ready = await new Promise((resolve, reject) => {
      vault.onReady = resolve;
      child.once("exit", (code, signal) => reject(new Error(`the vault process stopped as it started (${signal ?? code})`)));
    });
    vault.baseUrl = ready.baseUrl;
    vault.inspectorUrl = ready.inspector;
    return vault;
  }

  constructor(child, buildDir) {
    this.child = child;
    this.buildDir = buildDir;
    this.exited = new Promise((resolve) => child.once("exit", resolve));
    this.pending = new Map();
    this.asked = 0;
    child.on("message", (message) => {
      if (message.ready) this.onReady({ baseUrl: message.ready, inspector: message.inspector });
      else if (message.log) vaultLogs.push(message.log);
      else {
        const { resolve, reject } = this.pending.get(message.id);
        this.pending.delete(message.id);
        if (message.error) reject(new Error(message.error));
        else resolve(message.result);
      }
    });
  }

  ask(request) {
    const id = ++this.asked;
    return new Promise((resolve, reject) => {
      this.pending.set(id, { resolve, reject });
      this.child.send({ id, ...request });
    });
  }

  /** The rows of one statement on a database (DB, DB_1, DB_2). */
  query(binding, sql, ...params) {
    return this.ask({ query: { binding, sql, params } });
  }

  /** Runs the cron's handler once, to its end. */
  async cron() {
    const outcome = await this.ask({ cron: true });
    if (outcome !== "ok") throw new Error(`the cron's run ended ${outcome}`);
  }

  /**
   * Kills the vault the moment its code reaches a line: the first time any request or queue batch is
   * about to run the line of the bundle that `pattern` matches (exactly one must), the inspector pauses
   * the isolate there, and while it stands still the process group is killed. So the kill lands at
   * that point of that request, whatever the machine's load. Resolves once the breakpoint is set, with
   * `dead`, which resolves once the vault is dead.
   */
  async killAt(pattern) {
    const lines = readFileSync(join(this.buildDir, "index.js"), "utf8").split("\n");
    const matching = lines.flatMap((line, number) => (pattern.test(line) ? [number] : []));
    if (matching.length !== 1) throw new Error(`${matching.length} lines of the bundle match the kill point ${pattern}; exactly one must`);
    const inspector = await inspectVault(this.inspectorUrl);
    const reached = new Promise((resolve) => inspector.on("Debugger.paused", resolve));
    await inspector.call("Debugger.enable");
    const { locations } = await inspector.call("Debugger.setBreakpointByUrl", { lineNumber: matching[0], urlRegex: "index\\.js$" });
    if (locations.length === 0) throw new Error(`the kill point ${pattern} is not in the vault's script`);
    return { dead: reached.then(() => this.kill()).finally(() => inspector.close()) };
  }

  /** kill -9 of the process group, then waits until none of its processes is left. */
  async kill() {
    this.killedAt = Date.now();
    process.kill(-this.child.pid, "SIGKILL");
    await this.exited;
    // Answers may still arrive between the signal and the process's end: they were answered before it.
    this.diedAt = Date.now();
    for (const rejected of this.pending.values()) rejected.reject(new Error("the vault was killed"));
    // workerd, reparented once its parent died, may take a moment more.
    for (let waited = 0; groupAlive(this.child.pid); waited += 50) {
      if (waited > 10_000) throw new Error(`process group ${this.child.pid} outlived SIGKILL by 10 s`);
      await sleep(50);
    }
  }
}

/** The promise's outcome, or an error naming `what` once `ms` have passed without one. */
function withDeadline(promise, ms, what) {
  let timer;
  const late = new Promise((_, reject) => {
    timer = setTimeout(() => reject(new Error(`${what} did not come within ${ms / 1000} s`)), ms);
  });
  return Promise.race([promise, late]).finally(() => clearTimeout(timer));
}

/** An error in one line, with its causes. */
function describe(error) {
  if (!(error instanceof Error)) return String(error);
  return error.cause ? `${error.message} (${describe(error.cause)})` : error.message;
}

function groupAlive(pgid) {
  try {
    process.kill(-pgid, 0);
    return true;
  } catch {
    return false;
  }
}

/**
 * An HTTP call to the vault; `key` is an API key, `operator` sends the operator key. Each call has a
 * connection of its own: a kept-alive one that the runtime closed as it was reused fails the request
 * the same way a kill does ("other side closed"), and only the kill may cut a request off here.
 */
function call(vault, method, path, { key, operator, body, headers = {}, traceId } = {}) {
  const payload = body === undefined ? undefined : JSON.stringify(body);
  return new Promise((resolve, reject) => {
    const request = httpRequest(
      `${vault.baseUrl}${path}`,
      {
        method,
        agent: false,
        headers: {
          ...(key ? { [`${PREFIX}-API-KEY`]: key } : {}),
          ...(operator ? { [`${PREFIX}-OPERATOR-KEY`]: operatorKey } : {}),
          ...(traceId ? { [`${PREFIX}-TRACE-ID`]: traceId } : {}),
          ...(payload === undefined ? {} : { "content-type": "application/json", "content-length": Buffer.byteLength(payload) }),
          ...headers,
        },
      },
      (response) => {
        const chunks = [];
        response.on("data", (chunk) => chunks.push(chunk));
        response.on("error", reject);
        response.on("end", () => {
          const replyHeaders = new Headers();
          for (const [name, value] of Object.entries(response.headers)) replyHeaders.set(name, String(value));
          const bytes = Buffer.concat(chunks);
          resolve(readReply(new Response(bytes.length > 0 ? bytes : null, { status: response.statusCode, headers: replyHeaders })));
        });
      },
    );
    request.on("error", reject);
    request.end(payload);
  });
}

/** A call whose status must be `status`: its body, or an error that says what came instead. */
async function expectCall(vault, status, method, path, options) {
  const reply = await call(vault, method, path, options);
  if (reply.status !== status) throw new Error(`${method} ${path}: ${reply.status} ${reply.text.slice(0, 300)} (expected ${status})`);
  return reply.body;
}

/** Calls `send(i)` for the requests, `concurrency` at a time, in order; the replies, by request. */
async function inParallel(requests, concurrency, send) {
  const replies = new Map();
  let next = 0;
  const worker = async () => {
    while (next < requests.length) {
      const request = requests[next++];
      replies.set(request, await send(request));
    }
  };
  await Promise.all(Array.from({ length: concurrency }, worker));
  return replies;
}

/**
 * Sends requests from `first` on, `concurrency` at a time, until the vault is killed: by this load once
 * `killAfter` have been answered, or by the caller. The load's kill is `killAt()` when that is a
 * function (it arms a kill point, VaultProcess.killAt); otherwise it comes that share of a request's
 * time (the median so far) after the answer, so that it lands inside the requests then in flight
 * rather than before they reach the worker. What was answered (with when), and which requests the
 * kill cut off (sent, never answered); later ones are not sent.
 */
async function loadUntilKilled(vault, { first = 0, total, concurrency, killAfter = Number.POSITIVE_INFINITY, killAt = 0.5, send }) {
  const answered = new Map();
  const cutOff = [];
  const durations = [];
  let next = first;
  let killing = null;
  const worker = async () => {
    while (next < first + total && !vault.killedAt) {
      const request = next++;
      const sentAt = Date.now();
      try {
        const reply = await send(request);
        answered.set(request, { reply, at: Date.now() });
        durations.push(Date.now() - sentAt);
        if (answered.size === killAfter) {
          const median = durations.sort((a, b) => a - b)[Math.floor(durations.length / 2)];
          killing = typeof killAt === "function" ? killAt().then(({ dead }) => dead) : sleep(median * killAt).then(() => vault.kill());
          // Awaited once the load is over; until then its failure must not count as unhandled.
          killing.catch(() => undefined);
        }
      } catch (error) {
        if (!vault.killedAt) throw error;
        cutOff.push(request);
      }
    }
  };
  await Promise.all(Array.from({ length: concurrency }, worker));
  if (!vault.killedAt) throw new Error(`all ${total} requests were answered before the kill point (${killAfter}); raise the total`);
  await killing;
  return { answered, cutOff };
}

/** A tenant with its management key and the key of an application that may do everything with tokens (data revealed). */
async function newTenant(vault, name, database) {
  const created = await expectCall(vault, 201, "POST", "/tenants", { operator: true, body: { name, ...(database ? { database } : {}) } });
  const managementKey = created.application.keys[0].key;
  const application = await expectCall(vault, 201, "POST", "/applications", {
    key: managementKey,
    body: {
      name: "crash test",
      type: "private",
      rules: [{ priority: 1, container: "/", transform: "reveal", permissions: TOKEN_PERMISSIONS }],
    },
  });
  return { id: created.tenant.id, managementKey, key: application.keys[0].key };
}

/** Every token of the tenant whose metadata has these values (GET /tokens, page by page). */
async function listTokens(vault, tenant, metadata) {
  const filter = Object.entries(metadata).map(([key, value]) => `metadata.${key}=${encodeURIComponent(value)}`);
  const tokens = [];
  for (let page = 1; ; page++) {
    const body = await expectCall(vault, 200, "GET", `/tokens?${filter.join("&")}&size=100&page=${page}`, { key: tenant.key });
    tokens.push(...body.data);
    if (page >= body.pagination.total_pages) return tokens;
  }
}

/** `count` tokens in tokenize calls of 100, with metadata naming the case; the tokens, in order. */
async function seedTokens(vault, tenant, caseName, count) {
  const seeded = [];
  for (let start = 0; start < count; start += 100) {
    const values = Array.from({ length: Math.min(100, count - start) }, (_, i) => `${caseName}-${RUN}-seed-${start + i}`);
    const answer = await expectCall(vault, 201, "POST", "/tokenize", {
      key: tenant.key,
      body: values.map((data) => ({
        type: "token",
        data,
        search_indexes: ["{{ data }}"],
        metadata: { run: RUN, case: caseName, seed: "yes" },
      })),
    });
    seeded.push(...answer.map((token, i) => ({ id: token.id, data: values[i] })));
  }
  return seeded;
}

/** The data database that holds the tenant now. */
async function databaseOf(vault, tenant) {
  const [row] = await vault.query("DB", "SELECT database FROM tenants WHERE id = ?", tenant.id);
  return row.database;
}

/**
 * What a half-done write would leave in the tenant's database: index rows whose token is not there,
 * and tokens whose metadata or containers lack their index rows.
 */
async function halfWritten(vault, tenant) {
  const database = await databaseOf(vault, tenant);
  const orphanOf = (table) =>
    `(SELECT count(*) FROM ${table} side WHERE side.tenant_id = ?1 AND NOT EXISTS (SELECT 1 FROM tokens t WHERE t.tenant_id = side.tenant_id AND t.id = side.token_id))`;
  const missingOf = (table, column) =>
    `(SELECT count(*) FROM tokens t WHERE t.tenant_id = ?1 AND (SELECT count(*) FROM json_each(t.${column})) != (SELECT count(*) FROM ${table} side WHERE side.tenant_id = t.tenant_id AND side.token_id = t.id))`;
  const [row] = await vault.query(
    database,
    `SELECT ${orphanOf("token_metadata")} + ${orphanOf("token_search_index")} + ${orphanOf("token_containers")} AS orphans,
            ${missingOf("token_metadata", "metadata")} + ${missingOf("token_containers", "containers")} AS incomplete`,
    tenant.id,
  );
  return row.orphans + row.incomplete;
}

/** The tenant's idempotency records that hold a claim with no answer saved. */
async function openClaims(vault, tenant) {
  const database = await databaseOf(vault, tenant);
  const [row] = await vault.query(
    database,
    "SELECT count(*) AS n FROM idempotency_records WHERE tenant_id = ? AND status IS NULL",
    tenant.id,
  );
  return row.n;
}

/** Rows of audit_pending in every database. */
async function auditPending(vault) {
  let rows = 0;
  for (const binding of ["DB", "DB_1", "DB_2"]) rows += (await vault.query(binding, "SELECT count(*) AS n FROM audit_pending"))[0].n;
  return rows;
}

/** The tenant's audit entries, by trace id. */
async function auditEntriesByTrace(vault, tenant) {
  const database = await databaseOf(vault, tenant);
  const rows = await vault.query(
    database,
    "SELECT trace_id AS traceId, count(*) AS n FROM audit_log WHERE tenant_id = ? GROUP BY trace_id",
    tenant.id,
  );
  return new Map(rows.map((row) => [row.traceId, row.n]));
}

/**
 * Lets the queues and the cron finish what the restart left: runs the cron (it chains audit_pending
 * and resumes stopped rotations) until the tenants' logs stop growing and audit_pending is empty, or
 * 20 s have passed; the checks then judge what is left.
 */
async function drain(vault, tenants) {
  const size = async () => {
    let entries = 0;
    for (const tenant of tenants) for (const n of (await auditEntriesByTrace(vault, tenant)).values()) entries += n;
    return entries;
  };
  let last = -1;
  for (const deadline = Date.now() + 20_000; Date.now() < deadline; ) {
    await vault.cron();
    // The audit queue's consumer takes a batch within a second (wrangler.toml).
    await sleep(1_500);
    const now = await size();
    if (now === last && (await auditPending(vault)) === 0) return;
    last = now;
  }
}

/**
 * The audit checks after a case: the tenant's chain verifies, audit_pending is empty, and of the entries
 * the requests answered before each kill made (`entriesOf` a request, by trace id), how many are there:
 * lost ones are reported with how long before the kill their requests were answered, doubled ones fail.
 */
async function checkAudit(vault, result, { tenant, kills, traceOf, entriesOf }) {
  await drain(vault, [tenant]);
  const verification = await expectCall(vault, 200, "GET", "/logs/verify", { key: tenant.managementKey });
  if (!verification.verified) result.violations.push(`the audit chain breaks at ${JSON.stringify(verification.broken_at)}`);
  const pending = await auditPending(vault);
  if (pending > 0) result.violations.push(`${pending} rows are left in audit_pending after the cron and the queues ran`);
  const found = await auditEntriesByTrace(vault, tenant);
  let expected = 0;
  let lost = 0;
  let doubled = 0;
  const lostAges = [];
  for (const { answered, diedAt } of kills) {
    for (const [request, { at }] of answered) {
      const want = entriesOf(request);
      const have = found.get(traceOf(request)) ?? 0;
      expected += want;
      if (have < want) {
        lost += want - have;
        lostAges.push(diedAt - at);
      }
      if (have > want) doubled += have - want;
    }
  }
  if (doubled > 0) result.violations.push(`${doubled} audit entries of requests answered before the kill are doubled`);
  const ages =
    lostAges.length === 0
      ? ""
      : ` (of ${lostAges.length} requests answered ${Math.min(...lostAges)}–${Math.max(...lostAges)} ms before the kill)`;
  result.lines.push(
    `audit: chain ${verification.verified ? "verified" : "BROKEN"} over ${verification.checked} entries; audit_pending ${pending}; ` +
      `of ${expected} entries of requests answered before the kill ${expected - lost} found, ${lost} lost${ages}, ${doubled} doubled`,
  );
  Object.assign(result.figures, { chain: verification.verified ? "verified" : "broken", auditLost: lost, auditExpected: expected });
}

/** The vault again, on the same directory, after a kill. */
async function restart(context) {
  const started = Date.now();
  context.vault = await VaultProcess.start({ ...context, migrate: false });
  return Date.now() - started;
}

// ---------------------------------------------------------------------------------------------------------------------
// The cases. Each gets the running vault in `context.vault`, kills it, restarts it (leaving the new one
// there), and returns its result: figures, lines to print, violations.

/**
 * 1. POST /tokenize with an idempotency key, many in flight. After the restart each key sent is retried
 * until it is answered: a key answered before the kill replays its answer; a cut-off one answers the
 * tokens its committed write made, or within the lease 409 with Retry-After and after it runs once.
 * Then every key has exactly its tokens, the ids its answer names, and no claim is open. The vault is
 * killed twice, each time with a request stopped at a chosen line (VaultProcess.killAt), so that each
 * of the two states the mechanism is for is there after the restart, whatever else was in flight.
 */
async function tokenizeCase(context, result) {
  const tenant = await newTenant(context.vault, `crash-tokenize-${RUN}`);
  // Several tokens a request, each with a search index.
  const leaves = Array.from({ length: 8 }, (_, i) => `leaf${i}`);
  const bodyOf = (request) =>
    Object.fromEntries(
      leaves.map((leaf) => [
        leaf,
        {
          type: "token",
          data: `tokenize-${RUN}-${request}-${leaf}`,
          search_indexes: ["{{ data }}"],
          metadata: { run: RUN, case: "tokenize", request: String(request) },
        },
      ]),
    );
  const traceOf = (request) => `crash-${RUN}-tokenize-${request}`;
  const keyOf = (request) => `tokenize-${RUN}-${request}`;
  const send = (vault, request, traceId = traceOf(request)) =>
    call(vault, "POST", "/tokenize", {
      key: tenant.key,
      body: bodyOf(request),
      headers: { [`${PREFIX}-IDEMPOTENCY-KEY`]: keyOf(request) },
      traceId,
    });
  const left = { saved: 0, committed: 0, claimed: 0 };
  const seen = { replayed: 0, savedUnsent: 0, fromMark: 0, takenOver: 0, fresh: 0, waited: new Set() };
  const final = new Map();
  const sent = [];
  const kills = [];
  // Two kills, each at the point in a request where one of the two mechanisms matters: past its write
  // and before its saved answer (the commit mark), and past its claim and before its write (the lease).
  const killPoints = [
    { state: "committed", pattern: /await rememberResponse\d*\(context, claimed\.claim/ },
    { state: "claimed", pattern: /context\.markCommitWith\(commitMarkOf\d*\(context, claimed\.claim\)\)/ },
  ];
  for (const [round, killPoint] of killPoints.entries()) {
    const killed = context.vault;
    const { answered, cutOff } = await loadUntilKilled(killed, {
      first: round * 1_000,
      total: 400,
      concurrency: 24,
      killAfter: 60,
      killAt: () => killed.killAt(killPoint.pattern),
      send: (request) => send(killed, request),
    });
    kills.push({ answered, cutOff, diedAt: killed.diedAt, restartMs: await restart(context) });
    const { vault } = context;
    sent.push(...answered.keys(), ...cutOff);
    for (const [request, { reply }] of answered) {
      if (reply.status !== 201)
        result.violations.push(`request ${request} answered ${reply.status} before the kill: ${reply.text.slice(0, 200)}`);
    }
    // Where the kill left each key's record: its answer saved, its write committed (the mark is there
    // and no answer), claimed with nothing written, or no record at all.
    const records = new Map(
      (
        await vault.query(
          await databaseOf(vault, tenant),
          `SELECT key, CASE WHEN status IS NOT NULL THEN 'saved' WHEN outcome IS NOT NULL THEN 'committed' ELSE 'claimed' END AS state
           FROM idempotency_records WHERE tenant_id = ?`,
          tenant.id,
        )
      ).map((row) => [Number(row.key.slice(keyOf("").length)), row.state]),
    );
    const leftByThisKill = { saved: 0, committed: 0, claimed: 0 };
    for (const request of cutOff) if (records.has(request)) leftByThisKill[records.get(request)]++;
    for (const state of Object.keys(left)) left[state] += leftByThisKill[state];
    kills.at(-1).left = leftByThisKill;
    // Every key sent, retried until it answers, each as its state allows: a key answered before the
    // kill replays that answer, and one whose answer was saved but never arrived replays it too; a
    // committed claim is answered from its mark at once; a claim that wrote nothing is 409 within its
    // lease, then runs; a request the kill stopped before its claim runs at once.
    const leaseOver = killed.diedAt + LEASE_MS;
    let waiting = [...answered.keys(), ...cutOff];
    for (let attempt = 0; waiting.length > 0; attempt++) {
      const replies = await inParallel(waiting, 16, (request) => send(vault, request, `crash-${RUN}-tokenize-retry${attempt}-${request}`));
      waiting = [];
      let retryAfter = 0;
      for (const [request, reply] of replies) {
        const replayed = reply.headers.get(`${PREFIX}-Idempotent-Replayed`) === "true";
        const before = answered.get(request);
        const state = before ? "answered" : (records.get(request) ?? "unclaimed");
        if (reply.status === 201 && state === "answered" && replayed && reply.text === before.reply.text) seen.replayed++;
        else if (reply.status === 201 && state === "saved" && replayed) seen.savedUnsent++;
        else if (reply.status === 201 && state === "committed" && replayed) seen.fromMark++;
        else if (reply.status === 201 && state === "claimed" && !replayed) seen.takenOver++;
        else if (reply.status === 201 && state === "unclaimed" && !replayed) seen.fresh++;
        else if (reply.status === 409 && state === "claimed" && /still being processed/.test(reply.body?.detail)) {
          // Within the lease of a claim made before the kill, and saying so.
          const after = Number(reply.headers.get("Retry-After")) * 1000;
          if (Date.now() > leaseOver + 1_000 || after > LEASE_MS) {
            result.violations.push(
              `key ${request}: 409 "still being processed" (Retry-After ${after / 1000} s) ${Date.now() - leaseOver} ms past its lease`,
            );
          } else {
            seen.waited.add(request);
            retryAfter = Math.max(retryAfter, after);
            waiting.push(request);
          }
          continue;
        } else {
          const expected = {
            answered: "its replay",
            saved: "a replay",
            committed: "an answer from its mark",
            claimed: "201 past the lease",
          }[state];
          result.violations.push(
            `key ${request} (${state}): the retry answered ${reply.status}${replayed ? " replayed" : ""}, not ${expected ?? "201"}: ${reply.text.slice(0, 200)}`,
          );
          continue;
        }
        final.set(request, reply.body);
      }
      if (waiting.length > 0) await sleep(retryAfter + 200);
    }
    if (leftByThisKill[killPoint.state] === 0) result.violations.push(`the kill at ${killPoint.pattern} left no claim ${killPoint.state}`);
  }
  // A second retry of each replays the first's answer.
  const again = await inParallel([...final.keys()], 16, (request) =>
    send(context.vault, request, `crash-${RUN}-tokenize-again-${request}`),
  );
  for (const [request, reply] of again) {
    if (reply.text !== JSON.stringify(final.get(request))) result.violations.push(`key ${request}: a second retry answered differently`);
  }

  const { vault } = context;
  const tokens = await listTokens(vault, tenant, { run: RUN, case: "tokenize" });
  const byRequest = groupBy(tokens, (token) => Number(token.metadata.request));
  let lost = 0;
  let doubled = 0;
  let half = 0;
  let unknownIds = 0;
  for (const request of sent) {
    const stored = byRequest.get(request) ?? [];
    const answer = final.get(request);
    const named = new Set(answer ? leaves.map((leaf) => answer[leaf].id) : []);
    if (stored.length > 0 && stored.length < leaves.length) half++;
    if (stored.length > leaves.length) doubled += stored.length - leaves.length;
    lost += [...named].filter((id) => !stored.some((token) => token.id === id)).length;
    unknownIds += stored.filter((token) => !named.has(token.id)).length;
  }
  const strays = tokens.filter((token) => !sent.includes(Number(token.metadata.request))).length;
  const claimsAfterRetries = await openClaims(vault, tenant);
  const broken = await halfWritten(vault, tenant);
  if (lost > 0) result.violations.push(`${lost} tokens named by an answer are gone`);
  if (doubled > 0) result.violations.push(`${doubled} tokens doubled`);
  if (half > 0 || broken > 0) result.violations.push(`${half} requests half-written; ${broken} tokens or index rows half-written`);
  if (unknownIds + strays > 0) result.violations.push(`${unknownIds + strays} tokens whose ids no answer names`);
  if (claimsAfterRetries > 0) result.violations.push(`${claimsAfterRetries} claims still open after every key was answered`);
  const answeredBefore = kills.reduce((sum, kill) => sum + kill.answered.size, 0);
  const inFlight = kills.reduce((sum, kill) => sum + kill.cutOff.length, 0);
  result.lines.push(
    `tokenize requests with a key (${leaves.length} tokens each), 24 at a time; killed twice after the 60th answer, ` +
      `once a request had written and not saved its answer, once a request had claimed its key and not written: ` +
      `${kills.map((kill) => kill.answered.size).join(", ")} answered, ` +
      `${kills.map((kill) => kill.cutOff.length).join(", ")} in flight; restarted in ${kills.map((kill) => kill.restartMs).join(", ")} ms`,
    `of the ${inFlight} cut off, the kill${kills.length === 1 ? "" : "s"} left ${left.saved} with their answer saved, ${left.committed} with their write committed and no answer, ` +
      `${left.claimed} claimed with nothing written; retries of the ${sent.length} keys sent: ${seen.replayed} replayed, ` +
      `${seen.savedUnsent} replayed an answer saved but never received, ${seen.fromMark} answered from the commit mark, ` +
      `${seen.takenOver} taken over past the lease (${seen.waited.size} answered 409 within it first), ${seen.fresh} run (never claimed); ` +
      `open claims after the retries ${claimsAfterRetries}`,
    `tokens: ${tokens.length} found for ${sent.length} keys × ${leaves.length}; ${lost} lost, ${doubled} doubled, ${half + broken} half-written, ` +
      `${unknownIds + strays} with ids no answer names`,
  );
  await closeCase(
    vault,
    result,
    {
      answered: answeredBefore,
      inFlight,
      found: tokens.length,
      lost,
      doubled,
      halfWritten: half + broken,
      stuckClaims: claimsAfterRetries,
    },
    { tenant, kills, traceOf, entriesOf: () => 1 + leaves.length },
  );
}

/**
 * 2. A data-key rotation killed part-way: once it has counted 100 or more tokens, killed after its next
 * step's re-encryption was written and before that step was counted. After the restart the cron
 * resumes its chain once its lease has run out; it ends done = total, every token reads back equal,
 * nothing is left under the old version, and the old version is destroyed.
 */
async function rotationCase(context, result) {
  const killed = context.vault;
  const tenant = await newTenant(killed, `crash-rotation-${RUN}`);
  const seeded = await seedTokens(killed, tenant, "rotation", 500);
  const idempotent = await expectCall(killed, 201, "POST", "/tokens", {
    key: tenant.key,
    body: { type: "token", data: `rotation-${RUN}-idempotent` },
    headers: { [`${PREFIX}-IDEMPOTENCY-KEY`]: `rotation-${RUN}` },
  });
  const rotationPath = `/tenants/${tenant.id}/rotation`;
  await expectCall(killed, 202, "POST", rotationPath, { operator: true });
  let armedAt = null;
  for (const deadline = Date.now() + 60_000; !armedAt; ) {
    const status = await expectCall(killed, 200, "GET", rotationPath, { operator: true });
    // Part-way through the tokens: a few steps done, more to come.
    if (status.state === "running" && status.done >= 100 && status.done < status.total - 150) armedAt = status;
    else if (status.state !== "waiting" && status.state !== "running")
      throw new Error(`the rotation passed the kill point (${JSON.stringify(status)})`);
    else if (Date.now() > deadline) throw new Error(`the rotation made no progress in 60 s (${JSON.stringify(status)})`);
    else await sleep(20);
  }
  // Killed after a step's re-encryption was written and before its count was: the count that step never adds.
  const { dead } = await killed.killAt(/rotation = await updateRotation\d*\(context\.control, rotation, \{/);
  await withDeadline(dead, 30_000, "the rotation's next step");
  const restartMs = await restart(context);
  const { vault: restarted } = context;
  const atKill = await expectCall(restarted, 200, "GET", rotationPath, { operator: true });
  const [{ resealed }] = await restarted.query(
    await databaseOf(restarted, tenant),
    "SELECT count(*) AS resealed FROM tokens WHERE tenant_id = ? AND key_version = ?",
    tenant.id,
    atKill.to_version,
  );
  const { vault } = context;

  // Its queued next step died with the process: the cron starts a new chain once the lease runs out.
  let status;
  const resumedAt = Date.now();
  for (const deadline = Date.now() + 60_000; ; ) {
    await vault.cron();
    status = await expectCall(vault, 200, "GET", rotationPath, { operator: true });
    if (status.state === "done") break;
    if (Date.now() > deadline) {
      result.violations.push(`the rotation is stuck ${status.state} at ${status.done}/${status.total} 60 s after the restart`);
      break;
    }
    await sleep(2_000);
  }
  const tokens = await listTokens(vault, tenant, { run: RUN, case: "rotation" });
  const byId = new Map(tokens.map((token) => [token.id, token]));
  const lost = seeded.filter((token) => !byId.has(token.id)).length;
  const changed = seeded.filter((token) => byId.has(token.id) && byId.get(token.id).data !== token.data).length;
  const doubled = tokens.length - byId.size;
  const [{ old }] = await vault.query(
    await databaseOf(vault, tenant),
    "SELECT count(*) AS old FROM tokens WHERE tenant_id = ? AND key_version < ?",
    tenant.id,
    status.to_version,
  );
  const versions = (await vault.query("DB", "SELECT version FROM tenant_keys WHERE tenant_id = ?", tenant.id)).map((row) => row.version);
  // A seeded value is still found by `data:` search, whose blind index the rotation recomputed.
  const search = await expectCall(vault, 200, "POST", "/tokens/search", { key: tenant.key, body: { query: `data:"${seeded[7].data}"` } });
  const replay = await call(vault, "POST", "/tokens", {
    key: tenant.key,
    body: { type: "token", data: `rotation-${RUN}-idempotent` },
    headers: { [`${PREFIX}-IDEMPOTENCY-KEY`]: `rotation-${RUN}` },
  });
  const broken = await halfWritten(vault, tenant);
  if (status.state === "done" && status.done !== status.total)
    result.violations.push(`the rotation ended with done ${status.done} of ${status.total}`);
  if (lost + changed + doubled > 0) result.violations.push(`${lost} tokens lost, ${changed} read back different, ${doubled} doubled`);
  if (old > 0) result.violations.push(`${old} tokens are still sealed under the old version`);
  if (status.state === "done" && versions.join() !== String(status.to_version))
    result.violations.push(`the tenant holds key versions ${versions.join(", ")}`);
  if (search.pagination.total_items !== 1)
    result.violations.push(`data: search found ${search.pagination.total_items} tokens for one seeded value`);
  if (replay.status !== 201 || replay.body.id !== idempotent.id)
    result.violations.push(`an idempotent create from before the rotation replays ${replay.status} ${replay.text.slice(0, 200)}`);
  if (broken > 0) result.violations.push(`${broken} tokens or index rows half-written`);
  result.lines.push(
    `${seeded.length} tokens; killed between a step's writes and its count, at ${atKill.done}/${atKill.total} counted and ${resealed} tokens re-sealed; ` +
      `restarted in ${restartMs} ms; ` +
      `the cron resumed it and it reported ${status.state} ${status.done}/${status.total} ${Date.now() - resumedAt} ms later`,
    `tokens: ${tokens.length} found, ${lost} lost, ${changed} read back different, ${doubled} doubled, ${old} under the old version, ${broken} half-written; ` +
      `key versions left: ${versions.join(", ")}; an idempotent create replays ${replay.status}`,
  );
  await closeCase(
    vault,
    result,
    { answered: `${atKill.done} counted`, found: tokens.length, lost: lost + changed, doubled, halfWritten: broken },
    { tenant, kills: [], traceOf: String, entriesOf: () => 0 },
  );
}

/** 3. POST /tokens, 500 at 16 at a time, killed halfway: every 201 is readable after the restart, none doubled. */
async function createsCase(context, result) {
  const killed = context.vault;
  const tenant = await newTenant(killed, `crash-creates-${RUN}`);
  const total = 500;
  const { dataOf, traceOf, send } = createsOf(killed, tenant, "creates");
  const { answered, cutOff } = await loadUntilKilled(killed, { total, concurrency: 16, killAfter: 250, send });
  const restartMs = await restart(context);
  const { vault } = context;
  for (const [request, { reply }] of answered) {
    if (reply.status !== 201)
      result.violations.push(`request ${request} answered ${reply.status} before the kill: ${reply.text.slice(0, 200)}`);
  }
  const created = [...answered].filter(([, { reply }]) => reply.status === 201);
  const reads = await inParallel(created, 16, ([, { reply }]) =>
    call(vault, "GET", `/tokens/${encodeURIComponent(reply.body.id)}`, { key: tenant.key }),
  );
  const lost = [...reads].filter(([[request], read]) => read.status !== 200 || read.body.data !== dataOf(request)).length;
  const tokens = await listTokens(vault, tenant, { run: RUN, case: "creates" });
  const perRequest = groupBy(tokens, (token) => token.metadata.request);
  const doubled = [...perRequest.values()].reduce((sum, copies) => sum + copies.length - 1, 0);
  const committedCutOff = cutOff.filter((request) => perRequest.has(String(request))).length;
  const strays = tokens.filter(
    (token) => !answered.has(Number(token.metadata.request)) && !cutOff.includes(Number(token.metadata.request)),
  ).length;
  const broken = await halfWritten(vault, tenant);
  if (lost > 0) result.violations.push(`${lost} tokens answered 201 before the kill are not readable as created`);
  if (doubled + strays > 0) result.violations.push(`${doubled} tokens doubled, ${strays} from requests never sent`);
  if (broken > 0) result.violations.push(`${broken} tokens or index rows half-written`);
  result.lines.push(
    `${total} creates, 16 at a time; killed after ${answered.size} answers, ${cutOff.length} in flight; restarted in ${restartMs} ms`,
    `tokens: ${tokens.length} found (${created.length} answered 201, ${committedCutOff} of the ${cutOff.length} cut off were written); ` +
      `${lost} lost, ${doubled} doubled, ${broken} half-written`,
  );
  await closeCase(
    vault,
    result,
    { answered: answered.size, inFlight: cutOff.length, found: tokens.length, lost, doubled, halfWritten: broken },
    { tenant, kills: [{ answered, diedAt: killed.diedAt }], traceOf, entriesOf: () => 1 },
  );
}

/** A case's creates of type token: request i holds `<name>-<run>-<i>` (no seeded value looks so) and sends the trace id traceOf(i). */
function createsOf(vault, tenant, name) {
  const dataOf = (request) => `${name}-${RUN}-${request}`;
  const traceOf = (request) => `crash-${RUN}-${name}-${request}`;
  const send = (request) =>
    call(vault, "POST", "/tokens", {
      key: tenant.key,
      body: { type: "token", data: dataOf(request), metadata: { run: RUN, case: name, request: String(request) } },
      traceId: traceOf(request),
    });
  return { dataOf, traceOf, send };
}

/** Records a case's figures (no claim stuck, unless they say) and checks its tenant's audit log. */
async function closeCase(vault, result, figures, audit) {
  Object.assign(result.figures, { stuckClaims: 0, ...figures });
  await checkAudit(vault, result, audit);
}

/**
 * 4. A tenant move from DB_1 to DB_2 killed while it copies, with creates going on. The copy is driven
 * in calls of a few batches each (`max_batches`), as an operator's CLI may. After three calls have
 * answered `copying`, the fourth is killed once it has copied a batch and before it has moved its
 * cursor past it. After the restart the tenant reads and writes, one more move call finishes the
 * move, and every token is there exactly once, in the target only.
 */
async function moveCase(context, result) {
  const killed = context.vault;
  const tenant = await newTenant(killed, `crash-move-${RUN}`, "DB_1");
  const seeded = await seedTokens(killed, tenant, "move", 1500);
  const { dataOf, traceOf, send } = createsOf(killed, tenant, "move");
  const movePath = `/tenants/${tenant.id}/move`;
  const creates = loadUntilKilled(killed, { total: 100_000, concurrency: 2, send }).catch((error) => ({ error }));
  const step = () => call(killed, "POST", movePath, { operator: true, body: { database: "DB_2", max_batches: 3 } });
  for (let calls = 0; calls < 3; calls++) {
    const reply = await step();
    if (reply.status !== 200 || reply.body.phase !== "copying")
      throw new Error(`move call ${calls + 1} answered ${reply.status} ${reply.text}`);
  }
  const before = (await killed.query("DB_2", "SELECT count(*) AS n FROM tokens WHERE tenant_id = ?", tenant.id))[0].n;
  // Killed after the fourth call copied a batch and before it moved the cursor past it.
  const { dead } = await killed.killAt(/await updateMove\d*\(control, tenantId, changes\)/);
  const moving = step().then(
    (reply) => ({ reply }),
    () => ({ cut: true }),
  );
  await withDeadline(dead, 30_000, "the move's next step");
  const load = await creates;
  const moveCall = await moving;
  if (load.error) throw load.error;
  if (!moveCall.cut) throw new Error(`the move call answered before the kill: ${moveCall.reply.status} ${moveCall.reply.text}`);
  const { answered, cutOff } = load;
  const restartMs = await restart(context);
  const { vault } = context;
  const [atKill] = await vault.query(
    "DB_2",
    "SELECT (SELECT count(*) FROM tokens WHERE tenant_id = ?1) AS tokens, (SELECT count(*) FROM audit_log WHERE tenant_id = ?1) AS entries",
    tenant.id,
  );
  const [moveRow] = await vault.query("DB", "SELECT phase FROM tenant_moves WHERE tenant_id = ?", tenant.id);
  if (moveRow?.phase !== "copying")
    result.violations.push(`the kill was meant to stop the move copying; it is ${moveRow?.phase ?? "gone"}`);
  for (const [request, { reply }] of answered) {
    if (reply.status !== 201)
      result.violations.push(`create ${request} answered ${reply.status} during the move: ${reply.text.slice(0, 200)}`);
  }
  // The tenant keeps working before the move is finished: a read, a create.
  const read = await call(vault, "GET", `/tokens/${seeded[3].id}`, { key: tenant.key });
  const createdAfter = await call(vault, "POST", "/tokens", {
    key: tenant.key,
    body: { type: "token", data: `move-${RUN}-after`, metadata: { run: RUN, case: "move", request: "after" } },
  });
  if (read.status !== 200 || read.body.data !== seeded[3].data) result.violations.push(`a read after the restart answered ${read.status}`);
  if (createdAfter.status !== 201)
    result.violations.push(`a create after the restart answered ${createdAfter.status} ${createdAfter.text.slice(0, 200)}`);
  const finished = await call(vault, "POST", movePath, { operator: true, body: { database: "DB_2" } });
  if (finished.status !== 200 || finished.body.phase !== "done")
    result.violations.push(`one more move call answered ${finished.status} ${finished.text.slice(0, 200)}`);

  const expected = new Map([
    ...seeded.map((token) => [token.id, token.data]),
    ...[...answered].map(([request, { reply }]) => [reply.body?.id, dataOf(request)]),
    [createdAfter.body?.id, `move-${RUN}-after`],
  ]);
  const tokens = await listTokens(vault, tenant, { run: RUN, case: "move" });
  const byId = new Map(tokens.map((token) => [token.id, token]));
  const lost = [...expected].filter(([id, data]) => byId.get(id)?.data !== data).length;
  const doubled =
    tokens.length - byId.size + [...groupBy(tokens, (token) => token.data).values()].reduce((sum, copies) => sum + copies.length - 1, 0);
  const counts = {};
  for (const binding of ["DB_1", "DB_2"]) {
    counts[binding] = (await vault.query(binding, "SELECT count(*) AS n FROM tokens WHERE tenant_id = ?", tenant.id))[0].n;
  }
  const placed = await databaseOf(vault, tenant);
  const broken = await halfWritten(vault, tenant);
  if (lost > 0) result.violations.push(`${lost} tokens lost or changed`);
  if (doubled > 0) result.violations.push(`${doubled} tokens doubled`);
  if (placed !== "DB_2" || counts.DB_1 > 0 || counts.DB_2 !== tokens.length) {
    result.violations.push(
      `the tenant is placed in ${placed}, with ${counts.DB_1} tokens in DB_1 and ${counts.DB_2} in DB_2 (${tokens.length} listed)`,
    );
  }
  if (broken > 0) result.violations.push(`${broken} tokens or index rows half-written`);
  result.lines.push(
    `${seeded.length} tokens in DB_1, moved to DB_2 with creates going on; the fourth call of 3 batches killed after it ` +
      `copied a batch, before its cursor moved: DB_2 held ${before} of the tenant's tokens before it, ${atKill.tokens} tokens and ${atKill.entries} audit entries after it; ` +
      `${answered.size} creates answered, ${cutOff.length} in flight; restarted in ${restartMs} ms`,
    `after the restart: a read ${read.status}, a create ${createdAfter.status}; one more move call: ${finished.status} ${finished.body?.phase}`,
    `tokens: ${tokens.length} found, ${expected.size} expected at least; ${lost} lost, ${doubled} doubled, ${broken} half-written; ` +
      `DB_1 ${counts.DB_1}, DB_2 ${counts.DB_2}, placed in ${placed}`,
  );
  await closeCase(
    vault,
    result,
    { answered: answered.size, inFlight: cutOff.length, found: tokens.length, lost, doubled, halfWritten: broken },
    { tenant, kills: [{ answered, diedAt: killed.diedAt }], traceOf, entriesOf: () => 1 },
  );
}

/** 5. Deduplicating creates of a few values racing from 16 connections, killed halfway: one token per value. */
async function dedupCase(context, result) {
  const killed = context.vault;
  const tenant = await newTenant(killed, `crash-dedup-${RUN}`);
  const digits = (count) => Array.from(randomBytes(count), (byte) => byte % 10).join("");
  const values = Array.from({ length: 10 }, (_, i) => `${1 + (i % 8)}${digits(2)}-${digits(2)}-${digits(4)}`);
  const valueSentBy = (request) => values[request % values.length];
  const traceOf = (request) => `crash-${RUN}-dedup-${request}`;
  const send = (vault, request, traceId) =>
    call(vault, "POST", "/tokens", {
      key: tenant.key,
      body: { type: "social_security_number", data: valueSentBy(request), deduplicate_token: true, metadata: { run: RUN, case: "dedup" } },
      traceId,
    });
  const { answered, cutOff } = await loadUntilKilled(killed, {
    total: 300,
    concurrency: 16,
    killAfter: 120,
    send: (request) => send(killed, request, traceOf(request)),
  });
  const restartMs = await restart(context);
  const { vault } = context;
  const again = await inParallel(
    values.map((_, request) => request),
    16,
    (request) => send(vault, request, `crash-${RUN}-dedup-again-${request}`),
  );
  const ids = new Map(values.map((value) => [value, new Set()]));
  for (const [request, { reply }] of answered) {
    if (reply.status !== 201 && reply.status !== 200)
      result.violations.push(`request ${request} answered ${reply.status}: ${reply.text.slice(0, 200)}`);
    else ids.get(valueSentBy(request)).add(reply.body.id);
  }
  for (const [request, reply] of again) {
    // A value answered before the kill has its token: the create after the restart finds it (200).
    const created = ids.get(valueSentBy(request)).size > 0 ? [200] : [200, 201];
    if (!created.includes(reply.status)) result.violations.push(`a deduplicating create after the restart answered ${reply.status}`);
    else ids.get(valueSentBy(request)).add(reply.body.id);
  }
  let doubled = 0;
  for (const value of values) {
    const search = await expectCall(vault, 200, "POST", "/tokens/search", { key: tenant.key, body: { query: `data:"${value}"` } });
    doubled += Math.max(0, search.pagination.total_items - 1) + Math.max(0, ids.get(value).size - 1);
  }
  const tokens = await listTokens(vault, tenant, { run: RUN, case: "dedup" });
  const broken = await halfWritten(vault, tenant);
  if (doubled > 0 || tokens.length !== values.length)
    result.violations.push(`${tokens.length} tokens for ${values.length} deduplicated values (${doubled} doubled)`);
  if (broken > 0) result.violations.push(`${broken} tokens or index rows half-written`);
  result.lines.push(
    `300 deduplicating creates of ${values.length} values, 16 at a time; killed after ${answered.size} answers, ${cutOff.length} in flight; restarted in ${restartMs} ms`,
    `tokens: ${tokens.length} for ${values.length} values; every answer for a value names one id: ${doubled === 0 ? "yes" : "no"}; ${broken} half-written`,
  );
  await closeCase(
    vault,
    result,
    {
      answered: answered.size,
      inFlight: cutOff.length,
      found: tokens.length,
      lost: values.filter((value) => ids.get(value).size === 0).length,
      doubled,
      halfWritten: broken,
    },
    { tenant, kills: [{ answered, diedAt: killed.diedAt }], traceOf, entriesOf: () => 1 },
  );
}

/**
 * 6. POST /applications with an idempotency key, a write of the control database whose commit mark is
 * in that database too: killed once after its batch (the application, its key, the mark) committed and
 * before its answer was saved, once after it claimed its key and before it wrote. After each restart the
 * key is retried: the first is answered at once from its mark with the application and the key it
 * was created with; the second is a 409 with Retry-After within its lease and runs once past it. Each
 * key then has exactly one application, and its answer's key works.
 */
async function controlCase(context, result) {
  const tenant = await newTenant(context.vault, `crash-control-${RUN}`);
  const outcomes = [];
  for (const [stage, killPoint] of [
    ["after its write", /return createdAnswer\d*\(context, row, outcome\.key\)/],
    ["before its write", /const outcome = \{ id: row\.id, key: key\?\.response \?\? null \}/],
  ]) {
    const killed = context.vault;
    const name = `crash-control-${RUN}-${outcomes.length}`;
    const idempotencyKey = `crash-control-${RUN}-${outcomes.length}`;
    const create = (vault) =>
      call(vault, "POST", "/applications", {
        key: tenant.managementKey,
        body: { name, type: "private", permissions: ["token:read"] },
        headers: { [`${PREFIX}-IDEMPOTENCY-KEY`]: idempotencyKey },
        traceId: `${idempotencyKey}-${Date.now()}`,
      });
    const { dead } = await killed.killAt(killPoint);
    const cut = await create(killed).then(
      (reply) => ({ reply }),
      () => ({ cut: true }),
    );
    await withDeadline(dead, 30_000, `the create's kill ${stage}`);
    if (!cut.cut) throw new Error(`the create answered before the kill ${stage}: ${cut.reply.status} ${cut.reply.text.slice(0, 200)}`);
    const restartMs = await restart(context);
    const { vault } = context;
    const retries = [];
    let answer = await create(vault);
    const waitStarted = Date.now();
    while (answer.status === 409 && answer.headers.has("retry-after") && Date.now() - waitStarted < LEASE_MS + 30_000) {
      retries.push(`409 (Retry-After ${answer.headers.get("retry-after")})`);
      await sleep(Number(answer.headers.get("retry-after")) * 1000);
      answer = await create(vault);
    }
    retries.push(`${answer.status}${answer.headers.get(`${PREFIX}-Idempotent-Replayed`) === "true" ? " replayed" : ""}`);
    const again = await create(vault);
    const listed = await expectCall(vault, 200, "GET", `/applications?name=${encodeURIComponent(name)}&size=10`, {
      key: tenant.managementKey,
    });
    const applications = listed.data.filter((application) => application.name === name);
    const keyWorks = answer.status === 201 && (await call(vault, "GET", "/applications/key", { key: answer.body.key })).status === 200;
    const replayedAtOnce = stage === "after its write" ? retries.length === 1 && retries[0] === "201 replayed" : true;
    if (answer.status !== 201)
      result.violations.push(`the retry of a create killed ${stage} answered ${answer.status}: ${answer.text.slice(0, 200)}`);
    if (!replayedAtOnce) result.violations.push(`the create killed ${stage} was not answered at once from its mark: ${retries.join(", ")}`);
    if (stage === "before its write" && !retries[0]?.startsWith("409")) {
      result.violations.push(`the create killed ${stage} ran before its lease ran out: ${retries.join(", ")}`);
    }
    if (applications.length !== 1) result.violations.push(`${applications.length} applications for the create killed ${stage}`);
    else if (answer.status === 201 && applications[0].id !== answer.body.id)
      result.violations.push(`the retry's answer names another application than the one written`);
    if (answer.status === 201 && !keyWorks)
      result.violations.push(`the key the retry answered for the create killed ${stage} does not authenticate`);
    if (again.status !== answer.status || again.body?.id !== answer.body?.id)
      result.violations.push(`a second retry answered otherwise (${again.status})`);
    outcomes.push({ applications: applications.length });
    result.lines.push(
      `POST /applications killed ${stage}; restarted in ${restartMs} ms; retries: ${retries.join(", ")}; ` +
        `${applications.length} application of that name; its answer's key authenticates: ${keyWorks ? "yes" : "no"}`,
    );
  }
  await closeCase(
    context.vault,
    result,
    {
      answered: 0,
      inFlight: outcomes.length,
      found: outcomes.reduce((sum, outcome) => sum + outcome.applications, 0),
      lost: outcomes.filter((outcome) => outcome.applications === 0).length,
      doubled: outcomes.reduce((sum, outcome) => sum + Math.max(0, outcome.applications - 1), 0),
      halfWritten: 0,
    },
    { tenant, kills: [], traceOf: () => "", entriesOf: () => 0 },
  );
}

const RUNNERS = {
  tokenize: tokenizeCase,
  rotation: rotationCase,
  creates: createsCase,
  move: moveCase,
  dedup: dedupCase,
  control: controlCase,
};
const TITLES = {
  tokenize: "tokenize with idempotency keys, many in flight",
  rotation: "a data-key rotation killed part-way",
  creates: "concurrent creates",
  move: "a tenant move killed mid-copy",
  dedup: "racing deduplicated creates",
  control: "an application create with an idempotency key, killed after and before its control write",
};

// ---------------------------------------------------------------------------------------------------------------------

const startedAt = Date.now();
const persistTo = mkdtempSync(join(tmpdir(), "vault-crash-"));
// What every start of the vault takes: read once (wrangler.toml's options take a second or two to load).
const context = { persistTo, buildDir: null, declared: null, vault: null };
const results = [];
try {
  if (options.built) context.buildDir = resolve(options.built);
  else {
    context.buildDir = join(root, ".wrangler", "crash-build");
    console.log("bundling the worker…");
    buildWorker(context.buildDir);
  }
  context.declared = await declaredWorkerOptions();
  context.vault = await VaultProcess.start({ ...context, migrate: true });
  console.log(`kill test (run ${RUN}): the vault in its own process group on ${persistTo}, idempotency lease ${LEASE_MS} ms`);
  for (const name of chosen) {
    const result = { name, figures: {}, lines: [], violations: [] };
    results.push(result);
    const caseStarted = Date.now();
    try {
      await RUNNERS[name](context, result);
    } catch (error) {
      result.violations.push(`the case stopped: ${describe(error)}`);
      // The next case needs a live vault, and none of this one's requests still going on.
      if (!context.vault.killedAt) await context.vault.kill();
      await restart(context);
    }
    console.log(`\n${CASES.indexOf(name) + 1}. ${TITLES[name]} (${((Date.now() - caseStarted) / 1000).toFixed(1)} s)`);
    for (const line of result.lines) console.log(`   ${line}`);
    for (const log of vaultLogs.splice(0)) console.log(`   vault ${log.level}: ${log.message.split("\n")[0]}`);
    for (const violation of result.violations) console.log(`   FAIL: ${violation}`);
    console.log(`   ${result.violations.length === 0 ? "ok" : "FAILED"}`);
  }
} catch (error) {
  console.log(`\nthe kill test could not run: ${describe(error)}`);
  process.exitCode = 1;
} finally {
  if (context.vault && !context.vault.killedAt) await context.vault.kill();
  rmSync(persistTo, { recursive: true, force: true });
}
const failed = results.filter((result) => result.violations.length > 0);
const COLUMNS = [
  ["case", (result) => result.name],
  ["answered before the kill", (result) => result.figures.answered],
  ["in flight", (result) => result.figures.inFlight],
  ["found after", (result) => result.figures.found],
  ["lost", (result) => result.figures.lost],
  ["doubled", (result) => result.figures.doubled],
  ["half-written", (result) => result.figures.halfWritten],
  ["stuck claims", (result) => result.figures.stuckClaims],
  ["audit chain", (result) => result.figures.chain],
  [
    "audit entries lost",
    (result) => (result.figures.auditExpected === undefined ? undefined : `${result.figures.auditLost} of ${result.figures.auditExpected}`),
  ],
];
const cells = [COLUMNS.map(([title]) => title), ...results.map((result) => COLUMNS.map(([, cell]) => String(cell(result) ?? "-")))];
const widths = COLUMNS.map((_, column) => Math.max(...cells.map((row) => row[column].length)));
console.log("");
for (const row of cells) console.log(row.map((cell, column) => cell.padEnd(widths[column])).join("  "));
console.log(
  `\nkill test: ${results.length - failed.length} of ${results.length} cases passed in ${((Date.now() - startedAt) / 1000).toFixed(0)} s` +
    (failed.length > 0 ? `; failed: ${failed.map((result) => result.name).join(", ")}` : ""),
);
if (failed.length > 0) process.exitCode = 1;
