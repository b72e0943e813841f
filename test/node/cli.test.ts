import { execFile } from "node:child_process";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { buildWorker, startLocalVault } from "../../scripts/local-vault.mjs";

/*
 * The operator CLI (bin/token-vault.mjs) against a vault this file starts: for each command, its
 * human output, a --json run, and the exit code of a call the vault refuses.
 */

let vault: Awaited<ReturnType<typeof startLocalVault>>;

interface Run {
  code: number;
  stdout: string;
  stderr: string;
}

/** Runs the CLI with the vault's URL (and the keys given) in its environment. */
function cli(args: string[], keys: { operator?: string; api?: string } = {}): Promise<Run> {
  const env: NodeJS.ProcessEnv = { ...process.env, TOKEN_VAULT_URL: vault.baseUrl, NO_COLOR: "1" };
  delete env.TOKEN_VAULT_OPERATOR_KEY;
  delete env.TOKEN_VAULT_API_KEY;
  if (keys.operator) env.TOKEN_VAULT_OPERATOR_KEY = keys.operator;
  if (keys.api) env.TOKEN_VAULT_API_KEY = keys.api;
  return new Promise((resolve) => {
    execFile(process.execPath, [join(process.cwd(), "bin", "token-vault.mjs"), ...args], { env }, (error, stdout, stderr) =>
      resolve({ code: error ? Number(error.code ?? 1) : 0, stdout, stderr }),
    );
  });
}

async function json(args: string[], keys: { operator?: string; api?: string }) {
  const run = await cli(["--json", ...args], keys);
  expect(run.code, run.stderr).toBe(0);
  return JSON.parse(run.stdout);
}

function refused(run: Run, pattern: RegExp) {
  expect(run.code, run.stdout).toBe(1);
  expect(run.stderr).toMatch(pattern);
}

let operator: string;
let tenant: { id: string; managementKey: string };

beforeAll(async () => {
  const buildDir = join(process.cwd(), ".wrangler", "node-tests-build");
  buildWorker(buildDir);
  vault = await startLocalVault({ buildDir, dataDatabases: 2 });
  operator = vault.operatorKey;
  const created = await json(["tenants", "create", "cli tenant"], { operator });
  tenant = { id: created.tenant.id, managementKey: created.application.key };
});

afterAll(async () => {
  await vault?.dispose();
});

