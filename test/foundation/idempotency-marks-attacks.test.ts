import { describe, expect, it } from "vitest";
import { createApplicationKey } from "../../src/applications/service";
import { principalForKey } from "../../src/auth/service";
import { claimIdempotencyKey, controlCommitMarkOf, requestHashOf } from "../../src/idempotency/service";
import { IDEMPOTENCY_LEASE_MS } from "../../src/limits";
import { requestContext, tenantContext } from "../support/context";
import { call, rowCounts, createApplication as seedApplication } from "../support/harness";
import { seedTokenTenant, type TokenTenant } from "../support/tokens";

/**
 * Attacks on the control database's idempotency commit marks (idempotency_marks): a request stopped
 * where a crash, a 5xx or a slow attempt would stop it, by driving the `idempotentControlWrite`
 * middleware's steps as test/foundation/idempotency-crash.test.ts does, and retries over HTTP.
 */

const LEASE_RAN_OUT = IDEMPOTENCY_LEASE_MS + 1000;

/**
 * A request on a control-write route that claimed its key `claimedAgo` ms ago as the middleware
 * claims it, with its body as sent (`rawBody`: the text, "" for none), and was stopped there.
 */
async function claimed(tenant: TokenTenant, key: string, request: { path: string; rawBody: string }, claimedAgo: number, apiKey: string) {
  const principal = (await principalForKey(requestContext(), apiKey))!;
  const context = await tenantContext(tenant.tenantId);
  const outcome = await claimIdempotencyKey(
    context,
    principal,
    {
      key,
      requestHash: await requestHashOf("POST", request.path, request.rawBody),
      request: `POST ${request.path}`,
      commitsWithWrite: true,
      marksInControl: true,
    },
    Date.now() - claimedAgo,
  );
  if (!("claim" in outcome)) throw new Error("the key was not claimed");
  context.markControlCommitWith(controlCommitMarkOf(context, outcome.claim));
  return { context, principal, claim: outcome.claim };
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
});
