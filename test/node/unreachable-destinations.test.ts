import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { buildWorker, startLocalVault } from "../../scripts/local-vault.mjs";

/*
 * A destination that refuses the connection. In the workers test pool, which runs workerd verbose,
 * every failed connection is logged as an uncaught exception with native stack addresses, even when
 * the fetch that failed is caught. So these cases run here, from Node, against the vault as
 * `npm start` runs it, with its log lines captured and asserted instead of printed.
 */

const CLOSED = "http://127.0.0.1:1/closed";

let vault: Awaited<ReturnType<typeof startLocalVault>>;
let logs: string[] = [];
let caller: string;
let managementKey: string;

async function send(path: string, init: { method?: string; headers?: Record<string, string>; body?: unknown } = {}) {
  const reply = await fetch(`${vault.baseUrl}${path}`, {
    method: init.method ?? "GET",
    headers: { "content-type": "application/json", ...init.headers },
    body: init.body === undefined ? undefined : JSON.stringify(init.body),
  });
  return { status: reply.status, body: (await reply.json()) as any };
}

beforeAll(async () => {
  const buildDir = join(process.cwd(), ".wrangler", "node-tests-build");
  buildWorker(buildDir);
  vault = await startLocalVault({
    buildDir,
    onLog: ({ message }) => {
      logs.push(message);
    },
  });
  const tenant = await send("/tenants", {
    method: "POST",
    headers: { "SVC-OPERATOR-KEY": vault.operatorKey },
    body: { name: "unreachable" },
  });
  managementKey = tenant.body.application.keys[0].key;
  const application = await send("/applications", {
    method: "POST",
    headers: { "SVC-API-KEY": managementKey },
    body: { name: "caller", type: "private", permissions: ["token:use"] },
  });
  caller = application.body.keys[0].key;
});

afterAll(async () => {
  await vault?.dispose();
});

/** Runs the call with an empty log, and answers the reply once the log holds `line`. */
async function logged<T>(line: string, call: () => Promise<T>): Promise<T> {
  logs = [];
  const reply = await call();
  // Log lines travel separately from the reply, and may arrive after it.
  await expect.poll(() => logs.join("\n"), { timeout: 5_000 }).toContain(line);
  return reply;
}

const UNREACHABLE = "proxy: The destination 127.0.0.1:1 could not be reached";

describe("a destination that cannot be reached", () => {
  it("is proxy_error 502 through a pre-configured proxy, and the vault logs it", async () => {
    const proxy = await send("/proxies", {
      method: "POST",
      headers: { "SVC-API-KEY": managementKey },
      body: { name: "closed", destination_url: CLOSED, require_auth: false },
    });
    expect(proxy.status).toBe(201);
    const reply = await logged(UNREACHABLE, () => send("/proxy", { headers: { "SVC-PROXY-KEY": proxy.body.key } }));
    expect(reply.status).toBe(502);
    expect(reply.body.proxy_error).toMatchObject({ status: 502, detail: "The destination 127.0.0.1:1 could not be reached" });
  });

  it("is proxy_error 502 through an ephemeral proxy, and the vault logs it", async () => {
    const reply = await logged(UNREACHABLE, () => send("/proxy", { headers: { "SVC-API-KEY": caller, "SVC-PROXY-URL": CLOSED } }));
    expect(reply.status).toBe(502);
    expect(reply.body.proxy_error).toMatchObject({ status: 502, detail: "The destination 127.0.0.1:1 could not be reached" });
  });
});
