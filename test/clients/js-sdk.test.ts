import { createServer, type Server } from "node:http";
import { join } from "node:path";
import { BasisTheory } from "@basis-theory/basis-theory-js";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { buildWorker, startLocalVault } from "../../scripts/local-vault.mjs";

/*
 * The original interface's JS SDK, unchanged, against the vault with HEADER_PREFIX=BT: the flows of
 * a card payment (create a card, tokenize, proxy with expressions, search) as its users write them.
 * The SDK's telemetry is switched off at init, so nothing leaves this machine.
 */

const CARD = { number: "4242424242424242", expiration_month: 11, expiration_year: 2030, cvc: "123" };

interface Seen {
  path: string;
  headers: Record<string, string | string[] | undefined>;
  body: string;
}

let vault: Awaited<ReturnType<typeof startLocalVault>>;
let destination: { url: string; seen: Seen[]; server: Server };
let bt: BasisTheory;
let managementKey: string;

beforeAll(async () => {
  const buildDir = join(process.cwd(), ".wrangler", "clients-build");
  buildWorker(buildDir);
  // The SDK speaks plain HTTP only to a host named localhost.
  vault = await startLocalVault({ buildDir, host: "localhost", bindings: { HEADER_PREFIX: "BT" } });
  destination = await startDestination();
  const tenant = await fetch(`${vault.baseUrl}/tenants`, {
    method: "POST",
    headers: { "content-type": "application/json", "BT-OPERATOR-KEY": vault.operatorKey },
    body: JSON.stringify({ name: "sdk" }),
  }).then((reply) => reply.json() as Promise<any>);
  managementKey = tenant.application.keys[0].key;
  const application = await fetch(`${vault.baseUrl}/applications`, {
    method: "POST",
    headers: { "content-type": "application/json", "BT-API-KEY": managementKey },
    body: JSON.stringify({
      name: "checkout",
      type: "private",
      permissions: ["token:create", "token:read", "token:search", "token:use"],
    }),
  }).then((reply) => reply.json() as Promise<any>);
  bt = (await new BasisTheory().init(application.keys[0].key, {
    apiBaseUrl: vault.baseUrl.replace("127.0.0.1", "localhost"),
    disableTelemetry: true,
  })) as BasisTheory;
});

afterAll(async () => {
  await new Promise((resolve) => destination?.server.close(resolve));
  await vault?.dispose();
});

describe("the JS SDK against the vault with HEADER_PREFIX=BT", () => {
  it("tokens.create stores a card and answers its masked data", async () => {
    const token = await bt.tokens.create({ type: "card", data: CARD });
    expect(token.id).toMatch(/^[0-9a-f-]{36}$/);
    expect(token.type).toBe("card");
    expect(token.data).toEqual({ number: "XXXXXXXXXXXX4242", expiration_month: 11, expiration_year: 2030 });
  });

  it("tokenize answers ids for primitive leaves and a token object for a card", async () => {
    const result = (await bt.tokenize({
      first_name: "John",
      card: { type: "card", data: CARD },
      tags: ["vip", 7],
    })) as any;
    expect(typeof result.first_name).toBe("string");
    expect(result.first_name).toMatch(/^[0-9a-f-]{36}$/);
    expect(result.tags.map((tag: unknown) => typeof tag)).toEqual(["string", "string"]);
    expect(result.card).toMatchObject({ type: "card", data: { number: "XXXXXXXXXXXX4242" } });
    const name = await bt.tokens.retrieve(result.first_name);
    expect(name.type).toBe("token");
  });

  it("proxy.post detokenizes json and card_exp expressions on the way to the destination", async () => {
    const card = await bt.tokens.create({ type: "card", data: CARD });
    const answer = await bt.proxy.post({
      path: "/charges",
      headers: { "BT-PROXY-URL": destination.url, "Content-Type": "application/json" },
      body: {
        number: `{{ ${card.id} | json: '$.number' }}`,
        month: `{{ ${card.id} | json: '$.expiration_month' }}`,
        expiry: `{{ ${card.id} | card_exp: 'MM/YY' }}`,
        cvc: `{{ ${card.id} | json: '$.cvc' }}`,
      },
    });
    expect(answer).toEqual({ ok: true });
    const seen = destination.seen.at(-1)!;
    expect(seen.path).toBe("/charges");
    expect(JSON.parse(seen.body)).toEqual({ number: CARD.number, month: "11", expiry: "11/30", cvc: "123" });
    expect(seen.headers["bt-api-key"]).toBeUndefined();
    expect(seen.headers["bt-proxy-url"]).toBeUndefined();
  });

  it("proxy.post through a pre-configured proxy by its key", async () => {
    const proxy = await fetch(`${vault.baseUrl}/proxies`, {
      method: "POST",
      headers: { "content-type": "application/json", "BT-API-KEY": managementKey },
      body: JSON.stringify({ name: "payments", destination_url: destination.url }),
    }).then((reply) => reply.json() as Promise<any>);
    const card = await bt.tokens.create({ type: "card", data: CARD });
    await bt.proxy.post({
      path: "/charges",
      headers: { "BT-PROXY-KEY": proxy.key },
      body: { number: `{{ ${card.id} | json: '$.number' }}`, expiry: `{{ ${card.id} | card_exp: 'MM/YYYY' }}` },
    });
    expect(JSON.parse(destination.seen.at(-1)!.body)).toEqual({ number: CARD.number, expiry: "11/2030" });
  });

  it("tokens.search finds tokens by type and by data", async () => {
    const ssn = await bt.tokens.create({ type: "social_security_number", data: "321-54-9876" } as any);
    const byData = await bt.tokens.search({ query: "data:321549876" });
    expect(byData.data.map((token) => token.id)).toEqual([ssn.id]);
    const cards = await bt.tokens.search({ query: "type:card", size: 100 });
    expect(cards.data.length).toBeGreaterThanOrEqual(3);
    expect(cards.data.every((token) => token.type === "card")).toBe(true);
  });
});

/** A loopback destination that remembers what it received and answers {ok: true}. */
async function startDestination(): Promise<{ url: string; seen: Seen[]; server: Server }> {
  const seen: Seen[] = [];
  const server = createServer((request, response) => {
    const chunks: Buffer[] = [];
    request.on("data", (chunk: Buffer) => chunks.push(chunk));
    request.on("end", () => {
      seen.push({ path: request.url ?? "", headers: request.headers, body: Buffer.concat(chunks).toString("utf8") });
      response.writeHead(200, { "content-type": "application/json" });
      response.end(JSON.stringify({ ok: true }));
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const address = server.address();
  if (!address || typeof address === "string") throw new Error("destination has no port");
  return { url: `http://127.0.0.1:${address.port}`, seen, server };
}
