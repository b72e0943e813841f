import { describe, expect, it } from "vitest";
import { principalForKey } from "../../src/auth/service";
import { type Claim, claimIdempotencyKey, commitMarkOf, rememberResponse, requestHashOf } from "../../src/idempotency/service";
import { IDEMPOTENCY_LEASE_MS } from "../../src/limits";
import { createToken, parseCreateToken, tokenize } from "../../src/tokens/creation";
import { callConfigured } from "../support/configured";
import { requestContext, tenantContext } from "../support/context";
import { call, expectProblem, rowCounts } from "../support/harness";
import { expectLoggedError } from "../support/logs";
import { createToken as createStoredToken, SSN, seedTokenTenant, type TokenTenant, VISA } from "../support/tokens";

/**
 * A creating request killed while it holds its idempotency key (`npm start` killed with kill -9): its
 * claim is a lease, and a write that answers it carries the record's commit mark in its own batch. A
 * test stops a request where a kill would by driving the middleware's steps itself: it claims the key,
 * perhaps writes, and never saves an answer. The retries go over HTTP.
 */

const PAYLOAD = { card: { type: "card_number", data: VISA }, ssn: SSN };
const LEASE_RAN_OUT = IDEMPOTENCY_LEASE_MS + 1000;

/** A request that claimed its key `claimedAgo` ms ago, as the `idempotent` middleware claims it, and was stopped there. */
async function claimed(
  tenant: TokenTenant,
  key: string,
  request: { method: string; path: string; body: unknown },
  claimedAgo: number,
  apiKey = tenant.key,
) {
  const principal = (await principalForKey(requestContext(), apiKey))!;
  const context = await tenantContext(tenant.tenantId);
  const outcome = await claimIdempotencyKey(
    context,
    principal,
    {
      key,
      requestHash: await requestHashOf(request.method, request.path, JSON.stringify(request.body)),
      request: `${request.method} ${request.path}`,
      commitsWithWrite: request.path === "/tokens" || request.path === "/tokenize",
    },
    Date.now() - claimedAgo,
  );
  if (!("claim" in outcome)) throw new Error("the key was not claimed");
  context.markCommitWith(commitMarkOf(context, outcome.claim));
  return { context, principal, claim: outcome.claim as Claim };
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

  it("a route whose write cannot carry the mark (POST /applications): past the lease, a 409 saying its outcome is unknown, and nothing runs", async () => {
    const tenant = await seedTokenTenant();
    const body = { name: "killed", type: "public", permissions: ["token:create"] };
    await claimed(tenant, "app-killed", { method: "POST", path: "/applications", body }, LEASE_RAN_OUT, tenant.managementKey);
    const before = await rowCounts();

    const retry = await call("POST", "/applications", {
      key: tenant.managementKey,
      body,
      headers: { "SVC-IDEMPOTENCY-KEY": "app-killed" },
    });
    expect(expectProblem(retry, 409).detail).toMatch(/\(POST \/applications\) stopped before answering, and its outcome is unknown/);
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
