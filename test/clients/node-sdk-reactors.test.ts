import { join } from "node:path";
import { BasisTheoryClient } from "@basis-theory/node-sdk";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { buildWorker, startLocalVault } from "../../scripts/local-vault.mjs";

/*
 * The original product's current Node SDK (@basis-theory/node-sdk 5.7.0), unchanged, against the vault
 * with HEADER_PREFIX=BT: reactors with their own code as its users write them (create, get, update,
 * patch, react, reactAsync, then results.get). Applications and tokens are made over plain HTTP, so
 * that this file tests the reactor calls alone.
 */

const CARD_NUMBER = "4242424242424242";

/** Reactor code as the original docs write it: configuration and detokenized args in, raw out. */
const CODE = `module.exports = async function (req) {
  return { raw: { last4: String(req.args.card).slice(-4), customer: req.args.customer_id, key: req.configuration.SERVICE_API_KEY } };
};`;
const UPDATED_CODE = `module.exports = async function (req) {
  return { raw: { version: 2, key: req.configuration.SERVICE_API_KEY } };
};`;

let vault: Awaited<ReturnType<typeof startLocalVault>>;
let management: BasisTheoryClient;
let privateClient: BasisTheoryClient;
let cardTokenId: string;

const client = (apiKey: string) => new BasisTheoryClient({ apiKey, baseUrl: vault.baseUrl, maxRetries: 0 });

/** One call to the vault over plain HTTP with a BT- key, JSON in and out. */
async function vaultCall(method: string, path: string, key: string, body?: unknown): Promise<any> {
  const reply = await fetch(`${vault.baseUrl}${path}`, {
    method,
    headers: { "content-type": "application/json", "BT-API-KEY": key },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const json = await reply.json();
  if (!reply.ok) throw new Error(`${method} ${path}: ${reply.status} ${JSON.stringify(json)}`);
  return json;
}

beforeAll(async () => {
  const buildDir = join(process.cwd(), ".wrangler", "clients-node-sdk-reactors-build");
  buildWorker(buildDir);
  vault = await startLocalVault({ buildDir, bindings: { HEADER_PREFIX: "BT" } });
  const tenant = await fetch(`${vault.baseUrl}/tenants`, {
    method: "POST",
    headers: { "content-type": "application/json", "BT-OPERATOR-KEY": vault.operatorKey },
    body: JSON.stringify({ name: "node-sdk-reactors" }),
  }).then((reply) => reply.json() as Promise<any>);
  const managementKey = tenant.application.key;
  management = client(managementKey);
  const backend = await vaultCall("POST", "/applications", managementKey, {
    name: "backend",
    type: "private",
    permissions: ["token:create", "token:use"],
  });
  privateClient = client(backend.keys[0].key);
  cardTokenId = (await vaultCall("POST", "/tokens", backend.keys[0].key, { type: "card_number", data: CARD_NUMBER })).id;
});

afterAll(async () => {
  await vault?.dispose();
});

describe("the Node SDK 5.7.0 with reactors that hold their own code (HEADER_PREFIX=BT)", () => {
  let reactorId: string;

  it("reactors.create stores the code and answers it with the reactor", async () => {
    const reactor = await management.reactors.create({
      name: "My Reactor",
      code: CODE,
      configuration: { SERVICE_API_KEY: "key_abcd1234" },
    });
    reactorId = reactor.id!;
    expect(reactor).toMatchObject({
      id: expect.stringMatching(/^[0-9a-f-]{36}$/),
      name: "My Reactor",
      code: CODE,
      runtime: { image: "node-bt" },
      configuration: { SERVICE_API_KEY: "key_abcd1234" },
    });
    expect(reactor.createdAt).toBeInstanceOf(Date);
  });

  it("reactors.get answers the code", async () => {
    const reactor = await management.reactors.get(reactorId);
    expect(reactor).toMatchObject({ id: reactorId, name: "My Reactor", code: CODE, configuration: { SERVICE_API_KEY: "key_abcd1234" } });
  });

  it("reactors.react detokenizes the args with the caller's key and answers the code's raw output", async () => {
    const reply = await privateClient.reactors.react(reactorId, {
      args: { card: `{{ ${cardTokenId} }}`, customer_id: "myCustomerId1234" },
    });
    expect(reply).toMatchObject({ raw: { last4: "4242", customer: "myCustomerId1234", key: "key_abcd1234" } });
  });

  it("reactors.reactAsync answers a request id, and reactors.results.get its result once the queue has run it", async () => {
    const accepted = await privateClient.reactors.reactAsync(reactorId, {
      args: { card: `{{ ${cardTokenId} }}`, customer_id: "async-customer" },
    });
    expect(accepted.asyncReactorRequestId).toMatch(/^[0-9a-f-]{36}$/);
    const requestId = accepted.asyncReactorRequestId!;
    let result: any = await privateClient.reactors.results.get(reactorId, requestId);
    for (const deadline = Date.now() + 20_000; !["completed", "failed"].includes(result.status) && Date.now() < deadline; ) {
      await new Promise((resolve) => setTimeout(resolve, 100));
      result = await privateClient.reactors.results.get(reactorId, requestId);
    }
    expect(result).toMatchObject({
      id: requestId,
      status: "completed",
      raw: { last4: "4242", customer: "async-customer", key: "key_abcd1234" },
      tokens: null,
      error: null,
    });
  });

  it("reactors.update replaces the code; reactors.patch changes the configuration (204); both read back", async () => {
    const updated = await management.reactors.update(reactorId, {
      name: "My Reactor v2",
      code: UPDATED_CODE,
      configuration: { SERVICE_API_KEY: "key_v2" },
    });
    expect(updated).toMatchObject({ name: "My Reactor v2", code: UPDATED_CODE, configuration: { SERVICE_API_KEY: "key_v2" } });
    await management.reactors.patch(reactorId, { configuration: { SERVICE_API_KEY: "key_v3" } });
    expect(await management.reactors.get(reactorId)).toMatchObject({ code: UPDATED_CODE, configuration: { SERVICE_API_KEY: "key_v3" } });
    expect(await privateClient.reactors.react(reactorId, { args: {} })).toMatchObject({ raw: { version: 2, key: "key_v3" } });
  });

  it("a runtime other than the sandbox's is refused with a 400 the SDK raises, not dropped", async () => {
    await expect(
      management.reactors.create({ name: "node22", code: CODE, runtime: { image: "node22", dependencies: { "js-sha256": "0.11.1" } } }),
    ).rejects.toMatchObject({ statusCode: 400 });
  });

  it("reactors.list includes the reactor with its code, and reactors.delete removes it", async () => {
    const page = await management.reactors.list();
    expect(page.data.map((reactor) => [reactor.id, reactor.code])).toContainEqual([reactorId, UPDATED_CODE]);
    await management.reactors.delete(reactorId);
    await expect(management.reactors.get(reactorId)).rejects.toMatchObject({ statusCode: 404 });
  });
});
