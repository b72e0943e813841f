#!/usr/bin/env node
import cliProgress from "cli-progress";
// The operator CLI: `npx token-vault <command>` against a running vault, over HTTP. Keys come from
// flags or the environment (docs/operations.md, "Operator CLI"). Human-readable output by default, `--json` for
// scripts; a refused call prints the problem's detail and exits 1.
import { Command, Option } from "commander";

const program = new Command("token-vault")
  .description("Operate a running token vault over HTTP")
  .addOption(new Option("--url <url>", "the vault's base URL").env("TOKEN_VAULT_URL").default("http://localhost:8787"))
  .addOption(new Option("--operator-key <key>", "the operator key ({P}-OPERATOR-KEY)").env("TOKEN_VAULT_OPERATOR_KEY"))
  .addOption(new Option("--api-key <key>", "an API key ({P}-API-KEY), for tenant commands").env("TOKEN_VAULT_API_KEY"))
  .addOption(new Option("--header-prefix <prefix>", "the vault's HEADER_PREFIX").env("TOKEN_VAULT_HEADER_PREFIX").default("SVC"))
  .option("--json", "print the vault's JSON answers instead of text")
  .showHelpAfterError();

/** A refused call or a missing setting: printed as its detail, exit code 1. */
class CliError extends Error {}

const settings = () => program.opts();