describe("npx token-vault", () => {
  it("tenants create: prints the tenant and its management key once; --json; no operator key is exit 1", async () => {
    const human = await cli(["tenants", "create", "another"], { operator });
    expect(human.code, human.stderr).toBe(0);
    expect(human.stdout).toMatch(/^tenant:\s+[0-9a-f-]{36}$/m);
    expect(human.stdout).toMatch(/^management key:\s+key_\S+ {2}\(shown once: keep it\)$/m);
    const answer = await json(["tenants", "create", "a third"], { operator });
    expect(answer.tenant).toMatchObject({ name: "a third" });
    refused(await cli(["tenants", "create", "nobody"]), /No operator key/);
    refused(await cli(["tenants", "create", "wrong"], { operator: "operator-wrong-key-0123456789abcdefghijkl" }), /^token-vault: 401 /);
  });

  it("applications create and tokens create: the README's two commands", async () => {
    const human = await cli(
      [
        "applications",
        "create",
        "--name",
        "shop",
        "--rule",
        '{"priority":1,"container":"/","transform":"reveal","permissions":["token:create","token:read"]}',
      ],
      { api: tenant.managementKey },
    );
    expect(human.code, human.stderr).toBe(0);
    const key = /^key:\s+(key_\S+)/m.exec(human.stdout)?.[1];
    expect(key).toBeDefined();
    const token = await cli(["tokens", "create", "--type", "card_number", "--data", "4242424242424242"], { api: key });
    expect(token.code, token.stderr).toBe(0);
    expect(token.stdout).toMatch(/^token:\s+[0-9a-f-]{36}$/m);
    expect(token.stdout).not.toContain("4242424242424242");
    const created = await json(["tokens", "create", "--type", "token", "--data", '{"a":1}'], { api: key });
    expect(created).toMatchObject({ type: "token" });
    refused(await cli(["tokens", "create", "--type", "card_number", "--data", "42"], { api: key }), /^token-vault: 400 .*data/);
    refused(await cli(["tokens", "create", "--type", "token", "--data", "{not json"], { api: key }), /--data looks like JSON/);
    const permissions = await json(["applications", "create", "--name", "reader", "--permission", "token:read"], {
      api: tenant.managementKey,
    });
    expect(permissions).toMatchObject({ name: "reader", permissions: ["token:read"] });
    refused(
      await cli(["applications", "create", "--name", "x", "--rule", "not json"], { api: tenant.managementKey }),
      /--rule must be a JSON object/,
    );
    refused(await cli(["applications", "create", "--name", "x"]), /No API key/);
  });

  it("keys list, create and revoke", async () => {
    const application = await json(["applications", "create", "--name", "keyed", "--permission", "token:read"], {
      api: tenant.managementKey,
    });
    const api = tenant.managementKey;
    const added = await json(["keys", "create", application.id, "--expires-at", "2099-01-01T00:00:00Z"], { api });
    expect(added).toMatchObject({ expires_at: "2099-01-01T00:00:00.000Z" });
    const listed = await cli(["keys", "list", application.id], { api });
    expect(listed.code, listed.stderr).toBe(0);
    expect(listed.stdout.split("\n")[0]).toMatch(/^ID\s+CREATED\s+EXPIRES$/);
    expect(listed.stdout).toContain(added.id);
    expect(listed.stdout).not.toContain(added.key);
    const revoked = await cli(["keys", "revoke", application.id, added.id], { api });
    expect(revoked.stdout.trim()).toBe(`Key ${added.id} revoked.`);
    expect((await json(["keys", "list", application.id], { api })).map((key: { id: string }) => key.id)).not.toContain(added.id);
    refused(await cli(["keys", "list", crypto.randomUUID()], { api }), /^token-vault: 404 /);
  });

  it("proxies roll-key: a new key, the old one kept for the grace period", async () => {
    const response = await fetch(`${vault.baseUrl}/proxies`, {
      method: "POST",
      headers: { "content-type": "application/json", "SVC-API-KEY": tenant.managementKey },
      body: JSON.stringify({ name: "partner", destination_url: "https://partner.example/charges" }),
    });
    const proxy = (await response.json()) as { id: string; key: string };
    const rolled = await cli(["proxies", "roll-key", proxy.id, "--grace-period", "60"], { api: tenant.managementKey });
    expect(rolled.code, rolled.stderr).toBe(0);
    expect(rolled.stdout).toMatch(new RegExp(`^proxy:\\s+${proxy.id}$`, "m"));
    const again = await json(["proxies", "roll-key", proxy.id], { api: tenant.managementKey });
    expect(again.key).not.toBe(proxy.key);
    refused(await cli(["proxies", "roll-key", crypto.randomUUID()], { api: tenant.managementKey }), /^token-vault: 404 /);
  });

  it("logs list, follow and verify", async () => {
    const api = tenant.managementKey;
    const listed = await cli(["logs", "list", "--entity-type", "application"], { api });
    expect(listed.code, listed.stderr).toBe(0);
    expect(listed.stdout).toMatch(/ application:[0-9a-f-]{36} {2}create {2}Created application/);
    const followed = await cli(["logs", "follow", "--for", "1", "--interval", "200"], { api });
    expect(followed.code, followed.stderr).toBe(0);
    expect(followed.stdout.trim().split("\n").length).toBeGreaterThan(3);
    const lines = (await cli(["--json", "logs", "list", "--size", "5"], { api })).stdout.trim().split("\n");
    expect(lines).toHaveLength(5);
    for (const line of lines) expect(JSON.parse(line)).toMatchObject({ tenant_id: tenant.id });
    const verified = await cli(["logs", "verify"], { api });
    expect(verified.stdout).toMatch(/^Chain verified: \d+ entries checked\.$/m);
    expect(await json(["logs", "verify"], { api })).toMatchObject({ verified: true });
    const reader = await json(["applications", "create", "--name", "no logs", "--permission", "token:read"], { api });
    refused(await cli(["logs", "list"], { api: reader.key }), /^token-vault: 403 /);
  });

  it("rotation start --watch and status; keyring status and rewrap", { timeout: 60_000 }, async () => {
    const watched = await cli(["rotation", "start", tenant.id, "--watch"], { operator });
    expect(watched.code, watched.stderr).toBe(0);
    expect(watched.stdout).toMatch(/^state:\s+done$/m);
    expect(watched.stdout).toMatch(/^versions:\s+1 -> 2$/m);
    expect(await json(["rotation", "status", tenant.id], { operator })).toMatchObject({ state: "done", to_version: 2 });
    refused(await cli(["rotation", "status", crypto.randomUUID()], { operator }), /^token-vault: 404 /);
    const status = await cli(["keyring", "status"], { operator });
    expect(status.stdout).toMatch(/^keyring versions:\s+1$/m);
    expect(await json(["keyring", "rewrap"], { operator })).toMatchObject({ remaining: 0 });
    refused(await cli(["keyring", "status"]), /No operator key/);
  });

  it("tenants move with a progress bar, and tenants delete", { timeout: 60_000 }, async () => {
    const created = await json(["tenants", "create", "mover", "--database", "DB_1"], { operator });
    const moved = await cli(["tenants", "move", created.tenant.id, "--database", "DB_2"], { operator });
    expect(moved.code, moved.stderr).toBe(0);
    expect(moved.stdout).toContain(`Tenant ${created.tenant.id} moved from DB_1 to DB_2.`);
    refused(await cli(["tenants", "move", created.tenant.id, "--database", "DB_9"], { operator }), /^token-vault: 400 /);
    const deleted = await json(["tenants", "delete", created.tenant.id], { operator });
    expect(deleted).toMatchObject({ tenant_id: created.tenant.id });
    refused(await cli(["tenants", "delete", crypto.randomUUID()], { operator }), /^token-vault: 404 /);
  });
});
