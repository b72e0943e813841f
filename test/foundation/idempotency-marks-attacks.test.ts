import { env } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { CreateApplicationBody } from "../../src/applications/schema";
import { createApplication, createApplicationKey } from "../../src/applications/service";
import {
  claimIdempotencyKey,
  controlCommitMarkOf,
  purgeIdempotencyRecords,
  rememberResponse,
  requestHashOf,
} from "../../src/idempotency/service";
import { IDEMPOTENCY_LEASE_MS, IDEMPOTENCY_WINDOW_MS } from "../../src/limits";
import { ProxyBody } from "../../src/proxies/schema";
import { createProxy } from "../../src/proxies/service";
import { ReactorBody } from "../../src/reactors/schema";
import { createReactor } from "../../src/reactors/service";
import { requestContext, tenantContext } from "../support/context";
import { call, expectProblem, rowCounts, createApplication as seedApplication } from "../support/harness";
import { stoppedAfterClaim } from "../support/idempotency";
import { ECHO_CODE } from "../support/reactors";
import { seedTokenTenant, type TokenTenant } from "../support/tokens";

/**
 * Attacks on the control database's idempotency commit marks (idempotency_marks): a request stopped
 * where a crash, a 5xx or a slow attempt would stop it, by driving the `idempotentControlWrite`
 * middleware's steps as test/foundation/idempotency-crash.test.ts does, and retries over HTTP.
 */

const LEASE_RAN_OUT = IDEMPOTENCY_LEASE_MS + 1000;
const APPLICATION = { name: "attacked", type: "private", permissions: ["token:read"] };
const PROXY = { name: "attacked", destination_url: "https://partner.example.com/charges", require_auth: true };
const operator = { "SVC-OPERATOR-KEY": env.OPERATOR_API_KEY };

/**
 * A request on a control-write route that claimed its key `claimedAgo` ms ago as the middleware
 * claims it, with its body as sent (`rawBody`: the text, "" for none), and was stopped there.
 */
const claimed = (tenant: TokenTenant, key: string, request: { path: string; rawBody: string }, claimedAgo: number, apiKey: string) =>
  stoppedAfterClaim(tenant.tenantId, apiKey, key, { method: "POST", ...request }, claimedAgo, "control");

const stoppedCreate = (tenant: TokenTenant, key: string, claimedAgo = LEASE_RAN_OUT, apiKey = tenant.managementKey) =>
  claimed(tenant, key, { path: "/applications", rawBody: JSON.stringify(APPLICATION) }, claimedAgo, apiKey);

const retryCreate = (tenant: TokenTenant, key: string, apiKey = tenant.managementKey) =>
  call("POST", "/applications", { key: apiKey, body: APPLICATION, headers: { "SVC-IDEMPOTENCY-KEY": key } });

const applicationCount = async () => (await rowCounts())["DB.applications"]!;

async function marksOf(tenantId: string): Promise<{ key: string; outcome: string }[]> {
  const { results } = await env.DB.prepare("SELECT key, outcome FROM idempotency_marks WHERE tenant_id = ?")
    .bind(tenantId)
    .all<{ key: string; outcome: string }>();
  return results;
}