/** One call to the vault, authenticated as the operator or with the API key; answers the parsed body. */
async function call(method, path, { as = "api", body, query } = {}) {
  const { url, operatorKey, apiKey, headerPrefix } = settings();
  const headers = {};
  if (as === "operator") {
    if (!operatorKey) throw new CliError("No operator key: pass --operator-key or set TOKEN_VAULT_OPERATOR_KEY");
    headers[`${headerPrefix}-OPERATOR-KEY`] = operatorKey;
  } else {
    if (!apiKey) throw new CliError("No API key: pass --api-key or set TOKEN_VAULT_API_KEY");
    headers[`${headerPrefix}-API-KEY`] = apiKey;
  }
  if (body !== undefined) headers["content-type"] = "application/json";
  const target = new URL(path.replace(/^\//, ""), url.endsWith("/") ? url : `${url}/`);
  for (const [name, value] of Object.entries(query ?? {})) if (value !== undefined) target.searchParams.set(name, String(value));
  let response;
  try {
    response = await fetch(target, { method, headers, body: body === undefined ? undefined : JSON.stringify(body) });
  } catch (error) {
    throw new CliError(`Cannot reach the vault at ${url}: ${error.cause?.message ?? error.message}`);
  }
  const text = await response.text();
  const parsed = text === "" ? null : safeJson(text);
  if (!response.ok) {
    const problem = parsed?.proxy_error ?? parsed;
    throw new CliError(`${response.status} ${problem?.title ?? response.statusText}: ${problem?.detail ?? text}`);
  }
  return parsed;
}

/** `--data`: JSON when it starts like an object, an array or a string; otherwise the text itself (card numbers stay strings). */
function dataOf(text) {
  if (!/^\s*[[{"]/.test(text)) return text;
  try {
    return JSON.parse(text);
  } catch {
    throw new CliError(`--data looks like JSON but does not parse: ${text}`);
  }
}

function safeJson(text) {
  try {
    return JSON.parse(text);
  } catch {
    return text;
  }
}

/** Prints the answer as JSON with --json, else as the lines `human` makes of it. */
function show(answer, human) {
  if (settings().json) console.log(JSON.stringify(answer, null, 2));
  else console.log(human(answer));
}

/** `name: value` lines, aligned. */
function fields(pairs) {
  const width = Math.max(...pairs.map(([name]) => name.length));
  return pairs.map(([name, value]) => `${`${name}:`.padEnd(width + 2)}${value ?? "-"}`).join("\n");
}

function table(rows, columns) {
  if (rows.length === 0) return "(none)";
  const widths = columns.map(([title, value]) => Math.max(title.length, ...rows.map((row) => String(value(row) ?? "-").length)));
  const line = (cells) =>
    cells
      .map((cell, i) => String(cell ?? "-").padEnd(widths[i]))
      .join("  ")
      .trimEnd();
  return [line(columns.map(([title]) => title)), ...rows.map((row) => line(columns.map(([, value]) => value(row))))].join("\n");
}

const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));
const collect = (value, previous = []) => [...previous, value];

// Tenants.
const tenants = program.command("tenants").description("create, move and delete tenants (operator key)");
tenants
  .command("create <name>")
  .description("create a tenant with its management application; prints the management key once")
  .option("--database <binding>", "the data database to place it in (DB_1, DB_2 …)")
  .action(async (name, options) => {
    const created = await call("POST", "/tenants", { as: "operator", body: { name, database: options.database } });
    show(created, (answer) =>
      fields([
        ["tenant", answer.tenant.id],
        ["database", answer.tenant.database],
        ["management application", answer.application.id],
        ["management key", `${answer.application.key}  (shown once: keep it)`],
      ]),
    );
  });
tenants
  .command("move <tenant-id>")
  .description("move a tenant to another data database, online, with a progress bar")
  .requiredOption("--database <binding>", "the data database to move it to")
  .action(async (tenantId, options) => {
    const phases = ["copying", "blocked", "switched", "done"];
    const bar = settings().json
      ? null
      : new cliProgress.SingleBar({ format: "moving [{bar}] {phase}" }, cliProgress.Presets.shades_classic);
    bar?.start(phases.length - 1, 0, { phase: "copying" });
    let status;
    do {
      status = await call("POST", `/tenants/${encodeURIComponent(tenantId)}/move`, {
        as: "operator",
        body: { database: options.database, max_batches: 10 },
      });
      bar?.update(phases.indexOf(status.phase), { phase: status.phase });
    } while (status.phase !== "done");
    bar?.stop();
    show(status, (answer) => `Tenant ${answer.tenant_id} moved from ${answer.source} to ${answer.target}.`);
  });
tenants
  .command("delete <tenant-id>")
  .description("crypto-shred a tenant: its keys go at once, its rows with the cron")
  .action(async (tenantId) => {
    const status = await call("DELETE", `/tenants/${encodeURIComponent(tenantId)}`, { as: "operator" });
    show(
      status,
      (answer) => `Tenant ${answer.tenant_id} shredded at ${answer.shredded_at}; ${answer.remaining_rows} rows left for the cron.`,
    );
  });

// Data-key rotation.
const rotation = program.command("rotation").description("rotate a tenant's data keys (operator key)");
rotation
  .command("start <tenant-id>")
  .description("start rotating the tenant's data keys")
  .option("--watch", "follow it with a progress bar until it is done")
  .action(async (tenantId, options) => {
    const started = await call("POST", `/tenants/${encodeURIComponent(tenantId)}/rotation`, { as: "operator" });
    if (options.watch) return watchRotation(tenantId);
    show(
      started,
      (answer) => `Rotating tenant ${answer.tenant_id} from version ${answer.from_version} to ${answer.to_version} (${answer.state}).`,
    );
  });
rotation
  .command("status <tenant-id>")
  .description("the tenant's latest rotation")
  .option("--watch", "follow it with a progress bar until it is done")
  .action(async (tenantId, options) => {
    if (options.watch) return watchRotation(tenantId);
    show(await rotationOf(tenantId), describeRotation);
  });

const rotationOf = (tenantId) => call("GET", `/tenants/${encodeURIComponent(tenantId)}/rotation`, { as: "operator" });

function describeRotation(answer) {
  return fields([
    ["tenant", answer.tenant_id],
    ["versions", `${answer.from_version} -> ${answer.to_version}`],
    ["state", answer.state],
    ["progress", `${answer.done} of ${answer.total ?? "?"}`],
    ["started", answer.started_at],
    ["finished", answer.finished_at],
    ["last error", answer.last_error],
  ]);
}

async function watchRotation(tenantId) {
  const bar = settings().json
    ? null
    : new cliProgress.SingleBar({ format: "rotating [{bar}] {value}/{total} {state}" }, cliProgress.Presets.shades_classic);
  let status = await rotationOf(tenantId);
  bar?.start(status.total ?? 0, status.done, { state: status.state });
  while (status.state !== "done") {
    await sleep(500);
    status = await rotationOf(tenantId);
    bar?.setTotal(status.total ?? 0);
    bar?.update(status.done, { state: status.state });
  }
  bar?.stop();
  show(status, describeRotation);
}

// The keyring.
const keyring = program.command("keyring").description("the deployment's key-encryption keys (operator key)");
keyring
  .command("status")
  .description("what each key-encryption key wraps")
  .action(async () => show(await call("GET", "/operator/keys", { as: "operator" }), describeKeyring));
keyring
  .command("rewrap")
  .description("re-wrap every tenant's data keys under the newest key-encryption key")
  .action(async () => {
    let status;
    do status = await call("POST", "/operator/keys/rewrap", { as: "operator" });
    while (status.remaining > 0 && status.rewrapped > 0);
    show(status, describeKeyring);
  });

function describeKeyring(answer) {
  return fields([
    ["keyring versions", answer.keyring_versions.join(", ")],
    [
      "records by version",
      Object.entries(answer.records_by_kek_version)
        .map(([version, n]) => `v${version}: ${n}`)
        .join(", ") || "none",
    ],
    ["derived keys", answer.tenants_with_derived_keys],
    ["remaining", answer.remaining],
  ]);
}

// Applications and API keys (a management key).
const applications = program.command("applications").description("applications of the API key's tenant");
applications
  .command("create")
  .description("create an application; prints its key once")
  .requiredOption("--name <name>", "its name")
  .addOption(new Option("--type <type>", "its type").choices(["private", "public", "management"]).default("private"))
  .option("--permission <permission>", "a permission it holds (repeatable)", collect)
  .option(
    "--rule <json>",
    'an access rule as JSON, e.g. {"priority":1,"container":"/","transform":"reveal","permissions":["token:read"]} (repeatable)',
    collect,
  )
  .action(async (options) => {
    const rules = (options.rule ?? []).map((rule) => {
      const parsed = safeJson(rule);
      if (typeof parsed !== "object" || parsed === null) throw new CliError(`--rule must be a JSON object: ${rule}`);
      return parsed;
    });
    const created = await call("POST", "/applications", {
      body: { name: options.name, type: options.type, permissions: options.permission ?? [], rules },
    });
    show(created, (answer) =>
      fields([
        ["application", answer.id],
        ["type", answer.type],
        ["key", `${answer.key}  (shown once: keep it)`],
      ]),
    );
  });

const keys = program.command("keys").description("API keys of an application (a management key)");
keys
  .command("list <application-id>")
  .description("the application's keys (never their values)")
  .action(async (applicationId) => {
    const listed = await call("GET", `/applications/${encodeURIComponent(applicationId)}/keys`);
    show(listed, (answer) =>
      table(answer, [
        ["ID", (key) => key.id],
        ["CREATED", (key) => key.created_at],
        ["EXPIRES", (key) => key.expires_at],
      ]),
    );
  });
keys
  .command("create <application-id>")
  .description("another key for the application; prints it once")
  .option("--expires-at <time>", "when it stops working (ISO 8601)")
  .action(async (applicationId, options) => {
    const body = options.expiresAt ? { expires_at: options.expiresAt } : {};
    const created = await call("POST", `/applications/${encodeURIComponent(applicationId)}/keys`, { body });
    show(created, (answer) =>
      fields([
        ["key id", answer.id],
        ["key", `${answer.key}  (shown once: keep it)`],
        ["expires", answer.expires_at],
      ]),
    );
  });
keys
  .command("revoke <application-id> <key-id>")
  .description("revoke one key of the application")
  .action(async (applicationId, keyId) => {
    await call("DELETE", `/applications/${encodeURIComponent(applicationId)}/keys/${encodeURIComponent(keyId)}`);
    show({ revoked: keyId }, () => `Key ${keyId} revoked.`);
  });

// Proxies.
program
  .command("proxies")
  .description("pre-configured proxies (a management key)")
  .command("roll-key <proxy-id>")
  .description("give the proxy a new key; the old one works for the grace period")
  .option("--grace-period <seconds>", "how long the previous key keeps working", (value) => Number.parseInt(value, 10))
  .action(async (proxyId, options) => {
    const body = options.gracePeriod === undefined ? {} : { grace_period_seconds: options.gracePeriod };
    const rolled = await call("POST", `/proxies/${encodeURIComponent(proxyId)}/key`, { body });
    show(rolled, (answer) =>
      fields([
        ["proxy", answer.id],
        ["new key", `${answer.key}  (keep it)`],
      ]),
    );
  });

// Tokens.
program
  .command("tokens")
  .description("tokens (an API key with token:create)")
  .command("create")
  .description("create a token")
  .requiredOption("--type <type>", "its type (token, card, card_number, social_security_number …)")
  .requiredOption("--data <data>", "its data: a JSON object, array or quoted string, or else the text as it is")
  .action(async (options) => {
    const created = await call("POST", "/tokens", { body: { type: options.type, data: dataOf(options.data) } });
    show(created, (answer) =>
      fields([
        ["token", answer.id],
        ["type", answer.type],
        ["fingerprint", answer.fingerprint],
      ]),
    );
  });

// The audit log (a key with log:read).
const logs = program.command("logs").description("the tenant's audit log (a key with log:read)");
const logFilters = (command) =>
  command
    .option("--entity-type <type>", "only entries about this kind of entity")
    .option("--entity-id <id>", "only entries about this entity");
const printEntries = (entries) => {
  for (const entry of entries) {
    if (settings().json) console.log(JSON.stringify(entry));
    else
      console.log(
        `${entry.created_at}  ${entry.status}  ${entry.actor_type}:${entry.actor_id ?? "-"}  ${entry.entity_type}:${entry.entity_id ?? "-"}  ${entry.operation}  ${entry.message}`,
      );
  }
};
logFilters(logs.command("list").description("the newest entries"))
  .option("--size <n>", "how many", (value) => Number.parseInt(value, 10), 20)
  .action(async (options) => {
    const page = await call("GET", "/logs", {
      query: { entity_type: options.entityType, entity_id: options.entityId, size: options.size },
    });
    printEntries([...page.data].reverse());
  });
logFilters(logs.command("follow").description("print entries as they are written, until interrupted"))
  .option("--interval <ms>", "how often to look", (value) => Number.parseInt(value, 10), 1000)
  .option("--for <seconds>", "stop after this long", (value) => Number.parseInt(value, 10))
  .action(async (options) => {
    const seen = new Set();
    const until = options.for === undefined ? Number.POSITIVE_INFINITY : Date.now() + options.for * 1000;
    while (Date.now() < until) {
      const page = await call("GET", "/logs", { query: { entity_type: options.entityType, entity_id: options.entityId, size: 100 } });
      printEntries([...page.data].reverse().filter((entry) => !seen.has(entry.id)));
      for (const entry of page.data) seen.add(entry.id);
      await sleep(Math.min(options.interval, Math.max(0, until - Date.now())));
    }
  });
logs
  .command("verify")
  .description("verify the log's hash chain")
  .option("--start-date <time>", "from this time (inclusive)")
  .option("--end-date <time>", "until this time (exclusive)")
  .action(async (options) => {
    // One call checks at most 20,000 entries; each next call goes on after the last seq checked.
    let verification = await call("GET", "/logs/verify", { query: { start_date: options.startDate, end_date: options.endDate } });
    let checked = verification.checked;
    while (verification.verified && !verification.complete && verification.last_seq !== null) {
      verification = await call("GET", "/logs/verify", { query: { after_seq: verification.last_seq, end_date: options.endDate } });
      checked += verification.checked;
    }
    show({ ...verification, checked }, (answer) =>
      answer.verified ? `Chain verified: ${answer.checked} entries checked.` : `Chain broken: ${JSON.stringify(answer)}`,
    );
    if (!verification.verified) process.exitCode = 1;
  });

try {
  await program.parseAsync();
} catch (error) {
  if (!(error instanceof CliError)) throw error;
  console.error(`token-vault: ${error.message}`);
  process.exitCode = 1;
}
