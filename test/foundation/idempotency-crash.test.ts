import { describe, expect, it } from "vitest";
import { CreateApplicationBody } from "../../src/applications/schema";
import { createApplication, createApplicationKey, regenerateApplicationKey } from "../../src/applications/service";
import { ClientKeyBody } from "../../src/client-keys/schema";
import { createClientKey } from "../../src/client-keys/service";
import type { TenantContext } from "../../src/context";
import { claimIdempotencyKey, controlCommitMarkOf, rememberResponse, requestHashOf } from "../../src/idempotency/service";
import { IDEMPOTENCY_LEASE_MS, IDEMPOTENCY_WINDOW_MS, WEBHOOKS } from "../../src/limits";
import { ProxyBody } from "../../src/proxies/schema";
import { createProxy, rollProxyKey } from "../../src/proxies/service";
import { createFormula } from "../../src/reactors/formulas";
import { FormulaBody, ReactorBody } from "../../src/reactors/schema";
import { createReactor } from "../../src/reactors/service";
import { createToken, parseCreateToken, tokenize } from "../../src/tokens/creation";
import { WebhookBody } from "../../src/webhooks/schema";
import { createWebhook } from "../../src/webhooks/service";
import { callConfigured } from "../support/configured";
import { tenantContext } from "../support/context";
import { call, expectProblem, rowCounts } from "../support/harness";
import { stoppedAfterClaim } from "../support/idempotency";
import { expectLoggedError } from "../support/logs";
import { ECHO_CODE, formulaBody } from "../support/reactors";
import { createToken as createStoredToken, SSN, seedTokenTenant, type TokenTenant, VISA } from "../support/tokens";
import { receiver } from "../support/webhooks";

/**
 * A creating request killed while it holds its idempotency key (`npm start` killed with kill -9): its
 * claim is a lease, and a write that answers it carries the record's commit mark in its own batch. A
 * test stops a request where a kill would by driving the middleware's steps itself: it claims the key,
 * perhaps writes, and never saves an answer. The retries go over HTTP.
 */

/** The routes whose control write carries its mark in idempotency_marks (`idempotentControlWrite`). */
const MARKED_IN_CONTROL = /^\/(applications(\/[^/]+\/(keys|regenerate))?|proxies(\/[^/]+\/key)?|webhooks|keys|reactor-formulas|reactors)$/;

const PAYLOAD = { card: { type: "card_number", data: VISA }, ssn: SSN };
const LEASE_RAN_OUT = IDEMPOTENCY_LEASE_MS + 1000;

/** A request that claimed its key `claimedAgo` ms ago, as its route's middleware claims it, and was stopped there. */
function claimed(
  tenant: TokenTenant,
  key: string,
  request: { method: string; path: string; body: unknown },
  claimedAgo: number,
  apiKey = tenant.key,
) {
  const marks =
    request.path === "/tokens" || request.path === "/tokenize" ? "data" : MARKED_IN_CONTROL.test(request.path) ? "control" : null;
  const sent = { method: request.method, path: request.path, rawBody: JSON.stringify(request.body) };
  return stoppedAfterClaim(tenant.tenantId, apiKey, key, sent, claimedAgo, marks);
}

/** A tokenize killed after its tokens were written and before its answer was saved: what it would have answered. */
async function tokenizeKilledAfterWrite(tenant: TokenTenant, key: string, claimedAgo = LEASE_RAN_OUT, payload: unknown = PAYLOAD) {
  const { context, principal } = await claimed(tenant, key, { method: "POST", path: "/tokenize", body: payload }, claimedAgo);
  return JSON.parse(JSON.stringify(await tokenize(context, principal, payload)));
}

const retryTokenize = (tenant: TokenTenant, key: string, payload: unknown = PAYLOAD) =>
  call("POST", "/tokenize", { key: tenant.key, body: payload, headers: { "SVC-IDEMPOTENCY-KEY": key } });

const tokenCount = async () => (await rowCounts())["DB_1.tokens"]! + (await rowCounts())["DB_2.tokens"]!;