describe("idempotency marks: a retry answers what was written, once, and only to its own caller", () => {
  it("a retry without a body (optional on POST /applications/{id}/keys) of a committed write answers its key, not a 500", async () => {
    const tenant = await seedTokenTenant();
    const target = await seedApplication(tenant, { type: "private", permissions: ["token:read"] });
    const path = `/applications/${target.id}/keys`;
    const { context, principal } = await claimed(tenant, "no-body", { path, rawBody: "" }, LEASE_RAN_OUT, tenant.managementKey);
    const written = JSON.parse(JSON.stringify(await createApplicationKey(context, principal, target.id)));
    const before = await rowCounts();

    const retry = await call("POST", path, { key: tenant.managementKey, headers: { "SVC-IDEMPOTENCY-KEY": "no-body" } });
    expect(retry.status, retry.text).toBe(201);
    expect(retry.body).toEqual(written);
    expect(await rowCounts()).toEqual(before);
  });

  it("a 5xx after the write committed keeps the key: the retry answers that application and creates no second one", async () => {
    const tenant = await seedTokenTenant();
    const { context, principal, claim } = await stoppedCreate(tenant, "failed-after-write", 0);
    const written = JSON.parse(JSON.stringify(await createApplication(context, principal, CreateApplicationBody.parse(APPLICATION))));
    // What the middleware does when the handler fails after its write (an audit or a read that throws).
    await rememberResponse(context, claim, 500, "");
    const before = await applicationCount();

    const retry = await retryCreate(tenant, "failed-after-write");
    expect(retry.status, retry.text).toBe(201);
    expect(retry.headers.get("SVC-Idempotent-Replayed")).toBe("true");
    expect(retry.body).toEqual(written);
    expect(await applicationCount()).toBe(before);
  });

  it("a 5xx before anything was written still releases the key: the retry runs the request at once", async () => {
    const tenant = await seedTokenTenant();
    const { context, claim } = await stoppedCreate(tenant, "failed-before-write", 0);
    await rememberResponse(context, claim, 500, "");
    const before = await applicationCount();

    const retry = await retryCreate(tenant, "failed-before-write");
    expect(retry.status, retry.text).toBe(201);
    expect(retry.headers.get("SVC-Idempotent-Replayed")).toBeNull();
    expect(await applicationCount()).toBe(before + 1);
  });

  it("a takeover that lost the race to write answers its 409 but saves none: the next retry answers the write that won", async () => {
    const tenant = await seedTokenTenant();
    const first = await stoppedCreate(tenant, "lost-race");
    const takeover = await claimIdempotencyKey(await tenantContext(tenant.tenantId), first.principal, {
      key: "lost-race",
      requestHash: await requestHashOf("POST", "/applications", JSON.stringify(APPLICATION)),
      request: "POST /applications",
      commitsWithWrite: true,
      marksInControl: true,
    });
    if (!("claim" in takeover)) throw new Error("the retry did not take the claim over");
    const written = JSON.parse(
      JSON.stringify(await createApplication(first.context, first.principal, CreateApplicationBody.parse(APPLICATION))),
    );
    const second = await tenantContext(tenant.tenantId);
    second.markControlCommitWith(controlCommitMarkOf(second, takeover.claim));
    const refusal = await createApplication(second, first.principal, CreateApplicationBody.parse(APPLICATION)).catch((error) => error);
    expect(refusal).toMatchObject({ status: 409 });
    // What the middleware does with the takeover's 409 answer.
    await rememberResponse(second, takeover.claim, 409, JSON.stringify(refusal.toProblem()));

    const retry = await retryCreate(tenant, "lost-race");
    expect(retry.status, retry.text).toBe(201);
    expect(retry.body).toEqual(written);
  });

  it("a POST /proxies whose proxy key was rolled since answers a 409, never the rolled key to a caller that may not read proxies", async () => {
    const tenant = await seedTokenTenant();
    const creator = await seedApplication(tenant, { type: "management", permissions: ["proxy:create"] });
    const { context, principal } = await claimed(
      tenant,
      "proxy-rolled",
      { path: "/proxies", rawBody: JSON.stringify(PROXY) },
      LEASE_RAN_OUT,
      creator.key,
    );
    const written = await createProxy(context, principal, ProxyBody.parse(PROXY));
    // The creator may not read it: only its creation showed it the key.
    expectProblem(await call("GET", `/proxies/${written.id}`, { key: creator.key }), 403);
    // The tenant rolls the key (to cut off whoever held the first one).
    const rolled = await call("POST", `/proxies/${written.id}/key`, { key: tenant.managementKey, body: {} });
    expect(rolled.status, rolled.text).toBe(200);

    const retry = await call("POST", "/proxies", { key: creator.key, body: PROXY, headers: { "SVC-IDEMPOTENCY-KEY": "proxy-rolled" } });
    expect(retry.text).not.toContain(rolled.body.key);
    expect(expectProblem(retry, 409).detail).toMatch(/proxy it created was changed since/);
  });

  it("a POST /proxies whose configuration was replaced since answers a 409, never the tenant's new secret to a caller that may not read proxies", async () => {
    const tenant = await seedTokenTenant();
    const creator = await seedApplication(tenant, { type: "management", permissions: ["proxy:create"] });
    const { context, principal } = await claimed(
      tenant,
      "proxy-patched",
      { path: "/proxies", rawBody: JSON.stringify(PROXY) },
      LEASE_RAN_OUT,
      creator.key,
    );
    const written = await createProxy(context, principal, ProxyBody.parse(PROXY));
    const patched = await call("PATCH", `/proxies/${written.id}`, {
      key: tenant.managementKey,
      body: { configuration: { PARTNER_SECRET: "partner-secret-added-later" } },
      contentType: "application/merge-patch+json",
    });
    expect(patched.status, patched.text).toBe(204);

    const retry = await call("POST", "/proxies", { key: creator.key, body: PROXY, headers: { "SVC-IDEMPOTENCY-KEY": "proxy-patched" } });
    expect(retry.text).not.toContain("partner-secret-added-later");
    expectProblem(retry, 409);
  });

  it("a POST /reactors whose configuration was replaced since answers a 409, never the tenant's new secret to a caller that may not read reactors", async () => {
    const tenant = await seedTokenTenant();
    const creator = await seedApplication(tenant, { type: "management", permissions: ["reactor:create"] });
    const body = { name: "attacked", code: ECHO_CODE };
    const { context, principal } = await claimed(
      tenant,
      "reactor-patched",
      { path: "/reactors", rawBody: JSON.stringify(body) },
      LEASE_RAN_OUT,
      creator.key,
    );
    const written = await createReactor(context, principal, ReactorBody.parse(body));
    expectProblem(await call("GET", `/reactors/${written.id}`, { key: creator.key }), 403);
    const patched = await call("PATCH", `/reactors/${written.id}`, {
      key: tenant.managementKey,
      body: { configuration: { PARTNER_SECRET: "reactor-secret-added-later" } },
      contentType: "application/merge-patch+json",
    });
    expect(patched.status, patched.text).toBe(204);

    const retry = await call("POST", "/reactors", { key: creator.key, body, headers: { "SVC-IDEMPOTENCY-KEY": "reactor-patched" } });
    expect(retry.text).not.toContain("reactor-secret-added-later");
    expectProblem(retry, 409);
  });

  it("another application of the tenant, and another tenant, with the same key and request: each runs its own, and sees nothing of the first", async () => {
    const tenant = await seedTokenTenant();
    const { context, principal } = await stoppedCreate(tenant, "shared-key");
    const written = await createApplication(context, principal, CreateApplicationBody.parse(APPLICATION));
    const sibling = await seedApplication(tenant, { type: "management", permissions: ["application:create"] });
    const stranger = await seedTokenTenant();

    for (const apiKey of [sibling.key, stranger.managementKey]) {
      const before = await applicationCount();
      const own = await call("POST", "/applications", { key: apiKey, body: APPLICATION, headers: { "SVC-IDEMPOTENCY-KEY": "shared-key" } });
      expect(own.status, own.text).toBe(201);
      expect(own.headers.get("SVC-Idempotent-Replayed")).toBeNull();
      expect(own.body.id).not.toBe(written.id);
      expect(own.text).not.toContain(written.key!);
      expect(await applicationCount()).toBe(before + 1);
    }
    const retry = await retryCreate(tenant, "shared-key");
    expect(retry.body).toEqual(JSON.parse(JSON.stringify(written)));
  });

  it("a key without the route's permission learns nothing of a committed write: 403 before the mark is read", async () => {
    const tenant = await seedTokenTenant();
    const { context, principal } = await stoppedCreate(tenant, "no-permission");
    await createApplication(context, principal, CreateApplicationBody.parse(APPLICATION));
    const reply = await retryCreate(tenant, "no-permission", tenant.key);
    expectProblem(reply, 403);
    expect(reply.text).not.toContain("idempotency");
  });

  it("a key rotation re-seals the marks: the retry still answers the write, and no mark is left under the old version", {
    timeout: 60_000,
  }, async () => {
    const tenant = await seedTokenTenant();
    const { context, principal } = await stoppedCreate(tenant, "rotated");
    const written = JSON.parse(JSON.stringify(await createApplication(context, principal, CreateApplicationBody.parse(APPLICATION))));
    expect((await marksOf(tenant.tenantId)).map((mark) => mark.outcome.slice(0, 3))).toEqual(["v1."]);

    const started = await call("POST", `/tenants/${tenant.tenantId}/rotation`, { headers: operator });
    expect(started.status, started.text).toBe(202);
    for (let polls = 0; ; polls++) {
      const status = await call("GET", `/tenants/${tenant.tenantId}/rotation`, { headers: operator });
      if (status.body.state === "done") break;
      expect(polls, status.text).toBeLessThan(200);
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
    expect((await marksOf(tenant.tenantId)).map((mark) => mark.outcome.slice(0, 3))).toEqual(["v2."]);

    const retry = await retryCreate(tenant, "rotated");
    expect(retry.status, retry.text).toBe(201);
    expect(retry.body).toEqual(written);
  });

  it("the cron purges marks past the window with the records", async () => {
    const tenant = await seedTokenTenant();
    const { context, principal } = await stoppedCreate(tenant, "purged", IDEMPOTENCY_WINDOW_MS + 60_000);
    await createApplication(context, principal, CreateApplicationBody.parse(APPLICATION));
    expect(await marksOf(tenant.tenantId)).toHaveLength(1);
    await purgeIdempotencyRecords(requestContext());
    expect(await marksOf(tenant.tenantId)).toHaveLength(0);
  });

  it("shredding the tenant leaves none of its marks (its idempotency keys) in the control database", async () => {
    const tenant = await seedTokenTenant();
    const { context, principal } = await stoppedCreate(tenant, "customer-4711-signup");
    await createApplication(context, principal, CreateApplicationBody.parse(APPLICATION));
    expect(await marksOf(tenant.tenantId)).toHaveLength(1);

    const shredded = await call("DELETE", `/tenants/${tenant.tenantId}`, { headers: operator });
    expect(shredded.status, shredded.text).toBe(200);
    expect(await marksOf(tenant.tenantId)).toEqual([]);
  });
});
