import { createServer, type Server } from "node:http";
import { join } from "node:path";
import { BasisTheoryClient, BasisTheoryError } from "@basis-theory/node-sdk";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { buildWorker, startLocalVault } from "../../scripts/local-vault.mjs";

/*
 * The original interface's current Node SDK (5.7.0), unchanged, against the vault with HEADER_PREFIX=BT:
 * applications and their keys, tokens, sessions, proxies, webhooks, logs, the tenant and ping, as
 * its users write them.
 */

const CARD = { number: "4242424242424242", expiration_month: 11, expiration_year: 2030, cvc: "123" };

let vault: Awaited<ReturnType<typeof startLocalVault>>;
let destination: { url: string; server: Server };
let management: BasisTheoryClient;
let tenantId: string;

const client = (apiKey?: string) => new BasisTheoryClient({ apiKey, baseUrl: vault.baseUrl, maxRetries: 0 });

beforeAll(async () => {
  const buildDir = join(process.cwd(), ".wrangler", "clients-node-sdk-build");
  buildWorker(buildDir);
  vault = await startLocalVault({ buildDir, bindings: { HEADER_PREFIX: "BT" } });
  destination = await startDestination();
  const tenant = await fetch(`${vault.baseUrl}/tenants`, {
    method: "POST",
    headers: { "content-type": "application/json", "BT-OPERATOR-KEY": vault.operatorKey },
    body: JSON.stringify({ name: "node-sdk" }),
  }).then((reply) => reply.json() as Promise<any>);
  tenantId = tenant.tenant.id;
  management = client(tenant.application.key);
});

afterAll(async () => {
  await new Promise((resolve) => destination?.server.close(resolve));
  await vault?.dispose();
});

/** A rule that reveals every container for these permissions. */
const revealing = (permissions: string[]) => [{ description: "all", priority: 1, container: "/", transform: "reveal", permissions }];

/** A private application revealing every container for these permissions: its key and a client with it. */
async function privateClient(permissions: string[]): Promise<BasisTheoryClient & { key: string }> {
  const application = await management.applications.create({ name: "server", type: "private", rules: revealing(permissions) });
  return Object.assign(client(application.key), { key: application.key! });
}