describe("idempotency: a request killed while it held its key", () => {
  it("a tokenize killed after its write: the retry past the lease answers its tokens with 201 and writes none", async () => {
    const tenant = await seedTokenTenant();
    const written = await tokenizeKilledAfterWrite(tenant, "killed-after-write");
    const before = await rowCounts();

    const retry = await retryTokenize(tenant, "killed-after-write");
    expect(retry.status, retry.text).toBe(201);
    expect(retry.headers.get("SVC-Idempotent-Replayed")).toBe("true");
    expect(retry.body.card).toMatchObject({ id: written.card.id, type: "card_number", data: VISA });
    expect(retry.body.ssn).toBe(written.ssn);
    expect(await rowCounts()).toEqual(before);

    const again = await retryTokenize(tenant, "killed-after-write");
    expect(again.status).toBe(201);
    expect(again.body).toEqual(retry.body);
  });

  it("a POST /tokens killed after its write: the retry answers the token it wrote, as a fresh create would show it", async () => {
    const tenant = await seedTokenTenant();
    const body = { type: "card_number", data: VISA, metadata: { order: "42" } };
    const { context, principal } = await claimed(tenant, "one-token", { method: "POST", path: "/tokens", body }, LEASE_RAN_OUT);
    const written = await createToken(context, principal, parseCreateToken(body));
    const before = await rowCounts();

    const retry = await call("POST", "/tokens", { key: tenant.key, body, headers: { "SVC-IDEMPOTENCY-KEY": "one-token" } });
    expect(retry.status, retry.text).toBe(201);
    expect(retry.body).toEqual(JSON.parse(JSON.stringify(written)));
    expect(await rowCounts()).toEqual(before);
  });

  it("a write's answer is made again at once: its commit mark says it is done, so the retry need not wait for the lease", async () => {
    const tenant = await seedTokenTenant();
    const written = await tokenizeKilledAfterWrite(tenant, "just-written", 0);
    const retry = await retryTokenize(tenant, "just-written");
    expect(retry.status, retry.text).toBe(201);
    expect(retry.body.ssn).toBe(written.ssn);
  });

  it("a deduplicating tokenize killed after its write: the retry answers the token it matched and the one it created", async () => {
    const tenant = await seedTokenTenant();
    const existing = await createStoredToken(tenant.key, { type: "card_number", data: VISA });
    const payload = {
      card: { type: "card_number", data: VISA, deduplicate_token: true },
      ssn: { type: "social_security_number", data: SSN, deduplicate_token: true },
    };
    const written = await tokenizeKilledAfterWrite(tenant, "deduplicated", LEASE_RAN_OUT, payload);
    expect(written.card).toMatchObject({ id: existing.id, _extras: { deduplicated: true } });

    const retry = await retryTokenize(tenant, "deduplicated", payload);
    expect(retry.status, retry.text).toBe(201);
    expect(retry.body).toEqual(written);
  });

  it("a deduplicating request whose new token is gone is answered with the duplicate a fresh create would get, as when it lost a race", async () => {
    const tenant = await seedTokenTenant();
    const payload = { card: { type: "card_number", data: VISA, deduplicate_token: true } };
    const written = await tokenizeKilledAfterWrite(tenant, "raced", LEASE_RAN_OUT, payload);
    expect((await call("DELETE", `/tokens/${written.card.id}`, { key: tenant.key })).status).toBe(204);
    const winner = await createStoredToken(tenant.key, { type: "card_number", data: VISA });

    const retry = await retryTokenize(tenant, "raced", payload);
    expect(retry.status, retry.text).toBe(201);
    expect(retry.body.card).toMatchObject({ id: winner.id, _extras: { deduplicated: true } });
  });

  it("a token the attempt created and that was deleted since: the retry is a 409 saying the request was processed, and writes nothing", async () => {
    const tenant = await seedTokenTenant();
    const written = await tokenizeKilledAfterWrite(tenant, "deleted-since");
    expect((await call("DELETE", `/tokens/${written.ssn}`, { key: tenant.key })).status).toBe(204);
    const before = await rowCounts();

    const retry = await retryTokenize(tenant, "deleted-since");
    expect(expectProblem(retry, 409).detail).toMatch(
      /was processed, but its answer is not replayed: a token it created .*no longer exists/,
    );
    expect(retry.text).not.toContain(written.card.id);
    expect(await rowCounts()).toEqual(before);
  });

  it("a tokenize killed before its write: past the lease the retry runs it, and its tokens are created once", async () => {
    const tenant = await seedTokenTenant();
    await claimed(tenant, "killed-before-write", { method: "POST", path: "/tokenize", body: PAYLOAD }, LEASE_RAN_OUT);
    const before = await tokenCount();

    const retry = await retryTokenize(tenant, "killed-before-write");
    expect(retry.status, retry.text).toBe(201);
    expect(retry.headers.get("SVC-Idempotent-Replayed")).toBeNull();
    expect(await tokenCount()).toBe(before + 2);

    const again = await retryTokenize(tenant, "killed-before-write");
    expect(again.headers.get("SVC-Idempotent-Replayed")).toBe("true");
    expect(again.body).toEqual(retry.body);
    expect(await tokenCount()).toBe(before + 2);
  });

  it("within the lease, a claim without an answer is a 409 'still being processed' that says when to retry", async () => {
    const tenant = await seedTokenTenant();
    await claimed(tenant, "in-flight", { method: "POST", path: "/tokenize", body: PAYLOAD }, 0);
    const before = await rowCounts();

    const retry = await retryTokenize(tenant, "in-flight");
    expect(expectProblem(retry, 409).detail).toMatch(/still being processed; retry in \d+ s/);
    const retryAfter = Number(retry.headers.get("Retry-After"));
    expect(retryAfter).toBeGreaterThan(0);
    expect(retryAfter).toBeLessThanOrEqual(IDEMPOTENCY_LEASE_MS / 1000);
    expect(await rowCounts()).toEqual(before);
  });

  it("a request that outlived its lease, whose key a retry took over, writes nothing: its batch fails on the mark", async () => {
    const tenant = await seedTokenTenant();
    const slow = await claimed(tenant, "slow", { method: "POST", path: "/tokenize", body: PAYLOAD }, LEASE_RAN_OUT);
    const retry = await retryTokenize(tenant, "slow");
    expect(retry.status, retry.text).toBe(201);
    const before = await rowCounts();

    await expect(tokenize(slow.context, slow.principal, PAYLOAD)).rejects.toMatchObject({
      status: 409,
      message: expect.stringMatching(/a retry took the key over: nothing was written/),
    });
    expect(await rowCounts()).toEqual(before);
    expect((await retryTokenize(tenant, "slow")).body).toEqual(retry.body);
  });

  it("a write followed by a 5xx keeps its mark: the key is not released, and the retry answers the tokens written", async () => {
    const tenant = await seedTokenTenant();
    const { context, principal, claim } = await claimed(tenant, "failed-late", { method: "POST", path: "/tokenize", body: PAYLOAD }, 0);
    const written = (await tokenize(context, principal, PAYLOAD)) as { ssn: string };
    await rememberResponse(context, claim, 500, "");
    const before = await tokenCount();

    const retry = await retryTokenize(tenant, "failed-late");
    expect(retry.status, retry.text).toBe(201);
    expect(retry.body.ssn).toBe(written.ssn);
    expect(await tokenCount()).toBe(before);
  });

  it("a react, whose tenant code may have called a partner: past the lease, a 409 saying its outcome is unknown, and nothing runs", async () => {
    const tenant = await seedTokenTenant();
    const path = `/reactors/${crypto.randomUUID()}/react`;
    const body = { args: { amount: 1 } };
    await claimed(tenant, "react-killed", { method: "POST", path, body }, LEASE_RAN_OUT);
    const before = await rowCounts();

    const retry = await call("POST", path, { key: tenant.key, body, headers: { "SVC-IDEMPOTENCY-KEY": "react-killed" } });
    expect(expectProblem(retry, 409).detail).toMatch(
      /\(POST \/reactors\/[^)]+\/react\) stopped before answering, and its outcome is unknown/,
    );
    expect(await rowCounts()).toEqual(before);
  });

  it("a deployment's shorter lease (IDEMPOTENCY_LEASE_MS) lets the retry run a claim that wrote nothing sooner; the default still holds it", async () => {
    const tenant = await seedTokenTenant();
    await claimed(tenant, "short-lease", { method: "POST", path: "/tokenize", body: PAYLOAD }, 5_000);
    expect(expectProblem(await retryTokenize(tenant, "short-lease"), 409).detail).toMatch(/still being processed/);
    const before = await tokenCount();

    const retry = await callConfigured({ IDEMPOTENCY_LEASE_MS: "2000" }, "POST", "/tokenize", {
      headers: { "SVC-API-KEY": tenant.key, "SVC-IDEMPOTENCY-KEY": "short-lease" },
      body: PAYLOAD,
    });
    expect(retry.status, retry.text).toBe(201);
    expect(retry.headers.get("SVC-Idempotent-Replayed")).toBeNull();
    expect(await tokenCount()).toBe(before + 2);
    expect((await retryTokenize(tenant, "short-lease")).body).toEqual(retry.body);
  });

  it("refuses a lease that is not a whole number of milliseconds from a second to an hour, so none can turn it off", async () => {
    for (const value of ["0", "-1", "999", "1.5", "soon", "3600001"]) {
      const reply = await expectLoggedError(/Invalid configuration: IDEMPOTENCY_LEASE_MS/, () =>
        callConfigured({ IDEMPOTENCY_LEASE_MS: value }, "GET", "/health"),
      );
      expect(expectProblem(reply, 500).detail).toContain("IDEMPOTENCY_LEASE_MS");
    }
  });
});

