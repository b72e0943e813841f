import { describe, expect, it } from "vitest";
import { call, createApplication, expectProblem, type Reply, seedTenant, type Tenant } from "../support/harness";
import { createWebhook, receiver } from "../support/webhooks";

/*
 * GET /webhooks in its two forms (docs/decisions.md, "Webhook lists"): by cursor unless the request
 * sends `page`, which the original interface's Node SDK never does for webhooks; by number with
 * `page`, the vault's list shape. A cursor is bound to its tenant, the key's application and the filters.
 */

/** `count` webhooks named hook-0 … created one after another; their ids newest first. */
async function createWebhooks(tenant: Tenant, count: number): Promise<string[]> {
  const ids: string[] = [];
  for (let index = 0; index < count; index++) ids.push((await createWebhook(tenant, { name: `hook-${index}`, url: receiver().url })).id);
  return ids.reverse();
}

function list(tenant: Tenant, query = "", key = tenant.managementKey): Promise<Reply> {
  return call("GET", `/webhooks${query}`, { key });
}

function expectStartRefused(reply: Reply) {
  const problem = expectProblem(reply, 400);
  expect(problem.errors?.start?.[0], problem.detail).toMatch(/is not a cursor of this request/);
}

describe("GET /webhooks by cursor, as the Node SDK reads it", () => {
  it("without page the answer is a cursor page, {pagination: {page_size}, data}, newest first, with no next when nothing follows", async () => {
    const tenant = await seedTenant();
    const ids = await createWebhooks(tenant, 3);
    const reply = await list(tenant);
    expect(reply.status, reply.text).toBe(200);
    expect(reply.body.pagination).toEqual({ page_size: 20 });
    expect(reply.body.data.map((webhook: { id: string }) => webhook.id)).toEqual(ids);
    expect(JSON.stringify(reply.body)).not.toContain("whsec_");
  });

  it("start continues the list through three pages of 2, 2 and 1, the last without next", async () => {
    const tenant = await seedTenant();
    const ids = await createWebhooks(tenant, 5);
    const pages: Reply[] = [await list(tenant, "?size=2")];
    while (pages.at(-1)!.body.pagination.next !== undefined && pages.length < 10) {
      pages.push(await list(tenant, `?size=2&start=${pages.at(-1)!.body.pagination.next}`));
    }
    expect(pages.map((page) => page.status)).toEqual([200, 200, 200]);
    expect(pages.map((page) => page.body.data.length)).toEqual([2, 2, 1]);
    expect(pages.flatMap((page) => page.body.data.map((webhook: { id: string }) => webhook.id))).toEqual(ids);
  });

  it("a cursor is good only for its tenant, its filters and its key's application: any other is a 400 naming start", async () => {
    const tenant = await seedTenant();
    await createWebhooks(tenant, 3);
    const { next } = (await list(tenant, "?size=1")).body.pagination;
    expect((await list(tenant, `?size=1&start=${next}`)).status).toBe(200);
    expectStartRefused(await list(tenant, `?size=1&name=hook-*&start=${next}`));
    const otherManager = await createApplication(tenant, { type: "management", permissions: ["webhook:read"] });
    expectStartRefused(await list(tenant, `?size=1&start=${next}`, otherManager.key));
    const other = await seedTenant();
    await createWebhooks(other, 2);
    expectStartRefused(await list(other, `?size=1&start=${next}`));
    expectStartRefused(await list(tenant, `?size=1&start=${next!.slice(0, -2)}AA`));
  });

  it("filters apply to every page: name and id", async () => {
    const tenant = await seedTenant();
    const [newest, , oldest] = await createWebhooks(tenant, 3);
    const named = await list(tenant, "?name=HOOK-0");
    expect(named.body.data.map((webhook: { id: string }) => webhook.id)).toEqual([oldest]);
    const byId = await list(tenant, `?id=${oldest}&id=${newest}&size=1`);
    expect(byId.body.data.map((webhook: { id: string }) => webhook.id)).toEqual([newest]);
    const rest = await list(tenant, `?id=${newest}&id=${oldest}&size=1&start=${byId.body.pagination.next}`);
    expect(rest.body.data.map((webhook: { id: string }) => webhook.id)).toEqual([oldest]);
    expect(rest.body.pagination).toEqual({ page_size: 1 });
  });
});

describe("GET /webhooks by number, the vault's list shape", () => {
  it("with page the answer is {pagination: {total_items, page_number, page_size, total_pages}, data}", async () => {
    const tenant = await seedTenant();
    const ids = await createWebhooks(tenant, 5);
    const second = await list(tenant, "?page=2&size=2");
    expect(second.status, second.text).toBe(200);
    expect(second.body.pagination).toEqual({ total_items: 5, page_number: 2, page_size: 2, total_pages: 3 });
    expect(second.body.data.map((webhook: { id: string }) => webhook.id)).toEqual(ids.slice(2, 4));
    expect((await list(tenant, "?page=9")).body.data).toEqual([]);
  });

  it("page and start together, or a page below 1, are a 400", async () => {
    const tenant = await seedTenant();
    await createWebhooks(tenant, 2);
    const { next } = (await list(tenant, "?size=1")).body.pagination;
    expect(expectProblem(await list(tenant, `?page=1&start=${next}`), 400).errors?.start?.[0]).toMatch(/not both/);
    expect(expectProblem(await list(tenant, "?page=0"), 400).errors).toHaveProperty("page");
  });
});
