import { join } from "node:path";
import { BasisTheory, BasisTheoryClient } from "@basis-theory/node-sdk";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { buildWorker, startLocalVault } from "../../scripts/local-vault.mjs";

/*
 * The original interface's current Node SDK (5.7.0), unchanged, against the vault with
 * HEADER_PREFIX=BT: tokens.listV2 and tokens.searchV2 followed through their pages by the SDK's own
 * pager (it passes each page's pagination.next back as `start`), and webhooks.list's cursor shape.
 */

type TokenPage = Awaited<ReturnType<BasisTheoryClient["tokens"]["listV2"]>>;

let vault: Awaited<ReturnType<typeof startLocalVault>>;
let client: BasisTheoryClient;
let management: BasisTheoryClient;
let key: string;
let managementKey: string;
/** The tokens of the test, newest first (the order every list answers). */
const newestFirst: string[] = [];

async function post(path: string, key: string, body: unknown): Promise<any> {
  const reply = await fetch(`${vault.baseUrl}${path}`, {
    method: "POST",
    headers: { "content-type": "application/json", "BT-API-KEY": key },
    body: JSON.stringify(body),
  });
  const json = await reply.json();
  expect(reply.status, JSON.stringify(json)).toBeLessThan(300);
  return json;
}

/** Every page the SDK's pager loads, each as the ids it holds. */
async function pagesOf(first: TokenPage): Promise<string[][]> {
  const page = first;
  const pages = [page.data.map((token) => token.id!)];
  while (page.hasNextPage() && pages.length < 20) {
    await page.getNextPage();
    pages.push(page.data.map((token) => token.id!));
  }
  return pages;
}

beforeAll(async () => {
  const buildDir = join(process.cwd(), ".wrangler", "clients-build");
  buildWorker(buildDir);
  vault = await startLocalVault({ buildDir, bindings: { HEADER_PREFIX: "BT" } });
  const tenant = await fetch(`${vault.baseUrl}/tenants`, {
    method: "POST",
    headers: { "content-type": "application/json", "BT-OPERATOR-KEY": vault.operatorKey },
    body: JSON.stringify({ name: "node sdk tokens v2" }),
  }).then((reply) => reply.json() as Promise<any>);
  managementKey = tenant.application.keys[0].key;
  const application = await post("/applications", managementKey, {
    name: "back office",
    type: "private",
    rules: [{ priority: 1, container: "/", transform: "reveal", permissions: ["token:create", "token:read", "token:search"] }],
  });
  key = application.keys[0].key;
  client = new BasisTheoryClient({ apiKey: key, baseUrl: vault.baseUrl });
  management = new BasisTheoryClient({ apiKey: managementKey, baseUrl: vault.baseUrl });
  for (let index = 0; index < 7; index++) {
    const token = await client.tokens.create({
      type: "token",
      data: `value-${index}`,
      metadata: { batch: index % 2 === 0 ? "even" : "odd" },
      containers: [index < 5 ? "/general/" : "/archive/"],
    });
    newestFirst.unshift(token.id!);
  }
});

afterAll(async () => {
  await vault?.dispose();
});

describe("the Node SDK 5.7 paging tokens v2 by cursor, with HEADER_PREFIX=BT", () => {
  it("tokens.listV2 follows pagination.next through three pages of 3, 3 and 1, newest first", async () => {
    const pages = await pagesOf(await client.tokens.listV2({ size: 3 }));
    expect(pages.map((page) => page.length)).toEqual([3, 3, 1]);
    expect(pages.flat()).toEqual(newestFirst);
  });

  it("tokens.listV2 iterated with for await yields every token once, and its filters narrow every page", async () => {
    const all: string[] = [];
    for await (const token of await client.tokens.listV2({ size: 2 })) all.push(token.id!);
    expect(all).toEqual(newestFirst);

    const even = await pagesOf(await client.tokens.listV2({ metadata: { batch: "even" }, size: 1 }));
    expect(even).toHaveLength(4);
    expect(even.flat()).toEqual(newestFirst.filter((_, index) => (newestFirst.length - 1 - index) % 2 === 0));
    const archived = await pagesOf(await client.tokens.listV2({ container: "/archive/", type: "token", size: 1 }));
    expect(archived.flat()).toEqual(newestFirst.slice(0, 2));
  });

  it("tokens.searchV2 pages a boolean query through three pages, as POST /tokens/search finds it", async () => {
    const query = 'metadata.batch:even OR (metadata.batch:odd AND container:"/general/")';
    const pages = await pagesOf(await client.tokens.searchV2({ query, size: 2 }));
    expect(pages.length).toBeGreaterThanOrEqual(3);
    const v1 = await post("/tokens/search", key, { query, size: 100 });
    expect(pages.flat()).toEqual(v1.data.map((token: { id: string }) => token.id));
    expect(pages.flat()).toHaveLength(6);
  });

  it("tokens.searchV2 with an invalid query throws the SDK's BadRequestError", async () => {
    await expect(client.tokens.searchV2({ query: "metadata.batch:even AND (" })).rejects.toBeInstanceOf(BasisTheory.BadRequestError);
  });

  it("webhooks.list reads the cursor page the SDK's WebhookList describes", async () => {
    for (const name of ["first", "second"]) {
      await post("/webhooks", managementKey, { name, url: `https://example.com/hooks/${name}`, events: ["token.created"] });
    }
    const listed = await management.webhooks.list();
    expect(listed.pagination).toEqual({ pageSize: 20 });
    expect(listed.data.map((webhook) => webhook.name)).toEqual(["second", "first"]);
  });
});