describe("idempotency: a POST /applications killed while it held its key (its mark is in the control database)", () => {
  const BODY = { name: "killed", type: "private", permissions: ["token:read"] };
  const retryCreate = (tenant: TokenTenant, key: string, body: unknown = BODY) =>
    call("POST", "/applications", { key: tenant.managementKey, body, headers: { "SVC-IDEMPOTENCY-KEY": key } });
  const stopped = (tenant: TokenTenant, key: string, claimedAgo: number, body: unknown = BODY) =>
    claimed(tenant, key, { method: "POST", path: "/applications", body }, claimedAgo, tenant.managementKey);
  const applicationCount = async () => (await rowCounts())["DB.applications"]!;

  it("killed after its write: the retry answers the application and the key it created, with 201, and writes nothing", async () => {
    const tenant = await seedTokenTenant();
    const { context, principal } = await stopped(tenant, "app-written", LEASE_RAN_OUT);
    const written = JSON.parse(JSON.stringify(await createApplication(context, principal, CreateApplicationBody.parse(BODY))));
    const before = await rowCounts();

    const retry = await retryCreate(tenant, "app-written");
    expect(retry.status, retry.text).toBe(201);
    expect(retry.headers.get("SVC-Idempotent-Replayed")).toBe("true");
    expect(retry.body).toEqual(written);
    expect(await rowCounts()).toEqual(before);
    // The key it shows is the one the write stored.
    expect((await call("GET", "/tokens", { key: retry.body.key })).status).not.toBe(401);
    expect((await retryCreate(tenant, "app-written")).body).toEqual(written);
  });

  it("answers at once, without waiting for the lease: the mark says the write is done", async () => {
    const tenant = await seedTokenTenant();
    const { context, principal } = await stopped(tenant, "app-just-written", 0);
    const written = await createApplication(context, principal, CreateApplicationBody.parse(BODY));
    const retry = await retryCreate(tenant, "app-just-written");
    expect(retry.status, retry.text).toBe(201);
    expect(retry.body.id).toBe(written.id);
  });

  it("killed before its write: past the lease the retry runs it, and the application is created once", async () => {
    const tenant = await seedTokenTenant();
    await stopped(tenant, "app-not-written", LEASE_RAN_OUT);
    const before = await applicationCount();

    const retry = await retryCreate(tenant, "app-not-written");
    expect(retry.status, retry.text).toBe(201);
    expect(retry.headers.get("SVC-Idempotent-Replayed")).toBeNull();
    expect(await applicationCount()).toBe(before + 1);
    expect((await retryCreate(tenant, "app-not-written")).body).toEqual(retry.body);
    expect(await applicationCount()).toBe(before + 1);
  });

  it("an attempt that outlived its lease, whose key a retry took over and wrote with, writes nothing: its batch fails on the mark", async () => {
    const tenant = await seedTokenTenant();
    const slow = await stopped(tenant, "app-slow", LEASE_RAN_OUT);
    const retry = await retryCreate(tenant, "app-slow");
    expect(retry.status, retry.text).toBe(201);
    const before = await rowCounts();

    await expect(createApplication(slow.context, slow.principal, CreateApplicationBody.parse(BODY))).rejects.toMatchObject({
      status: 409,
      message: expect.stringMatching(/Another attempt .* committed its write first, so this one wrote nothing/),
    });
    expect(await rowCounts()).toEqual(before);
    expect((await retryCreate(tenant, "app-slow")).body).toEqual(retry.body);
  });

  it("a retry that took the claim over while the first attempt still ran, and lost the race to write, writes nothing; the next retry answers the first attempt's application", async () => {
    const tenant = await seedTokenTenant();
    const first = await stopped(tenant, "app-raced", LEASE_RAN_OUT);
    // The retry has taken the claim over and is about to write when the first attempt commits.
    const takeover = await claimIdempotencyKey(await tenantContext(tenant.tenantId), first.principal, {
      key: "app-raced",
      requestHash: await requestHashOf("POST", "/applications", JSON.stringify(BODY)),
      request: "POST /applications",
      commitsWithWrite: true,
      marksInControl: true,
    });
    if (!("claim" in takeover)) throw new Error("the retry did not take the claim over");
    const written = JSON.parse(JSON.stringify(await createApplication(first.context, first.principal, CreateApplicationBody.parse(BODY))));
    const second = await tenantContext(tenant.tenantId);
    second.markControlCommitWith(controlCommitMarkOf(second, takeover.claim));
    const before = await rowCounts();

    await expect(createApplication(second, first.principal, CreateApplicationBody.parse(BODY))).rejects.toMatchObject({ status: 409 });
    expect(await rowCounts()).toEqual(before);
    const retry = await retryCreate(tenant, "app-raced");
    expect(retry.status, retry.text).toBe(201);
    expect(retry.body).toEqual(written);
  });

  it("an application deleted since: the retry is a 409 saying the request was processed, and creates none", async () => {
    const tenant = await seedTokenTenant();
    const { context, principal } = await stopped(tenant, "app-deleted", LEASE_RAN_OUT);
    const written = await createApplication(context, principal, CreateApplicationBody.parse(BODY));
    expect((await call("DELETE", `/applications/${written.id}`, { key: tenant.managementKey })).status).toBe(204);
    const before = await applicationCount();

    const retry = await retryCreate(tenant, "app-deleted");
    expect(expectProblem(retry, 409).detail).toMatch(/was processed, but the application it created was deleted since/);
    expect(await applicationCount()).toBe(before);
  });

  it("a key used again after its window: the earlier use's mark does not hold the new request back", async () => {
    const tenant = await seedTokenTenant();
    const old = await stopped(tenant, "app-reused", IDEMPOTENCY_WINDOW_MS + 60_000);
    const earlier = await createApplication(old.context, old.principal, CreateApplicationBody.parse(BODY));
    const before = await applicationCount();

    const again = await retryCreate(tenant, "app-reused");
    expect(again.status, again.text).toBe(201);
    expect(again.headers.get("SVC-Idempotent-Replayed")).toBeNull();
    expect(again.body.id).not.toBe(earlier.id);
    expect(await applicationCount()).toBe(before + 1);
  });
});