describe("the Node SDK 5.7 against the vault with HEADER_PREFIX=BT", () => {
  describe("applications and their keys", () => {
    it("applications.create answers the application with its key; get, update, list and getByKey read it", async () => {
      const created = await management.applications.create({ name: "checkout", type: "private", permissions: ["token:read"] });
      expect(created).toMatchObject({ name: "checkout", type: "private", tenantId, permissions: ["token:read"] });
      expect(created.key).toMatch(/^key_/);
      expect(created.keys).toEqual([expect.objectContaining({ id: expect.any(String), key: created.key })]);
      expect(await management.applications.get(created.id!)).toMatchObject({ id: created.id, name: "checkout" });
      const updated = await management.applications.update(created.id!, { name: "checkout 2", permissions: ["token:create"] });
      expect(updated).toMatchObject({ id: created.id, name: "checkout 2", permissions: ["token:create"] });
      const page = await management.applications.list({ id: created.id });
      expect(page.data.map((application) => application.id)).toEqual([created.id]);
      expect(await client(created.key).applications.getByKey()).toMatchObject({ id: created.id, name: "checkout 2" });
    });

    it("applications.create with createKey false makes an application without a key", async () => {
      const created = await management.applications.create({
        name: "keyless",
        type: "private",
        permissions: ["token:read"],
        createKey: false,
      });
      expect(created.key).toBeUndefined();
      expect(created.keys ?? []).toEqual([]);
      expect(await management.applicationKeys.list(created.id!)).toEqual([]);
    });

    it("applicationKeys create, list, get and delete the keys of an application", async () => {
      const application = await management.applications.create({ name: "keyed", type: "private", permissions: ["token:read"] });
      const key = await management.applicationKeys.create(application.id!);
      expect(key.key).toMatch(/^key_/);
      const listed = await management.applicationKeys.list(application.id!);
      expect(listed.map((listedKey) => listedKey.id).sort()).toEqual([application.keys![0]!.id, key.id].sort());
      expect(listed.every((listedKey) => listedKey.key === undefined)).toBe(true);
      const read = await management.applicationKeys.get(application.id!, key.id!);
      expect(read).toMatchObject({ id: key.id });
      expect(read.key).toBeUndefined();
      expect(read.createdAt).toBeInstanceOf(Date);
      await management.applicationKeys.delete(application.id!, key.id!);
      await expect(management.applicationKeys.get(application.id!, key.id!)).rejects.toMatchObject({ statusCode: 404 });
      await expect(client(key.key).applications.getByKey()).rejects.toMatchObject({ statusCode: 401 });
    });

    it("applications.delete removes the application", async () => {
      const application = await management.applications.create({ name: "doomed", type: "private", permissions: ["token:read"] });
      await management.applications.delete(application.id!);
      await expect(management.applications.get(application.id!)).rejects.toBeInstanceOf(BasisTheoryError);
    });
  });

  describe("tokens", () => {
    it("tokens.create takes every attribute, the docs' expiresAt format included, and answers _extras", async () => {
      const bt = await privateClient(["token:create", "token:read", "token:search"]);
      const token = await bt.tokens.create({
        id: "{{ data | alias_preserve_format: 0, 4 }}",
        type: "token",
        data: "Sensitive Value",
        mask: "{{ data | reveal_last: 4 }}",
        containers: ["/general/high/"],
        metadata: { nonSensitiveField: "Non-Sensitive Value" },
        searchIndexes: ["{{ data }}", "{{ data | last4 }}"],
        fingerprintExpression: "{{ data }}",
        deduplicateToken: true,
        expiresAt: "8/26/2030 7:23:57 PM -07:00",
      });
      expect(token).toMatchObject({
        type: "token",
        data: "Sensitive Value",
        mask: "{{ data | reveal_last: 4 }}",
        containers: ["/general/high/"],
        metadata: { nonSensitiveField: "Non-Sensitive Value" },
        searchIndexes: ["{{ data }}", "{{ data | last4 }}"],
        fingerprintExpression: "{{ data }}",
        extras: { deduplicated: false },
      });
      // The alias keeps the value's format and its last four characters.
      expect(token.id).toMatch(/^[A-Za-z]{9} [A-Za-z]alue$/);
      expect(token.id).not.toBe("Sensitive Value");
      expect(token.expiresAt?.toISOString()).toBe("2030-08-27T02:23:57.000Z");
      const again = await bt.tokens.create({
        type: "token",
        data: "Sensitive Value",
        fingerprintExpression: "{{ data }}",
        deduplicateToken: true,
      });
      expect(again).toMatchObject({ id: token.id, extras: { deduplicated: true } });
    });

    it("tokens.create stores a card with search indexes, which a data: search then finds, and a card without expiry", async () => {
      const bt = await privateClient(["token:create", "token:read", "token:search"]);
      const card = await bt.tokens.create({ type: "card", data: CARD, searchIndexes: ["{{ data.number | last4 }}"] });
      expect(card).toMatchObject({ type: "card", searchIndexes: ["{{ data.number | last4 }}"], extras: { deduplicated: false } });
      const found = await fetch(`${vault.baseUrl}/tokens/search`, {
        method: "POST",
        headers: { "content-type": "application/json", "BT-API-KEY": bt.key },
        body: JSON.stringify({ query: "data:4242" }),
      }).then((reply) => reply.json() as Promise<any>);
      expect(found.data.map((token: { id: string }) => token.id)).toContain(card.id);
      const noExpiry = await bt.tokens.create({ type: "card", data: { number: "4242424242424242" } });
      expect(noExpiry.data).toEqual({ number: "4242424242424242" });
    });

    it("tokens.get and tokens.update read and change a token; tokens.delete removes it", async () => {
      const bt = await privateClient(["token:create", "token:read", "token:update", "token:delete"]);
      const token = await bt.tokens.create({ type: "token", data: { name: "Ada" }, metadata: { a: "1" } });
      expect(await bt.tokens.get(token.id!)).toMatchObject({ id: token.id, data: { name: "Ada" }, metadata: { a: "1" } });
      const updated = await bt.tokens.update(token.id!, { data: { name: "Grace" }, metadata: { b: "2" } });
      expect(updated).toMatchObject({ id: token.id, data: { name: "Grace" }, metadata: { a: "1", b: "2" } });
      await bt.tokens.delete(token.id!);
      await expect(bt.tokens.get(token.id!)).rejects.toMatchObject({ statusCode: 404 });
    });

    it("tokens.tokenize answers ids for primitive leaves and token objects for create requests", async () => {
      const bt = await privateClient(["token:create", "token:read"]);
      const result = (await bt.tokens.tokenize({ first_name: "John", card: { type: "card", data: CARD } })) as any;
      expect(result.first_name).toMatch(/^[0-9a-f-]{36}$/);
      expect(result.card).toMatchObject({ type: "card", data: CARD, _extras: { deduplicated: false } });
    });

    it("tokens.detokenize answers the tokens of a tokens list and the data of expressions", async () => {
      const bt = await privateClient(["token:create", "token:use"]);
      const first = await bt.tokens.create({ type: "token", data: "secret data" });
      const second = await bt.tokens.create({ type: "card", data: CARD });
      const listed = (await bt.tokens.detokenize({ tokens: [first.id, second.id] })) as any;
      expect(listed.tokens).toEqual([
        expect.objectContaining({ id: first.id, type: "token", data: "secret data", tenant_id: tenantId }),
        expect.objectContaining({ id: second.id, type: "card", data: CARD }),
      ]);
      const expressions = (await bt.tokens.detokenize({ card_number: `{{ ${second.id} | json: '$.number' }}` })) as any;
      expect(expressions).toEqual({ card_number: CARD.number });
    });
  });

  describe("sessions", () => {
    it("sessions.create with a public key, authorize with a private key; the session key reads a token", async () => {
      const server = await management.applications.create({
        name: "merchant",
        type: "private",
        rules: revealing(["token:create", "token:read", "session:authorize"]),
      });
      const page = await management.applications.create({ name: "page", type: "public", permissions: ["token:create"] });
      const token = await client(server.key).tokens.create({ type: "token", data: "shown to the session" });
      const session = await client(page.key).sessions.create();
      expect(session.sessionKey).toMatch(/^key_/);
      expect(session.expiresAt).toBeInstanceOf(Date);
      await client(server.key).sessions.authorize({ nonce: session.nonce!, rules: revealing(["token:read"]) });
      expect(await client(session.sessionKey).tokens.get(token.id!)).toMatchObject({ id: token.id, data: "shown to the session" });
    });
  });

  describe("proxies", () => {
    it("proxies create, get, update, patch, list and delete; an invocation answers the destination's status in BT-PROXY-DESTINATION-STATUS", async () => {
      const proxy = await management.proxies.create({ name: "payments", destinationUrl: destination.url, requireAuth: false });
      expect(proxy).toMatchObject({ name: "payments", destinationUrl: destination.url, requireAuth: false });
      expect(await management.proxies.get(proxy.id!)).toMatchObject({ id: proxy.id, key: proxy.key });
      const updated = await management.proxies.update(proxy.id!, {
        name: "payments 2",
        destinationUrl: destination.url,
        requireAuth: false,
      });
      expect(updated).toMatchObject({ name: "payments 2" });
      await management.proxies.patch(proxy.id!, { name: "payments 3" });
      const page = await management.proxies.list({ id: proxy.id });
      expect(page.data.map((listed) => [listed.id, listed.name])).toEqual([[proxy.id, "payments 3"]]);
      const answer = await fetch(`${vault.baseUrl}/proxy/declined`, { method: "POST", headers: { "BT-PROXY-KEY": proxy.key! } });
      expect(answer.status).toBe(402);
      expect(answer.headers.get("BT-PROXY-DESTINATION-STATUS")).toBe("402");
      await management.proxies.delete(proxy.id!);
      await expect(management.proxies.get(proxy.id!)).rejects.toMatchObject({ statusCode: 404 });
    });
  });

  describe("webhooks", () => {
    it("webhooks create, get, update, list and delete", async () => {
      const webhook = await management.webhooks.create({ name: "events", url: `${destination.url}/hooks`, events: ["token.created"] });
      expect(webhook).toMatchObject({ name: "events", url: `${destination.url}/hooks`, events: ["token.created"], status: "enabled" });
      expect(await management.webhooks.get(webhook.id)).toMatchObject({ id: webhook.id });
      const updated = await management.webhooks.update(webhook.id, {
        name: "events 2",
        url: `${destination.url}/hooks`,
        events: ["token.created", "token.updated"],
      });
      expect(updated).toMatchObject({ name: "events 2", events: ["token.created", "token.updated"] });
      const list = await management.webhooks.list();
      expect(list.data.map((listed) => listed.id)).toContain(webhook.id);
      await management.webhooks.delete(webhook.id);
      await expect(management.webhooks.get(webhook.id)).rejects.toMatchObject({ statusCode: 404 });
    });
  });

  describe("logs", () => {
    it("logs.list reads the audit log, filtered by entity", async () => {
      const created = await management.applications.create({ name: "audited", type: "private", permissions: ["token:read"] });
      // The queue consumer writes the entry a moment after the request.
      const deadline = Date.now() + 15_000;
      let logs = await management.logs.list({ entityType: "application", entityId: created.id });
      while (logs.data.length === 0 && Date.now() < deadline) {
        await new Promise((resolve) => setTimeout(resolve, 200));
        logs = await management.logs.list({ entityType: "application", entityId: created.id });
      }
      expect(logs.data).toEqual([expect.objectContaining({ entityType: "application", entityId: created.id, operation: "create" })]);
    });
  });

  describe("the tenant and ping", () => {
    it("tenants.self.get reads the caller's tenant and tenants.self.update renames it", async () => {
      expect(await management.tenants.self.get()).toMatchObject({ id: tenantId, name: "node-sdk" });
      const renamed = await management.tenants.self.update({ name: "node-sdk renamed" });
      expect(renamed).toMatchObject({ id: tenantId, name: "node-sdk renamed" });
      expect(renamed.modifiedAt).toBeInstanceOf(Date);
      expect(await management.tenants.self.get()).toMatchObject({ name: "node-sdk renamed" });
    });

    it("webhooks.ping answers, with or without a key", async () => {
      await expect(management.webhooks.ping()).resolves.toBeUndefined();
      await expect(client().webhooks.ping()).resolves.toBeUndefined();
    });
  });
});

/** A loopback destination: /declined answers 402, anything else 200 {ok: true}. */
async function startDestination(): Promise<{ url: string; server: Server }> {
  const server = createServer((request, response) => {
    request.resume();
    request.on("end", () => {
      response.writeHead(request.url === "/declined" ? 402 : 200, { "content-type": "application/json" });
      response.end(JSON.stringify({ ok: request.url !== "/declined" }));
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const address = server.address();
  if (!address || typeof address === "string") throw new Error("destination has no port");
  return { url: `http://127.0.0.1:${address.port}`, server };
}