describe("idempotency: the other control writes killed while they held their key (keys, regenerate, proxies and their key roll)", () => {
  const PROXY = { name: "killed", destination_url: "https://partner.example.com/charges", require_auth: true };
  const WEBHOOK = () => ({ name: "killed", url: receiver().url, events: ["token.created"] });
  /** Each route: the path and body of its request (made for the tenant), its status, and its write as the route runs it. */
  const routes: {
    name: string;
    request: (tenant: TokenTenant) => Promise<{ path: string; body: unknown }>;
    status: number;
    write: (
      context: TenantContext,
      principal: Awaited<ReturnType<typeof claimed>>["principal"],
      path: string,
      body: unknown,
    ) => Promise<unknown>;
  }[] = [
    {
      name: "POST /applications/{id}/keys",
      request: async (tenant) => ({ path: `/applications/${await applicationOf(tenant)}/keys`, body: {} }),
      status: 201,
      write: (context, principal, path) => createApplicationKey(context, principal, path.split("/")[2]!, {}),
    },
    {
      name: "POST /applications/{id}/regenerate",
      request: async (tenant) => ({ path: `/applications/${await applicationOf(tenant)}/regenerate`, body: {} }),
      status: 200,
      write: (context, principal, path) => regenerateApplicationKey(context, principal, path.split("/")[2]!, {}),
    },
    {
      name: "POST /proxies",
      request: async () => ({ path: "/proxies", body: PROXY }),
      status: 201,
      write: (context, principal) => createProxy(context, principal, ProxyBody.parse(PROXY)),
    },
    {
      name: "POST /webhooks",
      request: async () => ({ path: "/webhooks", body: WEBHOOK() }),
      status: 201,
      write: (context, principal, _path, body) => createWebhook(context, principal, WebhookBody.parse(body)),
    },
    {
      name: "POST /keys",
      request: async () => ({ path: "/keys", body: {} }),
      status: 201,
      write: (context, principal) => createClientKey(context, principal, ClientKeyBody.parse({})),
    },
    {
      name: "POST /reactor-formulas",
      request: async () => ({ path: "/reactor-formulas", body: formulaBody() }),
      status: 201,
      write: (context, principal, _path, body) => createFormula(context, principal, FormulaBody.parse(body)),
    },
    {
      name: "POST /reactors",
      request: async () => ({ path: "/reactors", body: { name: "killed", code: ECHO_CODE } }),
      status: 201,
      write: (context, principal, _path, body) => createReactor(context, principal, ReactorBody.parse(body)),
    },
    {
      name: "POST /proxies/{id}/key",
      request: async (tenant) => ({ path: `/proxies/${await proxyOf(tenant)}/key`, body: {} }),
      status: 200,
      write: (context, principal, path) => rollProxyKey(context, principal, path.split("/")[2]!, {}),
    },
  ];

  const applicationOf = async (tenant: TokenTenant) => {
    const reply = await call("POST", "/applications", {
      key: tenant.managementKey,
      body: { name: "held", type: "private", permissions: ["token:read"] },
    });
    return reply.body.id as string;
  };
  const proxyOf = async (tenant: TokenTenant) =>
    (await call("POST", "/proxies", { key: tenant.managementKey, body: PROXY })).body.id as string;
  const retry = (tenant: TokenTenant, key: string, request: { path: string; body: unknown }) =>
    call("POST", request.path, { key: tenant.managementKey, body: request.body, headers: { "SVC-IDEMPOTENCY-KEY": key } });

  for (const route of routes) {
    it(`${route.name} killed after its write: the retry answers what it wrote, and writes nothing`, async () => {
      const tenant = await seedTokenTenant();
      const request = await route.request(tenant);
      const { context, principal } = await claimed(tenant, "written", { method: "POST", ...request }, LEASE_RAN_OUT, tenant.managementKey);
      const written = JSON.parse(JSON.stringify(await route.write(context, principal, request.path, request.body)));
      const before = await rowCounts();

      const again = await retry(tenant, "written", request);
      expect(again.status, again.text).toBe(route.status);
      expect(again.headers.get("SVC-Idempotent-Replayed")).toBe("true");
      expect(again.body).toEqual(written);
      expect(await rowCounts()).toEqual(before);
    });

    it(`${route.name}: an attempt that outlived its lease, whose key a retry took over and wrote with, writes nothing`, async () => {
      const tenant = await seedTokenTenant();
      const request = await route.request(tenant);
      const slow = await claimed(tenant, "slow", { method: "POST", ...request }, LEASE_RAN_OUT, tenant.managementKey);
      const first = await retry(tenant, "slow", request);
      expect(first.status, first.text).toBe(route.status);
      const before = await rowCounts();

      await expect(route.write(slow.context, slow.principal, request.path, request.body)).rejects.toMatchObject({
        status: 409,
        message: expect.stringMatching(/Another attempt .* committed its write first, so this one wrote nothing/),
      });
      expect(await rowCounts()).toEqual(before);
      expect((await retry(tenant, "slow", request)).body).toEqual(first.body);
    });
  }

  it("POST /webhooks over the tenant's limit, killed after its batch: the retry says no webhook was made, never that one was", async () => {
    const tenant = await seedTokenTenant();
    for (let i = 0; i < WEBHOOKS.maxPerTenant; i++) {
      expect((await call("POST", "/webhooks", { key: tenant.managementKey, body: WEBHOOK() })).status).toBe(201);
    }
    const request = { path: "/webhooks", body: WEBHOOK() };
    const { context, principal } = await claimed(tenant, "over", { method: "POST", ...request }, LEASE_RAN_OUT, tenant.managementKey);
    await expect(createWebhook(context, principal, WebhookBody.parse(request.body))).rejects.toMatchObject({ status: 409 });

    const again = await retry(tenant, "over", request);
    expect(expectProblem(again, 409).detail).toMatch(/webhook is not there: deleted since, or never made because the tenant held its most/);
  });

  it("a key rolled again since the killed roll: the retry is a 409, and never shows the other roll's key as its own", async () => {
    const tenant = await seedTokenTenant();
    const request = { path: `/proxies/${await proxyOf(tenant)}/key`, body: {} };
    const { context, principal } = await claimed(
      tenant,
      "rolled-twice",
      { method: "POST", ...request },
      LEASE_RAN_OUT,
      tenant.managementKey,
    );
    await rollProxyKey(context, principal, request.path.split("/")[2]!, {});
    expect((await call("POST", request.path, { key: tenant.managementKey, body: {} })).status).toBe(200);

    const again = await retry(tenant, "rolled-twice", request);
    expect(expectProblem(again, 409).detail).toMatch(/key was rolled or the proxy deleted meanwhile/);
  });
});
